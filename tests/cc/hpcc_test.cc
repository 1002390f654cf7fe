// HPCC: the utilisation estimate from INT stacks and the window / rate update, against steps computed by hand
// from Algorithm 1 of Li et al. (SIGCOMM 2019) as written out in cc/hpcc.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "cc/hpcc.h"

namespace uroce::cc {
namespace {

constexpr uint64_t k100G = 100'000'000'000ull;
// 100 Gb/s = 12.5 bytes/ns; T = 10 us; B * T = 125'000 bytes = the initial window; W_AI = 0.05 * 125'000 /
// 100.
constexpr double kWinit = 125'000, kWai = 62.5;

Hpcc make(const Params& p = {{"base_rtt", 10}}) { return Hpcc(HpccConfig::parse(p, k100G), k100G); }

IntStack one_hop(uint64_t ts, uint64_t tx, uint32_t qlen, uint64_t rate = k100G) {
  IntStack s;
  s.hops = 1;
  s.hop[0] = {ts, tx, qlen, rate};
  return s;
}

// Delivers an ACK of `bytes` carrying `s`, after `sent` more bytes went out.
void ack(Hpcc& h, const IntStack& s, uint64_t bytes = 1000, uint64_t sent = 1000) {
  h.on_tx(0, static_cast<uint32_t>(sent));
  h.on_telemetry(0, s);
  h.on_ack(0, bytes, 0);
}

TEST(Hpcc, Defaults) {
  const HpccConfig c = HpccConfig::parse({}, k100G);
  EXPECT_EQ(c.base_rtt_ns, 10'000u);
  EXPECT_DOUBLE_EQ(c.eta, 0.95);
  EXPECT_EQ(c.max_stage, 5u);
  EXPECT_NEAR(c.w_ai, kWai, 1e-9);
  EXPECT_DOUBLE_EQ(c.w_min, 4096);
  Hpcc h = make();
  EXPECT_DOUBLE_EQ(h.initial_window(), kWinit);
  EXPECT_EQ(h.window_bytes, 125'000u);
  EXPECT_EQ(h.rate_bps, k100G) << "W / T = line rate";
  EXPECT_EQ(h.rate_changes, 0u);
}

TEST(Hpcc, TheFirstStackOnlyBecomesTheReference) {
  Hpcc h = make();
  ack(h, one_hop(1000, 50'000, 90'000));
  EXPECT_DOUBLE_EQ(h.utilisation(), 0);
  EXPECT_DOUBLE_EQ(h.window(), kWinit);
}

TEST(Hpcc, UtilisationOfOneHopIsQueueOverBdpPlusTxRateOverB) {
  Hpcc h = make();
  ack(h, one_hop(0, 0, 12'500));
  // 1 us later the port sent 11'875 B (95 Gb/s) and still holds 12'500 B (0.1 of B * T):
  // u = 12'500 / 125'000 + (11'875 / 1'000) / 12.5 = 0.1 + 0.95 = 1.05; tau = 1 us = T / 10;
  // U = 0.9 * 0 + 0.1 * 1.05 = 0.105.
  ack(h, one_hop(1'000, 11'875, 12'500));
  EXPECT_DOUBLE_EQ(h.utilisation(), 0.105);
  // U < eta, stage 0: W = Wc + W_AI, clamped to the initial window; Wc updated (first ACK), stage 1.
  EXPECT_DOUBLE_EQ(h.window(), kWinit);
  EXPECT_EQ(h.stage(), 1u);
}

TEST(Hpcc, TheQueueTermUsesTheSmallerOfTheTwoSamples) {
  Hpcc h = make();
  ack(h, one_hop(0, 0, 0));
  ack(h, one_hop(10'000, 0, 50'000));  // a queue only in the new sample: min(50'000, 0) = 0, no tx: u = 0
  EXPECT_DOUBLE_EQ(h.utilisation(), 0);
}

TEST(Hpcc, TheMostLoadedHopWinsAndItsIntervalWeighsTheEwma) {
  Hpcc h = make();
  IntStack a;
  a.hops = 2;
  a.hop[0] = {0, 0, 0, k100G};
  a.hop[1] = {0, 0, 0, 40'000'000'000ull};
  ack(h, a);
  IntStack b = a;
  // Hop 0: 2 us, 12'500 B -> 6.25 B/ns / 12.5 = 0.5. Hop 1 (40 Gb/s = 5 B/ns): 5 us, 20'000 B -> 4 / 5 = 0.8.
  b.hop[0] = {2'000, 12'500, 0, k100G};
  b.hop[1] = {5'000, 20'000, 0, 40'000'000'000ull};
  ack(h, b);
  EXPECT_DOUBLE_EQ(h.utilisation(), 0.5 * 0 + 0.5 * 0.8) << "u = 0.8 from hop 1, tau = 5 us = T / 2";
}

TEST(Hpcc, AboveEtaTheWindowIsCutToWcEtaOverU) {
  Hpcc h = make();
  ack(h, one_hop(0, 0, 25'000));
  // tau = T: U = u = 25'000 / 125'000 + (118'750 / 10'000) / 12.5 = 0.2 + 0.95 = 1.15.
  ack(h, one_hop(10'000, 118'750, 25'000));
  EXPECT_DOUBLE_EQ(h.utilisation(), 1.15);
  const double w = kWinit / (1.15 / 0.95) + kWai;  // 103'323.37
  EXPECT_DOUBLE_EQ(h.window(), w);
  EXPECT_DOUBLE_EQ(h.reference_window(), w);
  EXPECT_EQ(h.stage(), 0u);
  EXPECT_EQ(h.window_bytes, static_cast<uint64_t>(std::llround(w)));
  EXPECT_EQ(h.rate_bps, static_cast<uint64_t>(w * 8e9 / 10'000)) << "R = W / T";
  EXPECT_EQ(h.rate_changes, 1u);
}

TEST(Hpcc, WcMovesOncePerRttOtherAcksReuseIt) {
  Hpcc h = make();
  h.on_tx(0, 100'000);  // a window's worth in flight
  ack(h, one_hop(0, 0, 25'000), 1000, 0);
  ack(h, one_hop(10'000, 118'750, 25'000), 1000, 0);  // update: Wc = W1, last update at snd_nxt = 100'000
  const double wc = h.reference_window();
  // The next ACKs (acked 3'000 .. < 100'000) are in the same RTT: W = Wc / (U / eta) + W_AI, Wc unchanged.
  ack(h, one_hop(20'000, 118'750 * 2, 25'000), 1000, 0);
  EXPECT_DOUBLE_EQ(h.reference_window(), wc);
  EXPECT_DOUBLE_EQ(h.window(), wc / (1.15 / 0.95) + kWai);
  // An ACK past 100'000 bytes starts the next round: Wc moves.
  ack(h, one_hop(30'000, 118'750 * 3, 25'000), 98'000, 0);
  EXPECT_DOUBLE_EQ(h.reference_window(), wc / (1.15 / 0.95) + kWai);
}

TEST(Hpcc, AdditiveStagesThenAMultiplicativeIncrease) {
  Hpcc h = make();
  ack(h, one_hop(0, 0, 25'000));
  ack(h, one_hop(10'000, 118'750, 25'000));  // U = 1.15: Wc = Winit * 0.95 / 1.15 + W_AI
  double wc = kWinit / (1.15 / 0.95) + kWai;
  ASSERT_DOUBLE_EQ(h.reference_window(), wc);
  // Each later round: tau = T and 112'500 B sent, no queue -> U = u = 0.9 < eta.
  uint64_t ts = 10'000, tx = 118'750;
  for (uint32_t stage = 1; stage <= 5; ++stage) {
    ts += 10'000;
    tx += 112'500;
    ack(h, one_hop(ts, tx, 0));
    EXPECT_DOUBLE_EQ(h.utilisation(), 0.9);
    wc += kWai;
    EXPECT_DOUBLE_EQ(h.reference_window(), wc) << "additive round " << stage;
    EXPECT_EQ(h.stage(), stage);
  }
  // maxStage rounds done: W = Wc / (U / eta) + W_AI, and the stage restarts.
  ts += 10'000;
  tx += 112'500;
  ack(h, one_hop(ts, tx, 0));
  wc = wc / (0.9 / 0.95) + kWai;
  EXPECT_DOUBLE_EQ(h.reference_window(), wc);
  EXPECT_EQ(h.stage(), 0u);
  EXPECT_LT(wc, kWinit);
}

TEST(Hpcc, TheWindowStaysWithinWminAndTheInitialWindow) {
  Hpcc h = make();
  ack(h, one_hop(0, 0, 4'000'000));
  ack(h, one_hop(10'000, 125'000, 4'000'000));  // U = 32 + 1 = 33
  EXPECT_DOUBLE_EQ(h.window(), 4096) << "125'000 / (33 / 0.95) + W_AI = 3'661 is below w_min";
  for (int i = 2; i < 40; ++i) ack(h, one_hop(10'000ull * i, 125'000ull * i, 4'000'000));
  EXPECT_DOUBLE_EQ(h.window(), 4096) << "w_min";
  EXPECT_EQ(h.window_bytes, 4096u);
  EXPECT_EQ(h.rate_bps, 4096u * 8 * 100'000) << "w_min / T";
  Hpcc small = make({{"base_rtt", 10}, {"w_min", 100}});
  ack(small, one_hop(0, 0, 4'000'000));
  for (int i = 1; i < 40; ++i) ack(small, one_hop(10'000ull * i, 125'000ull * i, 4'000'000));
  EXPECT_DOUBLE_EQ(small.window(), 100);
}

TEST(Hpcc, AcksWithoutTelemetryChangeNothing) {
  Hpcc h = make();
  h.on_tx(0, 10'000);
  h.on_ack(0, 10'000, 5'000);
  EXPECT_DOUBLE_EQ(h.window(), kWinit);
  EXPECT_EQ(h.rate_changes, 0u);
}

TEST(Hpcc, ParametersAndRegistry) {
  EXPECT_EQ(HpccConfig::parse({{"base_rtt", 4}, {"w_ai", 100}}, k100G).base_rtt_ns, 4'000u);
  EXPECT_DOUBLE_EQ(HpccConfig::parse({{"w_ai", 100}}, k100G).w_ai, 100);
  EXPECT_THROW(HpccConfig::parse({{"eta", 1.5}}, k100G), std::invalid_argument);
  try {
    HpccConfig::parse({{"maxstage", 3}}, k100G);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'maxstage'"), std::string::npos);
  }
  auto a = cc::make("hpcc", {}, k100G);
  EXPECT_NE(dynamic_cast<Hpcc*>(a.get()), nullptr);
}

}  // namespace
}  // namespace uroce::cc
