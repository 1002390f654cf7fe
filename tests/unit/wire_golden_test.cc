// The wire layer against real traffic: hardware NICs (Huawei, ConnectX-4 Lx) and Linux Soft-RoCE frames from
// ../shared/golden. Each RoCEv2 frame must parse, verify its ICRC, and rebuild byte for byte from its fields.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "tests/support/golden.h"
#include "tests/support/pcap_io.h"
#include "transport/wire/packet.h"

namespace uroce::wire {
namespace {

using test::golden_dir;

#define REQUIRE_GOLDEN()                                           \
  if (golden_dir().empty())                                        \
  GTEST_SKIP() << "golden captures not found beside the checkout " \
                  "(set UROCE_GOLDEN_DIR to ../shared/golden)"

bool is_roce_v2(const std::string& kind) { return kind.rfind("RoCEv2", 0) == 0; }

// Rebuilds a parsed frame from its decoded fields and returns the bytes.
std::vector<uint8_t> rebuild(const ParsedPacket& pkt) {
  const PacketHeaders h = decode_headers(pkt);
  std::vector<uint8_t> out(headers_len(h) + pkt.payload_len + trailer_len(pkt.payload_len));
  const size_t n = build_frame(h, ConstBytes(pkt.payload(), pkt.payload_len), out.data());
  out.resize(n);
  return out;
}

TEST(GoldenVectors, CrcLibraryMatchesZlibDefinition) {
  REQUIRE_GOLDEN();
  for (const auto& v : test::load_icrc_vectors())
    EXPECT_EQ(crc32_update(0, v.icrc_input), v.expected_icrc) << v.id;
}

TEST(GoldenVectors, EveryRoceV2FrameParsesVerifiesAndRebuildsExactly) {
  REQUIRE_GOLDEN();
  int checked = 0, ipv6 = 0;
  for (const auto& v : test::load_icrc_vectors()) {
    if (!is_roce_v2(v.kind)) continue;  // RoCE v1 and native IB wait for the IB link mode
    SCOPED_TRACE(v.id + " " + v.opname);
    ParsedPacket pkt;
    ASSERT_EQ(parse_frame(v.frame.data(), v.frame.size(), &pkt), RxDrop::kNone);
    EXPECT_EQ(pkt.opcode, v.opcode);
    EXPECT_EQ(bth_psn(pkt.bth()), v.psn);
    EXPECT_EQ(bth_dqpn(pkt.bth()), v.dqpn);
    EXPECT_EQ(icrc_load(pkt.frame + pkt.frame_len - kIcrcLen), v.expected_icrc);
    EXPECT_EQ(icrc_roce_v2_contiguous(pkt.frame + pkt.l3_off, pkt.frame + pkt.frame_len - kIcrcLen),
              v.expected_icrc);
    const std::vector<uint8_t> original(v.frame.begin(), v.frame.begin() + pkt.frame_len);
    EXPECT_EQ(rebuild(pkt), original);
    ipv6 += pkt.ipv6;
    ++checked;
  }
  EXPECT_GE(checked, 22);
  EXPECT_GE(ipv6, 1);
}

TEST(GoldenVectors, IcrcOverNonContiguousPiecesMatches) {
  REQUIRE_GOLDEN();
  for (const auto& v : test::load_icrc_vectors()) {
    if (!is_roce_v2(v.kind)) continue;
    ParsedPacket pkt;
    ASSERT_EQ(parse_frame(v.frame.data(), v.frame.size(), &pkt), RxDrop::kNone) << v.id;
    const uint8_t* after_bth = pkt.frame + pkt.bth_off + sizeof(Bth);
    const uint8_t* end = pkt.frame + pkt.frame_len - kIcrcLen;
    const size_t rest = static_cast<size_t>(end - after_bth);
    // Split what follows the BTH into 1..3 pieces at every pair of cut points.
    for (size_t a = 0; a <= rest; a += 7) {
      for (size_t b = a; b <= rest; b += 13) {
        const ConstBytes pieces[3] = {{after_bth, a}, {after_bth + a, b - a}, {after_bth + b, rest - b}};
        ASSERT_EQ(icrc_roce_v2(pkt.frame + pkt.l3_off, pieces), v.expected_icrc)
            << v.id << " cut " << a << "," << b;
      }
    }
  }
}

TEST(GoldenCaptures, RoceV2PacketsParseWithZeroIcrcFailures) {
  REQUIRE_GOLDEN();
  std::map<std::string, int> roce_per_file;
  for (const auto& entry : std::filesystem::directory_iterator(golden_dir())) {
    if (entry.path().extension() != ".pcap") continue;
    const test::PcapFile file = test::read_pcap(entry.path());
    if (file.linktype != 1) continue;  // DLT_EN10MB only; the ERF InfiniBand capture is for the IB mode
    const std::string name = entry.path().filename();
    int& roce = roce_per_file[name];
    for (const auto& f : file.frames) {
      ParsedPacket pkt;
      const RxDrop r = parse_frame(f.bytes.data(), f.bytes.size(), &pkt);
      // ARP, TCP, ICMPv6 and RoCE v1 frames share these captures: they are not RoCEv2.
      if (r == RxDrop::kEtherType || r == RxDrop::kNotUdp || r == RxDrop::kUdpPort) continue;
      ++roce;
      ASSERT_EQ(r, RxDrop::kNone) << name << ": " << rx_drop_name(r);
      EXPECT_EQ(rebuild(pkt), std::vector<uint8_t>(f.bytes.begin(), f.bytes.begin() + pkt.frame_len)) << name;
    }
  }
  // Counts from PROVENANCE.md.
  EXPECT_EQ(roce_per_file["oferby_proxy__roce.pcap"], 105);
  EXPECT_EQ(roce_per_file["montybeatnik_rdma-roce-lab__roce_capture_read-write-ecn.pcap"], 12);
  EXPECT_EQ(roce_per_file["montybeatnik_rdma-roce-lab__test.pcap"], 12);
  EXPECT_EQ(roce_per_file["hexvectors_from_sources.pcap"], 4);
}

TEST(GoldenVectors, HardwareCnpHasTheSpecifiedShape) {
  REQUIRE_GOLDEN();
  for (const auto& v : test::load_icrc_vectors()) {
    if (v.opname != "CNP") continue;
    ParsedPacket pkt;
    ASSERT_EQ(parse_frame(v.frame.data(), v.frame.size(), &pkt), RxDrop::kNone);
    EXPECT_TRUE(pkt.op().mask & kIsCnp);
    EXPECT_EQ(bth_pkey(pkt.bth()), 0xFFFF);
    EXPECT_TRUE(bth_becn(pkt.bth()));
    EXPECT_EQ(bth_psn(pkt.bth()), 0u);
    EXPECT_EQ(pkt.payload_len, 0);
    return;
  }
  FAIL() << "no CNP vector";
}

}  // namespace
}  // namespace uroce::wire
