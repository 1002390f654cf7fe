// The collective bookkeeping of tools/exp/collective.h on hand-made acknowledgement counts: which bytes a
// flow may post, when steps complete, and nccl-tests' bandwidth formulas.
#include "tools/exp/collective.h"

#include <gtest/gtest.h>

namespace uroce::exp {
namespace {

CollectiveSpec ring(uint32_t n, uint32_t channels, uint64_t bytes, uint32_t iters) {
  CollectiveSpec s;
  s.kind = CollectiveKind::kRingAllReduce;
  for (uint32_t i = 0; i < n; ++i) s.ranks.push_back(i);
  s.channels = channels;
  s.bytes = bytes;
  s.iterations = iters;
  s.warmup = 1;
  s.barrier = false;
  return s;
}

TEST(Collective, RingAllReduceFlowsAndSteps) {
  const Collective c(ring(4, 2, 8 << 20, 2));
  ASSERT_EQ(c.edges().size(), 8u);  // 4 ranks x 2 channels
  EXPECT_EQ(c.edges()[0].src, 0u);
  EXPECT_EQ(c.edges()[0].dst, 1u);
  EXPECT_EQ(c.edges()[7].src, 3u);
  EXPECT_EQ(c.edges()[7].dst, 0u);
  EXPECT_EQ(c.steps_per_op(), 6u);                  // 2(n-1)
  EXPECT_EQ(c.chunk_bytes(), uint64_t{1} << 20);    // 8 MiB / 4 ranks / 2 channels
  EXPECT_EQ(c.total_bytes(0), uint64_t{12} << 20);  // 6 steps x 2 operations
}

TEST(Collective, AStepWaitsForTheRingNeighboursPreviousStep) {
  const Collective c(ring(4, 2, 8 << 20, 2));
  const uint64_t chunk = c.chunk_bytes();
  std::vector<uint64_t> acked(8, 0);
  EXPECT_EQ(c.allowed(2, acked), chunk);  // rank 1, channel 0: step 0 needs nothing
  acked[1] = 5 * chunk;                   // rank 0's channel 1 does not feed rank 1's channel 0 ...
  EXPECT_EQ(c.allowed(2, acked), chunk);
  EXPECT_EQ(c.allowed(3, acked), 6 * chunk);  // ... but its channel 1
  acked[0] = 3 * chunk;  // rank 0 channel 0 finished steps 0..2: rank 1 channel 0 may post step 3
  EXPECT_EQ(c.allowed(2, acked), 4 * chunk);
  acked[0] = 100 * chunk;
  EXPECT_EQ(c.allowed(2, acked), c.total_bytes(2));  // never beyond the run's bytes
}

TEST(Collective, WithABarrierNoRankStartsTheNextOperationEarly) {
  CollectiveSpec s = ring(4, 2, 8 << 20, 2);
  s.barrier = true;
  Collective c(s);
  const uint64_t chunk = c.chunk_bytes();
  std::vector<uint64_t> acked(8, 6 * chunk);  // every flow has finished operation 1's six steps ...
  acked[7] = 5 * chunk;                       // ... but rank 3's channel 1
  c.update(1000, acked);
  EXPECT_EQ(c.allowed(2, acked), 6 * chunk);  // rank 1 channel 0 would be ready for step 7, but waits
  acked[7] = 6 * chunk;
  c.update(2000, acked);
  EXPECT_EQ(c.allowed(2, acked), 7 * chunk);
}

TEST(Collective, StepTimesAndBandwidthsAsNcclTestsDefineThem) {
  Collective c(ring(4, 1, 4 << 20, 3));
  const uint64_t chunk = c.chunk_bytes();
  std::vector<uint64_t> acked(4, 0);
  // Every step takes 100 us on every flow except one slow flow in step 7 (300 us): it sets the pace.
  uint64_t t = 0;
  for (uint64_t g = 1; g <= 18; ++g) {
    t += g == 8 ? 300'000 : 100'000;
    for (uint64_t& a : acked) a = g * chunk;
    acked[2] = g == 8 ? 7 * chunk : g * chunk;
    c.update(t - (g == 8 ? 200'000 : 0), acked);  // before the slow flow: the step is not done
    acked[2] = g * chunk;
    c.update(t, acked);
  }
  EXPECT_TRUE(c.done());
  const CollectiveResult r = c.result(0);
  EXPECT_EQ(r.iterations_done, 3u);
  EXPECT_EQ(r.measured, 2u);
  EXPECT_DOUBLE_EQ(r.step_p50_us, 100);
  EXPECT_DOUBLE_EQ(r.step_max_us, 300);
  EXPECT_DOUBLE_EQ(r.op_max_us, 800);      // operation 2 holds the slow step: 5 x 100 + 300
  EXPECT_DOUBLE_EQ(r.op_mean_us, 700);     // (800 + 600) / 2
  const double algbw = (4 << 20) / 700e3;  // bytes per ns = GB/s
  EXPECT_DOUBLE_EQ(r.algbw_gbyte_s, algbw);
  EXPECT_DOUBLE_EQ(r.busbw_gbyte_s, algbw * 2 * 3 / 4);
}

TEST(Collective, AllToAllWaitsForEverythingTheRankSendsAndReceives) {
  CollectiveSpec s = ring(3, 1, 3 << 20, 2);
  s.kind = CollectiveKind::kAllToAll;
  const Collective c(s);
  ASSERT_EQ(c.edges().size(), 6u);  // 3 x 2 ordered pairs
  EXPECT_EQ(c.steps_per_op(), 1u);
  const uint64_t chunk = c.chunk_bytes();
  std::vector<uint64_t> acked(6, chunk);
  acked[2] = 0;  // flow 1 -> 0 is not done: rank 0 (it receives) and rank 1 (it sends) wait
  EXPECT_EQ(c.allowed(0, acked), chunk);      // 0 -> 1
  EXPECT_EQ(c.allowed(4, acked), 2 * chunk);  // 2 -> 0: rank 2 finished its first operation
}

TEST(Collective, RejectsDegenerateSpecs) {
  EXPECT_THROW(Collective(ring(1, 1, 1 << 20, 2)), std::invalid_argument);
  EXPECT_THROW(Collective(ring(4, 0, 1 << 20, 2)), std::invalid_argument);
  EXPECT_THROW(Collective(ring(4, 4, 8, 2)), std::invalid_argument);
  EXPECT_THROW(Collective(ring(4, 1, 1 << 20, 1)), std::invalid_argument);  // nothing left to measure
}

}  // namespace
}  // namespace uroce::exp
