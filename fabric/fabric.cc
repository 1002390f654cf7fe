#include "fabric/fabric.h"

#include <cstring>

#include "fabric/hash.h"
#include "transport/wire/address.h"
#include "transport/wire/headers.h"
#include "transport/wire/opcode.h"

namespace uroce::fabric {
namespace {

using wire::be16;
using wire::be32;

constexpr uint64_t kPfcDstMac = 0x0180C2000001ULL;

// The ether type after the Ethernet header and at most one 802.1Q tag; *off is where the next header starts.
// 0 when the frame is too short for what it names.
uint16_t ether_type(const uint8_t* f, uint32_t len, uint32_t* off, const wire::VlanTag** tag) {
  *tag = nullptr;
  if (len < sizeof(wire::EthHdr)) return 0;
  uint16_t type = reinterpret_cast<const wire::EthHdr*>(f)->ether_type.get();
  *off = sizeof(wire::EthHdr);
  if (type == wire::kEtherTypeVlan) {
    if (len < sizeof(wire::EthHdr) + sizeof(wire::VlanTag)) return 0;
    *tag = reinterpret_cast<const wire::VlanTag*>(f + *off);
    type = (*tag)->ether_type.get();
    *off += sizeof(wire::VlanTag);
  }
  return type;
}

uint64_t load64(const uint8_t* p) { return reinterpret_cast<const wire::BeUint<8>*>(p)->get(); }

}  // namespace

const char* flow_control_name(FlowControl fc) {
  switch (fc) {
    case FlowControl::kNone:
      return "none";
    case FlowControl::kPfc:
      return "pfc";
    case FlowControl::kCredit:
      return "credit";
  }
  return "?";
}

double red_mark_probability(const EcnConfig& ecn, uint64_t q) {
  if (!ecn.enabled || q <= ecn.kmin_bytes) return 0;
  if (q > ecn.kmax_bytes || ecn.kmax_bytes <= ecn.kmin_bytes) return 1;
  return ecn.pmax * static_cast<double>(q - ecn.kmin_bytes) /
         static_cast<double>(ecn.kmax_bytes - ecn.kmin_bytes);
}

uint8_t frame_prio(const uint8_t* f, uint16_t len) {
  uint32_t off = 0;
  const wire::VlanTag* tag = nullptr;
  const uint16_t type = ether_type(f, len, &off, &tag);
  if (tag) return static_cast<uint8_t>(tag->tci.get() >> 13);
  if (type == wire::kEtherTypeIpv4 && len >= off + 2) return static_cast<uint8_t>(f[off + 1] >> 5);
  if (type == wire::kEtherTypeIpv6 && len >= off + 2)
    return static_cast<uint8_t>(((f[off] & 0x0F) << 4 | f[off + 1] >> 4) >> 5);
  return 0;
}

FrameClass classify(const uint8_t* f, uint16_t len, uint64_t salt) {
  FrameClass c;
  uint32_t off = 0;
  const wire::VlanTag* tag = nullptr;
  const uint16_t type = ether_type(f, len, &off, &tag);
  if (tag) c.prio = static_cast<uint8_t>(tag->tci.get() >> 13);
  const uint8_t* ip = f + off;
  uint64_t h = salt;
  uint32_t l4 = 0;
  if (type == wire::kEtherTypeIpv4 && len >= off + sizeof(wire::Ipv4Hdr) &&
      wire::ipv4_version(*reinterpret_cast<const wire::Ipv4Hdr*>(ip)) == 4) {
    const auto& v4 = *reinterpret_cast<const wire::Ipv4Hdr*>(ip);
    c.ip = c.ipv4 = true;
    c.ecn = v4.tos & 3;
    if (!tag) c.prio = static_cast<uint8_t>(v4.tos >> 5);  // DSCP >> 3
    h = splitmix64(h ^ (uint64_t{v4.src.get()} << 32 | v4.dst.get()));
    if (v4.proto == wire::kIpProtoUdp) l4 = off + wire::ipv4_ihl_bytes(v4);
  } else if (type == wire::kEtherTypeIpv6 && len >= off + sizeof(wire::Ipv6Hdr) &&
             wire::ipv6_version(*reinterpret_cast<const wire::Ipv6Hdr*>(ip)) == 6) {
    const auto& v6 = *reinterpret_cast<const wire::Ipv6Hdr*>(ip);
    c.ip = true;
    const uint8_t tc = wire::ipv6_tclass(v6);
    c.ecn = tc & 3;
    if (!tag) c.prio = static_cast<uint8_t>(tc >> 5);
    for (int i = 0; i < 16; i += 8) h = splitmix64(h ^ load64(v6.src + i));
    for (int i = 0; i < 16; i += 8) h = splitmix64(h ^ load64(v6.dst + i));
    if (v6.next_hdr == wire::kIpProtoUdp) l4 = off + sizeof(wire::Ipv6Hdr);
  } else {
    return c;
  }
  c.l3_offset = static_cast<uint16_t>(off);
  if (l4 != 0 && len >= l4 + sizeof(wire::UdpHdr)) {
    const auto& udp = *reinterpret_cast<const wire::UdpHdr*>(f + l4);
    h = splitmix64(h ^ (uint64_t{udp.sport.get()} << 16 | udp.dport.get()));
    c.roce = udp.dport.get() == wire::kRoceV2Port;
    const uint32_t bth = l4 + sizeof(wire::UdpHdr);
    if (c.roce && len >= bth + sizeof(wire::Bth)) {
      c.bth_offset = static_cast<uint16_t>(bth);
      c.roce_request = wire::op_info(f[bth]).mask & wire::kIsRequest;
    }
  }
  c.flow_hash = h;
  return c;
}

EcnResult mark_ce_ip(uint8_t* ip, size_t avail) {
  constexpr uint8_t kEcnMask = 3, kCe = 3;
  if (avail >= sizeof(wire::Ipv4Hdr) && (ip[0] >> 4) == 4) {
    auto* h = reinterpret_cast<wire::Ipv4Hdr*>(ip);
    const uint8_t ecn = h->tos & kEcnMask;
    if (ecn == 0) return EcnResult::kNotEct;
    if (ecn == kCe) return EcnResult::kAlreadyCe;
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') over the 16-bit word holding version/IHL and TOS.
    const uint16_t m = static_cast<uint16_t>(h->ver_ihl << 8 | h->tos);
    h->tos |= kCe;
    const uint16_t m2 = static_cast<uint16_t>(h->ver_ihl << 8 | h->tos);
    uint32_t sum = static_cast<uint16_t>(~h->csum.get()) + static_cast<uint16_t>(~m) + m2;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    h->csum.set(static_cast<uint16_t>(~sum));
    return EcnResult::kMarked;
  }
  if (avail >= sizeof(wire::Ipv6Hdr) && (ip[0] >> 4) == 6) {
    auto* h = reinterpret_cast<wire::Ipv6Hdr*>(ip);
    const uint32_t w = h->ver_tc_flow.get();
    const uint8_t ecn = (w >> 20) & kEcnMask;
    if (ecn == 0) return EcnResult::kNotEct;
    if (ecn == kCe) return EcnResult::kAlreadyCe;
    h->ver_tc_flow.set(w | (uint32_t{kCe} << 20));
    return EcnResult::kMarked;
  }
  return EcnResult::kNotIp;
}

EcnResult mark_ce_frame(uint8_t* f, uint32_t len) {
  uint32_t off = 0;
  const wire::VlanTag* tag = nullptr;
  const uint16_t type = ether_type(f, len, &off, &tag);
  if (type != wire::kEtherTypeIpv4 && type != wire::kEtherTypeIpv6) return EcnResult::kNotIp;
  // The version must match the ethertype; anything else is not an IP packet here.
  if (len == off || (f[off] >> 4) != (type == wire::kEtherTypeIpv4 ? 4 : 6)) return EcnResult::kNotIp;
  return mark_ce_ip(f + off, len - off);
}

bool mark_ce(uint8_t* f, const FrameClass& c) {
  // classify() set c.ip only with a whole IPv4 or IPv6 header in the frame.
  return c.ip && mark_ce_ip(f + c.l3_offset, c.ipv4 ? sizeof(wire::Ipv4Hdr) : sizeof(wire::Ipv6Hdr)) ==
                     EcnResult::kMarked;
}

uint16_t build_pfc(uint8_t* out, uint64_t src_mac, const PfcFrame& p) {
  std::memset(out, 0, kPfcFrameLen);
  wire::mac_from_u64(out, kPfcDstMac);
  wire::mac_from_u64(out + 6, src_mac);
  auto* w = reinterpret_cast<be16*>(out + 12);  // ether type, opcode, enable vector, 8 quanta
  w[0].set(kEtherTypeMacControl);
  w[1].set(kPfcOpcode);
  w[2].set(p.enable);
  for (int i = 0; i < kPriorities; ++i) w[3 + i].set(p.quanta[i]);
  return kPfcFrameLen;
}

bool parse_pfc(const uint8_t* f, uint16_t len, PfcFrame* out) {
  const auto* w = reinterpret_cast<const be16*>(f + 12);
  if (len < 18 + 2 * kPriorities || w[0].get() != kEtherTypeMacControl || w[1].get() != kPfcOpcode)
    return false;
  out->enable = static_cast<uint8_t>(w[2].get());
  for (int i = 0; i < kPriorities; ++i) out->quanta[i] = w[3 + i].get();
  return true;
}

uint16_t build_credit(uint8_t* out, uint64_t src_mac, const CreditFrame& c) {
  std::memset(out, 0, kCreditFrameLen);
  wire::mac_from_u64(out, kPfcDstMac);
  wire::mac_from_u64(out + 6, src_mac);
  auto* w = reinterpret_cast<be16*>(out + 12);  // ether type, subtype, VL mask
  w[0].set(kEtherTypeLocalExperimental);
  w[1].set(kCreditSubtype);
  w[2].set(c.vl_mask);
  auto* v = reinterpret_cast<be32*>(out + 18);  // eight FCTBS, then eight FCCL
  for (int i = 0; i < kPriorities; ++i) {
    v[i].set(c.fctbs[i]);
    v[kPriorities + i].set(c.fccl[i]);
  }
  return kCreditFrameLen;
}

bool parse_credit(const uint8_t* f, uint16_t len, CreditFrame* out) {
  const auto* w = reinterpret_cast<const be16*>(f + 12);
  if (len < kCreditFrameLen || w[0].get() != kEtherTypeLocalExperimental || w[1].get() != kCreditSubtype)
    return false;
  out->vl_mask = static_cast<uint8_t>(w[2].get());
  const auto* v = reinterpret_cast<const be32*>(f + 18);
  for (int i = 0; i < kPriorities; ++i) {
    out->fctbs[i] = v[i].get();
    out->fccl[i] = v[kPriorities + i].get();
  }
  return true;
}

}  // namespace uroce::fabric
