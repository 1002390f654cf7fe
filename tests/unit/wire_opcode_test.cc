#include <gtest/gtest.h>

#include "tests/support/frames.h"
#include "transport/wire/opcode.h"
#include "transport/wire/packet.h"

namespace uroce::wire {
namespace {

TEST(OpcodeTable, HasExactlyTheRcUcUdXrcAndCnpOpcodes) {
  // RC (with ATOMIC WRITE), UC, UD, CNP, XRC (each RC opcode again) and uroce's selective-repeat NAK.
  EXPECT_EQ(test::all_opcodes().size(), 24u + 12u + 2u + 1u + 24u + 1u);
  for (uint8_t o : test::all_opcodes()) {
    const uint32_t m = op_info(o).mask;
    EXPECT_EQ(__builtin_popcount(m & (kRc | kUc | kUd | kXrc | kIsCnp)), 1) << op_name(o);
    EXPECT_EQ((m & kHasXrceth) != 0, (m & kXrc) && (m & kIsRequest)) << op_name(o);
    if (!(m & kIsCnp)) {
      EXPECT_EQ(__builtin_popcount(m & (kFirst | kMiddle | kLast | kOnly)), 1) << op_name(o);
      EXPECT_EQ(__builtin_popcount(m & (kIsRequest | kIsResponse)), 1) << op_name(o);
    }
  }
}

TEST(OpcodeTable, HeaderLengthsMatchIbaTable) {
  // BTH 12, RETH 16, AETH 4, AtomicETH 28, AtomicAckETH 8, ImmDt 4, IETH 4, DETH 8 (IBA 9.2-9.3).
  EXPECT_EQ(op_info(op::kRcSendFirst).hdr_len, 12);
  EXPECT_EQ(op_info(op::kRcSendLastImm).hdr_len, 16);
  EXPECT_EQ(op_info(op::kRcWriteFirst).hdr_len, 28);
  EXPECT_EQ(op_info(op::kRcWriteLastImm).hdr_len, 16);
  EXPECT_EQ(op_info(op::kRcReadRequest).hdr_len, 28);
  EXPECT_EQ(op_info(op::kRcReadRespMiddle).hdr_len, 12);
  EXPECT_EQ(op_info(op::kRcReadRespLast).hdr_len, 16);
  EXPECT_EQ(op_info(op::kRcAck).hdr_len, 16);
  EXPECT_EQ(op_info(op::kRcAtomicAck).hdr_len, 24);
  EXPECT_EQ(op_info(op::kRcFetchAdd).hdr_len, 40);
  EXPECT_EQ(op_info(op::kRcSendOnlyInv).hdr_len, 16);
  EXPECT_EQ(op_info(op::kRcAtomicWrite).hdr_len, 28);  // BTH + RETH; the 8 bytes are payload
  EXPECT_EQ(op_info(op::kUcWriteOnlyImm).hdr_len, 32);
  EXPECT_EQ(op_info(op::kUdSendOnly).hdr_len, 20);
  EXPECT_EQ(op_info(op::kUdSendOnlyImm).hdr_len, 24);
  EXPECT_EQ(op_info(op::kCnp).hdr_len, 28);
}

TEST(OpcodeTable, ExtensionHeadersFollowWireOrder) {
  const OpInfo& w = op_info(op::kRcWriteOnlyImm);
  EXPECT_EQ(w.reth, 12);
  EXPECT_EQ(w.immdt, 28);
  const OpInfo& a = op_info(op::kRcAtomicAck);
  EXPECT_EQ(a.aeth, 12);
  EXPECT_EQ(a.atomic_ack_eth, 16);
  const OpInfo& u = op_info(op::kUdSendOnlyImm);
  EXPECT_EQ(u.deth, 12);
  EXPECT_EQ(u.immdt, 20);
}

TEST(OpcodeTable, ReceiveCompletionRules) {
  // Messages that consume a receive WQE: SEND (all forms) and WRITE with immediate.
  EXPECT_TRUE(op_has(op::kRcSendOnly, kConsumesRecvWqe));
  EXPECT_TRUE(op_has(op::kUcWriteLastImm, kConsumesRecvWqe));
  EXPECT_FALSE(op_has(op::kRcWriteOnly, kConsumesRecvWqe));
  EXPECT_FALSE(op_has(op::kRcSendFirst, kConsumesRecvWqe));
  EXPECT_FALSE(op_has(op::kRcReadRequest, kHasPayload));
  EXPECT_STREQ(op_name(op::kRcCmpSwap), "RC_CMP_SWAP");
  EXPECT_STREQ(op_name(0x15), "UNKNOWN");
}

// The memif bell's transmitter rings a peer armed for one-sided requests only for frames of these.
TEST(FrameClass, OneSidedRequestsAreWritesReadRequestsAndAtomics) {
  const struct { bool ipv6, vlan; } shapes[] = {{false, false}, {false, true}, {true, false}, {true, true}};
  for (uint8_t o : test::all_opcodes()) {
    const uint32_t m = op_info(o).mask;
    const bool want = (m & kIsRequest) && (m & (kOpWrite | kOpRead | kOpAtomic));
    for (const auto& s : shapes) {
      const PacketHeaders h = test::sample_headers(o, s.ipv6, s.vlan);
      const auto payload = test::sample_payload(o, 8);
      const auto frame = test::make_frame(h, payload);
      const size_t bth = test::boundaries_of(h, payload.size()).bth;
      EXPECT_EQ(frame_is_one_sided_request(frame.data(), frame.size()), want)
          << op_name(o) << " ipv6=" << s.ipv6 << " vlan=" << s.vlan;
      // Cut anywhere (a heap copy of exactly n bytes, for ASan): never read past the end, and once the
      // opcode is gone, never a request.
      for (size_t n = 0; n < frame.size(); ++n) {
        const std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<long>(n));
        const bool got = frame_is_one_sided_request(cut.data(), cut.size());
        if (n <= bth) {
          EXPECT_FALSE(got) << op_name(o) << " cut at " << n;
        }
      }
    }
  }
  for (uint8_t o : {op::kRcWriteOnly, op::kRcReadRequest, op::kRcCmpSwap, op::kRcFetchAdd, op::kRcAtomicWrite,
                    op::kUcWriteOnly})
    EXPECT_TRUE(op_has(o, kIsRequest)) << op_name(o);
  const auto write = test::make_frame(test::sample_headers(op::kRcWriteOnly, false, false), {1, 2, 3, 4});
  EXPECT_TRUE(frame_is_one_sided_request(write.data(), write.size()));
  for (uint8_t o :
       {op::kRcSendOnly, op::kRcAck, op::kRcReadRespOnly, op::kRcAtomicAck, op::kUdSendOnly, op::kCnp}) {
    const auto f = test::make_frame(test::sample_headers(o, false, false), test::sample_payload(o, 4));
    EXPECT_FALSE(frame_is_one_sided_request(f.data(), f.size())) << op_name(o);
  }
  // Another UDP port is not RoCEv2.
  auto other = write;
  other[14 + 20 + 3] ^= 0xFF;  // the low byte of the destination port (IPv4 without VLAN: UDP at 34)
  EXPECT_FALSE(frame_is_one_sided_request(other.data(), other.size()));
}

}  // namespace
}  // namespace uroce::wire
