// Goodput under random loss, in virtual time (so a ratio is a fact of the model, not of the machine): 1 MiB
// RDMA WRITEs, 4 KiB MTU, 16 in flight, 100 Gb/s, 1 us delay, as bench_goodput measures it. Selective repeat
// keeps at least 90% of its lossless goodput at 1% loss; go-back-N, the default, stays where it was (about a
// third); without loss the two are the same.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/sim/workload.h"

namespace uroce::test {
namespace {

double goodput_gbps(double loss, bool sr) {
  const WorkloadConfig c = goodput_workload(100, loss, sr);
  const WorkloadResult r = run_workload(c);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.completed, c.messages);
  if (sr && loss > 0) {
    EXPECT_GT(r.sr_retransmits, 0u);
  }
  return static_cast<double>(r.bytes) * 8 / static_cast<double>(r.virtual_ns);
}

TEST(Goodput, SelectiveRepeatKeepsNinetyPercentAtOnePercentLoss) {
  const double sr0 = goodput_gbps(0, true), sr1 = goodput_gbps(0.01, true);
  std::printf("[ goodput  ] selective repeat: %.2f Gb/s lossless, %.2f Gb/s at 1%% loss (%.1f%%)\n", sr0, sr1,
              100 * sr1 / sr0);
  EXPECT_GE(sr1, 0.9 * sr0);
}

TEST(Goodput, GoBackNIsUnchangedAndEqualWithoutLoss) {
  const double gbn0 = goodput_gbps(0, false), gbn1 = goodput_gbps(0.01, false);
  const double sr0 = goodput_gbps(0, true);
  std::printf("[ goodput  ] go-back-N: %.2f Gb/s lossless, %.2f Gb/s at 1%% loss (%.1f%%)\n", gbn0, gbn1,
              100 * gbn1 / gbn0);
  EXPECT_GT(gbn1, 0.2 * gbn0);
  EXPECT_LT(gbn1, 0.45 * gbn0);
  EXPECT_NEAR(sr0, gbn0, 0.01 * gbn0) << "selective repeat costs nothing without loss";
}

}  // namespace
}  // namespace uroce::test
