// DCTCP (rate-based, as the HPCC authors' ns-3 RDMA simulator runs it; cc/dctcp.cc) driven by hand: alpha
// converges to the fraction of ECN-echoed data, one cut of alpha / 2 per window, additive increase per window
// without a cut, the rate's floor and ceiling, and the window of rate * base_rtt.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <stdexcept>

#include "cc/dctcp.h"

namespace uroce::cc {
namespace {

constexpr uint64_t k10G = 10'000'000'000ull;

Dctcp make(const Params& p = {}) { return Dctcp(DctcpConfig::parse(p, k10G), k10G); }

// One window of 10'000 bytes acknowledged in four ACKs of 2'500 (the first of them closes the previous
// window); `echo[i]` says whether ACK i echoed ECN.
void window(Dctcp& d, std::array<bool, 4> echo) {
  d.on_tx(0, 10'000);
  for (int i = 0; i < 4; ++i) {
    if (echo[i]) d.on_ecn_echo(0);
    d.on_ack(0, 2'500, 0);
  }
}

TEST(Dctcp, AlphaConvergesToTheFractionOfEchoedData) {
  Dctcp d = make();
  EXPECT_DOUBLE_EQ(d.alpha(), 1) << "initial_alpha";
  // Every window has one echoed ACK of four: F = 1/4 from the second window on (the first only starts the
  // count), alpha_n = F + (1 - F) (1 - g)^n.
  window(d, {false, true, false, false});
  EXPECT_DOUBLE_EQ(d.alpha(), 1);
  for (int n = 1; n <= 100; ++n) {
    window(d, {false, true, false, false});
    ASSERT_NEAR(d.alpha(), 0.25 + 0.75 * std::pow(15.0 / 16, n), 1e-12) << "window " << n;
  }
  EXPECT_NEAR(d.alpha(), 0.25, 0.002);

  // No echo any more: alpha decays by (1 - g) per window.
  const double a = d.alpha();
  window(d, {false, false, false, false});
  window(d, {false, false, false, false});
  EXPECT_NEAR(d.alpha(), a * 15 / 16 * 15 / 16 + 0.25 * 15 / 16 / 16, 1e-12)
      << "the first of them still closes a window with one echoed ACK";

  Dctcp g = make({{"g", 0.5}, {"initial_alpha", 0}});
  window(g, {true, true, true, true});
  window(g, {true, true, true, true});
  EXPECT_DOUBLE_EQ(g.alpha(), 0.5) << "(1 - g) 0 + g 1";
}

TEST(Dctcp, OneCutOfAlphaHalfPerWindow) {
  Dctcp d = make();
  d.on_tx(0, 10'000);
  d.on_ecn_echo(0);
  d.on_ack(0, 1'000, 0);
  EXPECT_DOUBLE_EQ(d.rate(), 5e9) << "alpha 1: halved";
  EXPECT_TRUE(d.in_cwr());
  for (int i = 0; i < 9; ++i) {
    d.on_ecn_echo(0);
    d.on_ack(0, 1'000, 0);
  }
  EXPECT_DOUBLE_EQ(d.rate(), 5e9) << "one cut per window: the rest of the window echoed too";
  EXPECT_EQ(d.rate_changes, 1u);
  EXPECT_EQ(d.echoes(), 10u);

  // The next window: its first ACK closes the window (F = 1: alpha stays 1), CWR ends, and its echo cuts.
  d.on_tx(0, 10'000);
  d.on_ecn_echo(0);
  d.on_ack(0, 1'000, 0);
  EXPECT_DOUBLE_EQ(d.alpha(), 1);
  EXPECT_DOUBLE_EQ(d.rate(), 2.5e9);
  EXPECT_EQ(d.rate_bps, 2'500'000'000u);
}

TEST(Dctcp, AdditiveIncreaseOncePerWindowWithoutACut) {
  Dctcp d = make({{"dctcp_rate_ai", 100}});
  d.on_tx(0, 10'000);
  d.on_ecn_echo(0);
  d.on_ack(0, 10'000, 0);  // cut to 5 Gb/s; CWR until byte 10'000 is passed
  ASSERT_DOUBLE_EQ(d.rate(), 5e9);
  d.on_tx(0, 10'000);
  d.on_ack(0, 5'000, 0);  // a new window, CWR over: + 100 Mb/s
  EXPECT_DOUBLE_EQ(d.rate(), 5.1e9);
  d.on_ack(0, 5'000, 0);  // the same window
  EXPECT_DOUBLE_EQ(d.rate(), 5.1e9);
  for (int i = 0; i < 5; ++i) {
    d.on_tx(0, 10'000);
    d.on_ack(0, 10'000, 0);
  }
  EXPECT_DOUBLE_EQ(d.rate(), 5.6e9) << "one step per window";
}

TEST(Dctcp, RateStaysWithinMinRateAndLineRate) {
  Dctcp d = make({{"min_rate", 1000}});
  for (int i = 0; i < 10; ++i) {
    d.on_tx(0, 1'000);
    d.on_ack(0, 1'000, 0);
  }
  EXPECT_EQ(d.rate_bps, k10G) << "AI stops at the line rate";
  EXPECT_EQ(d.rate_changes, 0u);
  for (int i = 0; i < 10; ++i) {
    d.on_tx(0, 1'000);
    d.on_ecn_echo(0);
    d.on_ack(0, 1'000, 0);
  }
  EXPECT_EQ(d.rate_bps, 1'000'000'000u) << "min_rate";
}

TEST(Dctcp, TheWindowIsRateTimesBaseRttAndNeverStrandsPacketsInFlight) {
  Dctcp d = make({{"base_rtt", 8}});
  EXPECT_EQ(d.window_bytes, 10'000u) << "10 Gb/s * 8 us";
  d.on_tx(0, 9'000);
  d.on_ecn_echo(0);
  d.on_ack(0, 1'000, 0);  // halved: 5'000 bytes, but 8'000 are in flight
  EXPECT_EQ(d.window_bytes, 8'001u) << "one more packet may go, asking for the ACK";
  d.on_ack(0, 8'000, 0);
  EXPECT_EQ(d.window_bytes, 5'000u);

  Dctcp none = make({{"base_rtt", 0}});
  EXPECT_EQ(none.window_bytes, 0u) << "base_rtt 0: rate only";
}

TEST(Dctcp, ParametersAndRegistry) {
  const DctcpConfig c = DctcpConfig::parse({{"g", 0.25}, {"dctcp_rate_ai", 615}, {"min_rate", 50}}, k10G);
  EXPECT_DOUBLE_EQ(c.g, 0.25);
  EXPECT_EQ(c.ai_bps, 615'000'000u);
  EXPECT_EQ(c.min_bps, 50'000'000u);
  EXPECT_EQ(make().config().base_rtt_ns, 10'000u);
  try {
    DctcpConfig::parse({{"dctcp_g", 0.5}}, k10G);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'dctcp_g'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DctcpConfig::parse({{"g", 1.5}}, k10G), std::invalid_argument);
  auto a = cc::make("dctcp", {}, k10G);
  EXPECT_NE(dynamic_cast<Dctcp*>(a.get()), nullptr);
  EXPECT_TRUE(a->ecn_capable);
  EXPECT_EQ(a->rate_bps, k10G);
}

}  // namespace
}  // namespace uroce::cc
