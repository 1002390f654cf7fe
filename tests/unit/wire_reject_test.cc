// The parser rejects every malformed frame with a reason, reads nothing outside the frame (run under ASan),
// and never accepts what it should not.
#include <gtest/gtest.h>

#include "tests/support/frames.h"
#include "transport/wire/packet.h"

namespace uroce::wire {
namespace {

using test::boundaries_of;
using test::make_frame;
using test::reseal;
using test::sample_headers;
using test::sample_payload;

struct Shape {
  bool ipv6, vlan;
};
const Shape kShapes[] = {{false, false}, {false, true}, {true, false}, {true, true}};

RxDrop parse(const std::vector<uint8_t>& f) {
  ParsedPacket pkt;
  return parse_frame(f.data(), f.size(), &pkt);
}

// The reason a frame cut to `n` bytes must be rejected with.
RxDrop expected_truncation(const test::Boundaries& b, size_t n, bool vlan) {
  if (n < sizeof(EthHdr)) return RxDrop::kTruncEth;
  if (vlan && n < b.l3) return RxDrop::kTruncVlan;
  if (n < b.l4) return RxDrop::kTruncIp;
  if (n < b.bth) return RxDrop::kTruncUdp;
  if (n < b.bth + sizeof(Bth)) return RxDrop::kTruncBth;
  if (n < b.payload) return RxDrop::kTruncExtHdr;
  return RxDrop::kTruncTail;
}

TEST(ParserRejects, FramesTruncatedAtEveryByteNameTheHeaderTheyEndIn) {
  for (uint8_t o : test::all_opcodes()) {
    for (Shape s : kShapes) {
      const PacketHeaders h = sample_headers(o, s.ipv6, s.vlan);
      const auto payload = sample_payload(o, 37);
      const auto frame = make_frame(h, payload);
      const auto b = boundaries_of(h, payload.size());
      ASSERT_EQ(frame.size(), b.end);
      ASSERT_EQ(parse(frame), RxDrop::kNone) << op_name(o);
      for (size_t n = 0; n < frame.size(); ++n) {
        // A heap copy of exactly n bytes, so ASan catches any read past the cut.
        const std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<long>(n));
        ASSERT_EQ(parse(cut), expected_truncation(b, n, s.vlan))
            << op_name(o) << " ipv6=" << s.ipv6 << " vlan=" << s.vlan << " cut at " << n;
      }
    }
  }
}

TEST(ParserRejects, EthernetPaddingAfterTheIpDatagramIsIgnored) {
  const PacketHeaders h = sample_headers(op::kRcAck, false, false);
  auto frame = make_frame(h, {});
  const size_t len = frame.size();
  frame.resize(len + 6, 0);
  ParsedPacket pkt;
  ASSERT_EQ(parse_frame(frame.data(), frame.size(), &pkt), RxDrop::kNone);
  EXPECT_EQ(pkt.frame_len, len);
}

TEST(ParserRejects, AnyFlippedBitIsCaughtByTheIcrcOrAnEarlierCheck) {
  for (Shape s : kShapes) {
    const PacketHeaders h = sample_headers(op::kRcWriteFirst, s.ipv6, s.vlan);
    const auto frame = make_frame(h, sample_payload(op::kRcWriteFirst, 64));
    const auto b = boundaries_of(h, 64);
    for (size_t byte = 0; byte < frame.size(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        auto f = frame;
        f[byte] ^= static_cast<uint8_t>(1 << bit);
        const RxDrop r = parse(f);
        const bool invariant = byte >= b.l3;  // the ICRC does not cover Ethernet addresses
        const bool variant_ip =
            !s.ipv6 ? (byte == b.l3 + 1 || byte == b.l3 + 8)
                    : (byte >= b.l3 && byte < b.l3 + 4 && !(byte == b.l3 && bit >= 4)) || byte == b.l3 + 7;
        const bool variant_bth = byte == b.bth + 4;
        const bool udp_csum = byte == b.l4 + 6 || byte == b.l4 + 7;
        if (!invariant || variant_ip || variant_bth || udp_csum) continue;  // masked out of the ICRC
        EXPECT_NE(r, RxDrop::kNone) << "byte " << byte << " bit " << bit;
      }
    }
  }
}

TEST(ParserRejects, BadIcrc) {
  for (Shape s : kShapes) {
    auto f =
        make_frame(sample_headers(op::kRcSendOnly, s.ipv6, s.vlan), sample_payload(op::kRcSendOnly, 100));
    f[f.size() - 1] ^= 0x80;
    EXPECT_EQ(parse(f), RxDrop::kIcrc);
    f = make_frame(sample_headers(op::kRcSendOnly, s.ipv6, s.vlan), sample_payload(op::kRcSendOnly, 100));
    f[f.size() - 10] ^= 0x01;  // payload
    EXPECT_EQ(parse(f), RxDrop::kIcrc);
  }
}

TEST(ParserRejects, BadPadCount) {
  for (Shape s : kShapes) {
    const PacketHeaders h = sample_headers(op::kRcSendOnly, s.ipv6, s.vlan);
    const auto b = boundaries_of(h, 5);  // 5 bytes of payload: pad 3
    auto f = make_frame(h, sample_payload(op::kRcSendOnly, 5));
    ParsedPacket pkt;
    ASSERT_EQ(parse_frame(f.data(), f.size(), &pkt), RxDrop::kNone);
    EXPECT_EQ(pkt.pad, 3);
    EXPECT_EQ(pkt.payload_len, 5);
    // A pad count larger than payload + pad.
    auto g = make_frame(h, {});
    reinterpret_cast<Bth*>(g.data() + b.bth)->flags |= 0x30;
    reseal(g);
    EXPECT_EQ(parse(g), RxDrop::kPadCount);
    // Payload + pad not a multiple of 4: drop one byte and shrink the lengths to match.
    auto k = f;
    k.erase(k.begin() + static_cast<long>(b.payload));
    if (s.ipv6) {
      auto& ip = *reinterpret_cast<Ipv6Hdr*>(k.data() + b.l3);
      ip.payload_len.set(static_cast<uint16_t>(ip.payload_len.get() - 1));
    } else {
      auto& ip = *reinterpret_cast<Ipv4Hdr*>(k.data() + b.l3);
      ip.total_len.set(static_cast<uint16_t>(ip.total_len.get() - 1));
    }
    auto& udp = *reinterpret_cast<UdpHdr*>(k.data() + b.l4);
    udp.len.set(static_cast<uint16_t>(udp.len.get() - 1));
    reseal(k);
    EXPECT_EQ(parse(k), RxDrop::kPadCount);
  }
}

TEST(ParserRejects, PayloadOrPadOnOpcodesWithoutPayload) {
  const PacketHeaders h = sample_headers(op::kRcAck, false, false);
  PacketHeaders as_send = h;
  as_send.bth.opcode = op::kRcSendOnly;
  auto f = make_frame(as_send, sample_payload(op::kRcSendOnly, 8));
  f[boundaries_of(h, 0).bth] = op::kRcAck;  // the AETH absorbs 4 of the 8 bytes; 4 remain as "payload"
  reseal(f);
  EXPECT_EQ(parse(f), RxDrop::kPayloadNotAllowed);

  auto g = make_frame(h, {});
  reinterpret_cast<Bth*>(g.data() + boundaries_of(h, 0).bth)->flags |= 0x10;
  reseal(g);
  EXPECT_EQ(parse(g), RxDrop::kPadCount);
}

TEST(ParserRejects, WrongBthVersion) {
  for (Shape s : kShapes) {
    const PacketHeaders h = sample_headers(op::kRcWriteOnly, s.ipv6, s.vlan);
    auto f = make_frame(h, sample_payload(op::kRcWriteOnly, 16));
    reinterpret_cast<Bth*>(f.data() + boundaries_of(h, 16).bth)->flags |= 0x01;
    reseal(f);
    EXPECT_EQ(parse(f), RxDrop::kBthVersion);
  }
}

TEST(ParserRejects, UnknownOpcode) {
  const PacketHeaders h = sample_headers(op::kRcAck, false, true);
  for (uint8_t o : {0x15, 0x40, 0x66, 0xFF}) {
    auto f = make_frame(h, {});
    f[boundaries_of(h, 0).bth] = o;
    reseal(f);
    EXPECT_EQ(parse(f), RxDrop::kOpcode) << int(o);
  }
}

TEST(ParserRejects, WrongUdpPort) {
  for (Shape s : kShapes) {
    const PacketHeaders h = sample_headers(op::kRcSendOnly, s.ipv6, s.vlan);
    auto f = make_frame(h, sample_payload(op::kRcSendOnly, 4));
    reinterpret_cast<UdpHdr*>(f.data() + boundaries_of(h, 4).l4)->dport.set(4792);
    reseal(f);
    EXPECT_EQ(parse(f), RxDrop::kUdpPort);
  }
}

TEST(ParserRejects, IpAndUdpLengthMismatches) {
  for (Shape s : kShapes) {
    const PacketHeaders h = sample_headers(op::kRcSendOnly, s.ipv6, s.vlan);
    const auto b = boundaries_of(h, 8);
    const auto frame = make_frame(h, sample_payload(op::kRcSendOnly, 8));
    for (int delta : {-4, -1, 1, 4}) {
      auto f = frame;
      auto& udp = *reinterpret_cast<UdpHdr*>(f.data() + b.l4);
      udp.len.set(static_cast<uint16_t>(udp.len.get() + delta));
      reseal(f);
      EXPECT_EQ(parse(f), RxDrop::kUdpLength) << "udp delta " << delta;
    }
    // IP length shorter than the frame (the rest would be Ethernet padding) disagrees with UDP's.
    auto f = frame;
    if (s.ipv6) {
      auto& ip = *reinterpret_cast<Ipv6Hdr*>(f.data() + b.l3);
      ip.payload_len.set(static_cast<uint16_t>(ip.payload_len.get() - 4));
    } else {
      auto& ip = *reinterpret_cast<Ipv4Hdr*>(f.data() + b.l3);
      ip.total_len.set(static_cast<uint16_t>(ip.total_len.get() - 4));
    }
    reseal(f);
    EXPECT_EQ(parse(f), RxDrop::kUdpLength);
    // IP length longer than the frame: the frame was cut.
    f = frame;
    if (s.ipv6) {
      auto& ip = *reinterpret_cast<Ipv6Hdr*>(f.data() + b.l3);
      ip.payload_len.set(static_cast<uint16_t>(ip.payload_len.get() + 4));
    } else {
      auto& ip = *reinterpret_cast<Ipv4Hdr*>(f.data() + b.l3);
      ip.total_len.set(static_cast<uint16_t>(ip.total_len.get() + 4));
    }
    reseal(f);
    EXPECT_EQ(parse(f), RxDrop::kTruncTail);
    // IP length too small to hold a UDP header.
    f = frame;
    if (s.ipv6) {
      reinterpret_cast<Ipv6Hdr*>(f.data() + b.l3)->payload_len.set(4);
    } else {
      reinterpret_cast<Ipv4Hdr*>(f.data() + b.l3)->total_len.set(20);
    }
    reseal(f);
    EXPECT_EQ(parse(f), RxDrop::kIpLength);
  }
}

TEST(ParserRejects, Ipv4HeaderProblems) {
  const PacketHeaders h = sample_headers(op::kRcSendOnly, false, false);
  const auto b = boundaries_of(h, 4);
  const auto frame = make_frame(h, sample_payload(op::kRcSendOnly, 4));
  auto f = frame;
  f[b.l3 + 10] ^= 0xFF;  // checksum
  EXPECT_EQ(parse(f), RxDrop::kIpv4Checksum);
  f = frame;
  f[b.l3] = 0x46;  // IHL 6: options
  reseal(f);
  EXPECT_EQ(parse(f), RxDrop::kIpv4Options);
  f = frame;
  f[b.l3] = 0x65;
  reseal(f);
  EXPECT_EQ(parse(f), RxDrop::kIpVersion);
  f = frame;
  reinterpret_cast<Ipv4Hdr*>(f.data() + b.l3)->flags_frag.set(0x2000);  // MF
  reseal(f);
  EXPECT_EQ(parse(f), RxDrop::kIpv4Fragment);
  f = frame;
  f[b.l3 + 9] = 6;  // TCP
  reseal(f);
  EXPECT_EQ(parse(f), RxDrop::kNotUdp);
  f = frame;
  f[12] = 0x89;
  f[13] = 0x15;  // RoCE v1 ethertype: not handled in RoCEv2 mode
  EXPECT_EQ(parse(f), RxDrop::kEtherType);
}

// Reserved fields are ignored on receive, and decode_headers keeps them so that the frame rebuilds exactly.
std::vector<uint8_t> rebuild(const ParsedPacket& pkt) {
  const PacketHeaders h = decode_headers(pkt);
  std::vector<uint8_t> out(headers_len(h) + pkt.payload_len + trailer_len(pkt.payload_len));
  out.resize(build_frame(h, ConstBytes(pkt.payload(), pkt.payload_len), out.data()));
  return out;
}

TEST(ParserAccepts, FuzzerFoundAckWithReservedBthBitsRebuildsExactly) {
  // fuzz_parse_frame: an RC_ACK with 0x60 in the 7 reserved bits after AckReq (then Ethernet padding).
  // decode_headers used to drop those bits, so the rebuilt frame differed in them and in the ICRC.
  const std::vector<uint8_t> f = {
      0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45,
      0x6a, 0x00, 0x30, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x3c, 0x50, 0x7f, 0x00, 0x00, 0x01,
      0x7f, 0x00, 0x00, 0x02, 0xc1, 0x23, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x40, 0xff,
      0x9f, 0x0f, 0x00, 0x00, 0x60, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x1b, 0x64, 0xf7,
      0x94, 0xac, 0x00, 0x0a, 0xbc, 0xde, 0x1f, 0x00, 0x03, 0x21, 0x0a, 0x28, 0x51, 0xf7};
  ParsedPacket pkt;
  ASSERT_EQ(parse_frame(f.data(), f.size(), &pkt), RxDrop::kNone);
  EXPECT_EQ(pkt.opcode, op::kRcAck);
  EXPECT_EQ(decode_headers(pkt).bth.resv7, 0x60);
  EXPECT_FALSE(decode_headers(pkt).bth.ackreq);
  EXPECT_EQ(rebuild(pkt), std::vector<uint8_t>(f.begin(), f.begin() + pkt.frame_len));
}

TEST(ParserAccepts, ReservedHeaderFieldsAreIgnoredAndKeptByDecode) {
  for (Shape s : kShapes) {
    for (uint8_t o : {op::kRcSendOnly, op::kUdSendOnlyImm, op::kCnp}) {
      const PacketHeaders h = sample_headers(o, s.ipv6, s.vlan);
      const auto b = boundaries_of(h, o == op::kCnp ? 0 : 8);
      auto f = make_frame(h, sample_payload(o, 8));
      reinterpret_cast<Bth*>(f.data() + b.bth)->ack_req |= 0x7F;
      if (op_has(o, kHasDeth)) f[b.bth + op_info(o).deth + 4] = 0xA5;  // DETH byte 4: reserved
      if (op_has(o, kHasCnpBody)) f[b.bth + sizeof(Bth) + 15] = 0x5A;
      reseal(f);
      ParsedPacket pkt;
      ASSERT_EQ(parse_frame(f.data(), f.size(), &pkt), RxDrop::kNone) << op_name(o);
      const PacketHeaders d = decode_headers(pkt);
      EXPECT_EQ(d.bth.resv7, 0x7F);
      EXPECT_EQ(d.bth.ackreq, h.bth.ackreq);
      if (op_has(o, kHasDeth)) {
        EXPECT_EQ(d.deth.resv, 0xA5);
        EXPECT_EQ(d.deth.src_qp, h.deth.src_qp);
      }
      if (op_has(o, kHasCnpBody)) {
        EXPECT_EQ(d.cnp_resv[15], 0x5A);
      }
      EXPECT_EQ(rebuild(pkt), f) << op_name(o) << " ipv6=" << s.ipv6 << " vlan=" << s.vlan;
    }
  }
}

TEST(ParserAccepts, NonZeroPadBytesAreIgnoredAndRebuiltAsZeros) {
  for (Shape s : kShapes) {
    const PacketHeaders h = sample_headers(op::kRcSendOnly, s.ipv6, s.vlan);
    const auto b = boundaries_of(h, 5);
    const auto frame = make_frame(h, sample_payload(op::kRcSendOnly, 5));
    auto f = frame;
    for (size_t i = b.payload + 5; i < b.icrc; ++i) f[i] = 0xAA;
    reseal(f);
    ParsedPacket pkt;
    ASSERT_EQ(parse_frame(f.data(), f.size(), &pkt), RxDrop::kNone);
    EXPECT_EQ(pkt.payload_len, 5);
    EXPECT_EQ(rebuild(pkt), frame);  // the canonical form packet.h documents
  }
}

TEST(ParserAccepts, Ipv4ChecksumStoredAsNegativeZeroRebuildsAsPositiveZero) {
  const PacketHeaders h = sample_headers(op::kRcAck, false, false);
  const auto b = boundaries_of(h, 0);
  auto f = make_frame(h, {});
  auto& ip = *reinterpret_cast<Ipv4Hdr*>(f.data() + b.l3);
  // Pick the IP ID that makes the header's one's-complement sum 0xFFFF: its checksum is then 0x0000, and
  // 0xFFFF verifies too.
  for (uint32_t id = 0; id <= 0xFFFF; ++id) {
    ip.id.set(static_cast<uint16_t>(id));
    ip.csum.set(0);
    if (ipv4_checksum(ip) == 0) break;
  }
  ASSERT_EQ(ipv4_checksum(ip), 0);
  reseal(f);  // the ID is covered by the ICRC
  const auto canonical = f;
  ip.csum.set(0xFFFF);  // masked out of the ICRC
  ParsedPacket pkt;
  ASSERT_EQ(parse_frame(f.data(), f.size(), &pkt), RxDrop::kNone);
  EXPECT_EQ(rebuild(pkt), canonical);
}

TEST(RxDropCounters, CountByReasonWithNames) {
  RxDropCounters c;
  c.bump(RxDrop::kIcrc);
  c.bump(RxDrop::kIcrc);
  c.bump(RxDrop::kPadCount);
  EXPECT_EQ(c[RxDrop::kIcrc], 2u);
  EXPECT_EQ(c[RxDrop::kPadCount], 1u);
  EXPECT_STREQ(rx_drop_name(RxDrop::kIcrc), "bad_icrc");
  EXPECT_STREQ(rx_drop_name(RxDrop::kUdpPort), "udp_port_not_4791");
  for (size_t i = 0; i < static_cast<size_t>(RxDrop::kCount); ++i)
    EXPECT_NE(std::string(rx_drop_name(static_cast<RxDrop>(i))), "");
}

}  // namespace
}  // namespace uroce::wire
