// example_aimd, the algorithm docs/cc.md walks through: registered, and doing what the walk-through says.
#include <gtest/gtest.h>

#include <stdexcept>

#include "cc/cc.h"

namespace uroce::cc {
namespace {

constexpr uint64_t k10G = 10'000'000'000ull;

TEST(ExampleAimd, AdditiveIncreaseMultiplicativeDecrease) {
  auto a = make("example_aimd", {{"ai_rate", 100}, {"md", 0.5}, {"min_rate", 1000}}, k10G);
  EXPECT_EQ(a->rate_bps, k10G);
  EXPECT_TRUE(a->ecn_capable);
  a->on_cnp(0);
  EXPECT_EQ(a->rate_bps, 5'000'000'000u);
  a->on_ack(0, 1000, 0);
  EXPECT_EQ(a->rate_bps, 5'100'000'000u);
  a->on_nak(0);
  EXPECT_EQ(a->rate_bps, 2'550'000'000u);
  a->on_cnp(0);
  a->on_cnp(0);
  EXPECT_EQ(a->rate_bps, 1'000'000'000u) << "min_rate";
  for (int i = 0; i < 200; ++i) a->on_ack(0, 1000, 0);
  EXPECT_EQ(a->rate_bps, k10G) << "line rate";
  EXPECT_EQ(a->rate_changes, 5u + 90u);
}

TEST(ExampleAimd, RejectsUnknownParameters) {
  EXPECT_THROW(make("example_aimd", {{"ai", 1}}, k10G), std::invalid_argument);
  EXPECT_THROW(make("example_aimd", {{"md", 0}}, k10G), std::invalid_argument);
}

}  // namespace
}  // namespace uroce::cc
