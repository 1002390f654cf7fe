// Responder, invalid requests (IBA 9.7.5.1.3 / 9.9.3 class C): an opcode out of sequence, a misaligned
// atomic, a WRITE whose payload disagrees with its RETH length, a packet of the wrong size, and a message
// longer than its receive buffer. Each is NAKed with code 1 at the offending PSN and ends the QP.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;

constexpr uint32_t kPsn = 0x500;
constexpr uint8_t kNakInvReq = 1;

struct Pkt {
  uint8_t opcode;
  uint32_t payload;
  uint32_t reth_len = 0;  // for opcodes with a RETH
  uint64_t atomic_off = 0;
};

struct Case {
  const char* name;
  std::vector<Pkt> pkts;                         // sent at kPsn, kPsn + 1, ...; the last one is the bad one
  WcStatus recv_status = WcStatus::kWrFlushErr;  // the first receive WQE's completion
};

class ResponderInvalid : public ::testing::TestWithParam<Case> {};

TEST_P(ResponderInvalid, NaksInvalidRequestAtTheOffendingPsn) {
  const Case& c = GetParam();
  ProtoEnv env;
  ASSERT_EQ(env.post_recv(0, 1500, 1), 0);
  ASSERT_EQ(env.post_recv(2048, 1500, 2), 0);
  uint32_t psn = kPsn;
  for (const Pkt& p : c.pkts) {
    PacketHeaders h = env.peer_headers(p.opcode, psn++);
    h.reth = {env.addr(8192), env.mr->rkey, p.reth_len};
    h.atomic = {env.addr(8192 + p.atomic_off), env.mr->rkey, 1, 0};
    env.inject(h, pattern(p.payload, 1));
  }
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kNak);
  EXPECT_EQ(f[0].aeth_value(), kNakInvReq);
  EXPECT_EQ(f[0].psn(), psn - 1);
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, c.recv_status);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::kQpReqErr);
  EXPECT_EQ(env.dev->counters()[Counter::kInvReqNakSent], 1u);
}

const Case kCases[] = {
    {"SendMiddleWithoutFirst", {{op::kRcSendMiddle, 1024}}},
    {"SendLastWithoutFirst", {{op::kRcSendLast, 10}}},
    {"WriteMiddleWithoutFirst", {{op::kRcWriteMiddle, 1024}}},
    {"WriteLastImmWithoutFirst", {{op::kRcWriteLastImm, 10}}},
    // A WRITE packet inside a SEND: the receive WQE the SEND took completes with the error.
    {"WriteMiddleInsideSend",
     {{op::kRcSendFirst, 1024}, {op::kRcWriteMiddle, 1024}},
     WcStatus::kRemInvReqErr},
    {"NewSendBeforeTheLastOneEnded",
     {{op::kRcSendFirst, 1024}, {op::kRcSendOnly, 8}},
     WcStatus::kRemInvReqErr},
    {"SendMiddleInsideWrite", {{op::kRcWriteFirst, 1024, 3000}, {op::kRcSendMiddle, 1024}}},
    {"ReadInsideWrite", {{op::kRcWriteFirst, 1024, 3000}, {op::kRcReadRequest, 0, 8}}},
    {"MisalignedAtomic", {{op::kRcFetchAdd, 0, 0, 4}}},
    {"WriteLongerThanReth", {{op::kRcWriteOnly, 16, 8}}},
    {"WriteShorterThanReth", {{op::kRcWriteOnly, 8, 16}}},
    {"MultiPacketWriteLongerThanReth", {{op::kRcWriteFirst, 1024, 1500}, {op::kRcWriteMiddle, 1024}}},
    {"FirstPacketShorterThanMtu", {{op::kRcSendFirst, 1000}}},
    {"MiddlePacketShorterThanMtu", {{op::kRcWriteFirst, 1024, 3000}, {op::kRcWriteMiddle, 1000}}},
    {"OnlyPacketLongerThanMtu", {{op::kRcSendOnly, 1028}}},
};

INSTANTIATE_TEST_SUITE_P(Cases, ResponderInvalid, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// A message longer than its receive buffer: the requester is NAKed with an invalid request, the receive
// completes with a local length error (IBA 9.9.3 class C; ibv_wc_status LOC_LEN_ERR), at the packet that
// overflows it.
class ResponderInvalidLength : public ::testing::TestWithParam<bool> {};

TEST_P(ResponderInvalidLength, ReceiveBufferTooSmallCompletesWithLocalLengthError) {
  const bool multi = GetParam();
  ProtoEnv env;
  ASSERT_EQ(env.post_recv(0, multi ? 1500 : 64, 1), 0);
  ASSERT_EQ(env.post_recv(2048, 64, 2), 0);
  if (multi) env.inject(env.peer_headers(op::kRcSendFirst, kPsn), pattern(1024, 1));
  PacketHeaders h = env.peer_headers(multi ? op::kRcSendLast : op::kRcSendOnly, multi ? kPsn + 1 : kPsn);
  h.bth.ackreq = true;
  env.inject(h, pattern(multi ? 500 : 65, 1));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kNak);
  EXPECT_EQ(f[0].aeth_value(), kNakInvReq);
  EXPECT_EQ(f[0].psn(), h.bth.psn);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::kQpReqErr);
}

INSTANTIATE_TEST_SUITE_P(SingleAndMultiPacket, ResponderInvalidLength, ::testing::Bool());

}  // namespace
}  // namespace uroce
