// HPCC sender (Li et al., SIGCOMM 2019, Algorithm 1). Per ACK carrying INT, over the hops of the path:
//   txRate_i = (ack.tx_bytes_i - L.tx_bytes_i) / (ack.ts_i - L.ts_i)
//   u_i      = min(ack.qlen_i, L.qlen_i) / (B_i * T) + txRate_i / B_i
//   u = max_i u_i, tau = the ts difference at that hop, tau = min(tau, T)
//   U = (1 - tau/T) * U + (tau/T) * u
// then the window:
//   U >= eta or stage >= maxStage:  W = Wc / (U / eta) + W_AI   (updating Wc: stage = 0, Wc = W)
//   otherwise:                      W = Wc + W_AI               (updating Wc: stage += 1, Wc = W)
// Wc is updated (the "update" branch) only by the first ACK beyond the sequence sent when it last changed,
// i.e. once per RTT; other ACKs recompute W from the same Wc. The pacing rate is W / T.
//
// Sequence numbers here are payload bytes: snd_nxt counts on_tx bytes, the ACK sequence counts on_ack bytes;
// a NAK (go-back-N) rewinds snd_nxt to what is acknowledged, as a sender's snd_nxt goes back.
//
// Defaults: eta 0.95 and maxStage 5 are the paper's (section 5.1). W_AI follows the paper's guidance of a
// small step, (1 - eta) * BDP / N for N = 100 concurrent flows: at 100 Gb/s and T = 10 us that is 62.5 B per
// RTT, i.e. 50 Mb/s. T has no universal default: set base_rtt to the fabric's base RTT.
// The window stays within [w_min, line rate * T] and the rate within [w_min / T, line rate]. The paper sets
// no floor; without one a cut to a few bytes paces the next full-size packet milliseconds later (the rate is
// W/T), so each increase round takes that long. w_min defaults to one 4096-byte packet (uroce's default MTU)
// per T.
//
// ecn_capable is true although HPCC ignores CNPs: a fabric that ECN-marks then marks HPCC's packets instead
// of dropping them (RED drops non-ECT packets above its thresholds), and the CNPs are only counted.
#include "cc/hpcc.h"

#include <algorithm>
#include <cmath>

#include "cc/param_reader.h"

namespace uroce::cc {

HpccConfig HpccConfig::parse(const Params& params, uint64_t line_rate_bps) {
  ParamReader r("hpcc", params);
  HpccConfig c;
  c.base_rtt_ns = static_cast<uint64_t>(std::llround(r.get("base_rtt", 10, 0.01, 1e6) * 1000));
  c.eta = r.get("eta", 0.95, 0.01, 1);
  c.max_stage = static_cast<uint32_t>(r.get_int("max_stage", 5, 0, 1000));
  const double bdp = static_cast<double>(line_rate_bps) / 8e9 * static_cast<double>(c.base_rtt_ns);
  c.w_ai = r.get("w_ai", 0, 0, bdp);
  if (c.w_ai == 0) c.w_ai = (1 - c.eta) * bdp / 100;
  c.w_min = std::min(r.get("w_min", 4096, 1, 1e9), bdp);
  r.finish();
  return c;
}

Hpcc::Hpcc(const HpccConfig& cfg, uint64_t line_rate_bps)
    : cfg_(cfg),
      line_bps_(line_rate_bps),
      w_init_(static_cast<double>(line_rate_bps) / 8e9 * static_cast<double>(cfg.base_rtt_ns)),
      w_(w_init_),
      wc_(w_init_) {
  ecn_capable = true;
  publish();
  rate_changes = 0;
}

void Hpcc::on_tx(uint64_t /*now*/, uint32_t bytes) { snd_nxt_ += bytes; }

void Hpcc::on_nak(uint64_t /*now*/) { snd_nxt_ = acked_; }

void Hpcc::on_telemetry(uint64_t /*now*/, const IntStack& stack) {
  pending_ = stack;
  have_pending_ = stack.hops > 0;
}

void Hpcc::on_ack(uint64_t /*now*/, uint64_t bytes, uint64_t /*rtt*/) {
  acked_ += bytes;
  snd_nxt_ = std::max(snd_nxt_, acked_);
  if (!have_pending_) return;
  have_pending_ = false;
  if (!have_last_ || last_.hops != pending_.hops) {  // the first feedback (or a new path): nothing to compare
    last_ = pending_;
    have_last_ = true;
    return;
  }
  const double u = measure_inflight(pending_);
  const bool update_wc = acked_ > last_update_seq_;
  compute_window(u, update_wc);
  if (update_wc) last_update_seq_ = snd_nxt_;
  last_ = pending_;
  publish();
}

double Hpcc::measure_inflight(const IntStack& ack) {
  const double t = static_cast<double>(cfg_.base_rtt_ns);
  double u = 0;
  uint64_t tau = 0;
  bool any = false;
  for (int i = 0; i < ack.hops && i < kMaxIntHops; ++i) {
    const IntHop& c = ack.hop[i];
    const IntHop& l = last_.hop[i];
    // No time passed at this hop (or its counters restarted): no rate to measure.
    if (c.line_rate_bps == 0 || c.ts_ns <= l.ts_ns || c.tx_bytes < l.tx_bytes) continue;
    const double dt = static_cast<double>(c.ts_ns - l.ts_ns);
    const double b = static_cast<double>(c.line_rate_bps) / 8e9;  // bytes per ns
    const double tx_rate = static_cast<double>(c.tx_bytes - l.tx_bytes) / dt;
    const double ui = static_cast<double>(std::min(c.qlen_bytes, l.qlen_bytes)) / (b * t) + tx_rate / b;
    if (!any || ui > u) {
      u = ui;
      tau = c.ts_ns - l.ts_ns;
      any = true;
    }
  }
  if (!any) return u_;
  const double w = static_cast<double>(std::min<uint64_t>(tau, cfg_.base_rtt_ns)) / t;
  u_ = (1 - w) * u_ + w * u;
  return u_;
}

void Hpcc::compute_window(double u, bool update_wc) {
  double w;
  if (u >= cfg_.eta || stage_ >= cfg_.max_stage) {
    w = u > 0 ? wc_ / (u / cfg_.eta) + cfg_.w_ai : w_init_;
    if (update_wc) stage_ = 0;
  } else {
    w = wc_ + cfg_.w_ai;
    if (update_wc) ++stage_;
  }
  w_ = std::clamp(w, cfg_.w_min, w_init_);
  if (update_wc) wc_ = w_;
}

void Hpcc::publish() {
  window_bytes = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(w_)));
  const double rate = w_ * 8e9 / static_cast<double>(cfg_.base_rtt_ns);
  const uint64_t r = std::clamp<uint64_t>(static_cast<uint64_t>(rate), 1, line_bps_);
  if (r != rate_bps) {
    rate_bps = r;
    ++rate_changes;
  }
}

std::unique_ptr<Algorithm> make_hpcc(const Params& params, uint64_t line_rate_bps) {
  return std::make_unique<Hpcc>(HpccConfig::parse(params, line_rate_bps), line_rate_bps);
}

}  // namespace uroce::cc
