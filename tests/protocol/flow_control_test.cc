// Requester flow control: RNR NAK back-off and its retry budget (IBA 9.7.5.2.8; rnr_retry 7 = forever) in
// virtual time, and end-to-end credits (IBA 9.7.7.2): with no credit only one WQE-consuming message is in
// flight as a probe; an ACK's credit count releases the rest.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::ProtoEnv;
using test::ProtoOptions;

constexpr uint8_t kRnrCode5 = 5;  // IBA table 45: 0.06 ms
constexpr uint64_t kRnrCode5Ns = 60'000;

ProtoOptions rnr(uint8_t retries) {
  ProtoOptions o;
  o.rnr_retry = retries;
  return o;
}

TEST(Rnr, RequesterWaitsTheRnrTimerThenResends) {
  ProtoEnv env(rnr(3));
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.advance(1000);
  env.inject_ack(p, AethKind::kRnrNak, kRnrCode5);
  EXPECT_TRUE(env.run().empty());
  const uint64_t nak_at = env.now();
  EXPECT_GE(env.dev->next_deadline(), nak_at + kRnrCode5Ns);
  EXPECT_TRUE(env.advance(kRnrCode5Ns - 1).empty()) << "resent before the RNR timer expired";
  const std::vector<Emitted> f = env.advance(1);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcSendOnly);
  EXPECT_EQ(f[0].psn(), p);
  EXPECT_EQ(f[0].time_ns, nak_at + kRnrCode5Ns);
  EXPECT_EQ(env.dev->counters()[Counter::kRnrNakRcvd], 1u);
  env.inject_ack(p);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST(Rnr, RetryBudgetIsTheNumberOfResends) {
  ProtoEnv env(rnr(3));
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 2), 0);
  ASSERT_EQ(env.run().size(), 1u);
  int resends = 0;
  for (int nak = 0; nak < 4; ++nak) {
    env.inject_ack(p, AethKind::kRnrNak, kRnrCode5);
    env.run();
    const std::vector<Emitted> f = env.next();
    resends += static_cast<int>(f.size());
  }
  EXPECT_EQ(resends, 3);
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
}

TEST(Rnr, RnrRetryZeroFailsOnTheFirstRnrNak) {
  ProtoEnv env(rnr(0));
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 2), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.inject_ack(p, AethKind::kRnrNak, kRnrCode5);
  env.run();
  EXPECT_TRUE(env.next().empty());
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::kQpFatal);
}

TEST(Rnr, RnrRetrySevenRetriesForever) {
  ProtoEnv env(rnr(7));
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  for (int nak = 0; nak < 100; ++nak) {
    env.inject_ack(p, AethKind::kRnrNak, 1);  // 0.01 ms
    env.run();
    const std::vector<Emitted> f = env.next();
    ASSERT_EQ(f.size(), 1u) << "RNR NAK " << nak;
    EXPECT_EQ(f[0].psn(), p);
  }
  EXPECT_EQ(env.qp->state(), QpState::kRts);
  env.inject_ack(p);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST(Credits, ZeroCreditsAllowOneProbeAtATime) {
  ProtoEnv env;
  const uint32_t p = env.opt.sq_psn;
  for (uint64_t i = 0; i < 6; ++i) ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, i), 0);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "no credits advertised yet: one probe";
  EXPECT_EQ(f[0].psn(), p);
  EXPECT_TRUE(env.advance(1'000'000).empty()) << "held while the probe is unanswered";

  env.inject_ack(p, AethKind::kAck, 0);  // the responder has no receive WQE left
  EXPECT_TRUE(env.run().empty()) << "the probe waits for a credit update first";
  f = env.next();
  ASSERT_EQ(f.size(), 1u) << "still no credit: the next probe only";
  EXPECT_EQ(f[0].psn(), p + 1);
  EXPECT_EQ(f[0].time_ns, env.now());

  env.inject_ack(p + 1, AethKind::kAck, 3);  // three receive WQEs: credit code 3
  f = env.run();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[2].psn(), p + 4);
  EXPECT_TRUE(env.advance(1'000'000).empty());

  // Credits count from the acknowledged message: the ACK of p + 2 with 3 credits leaves two messages in
  // flight (p + 3, p + 4), so one more may go.
  env.inject_ack(p + 2, AethKind::kAck, 3);
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), p + 5);
  EXPECT_GE(env.dev->counters()[Counter::kCreditStall], 1u);
}

