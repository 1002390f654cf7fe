// Transmit-side frame construction. Headers are written into one buffer; the payload stays in the
// application's buffers and only its ICRC is computed here.
#include <cstring>

#include "transport/wire/packet.h"

namespace uroce::wire {

namespace {

size_t l3_offset(bool vlan) { return sizeof(EthHdr) + (vlan ? sizeof(VlanTag) : 0); }

// Where the IP header of a frame starts (after the Ethernet header and its VLAN tag, if any).
const uint8_t* ip_of(const uint8_t* frame) {
  return frame + l3_offset(reinterpret_cast<const EthHdr*>(frame)->ether_type.get() == kEtherTypeVlan);
}
size_t ip_len(bool ipv6) { return ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr); }

template <typename H>
H& at(uint8_t* p, size_t off) {
  return *reinterpret_cast<H*>(p + off);
}

void write_ext_headers(const PacketHeaders& h, const OpInfo& op, uint8_t* bth) {
  if (op.mask & kHasXrceth) {
    auto& x = at<Xrceth>(bth, op.xrceth);
    x.resv = h.xrceth_resv;
    x.srqn.set(h.xrc_srqn);
  }
  if (op.mask & kHasDeth) {
    auto& d = at<Deth>(bth, op.deth);
    d.qkey.set(h.deth.qkey);
    d.resv = h.deth.resv;
    d.src_qp.set(h.deth.src_qp);
  }
  if (op.mask & kHasReth) {
    auto& r = at<Reth>(bth, op.reth);
    r.va.set(h.reth.va);
    r.rkey.set(h.reth.rkey);
    r.dma_len.set(h.reth.dma_len);
  }
  if (op.mask & kHasAtomicEth) {
    auto& a = at<AtomicEth>(bth, op.atomic_eth);
    a.va.set(h.atomic.va);
    a.rkey.set(h.atomic.rkey);
    a.swap_add.set(h.atomic.swap_add);
    a.compare.set(h.atomic.compare);
  }
  if (op.mask & kHasAeth) {
    auto& a = at<Aeth>(bth, op.aeth);
    a.syndrome = h.aeth.syndrome;
    a.msn.set(h.aeth.msn);
  }
  if (op.mask & kHasAtomicAckEth) at<AtomicAckEth>(bth, op.atomic_ack_eth).orig.set(h.atomic_ack_orig);
  if (op.mask & kHasImmDt) std::memcpy(at<ImmDt>(bth, op.immdt).b, &h.imm_be, 4);
  if (op.mask & kHasIeth) at<Ieth>(bth, op.ieth).rkey.set(h.ieth_rkey);
  if (op.mask & kHasCnpBody) std::memcpy(bth + sizeof(Bth), h.cnp_resv.data(), sizeof(CnpBody));
}

}  // namespace

size_t headers_len(const PacketHeaders& h) {
  return l3_offset(h.eth.vlan) + ip_len(h.ip.ipv6) + sizeof(UdpHdr) + op_info(h.bth.opcode).hdr_len;
}

