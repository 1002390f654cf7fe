// Swift: the window update of Kumar et al. (SIGCOMM 2020, Algorithm 1) as written out in cc/swift.cc, driven
// by hand: additive increase below the target delay, the multiplicative decrease and its cap, at most one
// decrease per RTT, the flow- and hop-scaled target, the window's floor and ceiling and pacing below one
// packet, and the loss reactions.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "cc/swift.h"

namespace uroce::cc {
namespace {

constexpr uint64_t k10G = 10'000'000'000ull;
constexpr uint64_t kUs = 1000;
constexpr uint64_t kMss = 1000;

// base_target 10 us, no flow or hop scaling, 1000-byte packets (the target is 10 us), max_cwnd 1000.
Swift make(Params p = {}) {
  p.emplace("base_target_us", 10);
  p.emplace("max_cwnd", 1000);
  p.emplace("fs_range_us", 0);
  p.emplace("mss", kMss);
  return Swift(SwiftConfig::parse(p, k10G), k10G);
}

TEST(Swift, BelowTheTargetTheWindowGrowsByAiPerRtt) {
  Swift s = make({{"init_cwnd", 10}});
  EXPECT_DOUBLE_EQ(s.cwnd(), 10);
  EXPECT_EQ(s.window_bytes, 10 * kMss);
  EXPECT_EQ(s.rate_bps, k10G) << "a window of at least a packet is not paced";
  // One window (10 packets), each ACK of one packet adding ai / cwnd.
  double expect = 10;
  for (int i = 0; i < 10; ++i) {
    s.on_ack(1'000'000, kMss, 5 * kUs);
    expect += 1 / expect;
  }
  EXPECT_DOUBLE_EQ(s.cwnd(), expect);
  EXPECT_NEAR(s.cwnd(), 11, 0.05) << "about ai = 1 packet per RTT";
  EXPECT_EQ(s.window_bytes, static_cast<uint64_t>(expect * kMss));

  // ai = 4: four packets per RTT; an ACK of 3 packets counts as three.
  Swift fast = make({{"init_cwnd", 20}, {"ai", 4}});
  fast.on_ack(0, 3 * kMss, 5 * kUs);
  EXPECT_DOUBLE_EQ(fast.cwnd(), 20 + 4.0 / 20 * 3);

  // Below one packet the increase is ai per acknowledged packet.
  Swift small = make({{"init_cwnd", 0.5}});
  small.on_ack(0, kMss, 5 * kUs);
  EXPECT_DOUBLE_EQ(small.cwnd(), 1.5);

  // No sample (Karn): no change.
  Swift none = make({{"init_cwnd", 10}});
  none.on_ack(0, kMss, 0);
  EXPECT_DOUBLE_EQ(none.cwnd(), 10);
}

TEST(Swift, AboveTheTargetItCutsByTheFormulaAtMostOncePerRtt) {
  Swift s = make({{"init_cwnd", 100}});
  uint64_t now = 1'000'000;
  s.on_ack(now, kMss, 20 * kUs);  // 1 - 0.8 * (20 - 10) / 20 = 0.6
  EXPECT_DOUBLE_EQ(s.cwnd(), 60);
  EXPECT_EQ(s.window_bytes, 60 * kMss);
  s.on_ack(now + 19 * kUs, kMss, 20 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), 60) << "within one RTT of the last decrease";
  s.on_ack(now + 20 * kUs, kMss, 20 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), 36) << "one RTT later";
  now += 20 * kUs;
  // Far above the target: 1 - 0.8 * 0.9 = 0.28, capped by max_mdf 0.5.
  s.on_ack(now + 100 * kUs, kMss, 100 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), 18);
  // Exactly at the target counts as above it: the factor is 1.
  Swift at = make({{"init_cwnd", 100}});
  at.on_ack(now, kMss, 10 * kUs);
  EXPECT_DOUBLE_EQ(at.cwnd(), 100);

  Swift b = make({{"init_cwnd", 100}, {"beta", 0.5}, {"max_mdf", 0.1}});
  b.on_ack(now, kMss, 12 * kUs);  // 1 - 0.5 * 2 / 12
  EXPECT_DOUBLE_EQ(b.cwnd(), 100 * (1 - 0.5 * 2 / 12.0));
  b.on_ack(now + 50 * kUs, kMss, 50 * kUs);  // 1 - 0.5 * 0.8 = 0.6, capped at 0.9
  EXPECT_DOUBLE_EQ(b.cwnd(), 100 * (1 - 0.5 * 2 / 12.0) * 0.9);
}

TEST(Swift, TheWindowStaysWithinMinAndMaxAndIsPacedBelowOnePacket) {
  Swift s = make({{"init_cwnd", 4}, {"max_cwnd", 5}, {"min_cwnd", 0.25}});
  for (int i = 0; i < 100; ++i) s.on_ack(0, kMss, 5 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), 5);
  uint64_t now = 1'000'000;
  for (int i = 0; i < 10; ++i) s.on_ack(now += 100 * kUs, kMss, 20 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), 0.25);
  EXPECT_EQ(s.window_bytes, kMss) << "one packet may be in flight";
  // Pacing: cwnd packets per RTT = 0.25 * 8000 bits / 20 us.
  EXPECT_EQ(s.rate_bps, 100'000'000u);
  s.on_ack(now += 1, kMss, 5 * kUs);  // below the target: +ai per packet, 1.25
  EXPECT_DOUBLE_EQ(s.cwnd(), 1.25);
  EXPECT_EQ(s.rate_bps, k10G);
  EXPECT_EQ(s.window_bytes, 1250u);

  // Defaults: max_cwnd 4 base-target BDPs, init_cwnd one (10 Gb/s * 10 us = 12.5 packets of 1000 bytes).
  Swift d(SwiftConfig::parse({{"base_target_us", 10}, {"mss", 1000}}, k10G), k10G);
  EXPECT_DOUBLE_EQ(d.config().max_cwnd, 50);
  EXPECT_DOUBLE_EQ(d.cwnd(), 12.5);
}