// After an ACK that advertised no credit, the probe waits params::kCreditProbeDelayNs: a credit update (a
// repeat of that ACK with a new count, as a uroce responder sends when its application posts a receive)
// releases the SENDs at once, with no RNR NAK and no RNR timer.
TEST(Credits, ACreditUpdateReleasesSendsBeforeTheProbeIsDue) {
  ProtoEnv env;
  const uint32_t p = env.opt.sq_psn;
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, i), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.inject_ack(p, AethKind::kAck, 0);
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.dev->next_deadline(), env.now() + params::kCreditProbeDelayNs);
  EXPECT_TRUE(env.advance(params::kCreditProbeDelayNs - 1).empty());
  env.inject_ack(p, AethKind::kAck, 2);  // the same PSN again: two receive WQEs now
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].psn(), p + 1);
  EXPECT_EQ(f[1].psn(), p + 2);
  EXPECT_EQ(env.dev->counters()[Counter::kDuplicateResponse], 0u);
}

// The responder's half: once an ACK said it had no receive WQE, the next receive posted sends that ACK
// again with the new count; a receive posted while credits were advertised sends nothing.
TEST(Credits, AResponderThatRanOutSendsAnUpdateWhenAReceiveIsPosted) {
  ProtoEnv env;
  const uint32_t q = env.opt.rq_psn;
  ASSERT_EQ(env.post_recv(0, 1024, 1), 0);
  PacketHeaders h = env.peer_headers(op::kRcSendOnly, q);
  h.bth.ackreq = true;
  env.inject(h, test::pattern(64, 1));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].psn(), q);
  EXPECT_EQ(f[0].aeth_value(), 0) << "no receive WQE left: credit code 0";

  ASSERT_EQ(env.post_recv(1024, 1024, 2), 0);
  ASSERT_EQ(env.post_recv(2048, 1024, 3), 0);
  f = env.run();
  ASSERT_EQ(f.size(), 1u) << "one update, queued by the first receive posted";
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].psn(), q);
  EXPECT_EQ(f[0].h.aeth.msn, 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(aeth_credit_count(f[0].aeth_value()), 2) << "the count as the update leaves";
  EXPECT_EQ(env.dev->counters()[Counter::kCreditUpdateSent], 1u);

  ASSERT_EQ(env.post_recv(3072, 1024, 4), 0);
  EXPECT_TRUE(env.run().empty()) << "credits were advertised: no update";
}

TEST(Credits, WritesAndReadsNeedNoCredit) {
  ProtoEnv env;
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, i, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 8, 3, 0x1000, 1), 0);
  EXPECT_EQ(env.run().size(), 4u);
}

TEST(Credits, UnlimitedCreditCodeLiftsTheLimit) {
  ProtoEnv env;
  const uint32_t p = env.opt.sq_psn;
  for (uint64_t i = 0; i < 40; ++i) ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, i), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.inject_ack(p, AethKind::kAck, 31);
  EXPECT_EQ(env.run().size(), 39u);
}

TEST(RdAtomicLimit, AtMostMaxRdAtomicReadsAndAtomicsInFlight) {
  ProtoOptions o;
  o.max_rd_atomic = 2;
  ProtoEnv env(o);
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kAtomicFetchAndAdd, 64, 8, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 128, 8, 3, 0x1000, 1), 0);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u) << "max_rd_atomic is 2";
  env.inject_read_resp(op::kRcReadRespOnly, p, test::pattern(8, 1));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRequest);
  EXPECT_EQ(f[0].psn(), p + 2);
}

TEST(Fence, FencedWqeWaitsForEarlierReadsAndAtomics) {
  ProtoEnv env;
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 64, 8, 2, 0x1000, 1, kSendSignaled | kSendFence), 0);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "the fenced WRITE waits for the READ";
  env.inject_read_resp(op::kRcReadRespOnly, p, test::pattern(8, 1));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcWriteOnly);
  EXPECT_EQ(f[0].psn(), p + 1);
}

}  // namespace
}  // namespace uroce
