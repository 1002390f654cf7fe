// The simulated outcomes of issue 6, "Done when" 2, asserted on the deterministic simulation (virtual time,
// one seed): the same runs bench_cc_sim prints and docs/cc-results.md records.
#include <gtest/gtest.h>

#include "tools/exp/runner.h"

namespace uroce::exp {
namespace {

std::vector<VariantResult> run(const std::string& scenario, std::vector<std::string> knobs = {},
                               uint64_t duration_us = 0) {
  RunOptions o;
  o.seed = 1;
  o.duration_ns = duration_us * 1000;
  for (const std::string& k : knobs) o.knobs.set(k);
  return run_scenario(*find_scenario(scenario), o, "", false, stderr);
}

TEST(CcResultsTest, Dcqcn16To1IncastIsFairFullAndShallow) {
  const Summary s = run("incast", {"n=16"}).at(0).summary;
  EXPECT_GE(s.utilisation, 0.95);
  EXPECT_GE(s.jain, 0.95);
  EXPECT_LT(s.q_p99_kb * 1024, default_fabric().ecn.kmax_bytes);
  EXPECT_EQ(s.drops, 0u);
  EXPECT_GT(s.cnp_sent, 0u);
}

TEST(CcResultsTest, PfcOnlySendsMorePauseFramesThanDcqcnPlusPfc) {
  const auto r = run("pfc-vs-dcqcn");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_GT(r[0].summary.pause_frames, r[1].summary.pause_frames);
  EXPECT_EQ(r[0].summary.drops, 0u);
  EXPECT_EQ(r[1].summary.drops, 0u);
}

TEST(CcResultsTest, TwoFlowsConvergeToWithinTenPercentOfFairShare) {
  const Summary s = run("fair2").at(0).summary;
  const double fair = s.total_gbps / 2;
  EXPECT_GE(s.min_flow_gbps, 0.9 * fair);
  EXPECT_LE(s.max_flow_gbps, 1.1 * fair);
  EXPECT_GE(s.utilisation, 0.9);
}

TEST(CcResultsTest, EcmpPolarizesWithAFixedSourcePort) {
  const auto r = run("ecmp");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_LT(r[0].summary.total_gbps, 105);        // one 100 Gb/s uplink
  EXPECT_GT(r[1].summary.total_gbps, 2 * 100.0);  // spread over several
}

TEST(CcResultsTest, CreditsAreLosslessWithoutPauseFrames) {
  const auto r = run("credit-vs-pfc", {"n=4"}, 1000);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].summary.drops, 0u);
  EXPECT_EQ(r[1].summary.drops, 0u);
  EXPECT_GT(r[0].summary.pause_frames, 0u);
  EXPECT_EQ(r[1].summary.pause_frames, 0u);
  EXPECT_GT(r[1].summary.utilisation, 0.95);
}

TEST(CcResultsTest, CyclicRoutesDeadlockUnderPfc) {
  const auto r = run("pfc-deadlock");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].summary.total_gbps, 0);  // frozen for the whole window, nothing dropped
  EXPECT_EQ(r[0].summary.drops, 0u);
  EXPECT_GT(r[0].summary.pause_frames, 0u);
  EXPECT_GT(r[1].summary.total_gbps, 390);  // the same flows on shortest paths
}

}  // namespace
}  // namespace uroce::exp
