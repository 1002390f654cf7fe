// DCTCP and Swift over the simulator (transport + fabric model, virtual time, one seed): a 16:1 incast at
// 100 Gb/s through one switch, the bottleneck the switch port to the receiver. Each algorithm must hold the
// bottleneck queue far below what the same incast builds without congestion control ("none", measured in the
// same run: the queue then sits at the PFC pause threshold, ~1.9 MiB), share the link fairly (Jain >= 0.9)
// and keep it busy, without drops. DCQCN (the scenario's tuned defaults) passes the same criteria here.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "tools/exp/runner.h"

namespace uroce::exp {
namespace {

constexpr uint32_t kSenders = 16;
constexpr uint64_t kDurationUs = 10000;

// One incast run with `cc` (memoised: the baseline serves every case).
const Summary& incast(const std::string& cc) {
  static std::map<std::string, Summary> done;
  auto it = done.find(cc);
  if (it != done.end()) return it->second;
  RunOptions o;
  o.seed = 1;
  o.cc = cc;
  o.duration_ns = kDurationUs * 1000;
  o.knobs.set("n=" + std::to_string(kSenders));
  const Summary s = run_scenario(*find_scenario("incast"), o, "", false, stderr).at(0).summary;
  std::printf(
      "%-6s q_p50 %7.1f KiB  q_p99 %7.1f KiB  q_max %7.1f KiB  jain %.3f  util %.3f  drops %lu  "
      "retx %lu  marked %lu  flows %.1f..%.1f Gb/s\n",
      cc.c_str(), s.q_p50_kb, s.q_p99_kb, s.q_max_kb, s.jain, s.utilisation,
      static_cast<unsigned long>(s.drops), static_cast<unsigned long>(s.retransmits),
      static_cast<unsigned long>(s.ecn_marked), s.min_flow_gbps, s.max_flow_gbps);
  return done.emplace(cc, s).first->second;
}

void expect_bounded_fair_and_busy(const std::string& cc) {
  const Summary& none = incast("none");
  const Summary& s = incast(cc);
  EXPECT_LT(s.q_p99_kb, none.q_p99_kb / 4) << cc << " against none";
  EXPECT_GE(s.jain, 0.9) << cc;
  EXPECT_GE(s.utilisation, 0.9) << cc;
  EXPECT_EQ(s.drops, 0u) << cc;
}

TEST(CcIncast, DctcpHoldsTheQueueSharesFairlyAndKeepsTheLinkBusy) { expect_bounded_fair_and_busy("dctcp"); }

TEST(CcIncast, SwiftHoldsTheQueueSharesFairlyAndKeepsTheLinkBusy) { expect_bounded_fair_and_busy("swift"); }

TEST(CcIncast, DcqcnTheSameWay) { expect_bounded_fair_and_busy("dcqcn"); }

}  // namespace
}  // namespace uroce::exp