size_t build_headers(const PacketHeaders& h, uint32_t payload_len, uint8_t* out) {
  const OpInfo& op = op_info(h.bth.opcode);
  const size_t l3_off = l3_offset(h.eth.vlan);
  const size_t l4_off = l3_off + ip_len(h.ip.ipv6);
  const size_t bth_off = l4_off + sizeof(UdpHdr);
  const size_t udp_len = sizeof(UdpHdr) + op.hdr_len + payload_len + trailer_len(payload_len);

  auto& eth = at<EthHdr>(out, 0);
  std::memcpy(eth.dst, h.eth.dst.data(), 6);
  std::memcpy(eth.src, h.eth.src.data(), 6);
  const uint16_t l3_type = h.ip.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (h.eth.vlan) {
    eth.ether_type.set(kEtherTypeVlan);
    auto& tag = at<VlanTag>(out, sizeof(EthHdr));
    tag.tci.set(
        static_cast<uint16_t>((h.eth.pcp & 7) << 13 | (h.eth.dei ? 0x1000 : 0) | (h.eth.vid & 0xFFF)));
    tag.ether_type.set(l3_type);
  } else {
    eth.ether_type.set(l3_type);
  }

  if (h.ip.ipv6) {
    auto& ip = at<Ipv6Hdr>(out, l3_off);
    ip.ver_tc_flow.set(6u << 28 | static_cast<uint32_t>(h.ip.tclass) << 20 | (h.ip.flow_label & 0xFFFFF));
    ip.payload_len.set(static_cast<uint16_t>(udp_len));
    ip.next_hdr = kIpProtoUdp;
    ip.hop_limit = h.ip.ttl;
    std::memcpy(ip.src, h.ip.src.data(), 16);
    std::memcpy(ip.dst, h.ip.dst.data(), 16);
  } else {
    auto& ip = at<Ipv4Hdr>(out, l3_off);
    const auto total_len = static_cast<uint16_t>(sizeof(Ipv4Hdr) + udp_len);
    const uint32_t src = ipv4_of_mapped(h.ip.src), dst = ipv4_of_mapped(h.ip.dst);
    ip.ver_ihl = 0x45;
    ip.tos = h.ip.tclass;
    ip.total_len.set(total_len);
    ip.id.set(h.ip.ipv4_id);
    ip.flags_frag.set(h.ip.ipv4_flags_frag);
    ip.ttl = h.ip.ttl;
    ip.proto = kIpProtoUdp;
    ip.src.set(src);
    ip.dst.set(dst);
    // The checksum from the values, not read back from the header just written: a load spanning several of
    // those narrower stores cannot be forwarded from the store buffer and waits for them (a third of this
    // function's time when it summed the header in memory).
    ip.csum.set(ones_complement_checksum((0x45u << 8 | h.ip.tclass) + total_len + h.ip.ipv4_id +
                                         h.ip.ipv4_flags_frag + (uint32_t{h.ip.ttl} << 8 | kIpProtoUdp) +
                                         (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF)));
  }

  auto& udp = at<UdpHdr>(out, l4_off);
  udp.sport.set(h.udp_sport);
  udp.dport.set(kRoceV2Port);
  udp.len.set(static_cast<uint16_t>(udp_len));
  udp.csum.set(h.udp_csum);

  auto& bth = at<Bth>(out, bth_off);
  bth.opcode = h.bth.opcode;
  bth_set_flags(bth, h.bth.se, h.bth.migreq, static_cast<uint8_t>(-payload_len & 3), h.bth.tver);
  bth.pkey.set(h.bth.pkey);
  bth.resv8a = h.bth.resv8a;
  bth.dest_qp.set(h.bth.dqpn);
  bth.ack_req = static_cast<uint8_t>((h.bth.ackreq ? 0x80 : 0) | (h.bth.resv7 & 0x7F));
  bth.psn.set(h.bth.psn);
  write_ext_headers(h, op, out + bth_off);
  return bth_off + op.hdr_len;
}

uint32_t icrc_after_headers(const uint8_t* hdrs, size_t hdrs_len) {
  const uint8_t* ip = ip_of(hdrs);
  const uint8_t* after_bth = ip + ip_len((ip[0] >> 4) == 6) + sizeof(UdpHdr) + sizeof(Bth);
  return crc32_update(icrc_begin(ip),
                      ConstBytes(after_bth, static_cast<size_t>(hdrs + hdrs_len - after_bth)));
}

void finish_trailer(uint32_t crc, size_t payload_len, uint8_t* trailer) {
  const size_t pad = -payload_len & 3;
  std::memset(trailer, 0, pad);
  crc = crc32_update(crc, ConstBytes(trailer, pad));
  icrc_store(trailer + pad, crc);
}

void seal_frame(uint8_t* frame, size_t hdrs_len, size_t payload_len) {
  uint8_t* pad = frame + hdrs_len + payload_len;
  const size_t npad = -payload_len & 3;
  std::memset(pad, 0, npad);
  icrc_store(pad + npad, icrc_roce_v2_contiguous(ip_of(frame), pad + npad));
}

void build_trailer(const uint8_t* hdrs, size_t hdrs_len, std::span<const ConstBytes> payload,
                   uint8_t* trailer) {
  uint32_t crc = icrc_after_headers(hdrs, hdrs_len);
  size_t payload_len = 0;
  for (ConstBytes piece : payload) {
    crc = crc32_update(crc, piece);
    payload_len += piece.size();
  }
  finish_trailer(crc, payload_len, trailer);
}

size_t build_frame(const PacketHeaders& h, ConstBytes payload, uint8_t* out) {
  const size_t hlen = build_headers(h, static_cast<uint32_t>(payload.size()), out);
  if (!payload.empty()) std::memcpy(out + hlen, payload.data(), payload.size());
  const ConstBytes pieces[1] = {payload};
  build_trailer(out, hlen, pieces, out + hlen + payload.size());
  return hlen + payload.size() + trailer_len(payload.size());
}

}  // namespace uroce::wire
