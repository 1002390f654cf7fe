// TIMELY rate computation (Mittal et al., SIGCOMM 2015, Algorithm 1), once per RTT sample:
//   new_rtt_diff = new_rtt - prev_rtt; prev_rtt = new_rtt
//   rtt_diff = (1 - alpha) * rtt_diff + alpha * new_rtt_diff
//   gradient = rtt_diff / min_rtt
//   new_rtt < T_low:   rate += delta
//   new_rtt > T_high:  rate *= 1 - beta * (1 - T_high / new_rtt)
//   gradient <= 0:     rate += N * delta, N = hai_n once the gradient was <= 0 for hai_after samples in a row
//   gradient > 0:      rate *= 1 - beta * gradient
// The rate stays within [min_rate, line rate]; a decrease factor below 0 counts as 0 (the rate goes to
// min_rate). The first sample only sets prev_rtt. Samples of 0 (none: a re-sent packet, Karn's rule) are
// skipped.
//
// The paper computes once per completion event (a 16-64 KB segment). Here the rate moves at most once per
// RTT: a sample counts only when the bytes acknowledged pass what had been sent at the previous update
// (sequence numbers are on_tx / on_ack payload bytes; a NAK rewinds), as the HPCC authors' ns-3 TIMELY does.
// Per-ACK updates compound one RTT's congestion into many multiplicative cuts. Defaults are the paper's
// (T_low 50 us, T_high 500 us, beta 0.8, delta 10 Mb/s, HAI after 5) with min_rtt 20 us and alpha 0.875, as
// the HPCC authors' ns-3 simulator sets them (RdmaHw attributes TimelyAlpha/Beta/TLow/THigh/MinRtt). They
// suit the paper's 10 Gb/s, tens-of-us RTT networks: scale t_low, t_high and min_rtt to the fabric's RTT.
//
// ecn_capable is true for the same reason as HPCC's: an ECN-marking fabric marks instead of dropping; TIMELY
// itself ignores CNPs.
#include "cc/timely.h"

#include <algorithm>
#include <cmath>

#include "cc/param_reader.h"

namespace uroce::cc {

TimelyConfig TimelyConfig::parse(const Params& params, uint64_t line_rate_bps) {
  ParamReader r("timely", params);
  TimelyConfig c;
  const double line_mbps = static_cast<double>(line_rate_bps) / 1e6;
  c.t_low_ns = r.get("t_low", 50, 0, 1e7) * 1000;
  c.t_high_ns = r.get("t_high", 500, 0.001, 1e7) * 1000;
  c.min_rtt_ns = r.get("min_rtt", 20, 0.001, 1e7) * 1000;
  c.alpha = r.get("alpha", 0.875, 0, 1);
  c.beta = r.get("beta", 0.8, 0, 1);
  c.delta_bps = static_cast<uint64_t>(std::llround(r.get("delta", 10, 0, line_mbps) * 1e6));
  c.hai_after = static_cast<uint32_t>(r.get_int("hai_after", 5, 1, 1e6));
  c.hai_n = static_cast<uint32_t>(r.get_int("hai_n", 5, 1, 1e6));
  c.min_bps = static_cast<uint64_t>(std::llround(r.get("min_rate", 10, 0.001, line_mbps) * 1e6));
  r.finish();
  if (c.t_low_ns >= c.t_high_ns)
    throw std::invalid_argument("cc timely: parameter 't_low' must be below t_high");
  return c;
}

Timely::Timely(const TimelyConfig& cfg, uint64_t line_rate_bps)
    : cfg_(cfg), line_(static_cast<double>(line_rate_bps)), rate_(line_) {
  rate_bps = line_rate_bps;
  ecn_capable = true;
}

void Timely::on_tx(uint64_t /*now*/, uint32_t bytes) { snd_nxt_ += bytes; }

void Timely::on_nak(uint64_t /*now*/) {
  snd_nxt_ = acked_;
  next_update_ = std::min(next_update_, acked_ + 1);
}

void Timely::on_ack(uint64_t /*now*/, uint64_t bytes, uint64_t rtt_ns) {
  acked_ += bytes;
  snd_nxt_ = std::max(snd_nxt_, acked_);
  if (rtt_ns == 0 || acked_ < next_update_) return;  // one update per RTT
  next_update_ = snd_nxt_ + 1;
  const double rtt = static_cast<double>(rtt_ns);
  if (!have_prev_) {
    prev_rtt_ = rtt;
    have_prev_ = true;
    return;
  }
  const double new_diff = rtt - prev_rtt_;
  prev_rtt_ = rtt;
  rtt_diff_ = (1 - cfg_.alpha) * rtt_diff_ + cfg_.alpha * new_diff;
  const double gradient = rtt_diff_ / cfg_.min_rtt_ns;
  const double delta = static_cast<double>(cfg_.delta_bps);

  if (rtt < cfg_.t_low_ns) return set_rate(rate_ + delta);
  if (rtt > cfg_.t_high_ns) {
    neg_count_ = 0;
    return set_rate(rate_ * std::max(0.0, 1 - cfg_.beta * (1 - cfg_.t_high_ns / rtt)));
  }
  if (gradient <= 0) {
    ++neg_count_;
    const double n = neg_count_ >= cfg_.hai_after ? cfg_.hai_n : 1;
    return set_rate(rate_ + n * delta);
  }
  neg_count_ = 0;
  set_rate(rate_ * std::max(0.0, 1 - cfg_.beta * gradient));
}

void Timely::set_rate(double r) {
  rate_ = std::clamp(r, static_cast<double>(cfg_.min_bps), line_);
  const auto published = static_cast<uint64_t>(rate_);
  if (published == rate_bps) return;
  rate_bps = published;
  ++rate_changes;
}

std::unique_ptr<Algorithm> make_timely(const Params& params, uint64_t line_rate_bps) {
  return std::make_unique<Timely>(TimelyConfig::parse(params, line_rate_bps), line_rate_bps);
}

}  // namespace uroce::cc
