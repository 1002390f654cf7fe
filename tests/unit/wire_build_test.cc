#include <gtest/gtest.h>

#include <cstring>

#include "tests/support/frames.h"
#include "transport/wire/packet.h"

namespace uroce::wire {
namespace {

using test::make_frame;
using test::sample_headers;
using test::sample_payload;

bool same_headers(const PacketHeaders& a, const PacketHeaders& b) {
  const uint32_t m = op_info(a.bth.opcode).mask;
  bool same = a.eth.dst == b.eth.dst && a.eth.src == b.eth.src && a.eth.vlan == b.eth.vlan &&
              a.ip.ipv6 == b.ip.ipv6 && a.ip.src == b.ip.src && a.ip.dst == b.ip.dst &&
              a.ip.tclass == b.ip.tclass && a.ip.ttl == b.ip.ttl && a.udp_sport == b.udp_sport &&
              a.bth.opcode == b.bth.opcode && a.bth.se == b.bth.se && a.bth.migreq == b.bth.migreq &&
              a.bth.tver == b.bth.tver && a.bth.pkey == b.bth.pkey && a.bth.resv8a == b.bth.resv8a &&
              a.bth.dqpn == b.bth.dqpn && a.bth.ackreq == b.bth.ackreq &&
              a.bth.psn == b.bth.psn;  // field by field: the struct has padding
  if (a.eth.vlan) same &= a.eth.pcp == b.eth.pcp && a.eth.vid == b.eth.vid;
  if (a.ip.ipv6) same &= a.ip.flow_label == b.ip.flow_label;
  if (m & kHasReth)
    same &= a.reth.va == b.reth.va && a.reth.rkey == b.reth.rkey && a.reth.dma_len == b.reth.dma_len;
  if (m & kHasAeth) same &= a.aeth.syndrome == b.aeth.syndrome && a.aeth.msn == b.aeth.msn;
  if (m & kHasAtomicEth)
    same &= a.atomic.va == b.atomic.va && a.atomic.rkey == b.atomic.rkey &&
            a.atomic.swap_add == b.atomic.swap_add && a.atomic.compare == b.atomic.compare;
  if (m & kHasAtomicAckEth) same &= a.atomic_ack_orig == b.atomic_ack_orig;
  if (m & kHasImmDt) same &= a.imm_be == b.imm_be;
  if (m & kHasIeth) same &= a.ieth_rkey == b.ieth_rkey;
  if (m & kHasDeth) same &= a.deth.qkey == b.deth.qkey && a.deth.src_qp == b.deth.src_qp;
  return same;
}

TEST(FrameBuilder, EveryOpcodeRoundTripsThroughTheParser) {
  for (uint8_t o : test::all_opcodes()) {
    for (bool ipv6 : {false, true}) {
      for (bool vlan : {false, true}) {
        for (size_t len : {0, 1, 2, 3, 4, 255, 1024}) {
          const PacketHeaders h = sample_headers(o, ipv6, vlan);
          const auto payload = sample_payload(o, len);
          const auto f = make_frame(h, payload);
          ParsedPacket pkt;
          ASSERT_EQ(parse_frame(f.data(), f.size(), &pkt), RxDrop::kNone) << op_name(o) << " len " << len;
          EXPECT_EQ(pkt.payload_len, payload.size());
          EXPECT_EQ(pkt.pad, (4 - payload.size() % 4) % 4);
          if (!payload.empty()) {
            EXPECT_EQ(std::memcmp(pkt.payload(), payload.data(), payload.size()), 0);
          }
          EXPECT_TRUE(same_headers(decode_headers(pkt), h)) << op_name(o);
          EXPECT_EQ(pkt.ecn(), Ecn::kEct0);
        }
      }
    }
  }
}

TEST(FrameBuilder, PayloadInPiecesGivesTheSameFrameAsContiguous) {
  const PacketHeaders h = sample_headers(op::kRcWriteMiddle, true, false);
  const auto payload = sample_payload(op::kRcWriteMiddle, 4093);
  const auto expected = make_frame(h, payload);

  std::vector<uint8_t> hdrs(headers_len(h));
  ASSERT_EQ(build_headers(h, static_cast<uint32_t>(payload.size()), hdrs.data()), hdrs.size());
  const ConstBytes pieces[3] = {
      {payload.data(), 1000}, {payload.data() + 1000, 3000}, {payload.data() + 4000, 93}};
  uint8_t trailer[8];
  build_trailer(hdrs.data(), hdrs.size(), pieces, trailer);

  std::vector<uint8_t> joined = hdrs;
  joined.insert(joined.end(), payload.begin(), payload.end());
  joined.insert(joined.end(), trailer, trailer + trailer_len(payload.size()));
  EXPECT_EQ(joined, expected);
}

TEST(FrameBuilder, SealingAFrameInPlaceGivesTheSameFrame) {
  for (uint8_t o : {op::kRcSendOnly, op::kRcWriteOnly, op::kUdSendOnly, op::kRcAck}) {
    for (bool ipv6 : {false, true}) {
      for (bool vlan : {false, true}) {
        for (size_t len : {0, 1, 2, 3, 64, 255, 256, 1024}) {
          const PacketHeaders h = sample_headers(o, ipv6, vlan);
          const auto payload = sample_payload(o, len);
          const auto expected = make_frame(h, payload);
          std::vector<uint8_t> f(expected.size(), 0xA5);  // pad bytes must be written, not assumed zero
          const size_t hl = build_headers(h, static_cast<uint32_t>(payload.size()), f.data());
          std::copy(payload.begin(), payload.end(), f.begin() + static_cast<ptrdiff_t>(hl));
          seal_frame(f.data(), hl, payload.size());
          EXPECT_EQ(f, expected) << op_name(o) << " ipv6 " << ipv6 << " vlan " << vlan << " len " << len;
        }
      }
    }
  }
}

// RFC 1071 as written: 16-bit big-endian words, carries folded at the end.
uint16_t ipv4_checksum_reference(const uint8_t* p) {
  uint32_t sum = 0;
  for (size_t i = 0; i < 20; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

TEST(Ipv4Checksum, MatchesRfc1071OverHeadersWithEveryCarry) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 20000; ++i) {
    Ipv4Hdr h;
    auto* p = reinterpret_cast<uint8_t*>(&h);
    for (size_t k = 0; k < sizeof h; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      // A quarter of the headers are mostly 0xFF, where the carries pile up.
      p[k] = (i % 4 == 0 && (x & 7)) ? 0xFF : static_cast<uint8_t>(x);
    }
    ASSERT_EQ(ipv4_checksum(h), ipv4_checksum_reference(p)) << "header " << i;
  }
  Ipv4Hdr ones;
  std::memset(&ones, 0xFF, sizeof ones);
  EXPECT_EQ(ipv4_checksum(ones), ipv4_checksum_reference(reinterpret_cast<const uint8_t*>(&ones)));
  Ipv4Hdr zeros{};
  std::memset(&zeros, 0, sizeof zeros);
  EXPECT_EQ(ipv4_checksum(zeros), 0xFFFF);
  // Eight bytes of ones, then a one: a sum whose every fold carries once more, down to the last.
  Ipv4Hdr carry{};
  std::memset(&carry, 0, sizeof carry);
  std::memset(&carry, 0xFF, 8);
  reinterpret_cast<uint8_t*>(&carry)[8] = 1;
  reinterpret_cast<uint8_t*>(&carry)[9] = 0;
  EXPECT_EQ(ipv4_checksum(carry), ipv4_checksum_reference(reinterpret_cast<const uint8_t*>(&carry)));
}

// The word-wise address comparisons agree with the arrays' own == for a difference in any bit of any byte.
TEST(AddressCompare, EveryBitOfEveryByteCounts) {
  Ipv6Addr a;
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(0x11 * i + 3);
  EXPECT_TRUE(ip_equal(a, a));
  for (size_t i = 0; i < a.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      Ipv6Addr b = a;
      b[i] ^= static_cast<uint8_t>(1 << bit);
      ASSERT_FALSE(ip_equal(a, b)) << "byte " << i << " bit " << bit;
      ASSERT_FALSE(ip_equal(b, a)) << "byte " << i << " bit " << bit;
    }
  MacAddr m{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30};
  EXPECT_TRUE(mac_equal(m, m));
  EXPECT_FALSE(mac_is_zero(m));
  EXPECT_TRUE(mac_is_zero(MacAddr{}));
  for (size_t i = 0; i < m.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      MacAddr n = m;
      n[i] ^= static_cast<uint8_t>(1 << bit);
      ASSERT_FALSE(mac_equal(m, n)) << "byte " << i << " bit " << bit;
    }
}

TEST(FrameBuilder, UdRecvGrhCarriesTheIpHeader) {
  for (bool ipv6 : {false, true}) {
    const PacketHeaders h = sample_headers(op::kUdSendOnly, ipv6, false);
    const auto f = make_frame(h, sample_payload(op::kUdSendOnly, 16));
    ParsedPacket pkt;
    ASSERT_EQ(parse_frame(f.data(), f.size(), &pkt), RxDrop::kNone);
    uint8_t grh[40];
    write_recv_grh(pkt, grh);
    if (ipv6) {
      EXPECT_EQ(ipv6_version(*reinterpret_cast<const Grh*>(grh)), 6);
      EXPECT_EQ(std::memcmp(reinterpret_cast<const Grh*>(grh)->src, h.ip.src.data(), 16), 0);
    } else {
      for (int i = 0; i < 20; ++i) EXPECT_EQ(grh[i], 0);
      EXPECT_EQ(grh[20], 0x45);
      EXPECT_EQ(reinterpret_cast<const Ipv4Hdr*>(grh + 20)->src.get(), 0x7F000001u);
    }
  }
}

TEST(FrameBuilder, CnpMatchesTheAnnexA17Format) {
  const PacketHeaders h = sample_headers(op::kCnp, false, false);
  const auto f = make_frame(h, {});
  // Eth 14 + IPv4 20 + UDP 8 + BTH 12 + 16 reserved + ICRC 4.
  ASSERT_EQ(f.size(), 74u);
  const uint8_t* bth = f.data() + 42;
  EXPECT_EQ(bth[0], 0x81);
  EXPECT_EQ(bth[2], 0xFF);
  EXPECT_EQ(bth[3], 0xFF);
  EXPECT_EQ(bth[4], 0x40);                   // BECN
  EXPECT_EQ(bth[9] | bth[10] | bth[11], 0);  // PSN 0
  for (int i = 12; i < 28; ++i) EXPECT_EQ(bth[i], 0) << i;
}

}  // namespace
}  // namespace uroce::wire
