// The progress thread's choice between spinning and sleeping once a pass found nothing to do.
#include "provider/progress_policy.h"

#include <gtest/gtest.h>

namespace uroce::provider {
namespace {

constexpr uint64_t kSpin = 20'000;

TEST(KeepSpinning, WithinTheSpinAfterWorkOrAnApplicationCallOnAnotherCpu) {
  EXPECT_TRUE(keep_spinning(0, 1'000'000, kSpin, 1, 0));
  EXPECT_TRUE(keep_spinning(1'000'000, kSpin - 1, kSpin, 1, 0));
  EXPECT_TRUE(keep_spinning(5'000, 5'000, kSpin, -1, 0)) << "no application call seen yet";
  EXPECT_FALSE(keep_spinning(kSpin, kSpin, kSpin, 1, 0)) << "the spin is over";
  EXPECT_FALSE(keep_spinning(kSpin, kSpin, kSpin, -1, 0));
}

// On the CPU the application thread last called from, spinning would only keep that thread off it.
TEST(KeepSpinning, NeverOnTheApplicationsCpu) {
  EXPECT_FALSE(keep_spinning(0, 0, kSpin, 0, 0));
  EXPECT_FALSE(keep_spinning(0, 1'000'000, kSpin, 1, 1));
  EXPECT_FALSE(keep_spinning(1'000'000, 10, kSpin, 1, 1));
}

}  // namespace
}  // namespace uroce::provider
