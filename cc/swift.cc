// Swift's window update (Kumar et al., SIGCOMM 2020, Algorithm 1), cwnd in packets of `mss` bytes:
//   on an ACK of n packets with delay d (the RTT sample):
//     d < target:  cwnd += ai / cwnd * n  (cwnd >= 1)   or   cwnd += ai * n  (cwnd < 1): ai per RTT
//     otherwise, at most once per RTT:  cwnd *= max(1 - beta * (d - target) / d, 1 - max_mdf)
//   a NAK (fast recovery):               cwnd *= 1 - max_mdf, at most once per RTT
//   the retransmission timeout:          the same, and after retx_reset_threshold in a row cwnd = min_cwnd
//   cwnd stays within [min_cwnd, max_cwnd]
//   target = base_target + hops * hop_scale + clamp(fs_alpha / sqrt(cwnd) + fs_beta, 0, fs_range), with
//     fs_alpha = fs_range / (1 / sqrt(fs_min_cwnd) - 1 / sqrt(fs_max_cwnd)), fs_beta = -fs_alpha /
//     sqrt(fs_max_cwnd)
// The paper subtracts the NIC and host delays from the RTT (it timestamps them); here on_ack's RTT sample is
// the delay: the transport measures it from the packet's transmit to the ACK's arrival, so host processing
// is only the time between polls. Samples of 0 (a re-sent packet, Karn's rule) change nothing.
//
// Decisions: window_bytes = cwnd * mss (at least one packet, so a packet can be in flight, and at least the
// bytes in flight plus one, see publish()); below one packet
// the window alone cannot slow the flow, so rate_bps paces it at cwnd * mss per RTT (the paper's pacing delay
// RTT / cwnd); otherwise the rate is the line rate.
//
// Hops: the paper counts them from the TTL; uroce's ACKs carry no TTL, so `hops` is a parameter (default 0:
// no hop scaling) and an echoed INT stack (HPCC's telemetry, when the fabric stamps it) replaces it with the
// number of switch ports the data crossed.
//
// Defaults: beta 0.8, max_mdf 0.5, ai 1 packet, fs_min_cwnd 0.1 and fs_max_cwnd 100 packets follow the
// paper's description; the delays (base_target 15 us, fs_range 30 us, hop_scale 1 us) are set for uroce's
// simulated 100 Gb/s fabric (a few us of base RTT) and should be scaled to a fabric's RTT like TIMELY's.
// ecn_capable is true, as for TIMELY and HPCC: an ECN fabric then marks instead of dropping; Swift ignores
// CNPs.
#include "cc/swift.h"

#include <algorithm>
#include <cmath>

#include "cc/param_reader.h"

