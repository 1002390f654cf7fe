// DCQCN reaction point. Update rules (Zhu et al., SIGCOMM 2015, section 3 and Algorithm 1):
//   CNP:       Rt = Rc; Rc = Rc * (1 - alpha/2); alpha = (1 - g) * alpha + g; increase state reset
//              (ConnectX knobs: with clamp_tgt_rate 0, the default, Rt = Rc only when the rate rose since the
//              previous cut: by the byte counter, or by the timer too with clamp_tgt_rate_after_time_inc 1,
//              the default; so back-to-back CNPs cut Rc again but leave Rt, the rate before the congestion)
//   no CNP for one alpha period: alpha = (1 - g) * alpha
//   increase event (timer every rpg_time_reset, byte counter every rpg_byte_reset bytes), T and BC counting
//   the events of each since the last cut, F = rpg_threshold:
//     T <= F and BC <= F  fast recovery      Rc = (Rt + Rc) / 2
//     T > F and BC > F    hyper increase     Rt += rpg_hai_rate; Rc = (Rt + Rc) / 2
//     otherwise           additive increase  Rt += rpg_ai_rate;  Rc = (Rt + Rc) / 2
//   Rc never falls below rpg_min_rate; Rt and Rc never exceed rpg_max_rate (the line rate by default).
//
// Defaults are ConnectX-4-and-later firmware defaults, as NVIDIA's "DCQCN CC Parameters" page (DOCA SDK
// documentation, networking-docs.nvidia.com/doca/archive/3-4-0/dcqcn-cc-parameters; formerly Mellanox
// community DOC-2790) lists them and `mlxconfig -d <dev> q` prints them on a ConnectX NIC:
//   RPG_TIME_RESET 300 us, RPG_BYTE_RESET 32767 B, RPG_THRESHOLD 1, RPG_MAX_RATE 0 (line rate),
//   RPG_AI_RATE 5 Mb/s, RPG_HAI_RATE 50 Mb/s, RPG_GD 11, RPG_MIN_DEC_FAC 50 %, RPG_MIN_RATE 1 Mb/s,
//   RATE_TO_SET_ON_FIRST_CNP 0, DCE_TCP_G 1019, DCE_TCP_RTT 1 us, RATE_REDUCE_MONITOR_PERIOD 4 us,
//   INITIAL_ALPHA_VALUE 1023, MIN_TIME_BETWEEN_CNPS 4 us.
// The same page gives the fixed-point forms used here: alpha has 10 fraction bits (so g = (1024 - dce_tcp_g)
// / 1024 and initial alpha = initial_alpha_value / 1024), and the cut is alpha * 2^(10 - rpg_gd) of the rate,
// which with rpg_gd = 11 is the paper's alpha / 2.
//
// alpha's decay timer is evaluated lazily: the value at time t is the value set at the last CNP times
// (1 - g)^(whole periods since). That is exactly a timer restarted at every CNP, without firing one per
// microsecond per flow.
#include "cc/dcqcn.h"

#include <algorithm>
#include <cmath>

#include "cc/param_reader.h"

