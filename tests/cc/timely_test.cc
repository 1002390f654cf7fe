// TIMELY: each region of the rate computation against steps computed by hand from Algorithm 1 of Mittal et
// al. (SIGCOMM 2015) as written out in cc/timely.cc. Defaults: T_low 50 us, T_high 500 us, min_rtt 20 us,
// alpha 0.875, beta 0.8, delta 10 Mb/s, HAI (5 delta) after 5 non-positive gradients.
#include <gtest/gtest.h>

#include <stdexcept>

#include "cc/timely.h"

namespace uroce::cc {
namespace {

constexpr uint64_t k10G = 10'000'000'000ull;
constexpr uint64_t kUs = 1000;
constexpr double kDelta = 10e6;

Timely make(const Params& p = {}) { return Timely(TimelyConfig::parse(p, k10G), k10G); }

// One RTT's worth: 1000 bytes sent and acknowledged with an RTT sample.
void sample(Timely& t, uint64_t rtt) {
  t.on_tx(0, 1000);
  t.on_ack(0, 1000, rtt);
}

TEST(Timely, StartsAtLineRateAndTheFirstSampleOnlySetsPrevRtt) {
  Timely t = make();
  EXPECT_EQ(t.rate_bps, k10G);
  t.on_ack(0, 1000, 1000 * kUs);
  EXPECT_EQ(t.rate_bps, k10G);
  EXPECT_DOUBLE_EQ(t.rtt_diff_ns(), 0);
  t.on_ack(0, 1000, 0);  // no sample (Karn)
  EXPECT_DOUBLE_EQ(t.rtt_diff_ns(), 0);
}

TEST(Timely, GradientSteps) {
  Timely t = make();
  sample(t, 30 * kUs);  // prev_rtt = 30 us
  // Above T_high: rate *= 1 - 0.8 (1 - 500 / 1000) = 0.6. rtt_diff = 0.875 * 970 us.
  sample(t, 1000 * kUs);
  double diff = 0.875 * 970'000;
  EXPECT_DOUBLE_EQ(t.rtt_diff_ns(), diff);
  EXPECT_DOUBLE_EQ(t.rate(), 6e9);
  EXPECT_EQ(t.rate_bps, 6'000'000'000u);
  EXPECT_EQ(t.rate_changes, 1u);

  // Below T_low: additive increase whatever the gradient.
  sample(t, 40 * kUs);
  diff = 0.125 * diff + 0.875 * (40'000.0 - 1'000'000);
  EXPECT_DOUBLE_EQ(t.rtt_diff_ns(), diff);
  EXPECT_DOUBLE_EQ(t.rate(), 6e9 + kDelta);

  // Between the thresholds, gradient <= 0: additive increase; the 5th such sample in a row is HAI (5 delta).
  double rate = 6e9 + kDelta;
  const uint64_t rtt = 100 * kUs;
  for (uint32_t k = 1; k <= 5; ++k) {
    const double before = t.rtt_diff_ns();
    const double prev = k == 1 ? 40'000.0 : 100'000.0;
    sample(t, rtt);
    const double d = 0.125 * before + 0.875 * (100'000.0 - prev);
    ASSERT_DOUBLE_EQ(t.rtt_diff_ns(), d);
    ASSERT_LE(d, 0) << "sample " << k;
    rate += (k == 5 ? 5 : 1) * kDelta;
    EXPECT_DOUBLE_EQ(t.rate(), rate) << "sample " << k;
    EXPECT_EQ(t.negative_gradients(), k);
  }

  // RTT rising: gradient > 0, rate *= 1 - beta * rtt_diff / min_rtt; the HAI count restarts.
  const double before = t.rtt_diff_ns();
  sample(t, 105 * kUs);
  const double d = 0.125 * before + 0.875 * 5'000;
  EXPECT_DOUBLE_EQ(t.rtt_diff_ns(), d);
  ASSERT_GT(d, 0);
  rate *= 1 - 0.8 * d / 20'000;
  EXPECT_DOUBLE_EQ(t.rate(), rate);
  EXPECT_EQ(t.negative_gradients(), 0u);
}

TEST(Timely, TheRateMovesAtMostOncePerRtt) {
  Timely t = make();
  t.on_tx(0, 10'000);
  t.on_ack(0, 1000, 30 * kUs);  // the first sample: prev_rtt; the next update waits for byte 10'001
  t.on_ack(0, 1000, 1000 * kUs);
  t.on_ack(0, 7000, 1000 * kUs);
  EXPECT_EQ(t.rate_bps, k10G) << "same RTT: no update";
  EXPECT_DOUBLE_EQ(t.rtt_diff_ns(), 0);
  t.on_tx(0, 5'000);
  t.on_ack(0, 1001, 1000 * kUs);  // acknowledged 10'001: the next round
  EXPECT_DOUBLE_EQ(t.rate(), 6e9);
  t.on_nak(0);  // go-back-N: what was sent and not acknowledged is sent again
  t.on_tx(0, 4'999);
  t.on_ack(0, 4'999, 1000 * kUs);
  EXPECT_LT(t.rate(), 6e9) << "the rewound sequence reached the next round";
}

TEST(Timely, RateStaysWithinMinRateAndLineRate) {
  Timely t = make({{"min_rate", 1000}});
  sample(t, 10 * kUs);
  for (int i = 0; i < 10; ++i) sample(t, 10 * kUs);  // below T_low: capped at the line
  EXPECT_EQ(t.rate_bps, k10G);
  EXPECT_EQ(t.rate_changes, 0u);
  sample(t, 100'000 * kUs);  // far above T_high: factor 1 - 0.8 * 0.995
  sample(t, 100'000 * kUs);
  sample(t, 100'000 * kUs);
  EXPECT_EQ(t.rate_bps, 1'000'000'000u);

  Timely steep = make({{"min_rate", 1000}});
  sample(steep, 100 * kUs);
  sample(steep, 300 * kUs);  // rtt_diff = 0.875 * 200 us: 1 - 0.8 * 8.75 < 0 counts as 0
  EXPECT_DOUBLE_EQ(steep.rtt_diff_ns(), 175'000);
  EXPECT_EQ(steep.rate_bps, 1'000'000'000u);
}

TEST(Timely, ParametersAndRegistry) {
  const TimelyConfig c =
      TimelyConfig::parse({{"t_low", 5}, {"t_high", 50}, {"min_rtt", 2}, {"delta", 100}}, k10G);
  EXPECT_DOUBLE_EQ(c.t_low_ns, 5'000);
  EXPECT_DOUBLE_EQ(c.t_high_ns, 50'000);
  EXPECT_DOUBLE_EQ(c.min_rtt_ns, 2'000);
  EXPECT_EQ(c.delta_bps, 100'000'000u);
  EXPECT_THROW(TimelyConfig::parse({{"t_low", 600}}, k10G), std::invalid_argument);
  try {
    TimelyConfig::parse({{"beta", 2}}, k10G);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'beta'"), std::string::npos);
  }
  auto a = cc::make("timely", {}, k10G);
  EXPECT_NE(dynamic_cast<Timely*>(a.get()), nullptr);
  EXPECT_TRUE(a->ecn_capable);
}

}  // namespace
}  // namespace uroce::cc
