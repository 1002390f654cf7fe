// DCQCN reaction point: each update rule against steps computed by hand from the rules in cc/dcqcn.cc
// (Zhu et al., SIGCOMM 2015) with ConnectX's fixed-point parameter forms.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "cc/dcqcn.h"

namespace uroce::cc {
namespace {

constexpr uint64_t kLine = 100'000'000'000ull;  // 100 Gb/s
constexpr uint64_t kUs = 1000;

Dcqcn make(const Params& p = {}) { return Dcqcn(DcqcnConfig::parse(p, kLine), kLine); }

TEST(Dcqcn, DefaultsAreTheConnectXFirmwareDefaults) {
  const DcqcnConfig c = DcqcnConfig::parse({}, kLine);
  EXPECT_EQ(c.time_reset_ns, 300 * kUs);
  EXPECT_EQ(c.byte_reset, 32767u);
  EXPECT_EQ(c.threshold, 1u);
  EXPECT_EQ(c.ai_bps, 5'000'000u);
  EXPECT_EQ(c.hai_bps, 50'000'000u);
  EXPECT_EQ(c.min_bps, 1'000'000u);
  EXPECT_EQ(c.max_bps, kLine);
  EXPECT_EQ(c.gd, 11u);
  EXPECT_EQ(c.min_dec_fac, 50u);
  EXPECT_DOUBLE_EQ(c.g, 5.0 / 1024);
  EXPECT_EQ(c.alpha_period_ns, 1 * kUs);
  EXPECT_DOUBLE_EQ(c.initial_alpha, 1023.0 / 1024);
  EXPECT_EQ(c.monitor_ns, 4 * kUs);
  EXPECT_EQ(c.first_cnp_bps, 0u);
  EXPECT_EQ(c.np_min_cnp_interval_ns, 4 * kUs);
}

TEST(Dcqcn, StartsAtLineRateEcnCapableWithNoTimer) {
  Dcqcn d = make();
  EXPECT_EQ(d.rate_bps, kLine);
  EXPECT_EQ(d.window_bytes, 0u);
  EXPECT_TRUE(d.ecn_capable);
  EXPECT_EQ(d.next_timer_ns(), kNoTimer);
  d.on_tx(0, 1'000'000);  // no CNP yet: the byte counter does not run
  EXPECT_EQ(d.rate_bps, kLine);
  EXPECT_EQ(d.rate_changes, 0u);
}

TEST(Dcqcn, CnpCutsTheRateByHalfAlphaAndRaisesAlpha) {
  Dcqcn d = make();
  d.on_cnp(10 * kUs);
  // alpha = 1023/1024: Rc = 100e9 * (1 - 1023/2048) = 100e9 * 1025/2048 = 50'048'828'125.
  EXPECT_EQ(d.current_rate(), 50'048'828'125u);
  EXPECT_EQ(d.rate_bps, 50'048'828'125u);
  EXPECT_EQ(d.target_rate(), kLine) << "Rt = the rate before the cut";
  EXPECT_EQ(d.rate_changes, 1u);
  // alpha = (1 - g) alpha + g = 1019/1024 * 1023/1024 + 5/1024 = 1'047'557 / 1'048'576.
  EXPECT_DOUBLE_EQ(d.alpha(10 * kUs), 1'047'557.0 / 1'048'576);
  EXPECT_EQ(d.next_timer_ns(), 310 * kUs) << "rate-increase timer armed rpg_time_reset after the cut";
  EXPECT_EQ(d.time_stage(), 0u);
  EXPECT_EQ(d.byte_stage(), 0u);
}

TEST(Dcqcn, AlphaDecaysOncePerPeriodWithoutCnp) {
  Dcqcn d = make();
  d.on_cnp(0);
  const double a = 1'047'557.0 / 1'048'576, q = 1019.0 / 1024;
  EXPECT_DOUBLE_EQ(d.alpha(999), a) << "less than one dce_tcp_rtt period";
  EXPECT_DOUBLE_EQ(d.alpha(1 * kUs), a * q);
  EXPECT_DOUBLE_EQ(d.alpha(3 * kUs + 999), a * q * q * q);
  EXPECT_NEAR(d.alpha(1000 * kUs), a * std::pow(q, 1000), 1e-15);
}

TEST(Dcqcn, SecondCnpCutsWithTheDecayedAlpha) {
  Dcqcn d = make();
  d.on_cnp(0);
  const uint64_t rc1 = d.current_rate();
  d.on_cnp(10 * kUs);
  const double a = 1'047'557.0 / 1'048'576 * std::pow(1019.0 / 1024, 10);
  // No increase since the first cut, clamp_tgt_rate 0: Rt keeps the rate before the congestion.
  EXPECT_EQ(d.target_rate(), 100'000'000'000u);
  EXPECT_EQ(d.current_rate(), static_cast<uint64_t>(static_cast<double>(rc1) * (1 - a / 2)));
  EXPECT_DOUBLE_EQ(d.alpha(10 * kUs), (1019.0 / 1024) * a + 5.0 / 1024);
  EXPECT_EQ(d.rate_changes, 2u);
}

// The ConnectX target-rate clamp knobs. Rt = Rc on a CNP: always with clamp_tgt_rate = 1; otherwise only if
// the rate rose since the previous cut, by the byte counter, or by the timer when
// clamp_tgt_rate_after_time_inc = 1 (the default).
TEST(Dcqcn, TargetRateClampKnobs) {
  const uint64_t line = 100'000'000'000u;
  Dcqcn clamp(DcqcnConfig::parse({{"clamp_tgt_rate", 1}}, line), line);
  clamp.on_cnp(0);
  const uint64_t rc1 = clamp.current_rate();
  clamp.on_cnp(10 * kUs);
  EXPECT_EQ(clamp.target_rate(), rc1) << "clamp_tgt_rate 1";

  Dcqcn d = make();  // defaults
  d.on_cnp(0);
  d.on_cnp(10 * kUs);
  EXPECT_EQ(d.target_rate(), line) << "no increase between the cuts: Rt kept";
  d.on_tx(20 * kUs, 40'000);  // one byte-counter increase (rpg_byte_reset 32767)
  ASSERT_EQ(d.byte_stage(), 1u);
  uint64_t rc = d.current_rate();
  d.on_cnp(30 * kUs);
  EXPECT_EQ(d.target_rate(), rc) << "after a byte-counter increase";
  d.on_timer(d.next_timer_ns());  // a timer increase
  ASSERT_EQ(d.time_stage(), 1u);
  rc = d.current_rate();
  d.on_cnp(d.next_timer_ns());
  EXPECT_EQ(d.target_rate(), rc) << "after a timer increase (clamp_tgt_rate_after_time_inc 1)";

  Dcqcn no_ati(DcqcnConfig::parse({{"clamp_tgt_rate_after_time_inc", 0}}, line), line);
  no_ati.on_cnp(0);
  no_ati.on_timer(no_ati.next_timer_ns());
  no_ati.on_cnp(no_ati.next_timer_ns());
  EXPECT_EQ(no_ati.target_rate(), line) << "a timer increase alone does not clamp";
  EXPECT_THROW(DcqcnConfig::parse({{"clamp_tgt_rate", 2}}, line), std::invalid_argument);
}

TEST(Dcqcn, AtMostOneCutPerRateReduceMonitorPeriod) {
  Dcqcn d = make();
  d.on_cnp(0);
  const uint64_t rc = d.current_rate();
  const double a = d.alpha(0);
  d.on_cnp(4 * kUs - 1);
  EXPECT_EQ(d.current_rate(), rc);
  EXPECT_DOUBLE_EQ(d.alpha(0), a);
  d.on_cnp(4 * kUs);
  EXPECT_LT(d.current_rate(), rc);
}

// Small numbers: a 10 Gb/s line, F = 2, byte counter every 1000 B, timer every 100 us, AI 100 Mb/s, HAI
// 1000 Mb/s, g = 1 (dce_tcp_g 0) so that alpha is 1023/1024 then 1 at every cut, and clamp_tgt_rate 1 (the
// paper's Rt = Rc at every cut).
Dcqcn small() {
  return Dcqcn(DcqcnConfig::parse({{"rpg_threshold", 2},
                                   {"rpg_byte_reset", 1000},
                                   {"rpg_time_reset", 100},
                                   {"rpg_ai_rate", 100},
                                   {"rpg_hai_rate", 1000},
                                   {"dce_tcp_g", 0},
                                   {"rate_reduce_monitor_period", 0},
                                   {"clamp_tgt_rate", 1}},
                                  10'000'000'000ull),
               10'000'000'000ull);
}

TEST(Dcqcn, FastRecoveryThenAdditiveThenHyperIncrease) {
  Dcqcn d = small();
  d.on_cnp(0);  // 10e9 * 1025/2048 = 5'004'882'812.5 -> 5'004'882'812; Rt = 10e9; alpha = 1
  d.on_cnp(0);  // Rt = 5'004'882'812; Rc = Rt * (1 - 1/2) = 2'502'441'406
  ASSERT_EQ(d.target_rate(), 5'004'882'812u);
  ASSERT_EQ(d.current_rate(), 2'502'441'406u);
  uint64_t rt = 5'004'882'812u, rc = 2'502'441'406u;

  // Byte counter events 1 and 2 (<= F): fast recovery, Rc = ceil((Rt + Rc) / 2), Rt unchanged.
  d.on_tx(1, 999);
  EXPECT_EQ(d.current_rate(), rc) << "999 of 1000 bytes";
  d.on_tx(1, 1);
  rc = (rt + rc + 1) / 2;  // 3'753'662'109
  EXPECT_EQ(d.byte_stage(), 1u);
  EXPECT_EQ(d.current_rate(), 3'753'662'109u);
  d.on_tx(1, 1000);
  rc = (rt + rc + 1) / 2;  // 4'379'272'461
  EXPECT_EQ(d.current_rate(), 4'379'272'461u);
  EXPECT_EQ(d.target_rate(), rt);

  // Byte event 3 (> F, timer still 0): additive increase, Rt += 100 Mb/s.
  d.on_tx(1, 1000);
  rt += 100'000'000;
  rc = (rt + rc + 1) / 2;
  EXPECT_EQ(d.target_rate(), 5'104'882'812u);
  EXPECT_EQ(d.current_rate(), rc);

  // Timer events 1 and 2 (T <= F, BC > F): still additive.
  EXPECT_EQ(d.next_timer_ns(), 100 * kUs);
  d.on_timer(100 * kUs);
  rt += 100'000'000;
  rc = (rt + rc + 1) / 2;
  EXPECT_EQ(d.time_stage(), 1u);
  EXPECT_EQ(d.current_rate(), rc);
  EXPECT_EQ(d.next_timer_ns(), 200 * kUs);
  d.on_timer(200 * kUs);
  rt += 100'000'000;
  rc = (rt + rc + 1) / 2;
  EXPECT_EQ(d.target_rate(), rt);

  // Timer event 3: both counters past F, hyper increase, Rt += 1000 Mb/s.
  d.on_timer(300 * kUs);
  rt += 1'000'000'000;
  rc = (rt + rc + 1) / 2;
  EXPECT_EQ(d.target_rate(), 6'304'882'812u);
  EXPECT_EQ(d.current_rate(), rc);
  // And a byte event now is hyper too.
  d.on_tx(301 * kUs, 1000);
  rt += 1'000'000'000;
  rc = (rt + rc + 1) / 2;
  EXPECT_EQ(d.target_rate(), rt);
  EXPECT_EQ(d.current_rate(), rc);
  EXPECT_EQ(d.rate_bps, rc);

  // A CNP resets both stage counters: the next event is fast recovery again.
  d.on_cnp(400 * kUs);
  EXPECT_EQ(d.time_stage(), 0u);
  EXPECT_EQ(d.byte_stage(), 0u);
  rt = d.target_rate();
  rc = d.current_rate();
  d.on_tx(401 * kUs, 1000);
  EXPECT_EQ(d.target_rate(), rt);
  EXPECT_EQ(d.current_rate(), (rt + rc + 1) / 2);
}

TEST(Dcqcn, ClampsToTheLineRateAndStopsItsTimer) {
  Dcqcn d = small();
  d.on_cnp(0);
  uint64_t t = 0;
  for (int i = 0; i < 200 && d.next_timer_ns() != kNoTimer; ++i) {
    t = d.next_timer_ns();
    d.on_timer(t);
    d.on_tx(t, 5000);
    EXPECT_LE(d.target_rate(), 10'000'000'000u);
    EXPECT_LE(d.current_rate(), 10'000'000'000u);
  }
  EXPECT_EQ(d.current_rate(), 10'000'000'000u);
  EXPECT_EQ(d.target_rate(), 10'000'000'000u);
  EXPECT_EQ(d.rate_bps, 10'000'000'000u);
  EXPECT_EQ(d.next_timer_ns(), kNoTimer) << "nothing left to recover";
  const uint64_t changes = d.rate_changes;
  d.on_tx(t, 1'000'000);
  EXPECT_EQ(d.rate_changes, changes);
}

TEST(Dcqcn, RpgMaxRateCapsBelowTheLine) {
  Dcqcn d = make({{"rpg_max_rate", 40'000}});
  EXPECT_EQ(d.rate_bps, 40'000'000'000u);
}

TEST(Dcqcn, NeverBelowTheMinimumRate) {
  Dcqcn d = make({{"rpg_min_rate", 30'000}, {"rate_reduce_monitor_period", 0}});
  d.on_cnp(0);
  EXPECT_EQ(d.current_rate(), 50'048'828'125u);
  d.on_cnp(0);  // 50.05e9 * ~0.5 = ~25e9, below the 30 Gb/s floor
  EXPECT_EQ(d.current_rate(), 30'000'000'000u);
  d.on_cnp(0);
  EXPECT_EQ(d.current_rate(), 30'000'000'000u);
}

TEST(Dcqcn, OneCutKeepsAtLeastMinDecFac) {
  // rpg_gd 10 makes the cut alpha (not alpha / 2); rpg_min_dec_fac 50 still keeps half.
  Dcqcn d = make({{"rpg_gd", 10}});
  d.on_cnp(0);
  EXPECT_EQ(d.current_rate(), 50'000'000'000u);
  Dcqcn e = make({{"rpg_gd", 10}, {"rpg_min_dec_fac", 10}});
  e.on_cnp(0);  // keep 1 - 1023/1024 = 1/1024 -> the 10 % floor
  EXPECT_EQ(e.current_rate(), 10'000'000'000u);
}

TEST(Dcqcn, RateToSetOnFirstCnp) {
  Dcqcn d = make({{"rate_to_set_on_first_cnp", 20'000}, {"rate_reduce_monitor_period", 0}});
  d.on_cnp(0);
  EXPECT_EQ(d.current_rate(), 20'000'000'000u);
  EXPECT_EQ(d.target_rate(), 20'000'000'000u);
  d.on_cnp(1);  // later CNPs cut as usual
  EXPECT_EQ(d.target_rate(), 20'000'000'000u);
  EXPECT_LT(d.current_rate(), 20'000'000'000u);
}

void expect_error_naming(const Params& p, const std::string& key) {
  try {
    (void)make(p);
    ADD_FAILURE() << "accepted " << key;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
  }
}

TEST(Dcqcn, BadParametersNameTheKey) {
  expect_error_naming({{"rpg_ai_rat", 5}}, "rpg_ai_rat");
  expect_error_naming({{"rpg_ai_rate", -1}}, "rpg_ai_rate");
  expect_error_naming({{"dce_tcp_g", 1024}}, "dce_tcp_g");
  expect_error_naming({{"rpg_threshold", 1.5}}, "rpg_threshold");
  expect_error_naming({{"rpg_time_reset", NAN}}, "rpg_time_reset");
  expect_error_naming({{"rpg_min_rate", 200'000}}, "rpg_min_rate");
}

TEST(Dcqcn, TheRegistryBuildsIt) {
  auto a = cc::make("dcqcn", {{"rpg_ai_rate", 10}}, kLine);
  ASSERT_NE(dynamic_cast<Dcqcn*>(a.get()), nullptr);
  EXPECT_EQ(static_cast<Dcqcn*>(a.get())->config().ai_bps, 10'000'000u);
  EXPECT_THROW(cc::make("dcqcn", {{"nope", 1}}, kLine), std::invalid_argument);
}

}  // namespace
}  // namespace uroce::cc