namespace uroce::cc {

SwiftConfig SwiftConfig::parse(const Params& params, uint64_t line_rate_bps) {
  ParamReader r("swift", params);
  SwiftConfig c;
  c.ai = r.get("ai", 1, 0, 1e6);
  c.beta = r.get("beta", 0.8, 0, 1);
  c.max_mdf = r.get("max_mdf", 0.5, 0, 1);
  c.base_target_ns = r.get("base_target_us", 15, 0.001, 1e7) * 1000;
  c.per_hop_ns = r.get("hop_scale_us", 1, 0, 1e6) * 1000;
  c.hops = static_cast<uint32_t>(r.get_int("hops", 0, 0, 255));
  c.fs_range_ns = r.get("fs_range_us", 30, 0, 1e7) * 1000;
  c.fs_min_cwnd = r.get("fs_min_cwnd", 0.1, 1e-6, 1e9);
  c.fs_max_cwnd = r.get("fs_max_cwnd", 100, 1e-6, 1e9);
  c.min_cwnd = r.get("min_cwnd", 0.01, 1e-6, 1e9);
  c.mss = static_cast<uint32_t>(r.get_int("mss", 4096, 64, 65536));
  const double bdp = static_cast<double>(line_rate_bps) / 8 * c.base_target_ns / 1e9 / c.mss;
  c.max_cwnd = r.get("max_cwnd", 0, 0, 1e9);
  if (c.max_cwnd == 0) c.max_cwnd = std::max(c.min_cwnd, 4 * bdp);
  c.init_cwnd = r.get("init_cwnd", 0, 0, 1e9);
  if (c.init_cwnd == 0) c.init_cwnd = bdp;
  c.retx_reset_threshold = static_cast<uint32_t>(r.get_int("retx_reset_threshold", 5, 1, 1e6));
  r.finish();
  if (c.fs_min_cwnd >= c.fs_max_cwnd)
    throw std::invalid_argument("cc swift: parameter 'fs_min_cwnd' must be below fs_max_cwnd");
  if (c.min_cwnd > c.max_cwnd)
    throw std::invalid_argument("cc swift: parameter 'min_cwnd' must not exceed max_cwnd");
  c.init_cwnd = std::clamp(c.init_cwnd, c.min_cwnd, c.max_cwnd);
  return c;
}

Swift::Swift(const SwiftConfig& cfg, uint64_t line_rate_bps)
    : cfg_(cfg), line_(static_cast<double>(line_rate_bps)), cwnd_(cfg.init_cwnd), hops_(cfg.hops) {
  fs_alpha_ = cfg_.fs_range_ns / (1 / std::sqrt(cfg_.fs_min_cwnd) - 1 / std::sqrt(cfg_.fs_max_cwnd));
  fs_beta_ = -fs_alpha_ / std::sqrt(cfg_.fs_max_cwnd);
  ecn_capable = true;
  publish();
  rate_changes = 0;
}

double Swift::target_delay_ns() const {
  const double fs = std::clamp(fs_alpha_ / std::sqrt(cwnd_) + fs_beta_, 0.0, cfg_.fs_range_ns);
  return cfg_.base_target_ns + hops_ * cfg_.per_hop_ns + fs;
}

bool Swift::can_decrease(uint64_t now) const {
  return !decreased_ || static_cast<double>(now - last_decrease_) >= rtt_ns_;
}

void Swift::decrease(uint64_t now, double factor) {
  if (!can_decrease(now)) return;
  cwnd_ *= factor;
  last_decrease_ = now;
  decreased_ = true;
}

void Swift::on_telemetry(uint64_t /*now*/, const IntStack& stack) {
  if (stack.hops) hops_ = stack.hops;
}

void Swift::on_tx(uint64_t /*now*/, uint32_t bytes) { snd_nxt_ += bytes; }

void Swift::on_ack(uint64_t now, uint64_t bytes, uint64_t rtt_ns) {
  retransmits_ = 0;
  acked_ += bytes;
  snd_nxt_ = std::max(snd_nxt_, acked_);
  if (rtt_ns == 0) return publish();
  rtt_ns_ = static_cast<double>(rtt_ns);
  const double acked = static_cast<double>(bytes) / cfg_.mss;
  const double target = target_delay_ns();
  if (rtt_ns_ < target) {
    cwnd_ += cwnd_ >= 1 ? cfg_.ai / cwnd_ * acked : cfg_.ai * acked;
  } else {
    decrease(now, std::max(1 - cfg_.beta * (rtt_ns_ - target) / rtt_ns_, 1 - cfg_.max_mdf));
  }
  publish();
}

void Swift::on_nak(uint64_t now) {
  retransmits_ = 0;
  snd_nxt_ = acked_;  // go-back-N: what was in flight is sent again
  decrease(now, 1 - cfg_.max_mdf);
  publish();
}

void Swift::on_timeout(uint64_t now) {
  snd_nxt_ = acked_;
  if (++retransmits_ >= cfg_.retx_reset_threshold) {
    cwnd_ = cfg_.min_cwnd;
    last_decrease_ = now;
    decreased_ = true;
  } else {
    decrease(now, 1 - cfg_.max_mdf);
  }
  publish();
}

void Swift::publish() {
  cwnd_ = std::clamp(cwnd_, cfg_.min_cwnd, cfg_.max_cwnd);
  const auto window = static_cast<uint64_t>(std::max(1.0, cwnd_) * cfg_.mss);
  uint64_t rate = static_cast<uint64_t>(line_);
  if (cwnd_ < 1) {
    // Pacing: cwnd packets per RTT. Before the first sample the base target stands in for the RTT.
    const double rtt = rtt_ns_ > 0 ? rtt_ns_ : cfg_.base_target_ns;
    rate = static_cast<uint64_t>(std::clamp(cwnd_ * cfg_.mss * 8 * 1e9 / rtt, 1.0, line_));
  }
  // Never below what is in flight plus one byte: packets sent under a larger window did not ask for an ACK
  // (the transport sets AckReq on the packet that fills the window), and a cut below them would wait for the
  // local ACK timeout. One more packet may go; it asks for the ACK that moves the window on.
  window_bytes = std::max(window, snd_nxt_ - acked_ + 1);
  if (window == published_window_ && rate == rate_bps) return;
  published_window_ = window;
  rate_bps = rate;
  ++rate_changes;
}

std::unique_ptr<Algorithm> make_swift(const Params& params, uint64_t line_rate_bps) {
  return std::make_unique<Swift>(SwiftConfig::parse(params, line_rate_bps), line_rate_bps);
}

}  // namespace uroce::cc
