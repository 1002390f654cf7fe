// The field's war stories of docs/war-stories.md, each asserted on its `uroce exp` scenario in virtual time
// (one seed): the direction always, the magnitude where the run is large enough to show it. Under the
// sanitizers (UROCE_SIM_MESSAGES below 10000, as scripts/test.sh sets it) the collectives run on fewer hosts
// and operations and only the direction is asserted.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tools/exp/runner.h"

namespace uroce::exp {
namespace {

bool small() {
  const char* env = std::getenv("UROCE_SIM_MESSAGES");
  return env != nullptr && std::strtoul(env, nullptr, 10) < 10000;
}

std::vector<VariantResult> run(const std::string& scenario, std::vector<std::string> knobs,
                               uint64_t duration_us = 0) {
  RunOptions o;
  o.seed = 1;
  o.duration_ns = duration_us * 1000;
  for (const std::string& k : knobs) o.knobs.set(k);
  return run_scenario(*find_scenario(scenario), o, "", false, stderr);
}

double busbw(const VariantResult& r) {
  EXPECT_TRUE(r.summary.has_collective) << r.name;
  EXPECT_GT(r.summary.collective.measured, 0u) << r.name;
  return r.summary.collective.busbw_gbyte_s;
}

// 0.1% loss halves AllReduce bus bandwidth with go-back-N (reported: ~50%); selective repeat keeps it.
TEST(WarStories, AllReduceAtPointOnePercentLossWithGoBackN) {
  const auto r =
      small() ? run("allreduce-loss", {"hosts_per_leaf=2", "channels=4", "iters=6", "size_mb=1", "loss=0.01"})
              : run("allreduce-loss", {});
  ASSERT_EQ(r.size(), 3u);
  const double lossless = busbw(r[0]), gbn = busbw(r[1]), sr = busbw(r[2]);
  std::printf("busbw GB/s: lossless %.2f, go-back-N %.2f (%.0f%%), selective repeat %.2f (%.0f%%)\n",
              lossless, gbn, 100 * gbn / lossless, sr, 100 * sr / lossless);
  EXPECT_GT(r[1].summary.retransmits, 0u);
  EXPECT_GE(sr, 0.9 * lossless);
  EXPECT_LT(gbn, sr);
  if (small()) return;
  EXPECT_LE(gbn, 0.60 * lossless);
  EXPECT_GE(gbn, 0.50 / 1.5 * lossless);  // within a factor 1.5 of the reported half
}

// ECN thresholds at 1/30 of the vendor's cost AllToAll most of its bus bandwidth (reported: ~70%).
TEST(WarStories, EcnThresholdsAtOneThirtiethOnAnAllToAll) {
  const auto r = small() ? run("ecn-threshold", {"hosts_per_leaf=2", "channels=2", "iters=3"})
                         : run("ecn-threshold", {});
  ASSERT_EQ(r.size(), 2u);
  const double vendor = busbw(r[0]), low = busbw(r[1]);
  std::printf("busbw GB/s: vendor thresholds %.2f, 1/30 %.2f (%.0f%% lost); CNPs %lu vs %lu\n", vendor, low,
              100 * (1 - low / vendor), static_cast<unsigned long>(r[0].summary.cnp_sent),
              static_cast<unsigned long>(r[1].summary.cnp_sent));
  EXPECT_GT(r[1].summary.cnp_sent, 2 * r[0].summary.cnp_sent);
  EXPECT_LT(low, 0.8 * vendor);
  if (small()) return;
  EXPECT_LT(low, 0.5 * vendor);
  EXPECT_GE(1 - low / vendor, 0.70 / 1.5);  // within a factor 1.5 of the reported 70%
}

// A stuck receiver's PFC storm stops innocent flows three hops away; flows that share no paused link run on.
// The switches' PFC watchdog confines it: the innocent flows keep moving.
TEST(WarStories, PfcStormSpreadsThroughTheLeafSpine) {
  RunOptions o;
  o.seed = 1;
  o.duration_ns = 2'000'000;
  o.knobs.set("storm_at_us=800");
  const Scenario& sc = *find_scenario("pfc-storm");
  std::vector<Variant> vs = sc.variants(o);
  ASSERT_EQ(vs.size(), 3u);
  std::vector<std::vector<double>> after(3);  // per variant, per flow: mean Gb/s from 1.1 ms on
  std::vector<Summary> sum;
  for (size_t v = 0; v < 3; ++v) {
    Experiment e(o.seed);
    vs[v].build(e);
    sum.push_back(e.run(o.duration_ns));
    size_t rows = 0;
    for (const auto& row : e.rates()) {
      if (row.t_ns < 1'100'000) continue;
      after[v].resize(row.gbps.size());
      for (size_t f = 0; f < row.gbps.size(); ++f) after[v][f] += row.gbps[f];
      ++rows;
    }
    ASSERT_GT(rows, 0u);
    for (double& g : after[v]) g /= static_cast<double>(rows);
  }
  ASSERT_EQ(after[1].size(), 5u);
  // Flows: 0 -> X, 0 -> V1, 1 -> V2 (across the spines), 2 -> 3 (leaf 0), 7 -> V1 (leaf 1).
  for (size_t f : {1, 2}) {
    EXPECT_GT(after[0][f], 10) << "healthy flow " << f;
    EXPECT_LT(after[1][f], 1) << "innocent flow " << f << " in the storm";
  }
  EXPECT_GT(after[1][3], 90);  // within leaf 0: no paused link on its path
  EXPECT_GT(after[1][4], 50);  // within leaf 1: its receiver's port is not paused
  EXPECT_EQ(sum[0].drops, 0u);
  EXPECT_EQ(sum[1].drops, 0u);
  EXPECT_GT(sum[1].paused_us, 5 * sum[0].paused_us);
  for (size_t f : {1, 2}) EXPECT_GT(after[2][f], 10) << "innocent flow " << f << " with the watchdog";
  EXPECT_EQ(sum[2].drops, 0u);
}

// Half the CNPs lost: DCQCN no longer holds the queue, PFC does (queue at the pause threshold, many more
// pause frames); with a quarter of that loss it still holds it.
TEST(WarStories, LostCnpsLeaveDcqcnBlind) {
  const auto r = small() ? run("cnp-loss", {"n=8"}, 2000) : run("cnp-loss", {});
  ASSERT_EQ(r.size(), 3u);
  const Summary &all = r[0].summary, &lossy = r[1].summary, &less = r[2].summary;
  EXPECT_EQ(r[1].name, "lose50%");
  EXPECT_LT(all.q_p99_kb * 1024, default_fabric().ecn.kmax_bytes);
  EXPECT_GT(lossy.q_p50_kb, 2 * all.q_p99_kb);  // PFC holds it, near n x XOFF
  EXPECT_GT(lossy.pause_frames, 4 * all.pause_frames);
  EXPECT_LT(less.q_p99_kb * 1024, default_fabric().ecn.kmax_bytes);
  for (const Summary* s : {&all, &lossy, &less}) EXPECT_EQ(s->drops, 0u);
}

}  // namespace
}  // namespace uroce::exp