namespace uroce::cc {

namespace {

constexpr double kMbps = 1e6;
constexpr double kUs = 1e3;

uint64_t ns(double us) { return static_cast<uint64_t>(std::llround(us * kUs)); }
uint64_t bps(double mbps) { return static_cast<uint64_t>(std::llround(mbps * kMbps)); }

}  // namespace

DcqcnConfig DcqcnConfig::parse(const Params& params, uint64_t line_rate_bps) {
  ParamReader r("dcqcn", params);
  DcqcnConfig c;
  const double line_mbps = static_cast<double>(line_rate_bps) / kMbps;
  c.time_reset_ns = ns(r.get("rpg_time_reset", 300, 0.001, 4.0e9));
  c.byte_reset = static_cast<uint64_t>(r.get_int("rpg_byte_reset", 32767, 0, 4.0e9));
  c.threshold = static_cast<uint32_t>(r.get_int("rpg_threshold", 1, 1, 31));
  c.ai_bps = bps(r.get("rpg_ai_rate", 5, 0, line_mbps));
  c.hai_bps = bps(r.get("rpg_hai_rate", 50, 0, line_mbps));
  c.min_bps = bps(r.get("rpg_min_rate", 1, 0.001, line_mbps));
  const double max_mbps = r.get("rpg_max_rate", 0, 0, line_mbps);
  c.max_bps = max_mbps == 0 ? line_rate_bps : bps(max_mbps);
  c.gd = static_cast<uint32_t>(r.get_int("rpg_gd", 11, 1, 31));
  c.min_dec_fac = static_cast<uint32_t>(r.get_int("rpg_min_dec_fac", 50, 0, 100));
  c.clamp_tgt_rate = r.get_int("clamp_tgt_rate", 0, 0, 1) != 0;
  c.clamp_tgt_rate_after_time_inc = r.get_int("clamp_tgt_rate_after_time_inc", 1, 0, 1) != 0;
  c.g = (1024 - r.get_int("dce_tcp_g", 1019, 0, 1023)) / 1024.0;
  c.alpha_period_ns = ns(r.get("dce_tcp_rtt", 1, 0.001, 131071));
  c.initial_alpha = r.get_int("initial_alpha_value", 1023, 0, 1023) / 1024.0;
  c.monitor_ns = ns(r.get("rate_reduce_monitor_period", 4, 0, 4.0e9));
  c.first_cnp_bps = bps(r.get("rate_to_set_on_first_cnp", 0, 0, line_mbps));
  // The notification point's knob: the device applies it (Device strips it before building the RP). It is
  // accepted here too so that the whole ConnectX set can be handed to make() directly.
  c.np_min_cnp_interval_ns = ns(r.get("min_time_between_cnps", 4, 0, 4.0e9));
  r.finish();
  if (c.min_bps > c.max_bps)
    throw std::invalid_argument("cc dcqcn: parameter 'rpg_min_rate' is above rpg_max_rate / the line rate");
  return c;
}

Dcqcn::Dcqcn(const DcqcnConfig& cfg, uint64_t line_rate_bps)
    : cfg_(cfg), rc_(cfg.max_bps ? cfg.max_bps : line_rate_bps), rt_(rc_), alpha_(cfg.initial_alpha) {
  cfg_.max_bps = rc_;
  rate_bps = rc_;
  ecn_capable = true;
}

double Dcqcn::alpha(uint64_t now_ns) const {
  if (!cnp_seen_ || now_ns <= alpha_at_) return alpha_;
  const uint64_t periods = (now_ns - alpha_at_) / cfg_.alpha_period_ns;
  return alpha_ * std::pow(1 - cfg_.g, static_cast<double>(periods));
}

void Dcqcn::on_cnp(uint64_t now) {
  if (cnp_seen_ && now < last_cut_ + cfg_.monitor_ns) return;  // one cut per rate_reduce_monitor_period
  const double a = alpha(now);
  if (!cnp_seen_ && cfg_.first_cnp_bps) {
    rc_ = rt_ = std::max(cfg_.min_bps, std::min(cfg_.first_cnp_bps, cfg_.max_bps));
  } else {
    // Rt drops to Rc only if the rate rose since the last cut (by the byte counter; by the timer too with
    // clamp_tgt_rate_after_time_inc): back-to-back CNPs do not ratchet the target down.
    if (cfg_.clamp_tgt_rate || b_stage_ > 0 || (cfg_.clamp_tgt_rate_after_time_inc && t_stage_ > 0))
      rt_ = rc_;
    const double cut = std::min(1.0, a * std::ldexp(1.0, 10 - static_cast<int>(cfg_.gd)));
    const double keep = std::max(1 - cut, cfg_.min_dec_fac / 100.0);
    rc_ = std::max(cfg_.min_bps, static_cast<uint64_t>(static_cast<double>(rc_) * keep));
  }
  alpha_ = (1 - cfg_.g) * a + cfg_.g;
  alpha_at_ = now;
  cnp_seen_ = true;
  last_cut_ = now;
  t_stage_ = b_stage_ = 0;
  bytes_ = 0;
  timer_at_ = now + cfg_.time_reset_ns;
  publish();
}

void Dcqcn::on_tx(uint64_t /*now*/, uint32_t bytes) {
  if (!cnp_seen_ || cfg_.byte_reset == 0 || !recovering()) return;
  bytes_ += bytes;
  while (bytes_ >= cfg_.byte_reset && recovering()) {
    bytes_ -= cfg_.byte_reset;
    ++b_stage_;
    increase();
  }
}

void Dcqcn::on_timer(uint64_t now) {
  if (timer_at_ == kNoTimer || now < timer_at_) return;
  ++t_stage_;
  increase();
  // Nothing left to recover: the timer sleeps until the next CNP.
  timer_at_ = recovering() ? now + cfg_.time_reset_ns : kNoTimer;
}

void Dcqcn::increase() {
  const uint32_t f = cfg_.threshold;
  if (t_stage_ > f && b_stage_ > f) {
    rt_ += cfg_.hai_bps;
  } else if (t_stage_ > f || b_stage_ > f) {
    rt_ += cfg_.ai_bps;
  }
  rt_ = std::min(rt_, cfg_.max_bps);
  rc_ = (rt_ + rc_ + 1) / 2;  // rounds up, so Rc reaches Rt instead of creeping towards it
  publish();
}

void Dcqcn::publish() {
  if (rate_bps == rc_) return;
  rate_bps = rc_;
  ++rate_changes;
}

std::unique_ptr<Algorithm> make_dcqcn(const Params& params, uint64_t line_rate_bps) {
  return std::make_unique<Dcqcn>(DcqcnConfig::parse(params, line_rate_bps), line_rate_bps);
}

}  // namespace uroce::cc
