#include "transport/sim/fabric.h"

#include <cstring>

#include "transport/sim/sim_switch.h"
#include "transport/wire/address.h"
#include "transport/wire/headers.h"

namespace uroce::sim {
namespace {

uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
void wr16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint64_t rd64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}

constexpr uint64_t kPfcDstMac = 0x0180C2000001ULL;
constexpr uint16_t kEthLen = 14;
constexpr uint16_t kVlanLen = 4;
constexpr uint16_t kIpv4MinLen = 20;
constexpr uint16_t kIpv6Len = 40;
constexpr uint16_t kUdpLen = 8;

// IBA opcodes: the top 3 bits are the transport (0 RC, 1 UC, 3 UD, 4 CNP), the low 5 the operation. RC
// 0x0D..0x12 are responses (READ response, ACK, ATOMIC ACK); everything else of RC/UC/UD is a request.
bool request_opcode(uint8_t op) {
  const uint8_t transport = op >> 5, low = op & 0x1F;
  if (transport != 0 && transport != 1 && transport != 3) return false;
  return low < 0x0D || low > 0x12;
}

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

FrameClass classify(const uint8_t* f, uint16_t len, uint64_t salt) {
  FrameClass c;
  if (len < kEthLen) return c;
  uint16_t type = rd16(f + 12);
  uint16_t off = kEthLen;
  bool tagged = false;
  if (type == wire::kEtherTypeVlan && len >= kEthLen + kVlanLen) {
    c.prio = f[14] >> 5;
    tagged = true;
    type = rd16(f + 16);
    off += kVlanLen;
  }
  const uint8_t* ip = f + off;
  uint64_t h = salt;
  uint16_t l4 = 0;
  if (type == wire::kEtherTypeIpv4 && len >= off + kIpv4MinLen && (ip[0] >> 4) == 4) {
    c.ip = c.ipv4 = true;
    c.ecn = ip[1] & 3;
    if (!tagged) c.prio = static_cast<uint8_t>(ip[1] >> 5);  // DSCP >> 3
    h = splitmix64(h ^ (uint64_t{rd16(ip + 12)} << 48 | uint64_t{rd16(ip + 14)} << 32 |
                        uint64_t{rd16(ip + 16)} << 16 | rd16(ip + 18)));
    if (ip[9] == wire::kIpProtoUdp) l4 = static_cast<uint16_t>(off + (ip[0] & 0xF) * 4);
  } else if (type == wire::kEtherTypeIpv6 && len >= off + kIpv6Len && (ip[0] >> 4) == 6) {
    c.ip = true;
    const uint8_t tc = static_cast<uint8_t>((ip[0] & 0xF) << 4 | ip[1] >> 4);
    c.ecn = tc & 3;
    if (!tagged) c.prio = static_cast<uint8_t>(tc >> 5);
    for (int i = 8; i < 40; i += 8) h = splitmix64(h ^ rd64(ip + i));
    if (ip[6] == wire::kIpProtoUdp) l4 = static_cast<uint16_t>(off + kIpv6Len);
  } else {
    return c;
  }
  c.l3_offset = off;
  if (l4 != 0 && len >= l4 + kUdpLen) {
    const uint16_t sport = rd16(f + l4), dport = rd16(f + l4 + 2);
    h = splitmix64(h ^ (uint64_t{sport} << 16 | dport));
    c.roce = dport == wire::kRoceV2Port;
    if (c.roce && len > l4 + kUdpLen) c.roce_request = request_opcode(f[l4 + kUdpLen]);
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
  if (len < kEthLen) return EcnResult::kNotIp;
  uint32_t off = kEthLen;
  uint16_t type = rd16(f + 12);
  if (type == wire::kEtherTypeVlan) {
    if (len < kEthLen + kVlanLen) return EcnResult::kNotIp;
    type = rd16(f + 16);
    off += kVlanLen;
  }
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
  wr16(out + 12, kEtherTypeMacControl);
  wr16(out + 14, kPfcOpcode);
  wr16(out + 16, p.enable);
  for (int i = 0; i < kPriorities; ++i) wr16(out + 18 + 2 * i, p.quanta[i]);
  return kPfcFrameLen;
}

bool parse_pfc(const uint8_t* f, uint16_t len, PfcFrame* out) {
  if (len < 18 + 2 * kPriorities || rd16(f + 12) != kEtherTypeMacControl || rd16(f + 14) != kPfcOpcode)
    return false;
  out->enable = static_cast<uint8_t>(rd16(f + 16));
  for (int i = 0; i < kPriorities; ++i) out->quanta[i] = rd16(f + 18 + 2 * i);
  return true;
}

}  // namespace uroce::sim
