// Receive-side validation of RoCEv2 frames. Every check bounds its read by the bytes it has already proven
// present, so no input can make it read outside the frame.
#include <cstring>

#include "transport/wire/packet.h"

namespace uroce::wire {

namespace {

// Names the header a frame ends inside when it is shorter than its IP length says.
RxDrop truncation_at(size_t end, size_t l4_off) {
  if (end < l4_off + sizeof(UdpHdr)) return RxDrop::kTruncUdp;
  if (end < l4_off + sizeof(UdpHdr) + sizeof(Bth)) return RxDrop::kTruncBth;
  return RxDrop::kTruncExtHdr;  // refined by the caller once the opcode is known
}

}  // namespace

Ecn ParsedPacket::ecn() const {
  const uint8_t* ip = frame + l3_off;
  const uint8_t tc = ipv6 ? ipv6_tclass(*reinterpret_cast<const Ipv6Hdr*>(ip)) : ip[1];
  return static_cast<Ecn>(tc & 3);
}

namespace {

MacAddr mac_at(const uint8_t* p) {
  MacAddr m;
  std::memcpy(m.data(), p, m.size());
  return m;
}

// The source (`src`) or destination address of the IP header at `l3`, as a GID.
Ipv6Addr ip_addr(const uint8_t* l3, bool ipv6, bool src) {
  if (!ipv6) {
    const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(l3);
    return ipv4_mapped((src ? ip.src : ip.dst).get());
  }
  const auto& ip = *reinterpret_cast<const Ipv6Hdr*>(l3);
  Ipv6Addr a;
  std::memcpy(a.data(), src ? ip.src : ip.dst, a.size());
  return a;
}

}  // namespace

MacAddr ParsedPacket::eth_dst() const { return mac_at(reinterpret_cast<const EthHdr*>(frame)->dst); }
MacAddr ParsedPacket::eth_src() const { return mac_at(reinterpret_cast<const EthHdr*>(frame)->src); }

uint16_t ParsedPacket::vlan_id() const {
  return vlan_tagged() ? reinterpret_cast<const VlanTag*>(frame + sizeof(EthHdr))->tci.get() & 0x0FFF : 0;
}

Ipv6Addr ParsedPacket::ip_src() const { return ip_addr(frame + l3_off, ipv6, true); }
Ipv6Addr ParsedPacket::ip_dst() const { return ip_addr(frame + l3_off, ipv6, false); }

RxDrop parse_frame(const uint8_t* frame, size_t len, ParsedPacket* out) {
  if (len < sizeof(EthHdr)) return RxDrop::kTruncEth;
  size_t off = sizeof(EthHdr);
  uint16_t ether_type = reinterpret_cast<const EthHdr*>(frame)->ether_type.get();
  if (ether_type == kEtherTypeVlan) {
    if (len < off + sizeof(VlanTag)) return RxDrop::kTruncVlan;
    ether_type = reinterpret_cast<const VlanTag*>(frame + off)->ether_type.get();
    off += sizeof(VlanTag);
  }
  if (ether_type != kEtherTypeIpv4 && ether_type != kEtherTypeIpv6) return RxDrop::kEtherType;

  const size_t l3_off = off;
  const bool ipv6 = ether_type == kEtherTypeIpv6;
  size_t l4_off;
  size_t ip_end;  // end of the IP datagram; bytes after it are Ethernet padding
  if (!ipv6) {
    if (len < l3_off + sizeof(Ipv4Hdr)) return RxDrop::kTruncIp;
    const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(frame + l3_off);
    if (ipv4_version(ip) != 4) return RxDrop::kIpVersion;
    if (ipv4_ihl_bytes(ip) != sizeof(Ipv4Hdr))
      return ipv4_ihl_bytes(ip) < sizeof(Ipv4Hdr) ? RxDrop::kIpLength : RxDrop::kIpv4Options;
    if (ipv4_checksum(ip) != 0) return RxDrop::kIpv4Checksum;
    // MF or an offset: never RoCE. DF clear is treated the same: every RoCEv2 sender (RNICs, Soft-RoCE,
    // uroce) sets it, and a datagram without it may be one the kernel reassembled from fragments before
    // handing it to a packet socket (af_packet's fanout defragments), which must not be executed either.
    if ((ip.flags_frag.get() & 0x3FFF) || !(ip.flags_frag.get() & 0x4000)) return RxDrop::kIpv4Fragment;
    if (ip.proto != kIpProtoUdp) return RxDrop::kNotUdp;
    l4_off = l3_off + sizeof(Ipv4Hdr);
    ip_end = l3_off + ip.total_len.get();
  } else {
    if (len < l3_off + sizeof(Ipv6Hdr)) return RxDrop::kTruncIp;
    const auto& ip = *reinterpret_cast<const Ipv6Hdr*>(frame + l3_off);
    if (ipv6_version(ip) != 6) return RxDrop::kIpVersion;
    if (ip.next_hdr != kIpProtoUdp) return RxDrop::kNotUdp;  // no IPv6 extension headers on RoCE
    l4_off = l3_off + sizeof(Ipv6Hdr);
    ip_end = l4_off + ip.payload_len.get();
  }
  if (ip_end < l4_off + sizeof(UdpHdr)) return RxDrop::kIpLength;
  if (ip_end > len) {
    const RxDrop r = truncation_at(len, l4_off);
    if (r != RxDrop::kTruncExtHdr) return r;
    const Bth& bth = *reinterpret_cast<const Bth*>(frame + l4_off + sizeof(UdpHdr));
    const OpInfo& op = op_info(bth_opcode(bth));
    if (!(op.mask & kOpValid)) return RxDrop::kOpcode;
    return len < l4_off + sizeof(UdpHdr) + op.hdr_len ? RxDrop::kTruncExtHdr : RxDrop::kTruncTail;
  }

  const auto& udp = *reinterpret_cast<const UdpHdr*>(frame + l4_off);
  if (udp.len.get() != ip_end - l4_off) return RxDrop::kUdpLength;
  if (udp.dport.get() != kRoceV2Port) return RxDrop::kUdpPort;

  const size_t bth_off = l4_off + sizeof(UdpHdr);
  if (ip_end < bth_off + sizeof(Bth)) return RxDrop::kTruncBth;
  if (ip_end < bth_off + sizeof(Bth) + kIcrcLen) return RxDrop::kTruncTail;

  // ICRC before the transport checks: a corrupted packet is counted as corrupted, not as whatever its
  // flipped bits happen to look like.
  const uint8_t* icrc_at = frame + ip_end - kIcrcLen;
  if (icrc_roce_v2_contiguous(frame + l3_off, icrc_at) != icrc_load(icrc_at)) return RxDrop::kIcrc;

  const Bth& bth = *reinterpret_cast<const Bth*>(frame + bth_off);
  if (bth_tver(bth) != 0) return RxDrop::kBthVersion;  // IBA 9.2: only transport version 0 exists
  const OpInfo& op = op_info(bth_opcode(bth));
  if (!(op.mask & kOpValid)) return RxDrop::kOpcode;
  const size_t payload_off = bth_off + op.hdr_len;
  if (ip_end < payload_off + kIcrcLen) return RxDrop::kTruncExtHdr;

  const size_t padded = ip_end - kIcrcLen - payload_off;
  const uint8_t pad = bth_pad(bth);
  if (!(op.mask & kHasPayload)) {
    if (padded != 0) return RxDrop::kPayloadNotAllowed;
    if (pad != 0) return RxDrop::kPadCount;
  } else if (padded % 4 != 0 || pad > padded) {
    return RxDrop::kPadCount;  // payload + pad is always a multiple of 4 bytes (IBA 9.2.3)
  }

  out->frame = frame;
  out->frame_len = static_cast<uint16_t>(ip_end);
  out->l3_off = static_cast<uint16_t>(l3_off);
  out->l4_off = static_cast<uint16_t>(l4_off);
  out->bth_off = static_cast<uint16_t>(bth_off);
  out->payload_off = static_cast<uint16_t>(payload_off);
  out->payload_len = static_cast<uint16_t>(padded - pad);
  out->pad = pad;
  out->opcode = bth_opcode(bth);
  out->ipv6 = ipv6;
  return RxDrop::kNone;
}

void write_recv_grh(const ParsedPacket& pkt, uint8_t* out) {
  const uint8_t* ip = pkt.frame + pkt.l3_off;
  if (pkt.ipv6) {
    std::memcpy(out, ip, sizeof(Grh));
  } else {
    std::memset(out, 0, sizeof(Grh) - sizeof(Ipv4Hdr));
    std::memcpy(out + sizeof(Grh) - sizeof(Ipv4Hdr), ip, sizeof(Ipv4Hdr));
  }
}

PacketHeaders decode_headers(const ParsedPacket& pkt) {
  PacketHeaders h;
  const auto& eth = *reinterpret_cast<const EthHdr*>(pkt.frame);
  std::memcpy(h.eth.dst.data(), eth.dst, 6);
  std::memcpy(h.eth.src.data(), eth.src, 6);
  if (eth.ether_type.get() == kEtherTypeVlan) {
    const auto& tag = *reinterpret_cast<const VlanTag*>(pkt.frame + sizeof(EthHdr));
    h.eth.vlan = true;
    h.eth.pcp = vlan_pcp(tag);
    h.eth.dei = tag.tci.get() & 0x1000;
    h.eth.vid = vlan_vid(tag);
  }

  const uint8_t* l3 = pkt.frame + pkt.l3_off;
  h.ip.ipv6 = pkt.ipv6;
  if (pkt.ipv6) {
    const auto& ip = *reinterpret_cast<const Ipv6Hdr*>(l3);
    std::memcpy(h.ip.src.data(), ip.src, 16);
    std::memcpy(h.ip.dst.data(), ip.dst, 16);
    h.ip.tclass = ipv6_tclass(ip);
    h.ip.flow_label = ipv6_flow_label(ip);
    h.ip.ttl = ip.hop_limit;
  } else {
    const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(l3);
    h.ip.src = ipv4_mapped(ip.src.get());
    h.ip.dst = ipv4_mapped(ip.dst.get());
    h.ip.tclass = ip.tos;
    h.ip.ttl = ip.ttl;
    h.ip.ipv4_id = ip.id.get();
    h.ip.ipv4_flags_frag = ip.flags_frag.get();
  }

  const auto& udp = *reinterpret_cast<const UdpHdr*>(pkt.frame + pkt.l4_off);
  h.udp_sport = udp.sport.get();
  h.udp_csum = udp.csum.get();

  const Bth& bth = pkt.bth();
  h.bth = BthFields{bth_opcode(bth), bth_se(bth),   bth_migreq(bth), bth_tver(bth), bth_pkey(bth),
                    bth.resv8a,      bth_dqpn(bth), bth_ackreq(bth), bth_psn(bth),  bth_resv7(bth)};

  const uint32_t mask = pkt.op().mask;
  if (mask & kHasReth) h.reth = {pkt.reth().va.get(), pkt.reth().rkey.get(), pkt.reth().dma_len.get()};
  if (mask & kHasAeth) h.aeth = {pkt.aeth().syndrome, aeth_msn(pkt.aeth())};
  if (mask & kHasAtomicEth) {
    const AtomicEth& a = pkt.atomic_eth();
    h.atomic = {a.va.get(), a.rkey.get(), a.swap_add.get(), a.compare.get()};
  }
  if (mask & kHasAtomicAckEth) h.atomic_ack_orig = pkt.atomic_ack_eth().orig.get();
  if (mask & kHasImmDt) std::memcpy(&h.imm_be, pkt.immdt().b, 4);
  if (mask & kHasIeth) h.ieth_rkey = pkt.ieth().rkey.get();
  if (mask & kHasXrceth) {
    h.xrc_srqn = pkt.xrceth().srqn.get();
    h.xrceth_resv = pkt.xrceth().resv;
  }
  if (mask & kHasDeth) h.deth = {pkt.deth().qkey.get(), pkt.deth().src_qp.get(), pkt.deth().resv};
  if (mask & kHasCnpBody) std::memcpy(h.cnp_resv.data(), pkt.ext<CnpBody>(sizeof(Bth)).resv, sizeof(CnpBody));
  return h;
}

}  // namespace uroce::wire