TEST(Swift, TheWindowNeverStrandsPacketsInFlight) {
  Swift s = make({{"init_cwnd", 20}});
  s.on_tx(0, 20 * kMss);
  s.on_ack(1'000'000, kMss, 100 * kUs);  // cut to 10 packets with 19 in flight
  EXPECT_DOUBLE_EQ(s.cwnd(), 10);
  EXPECT_EQ(s.window_bytes, 19 * kMss + 1) << "one more packet may go, asking for the ACK";
  s.on_ack(1'000'001, 15 * kMss, 5 * kUs);
  EXPECT_EQ(s.window_bytes, static_cast<uint64_t>(s.cwnd() * kMss)) << "4 in flight: cwnd's own window";
}

TEST(Swift, TheTargetScalesWithTheWindowAndTheHops) {
  const Params p{{"base_target_us", 10}, {"fs_range_us", 30}, {"fs_min_cwnd", 0.1}, {"fs_max_cwnd", 100},
                 {"mss", 1000},          {"hop_scale_us", 2}, {"max_cwnd", 1000}};
  const double alpha = 30'000 / (1 / std::sqrt(0.1) - 1 / std::sqrt(100.0));
  const double beta = -alpha / std::sqrt(100.0);
  auto target = [&](double cwnd) {
    Params q = p;
    q["init_cwnd"] = cwnd;
    return Swift(SwiftConfig::parse(q, k10G), k10G).target_delay_ns();
  };
  EXPECT_DOUBLE_EQ(target(100), 10'000) << "fs_max_cwnd: no flow scaling";
  EXPECT_DOUBLE_EQ(target(400), 10'000) << "never below the base";
  EXPECT_NEAR(target(0.1), 40'000, 1e-6) << "fs_min_cwnd: the whole fs_range";
  EXPECT_DOUBLE_EQ(target(0.01), 40'000) << "capped at fs_range";
  EXPECT_DOUBLE_EQ(target(1), 10'000 + alpha + beta);
  EXPECT_DOUBLE_EQ(target(4), 10'000 + alpha / 2 + beta);

  Params h = p;
  h["init_cwnd"] = 100;
  h["hops"] = 2;
  Swift s(SwiftConfig::parse(h, k10G), k10G);
  EXPECT_DOUBLE_EQ(s.target_delay_ns(), 14'000) << "2 hops of 2 us";
  IntStack st;
  st.hops = 3;
  s.on_telemetry(0, st);
  EXPECT_EQ(s.hops(), 3u);
  EXPECT_DOUBLE_EQ(s.target_delay_ns(), 16'000) << "the INT stack counts the hops";
}

TEST(Swift, LossCutsOncePerRttAndRepeatedTimeoutsReset) {
  Swift s = make({{"init_cwnd", 64}, {"min_cwnd", 0.5}});
  uint64_t now = 1'000'000;
  s.on_ack(now, kMss, 8 * kUs);  // an RTT sample: 8 us
  const double c = s.cwnd();
  s.on_nak(now + 10 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), c / 2) << "fast recovery: 1 - max_mdf";
  s.on_nak(now + 11 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), c / 2) << "once per RTT";
  s.on_timeout(now + 20 * kUs);
  EXPECT_DOUBLE_EQ(s.cwnd(), c / 4);
  for (int i = 2; i <= 4; ++i) s.on_timeout(now + 20 * kUs + i);  // within the RTT: no cut
  EXPECT_DOUBLE_EQ(s.cwnd(), c / 4);
  s.on_timeout(now + 100 * kUs);  // the 5th in a row (retx_reset_threshold)
  EXPECT_DOUBLE_EQ(s.cwnd(), 0.5);

  Swift t = make({{"init_cwnd", 64}, {"min_cwnd", 0.5}});
  for (int i = 0; i < 4; ++i) t.on_timeout(now + i * 100 * kUs);
  t.on_ack(now + 500 * kUs, kMss, 0);  // progress resets the count
  t.on_timeout(now + 600 * kUs);
  EXPECT_GT(t.cwnd(), 0.5);
}

TEST(Swift, ParametersAndRegistry) {
  const SwiftConfig c = SwiftConfig::parse({{"base_target_us", 25}, {"fs_range_us", 50}, {"ai", 2}}, k10G);
  EXPECT_DOUBLE_EQ(c.base_target_ns, 25'000);
  EXPECT_DOUBLE_EQ(c.fs_range_ns, 50'000);
  EXPECT_DOUBLE_EQ(c.ai, 2);
  EXPECT_DOUBLE_EQ(c.beta, 0.8);
  EXPECT_DOUBLE_EQ(c.max_mdf, 0.5);
  EXPECT_THROW(SwiftConfig::parse({{"fs_min_cwnd", 200}}, k10G), std::invalid_argument);
  for (const auto& [key, v] :
       {std::pair<const char*, double>{"beta", 2}, {"max_mdf", -1}, {"base_target", 5}}) {
    try {
      SwiftConfig::parse({{key, v}}, k10G);
      ADD_FAILURE() << key;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + key + "'"), std::string::npos) << e.what();
    }
  }
  auto a = cc::make("swift", {}, k10G);
  EXPECT_NE(dynamic_cast<Swift*>(a.get()), nullptr);
  EXPECT_TRUE(a->ecn_capable);
}

}  // namespace
}  // namespace uroce::cc
