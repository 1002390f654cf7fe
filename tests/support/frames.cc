#include "tests/support/frames.h"

namespace uroce::test {

using namespace wire;

std::vector<uint8_t> all_opcodes() {
  std::vector<uint8_t> ops;
  for (int o = 0; o < 256; ++o)
    if (op_info(static_cast<uint8_t>(o)).mask & kOpValid) ops.push_back(static_cast<uint8_t>(o));
  return ops;
}

PacketHeaders sample_headers(uint8_t opcode, bool ipv6, bool vlan) {
  PacketHeaders h;
  h.eth.dst = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  h.eth.src = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  h.eth.vlan = vlan;
  h.eth.pcp = 3;
  h.eth.vid = 100;
  h.ip.ipv6 = ipv6;
  if (ipv6) {
    h.ip.src = {0xfd, 0x00, 0x75, 0x72, 0x6f, 0x63, 0x65, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    h.ip.dst = {0xfd, 0x00, 0x75, 0x72, 0x6f, 0x63, 0x65, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    h.ip.flow_label = 0x12345;
  } else {
    h.ip.src = ipv4_mapped(0x7F000001);  // 127.0.0.1
    h.ip.dst = ipv4_mapped(0x7F000002);
  }
  h.ip.tclass = static_cast<uint8_t>(26 << 2 | static_cast<uint8_t>(Ecn::kEct0));
  h.udp_sport = 0xC123;
  h.bth.opcode = opcode;
  h.bth.se = op_has(opcode, kCompletesRecv);
  h.bth.dqpn = 0x000A1B;
  h.bth.psn = 0xABCDE;
  h.bth.ackreq = op_has(opcode, kIsRequest) && (op_info(opcode).mask & kEndsMessage);
  h.reth = {0x00007F0012345000ull, 0x1234ABCD, 8192};
  h.aeth = {aeth_syndrome(AethKind::kAck, 0x1F), 0x000321};
  h.atomic = {0x00007F0000001000ull, 0x0BADF00D, 0x1111222233334444ull, 0x5555666677778888ull};
  h.atomic_ack_orig = 0x0123456789ABCDEFull;
  h.imm_be = 0xEFBEADDE;  // DE AD BE EF on the wire
  h.ieth_rkey = 0x00C0FFEE;
  h.deth = {0x11111111, 0x000002};
  if (op_has(opcode, kIsCnp)) {
    h.bth.pkey = 0xFFFF;
    h.bth.resv8a = 0x40;  // BECN
    h.bth.psn = 0;
    h.bth.migreq = false;
  }
  return h;
}

std::vector<uint8_t> sample_payload(uint8_t opcode, size_t n) {
  std::vector<uint8_t> p;
  if (!op_has(opcode, kHasPayload)) return p;
  p.resize(op_has(opcode, kOpAtomicWrite) ? 8 : n);  // an ATOMIC WRITE carries exactly 8 bytes
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + 1);
  return p;
}

std::vector<uint8_t> make_frame(const PacketHeaders& h, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f(headers_len(h) + payload.size() + trailer_len(payload.size()));
  f.resize(build_frame(h, payload, f.data()));
  return f;
}

}  // namespace uroce::test

namespace uroce::test {

Boundaries boundaries_of(const PacketHeaders& h, size_t payload_len) {
  Boundaries b;
  b.l3 = sizeof(EthHdr) + (h.eth.vlan ? sizeof(VlanTag) : 0);
  b.l4 = b.l3 + (h.ip.ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr));
  b.bth = b.l4 + sizeof(UdpHdr);
  b.payload = b.bth + op_info(h.bth.opcode).hdr_len;
  b.end = b.payload + payload_len + trailer_len(payload_len);
  b.icrc = b.end - kIcrcLen;
  return b;
}

void reseal(std::vector<uint8_t>& f) {
  const bool vlan = (f[12] << 8 | f[13]) == kEtherTypeVlan;
  uint8_t* ip = f.data() + sizeof(EthHdr) + (vlan ? sizeof(VlanTag) : 0);
  size_t end;
  if ((ip[0] >> 4) == 4) {
    auto& h = *reinterpret_cast<Ipv4Hdr*>(ip);
    h.csum.set(0);
    h.csum.set(ipv4_checksum(h));
    end = static_cast<size_t>(ip - f.data()) + h.total_len.get();
  } else {
    end = static_cast<size_t>(ip - f.data()) + sizeof(Ipv6Hdr) +
          reinterpret_cast<Ipv6Hdr*>(ip)->payload_len.get();
  }
  const size_t ip_hdr = (ip[0] >> 4) == 4 ? sizeof(Ipv4Hdr) : sizeof(Ipv6Hdr);
  const size_t min_end =
      static_cast<size_t>(ip - f.data()) + ip_hdr + sizeof(UdpHdr) + sizeof(Bth) + kIcrcLen;
  if (end > f.size() || end < min_end) return;  // no room for an ICRC: leave the bytes as they are
  icrc_store(f.data() + end - kIcrcLen, icrc_roce_v2_contiguous(ip, f.data() + end - kIcrcLen));
}

}  // namespace uroce::test
