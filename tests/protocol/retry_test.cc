// Retry exhaustion and the local ACK timeout around it (IBA 9.7.6.1.3, C9-140): a peer
// that disappears gets retry_cnt retransmissions spaced by 4.096 us * 2^timeout of virtual time, then the
// oldest WQE completes with RETRY_EXC_ERR and every remaining one with WR_FLUSH_ERR.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::ProtoEnv;
using test::ProtoOptions;

ProtoOptions timer(uint8_t timeout, uint8_t retry_cnt) {
  ProtoOptions o;
  o.timeout = timeout;
  o.retry_cnt = retry_cnt;
  return o;
}

uint64_t ack_timeout_ns(uint8_t timeout) { return 4096ull << timeout; }

class PeerDisappears : public ::testing::TestWithParam<std::tuple<uint8_t, uint8_t>> {};

TEST_P(PeerDisappears, RetriesRetryCntTimesThenFailsAndFlushes) {
  const auto [timeout, retry_cnt] = GetParam();
  ProtoEnv env(timer(timeout, retry_cnt));
  env.unlimited_credits();
  const uint32_t p = env.opt.sq_psn;
  const uint64_t t = ack_timeout_ns(timeout);
  env.clock.set(1'000'000);
  const uint64_t t0 = env.now();
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 2000, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 2), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 8, 3, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 4, 0, 0, 0), 0);
  ASSERT_EQ(env.run().size(), 5u);

  // Nobody answers. Follow the device's deadlines and record when the oldest PSN goes out again.
  std::vector<uint64_t> resent_at;
  size_t frames = 0;
  for (int guard = 0; guard < 1000 && env.qp->state() != QpState::kErr; ++guard) {
    for (const Emitted& f : env.next()) {
      ++frames;
      if (f.psn() == p) resent_at.push_back(f.time_ns);
    }
  }
  ASSERT_EQ(resent_at.size(), retry_cnt);
  for (uint8_t k = 0; k < retry_cnt; ++k) EXPECT_EQ(resent_at[k], t0 + (k + 1ull) * t) << "retry " << int(k);
  EXPECT_EQ(frames, retry_cnt * 5u) << "each retry goes back to the oldest unacknowledged PSN";
  EXPECT_EQ(env.now(), t0 + (retry_cnt + 1ull) * t) << "the error comes one timeout after the last retry";
  EXPECT_EQ(env.dev->counters()[Counter::kTimeouts], retry_cnt + 1u);

  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 4u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(wc[i].wr_id, i + 1);
    EXPECT_EQ(wc[i].status, WcStatus::kWrFlushErr);
  }
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::kQpFatal);
  EXPECT_EQ(env.dev->next_deadline(), kNever);
  EXPECT_TRUE(env.advance(100 * t).empty());
}

INSTANTIATE_TEST_SUITE_P(TimeoutAndRetryCnt, PeerDisappears,
                         ::testing::Values(std::make_tuple(uint8_t{10}, uint8_t{3}),
                                           std::make_tuple(uint8_t{14}, uint8_t{7}),
                                           std::make_tuple(uint8_t{1}, uint8_t{1}),
                                           std::make_tuple(uint8_t{8}, uint8_t{0})));

TEST(LocalAckTimeout, RestartsOnProgressAndResendsOnlyWhatIsUnacknowledged) {
  ProtoEnv env(timer(10, 7));
  const uint32_t p = env.opt.sq_psn;
  const uint64_t t = ack_timeout_ns(10);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 2u);
  env.advance(t / 2);
  env.inject_ack(p);
  env.run();
  EXPECT_EQ(env.poll().size(), 1u);
  EXPECT_TRUE(env.advance(t - 1).empty()) << "the ACK was progress: the timer restarted";
  const std::vector<Emitted> f = env.advance(1);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), p + 1);
  EXPECT_EQ(f[0].time_ns, t / 2 + t);
  env.inject_ack(p + 1);
  env.run();
  EXPECT_EQ(env.poll().size(), 1u);
  EXPECT_EQ(env.dev->next_deadline(), kNever) << "nothing outstanding: no timer";
}

TEST(LocalAckTimeout, ProgressRefillsTheRetryBudget) {
  ProtoEnv env(timer(10, 1));
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 2u);
  EXPECT_EQ(env.next().size(), 2u);  // the one retry
  env.inject_ack(p);
  env.run();
  EXPECT_EQ(env.next().size(), 1u) << "an ACK gives back the whole retry_cnt";
  EXPECT_EQ(env.qp->state(), QpState::kRts);
  env.next();
  EXPECT_EQ(env.qp->state(), QpState::kErr);
}

TEST(LocalAckTimeout, TimeoutZeroDisablesTheTimer) {
  ProtoEnv env(timer(0, 7));
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  EXPECT_EQ(env.dev->next_deadline(), kNever);
  EXPECT_TRUE(env.advance(3'600'000'000'000ull).empty());
  EXPECT_EQ(env.qp->state(), QpState::kRts);
}

}  // namespace
}  // namespace uroce
