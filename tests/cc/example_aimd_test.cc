// example_aimd, the algorithm docs/cc.md walks through: registered, and doing what the walk-through says.
#include <gtest/gtest.h>

#include <stdexcept>

#include "cc/cc.h"

namespace uroce::cc {
namespace {

constexpr uint64_t k10G = 10'000'000'000ull;

TEST(ExampleAimd, MultiplicativeDecreaseThenTimedAdditiveIncrease) {
  auto a = make("example_aimd", {{"ai_rate", 1000}, {"md", 0.5}, {"min_rate", 1000}, {"period", 50}}, k10G);
  EXPECT_EQ(a->rate_bps, k10G);
  EXPECT_TRUE(a->ecn_capable);
  EXPECT_EQ(a->next_timer_ns(), kNoTimer) << "at line rate: nothing to do";
  a->on_cnp(1'000);
  EXPECT_EQ(a->rate_bps, 5'000'000'000u);
  EXPECT_EQ(a->next_timer_ns(), 51'000u);
  a->on_nak(2'000);
  EXPECT_EQ(a->rate_bps, 2'500'000'000u);
  EXPECT_EQ(a->next_timer_ns(), 51'000u) << "the running timer is kept";
  a->on_cnp(3'000);
  a->on_cnp(4'000);
  EXPECT_EQ(a->rate_bps, 1'000'000'000u) << "min_rate";
  a->on_timer(51'000);
  EXPECT_EQ(a->rate_bps, 2'000'000'000u);
  EXPECT_EQ(a->next_timer_ns(), 101'000u);
  uint64_t t = 101'000;
  while (a->next_timer_ns() != kNoTimer) {
    t = a->next_timer_ns();
    a->on_timer(t);
  }
  EXPECT_EQ(a->rate_bps, k10G) << "line rate, and the timer sleeps";
  EXPECT_EQ(t, 51'000u + 8 * 50'000);
  EXPECT_EQ(a->rate_changes, 4u + 9u);
}

TEST(ExampleAimd, RejectsUnknownParameters) {
  EXPECT_THROW(make("example_aimd", {{"ai", 1}}, k10G), std::invalid_argument);
  EXPECT_THROW(make("example_aimd", {{"md", 0}}, k10G), std::invalid_argument);
}

}  // namespace
}  // namespace uroce::cc
