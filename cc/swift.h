// Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the Datacenter",
// SIGCOMM 2020): window-based, driven by the RTT samples on_ack gets. Below a target delay the window grows
// by ai packets per RTT; above it, it shrinks by beta * (delay - target) / delay (at most max_mdf), at most
// once per RTT. The target is a base plus a flow-scaling term that grows as the window shrinks (many flows
// share the bottleneck) plus a per-hop term. A window below one packet is kept by pacing: one packet per
// RTT / cwnd.
#pragma once

#include <cstdint>
#include <memory>

#include "cc/cc.h"

namespace uroce::cc {

struct SwiftConfig {
  double ai = 1;                      // ai: additive increase, packets per RTT
  double beta = 0.8;                  // beta: multiplicative-decrease factor
  double max_mdf = 0.5;               // max_mdf: largest cut of one decrease
  double base_target_ns = 15'000;     // base_target_us
  double per_hop_ns = 1'000;          // hop_scale_us: target added per hop
  uint32_t hops = 0;                  // hops: until an INT stack says how many there are
  double fs_range_ns = 30'000;        // fs_range_us: largest flow-scaling addition
  double fs_min_cwnd = 0.1;           // fs_min_cwnd (packets): the window at which it is fs_range
  double fs_max_cwnd = 100;           // fs_max_cwnd (packets): the window at which it is 0
  double min_cwnd = 0.01;             // min_cwnd (packets)
  double max_cwnd = 0;                // max_cwnd (packets); 0 in the parameter: 4 BDPs of base_target
  double init_cwnd = 0;               // init_cwnd (packets); 0 in the parameter: 1 BDP of base_target
  uint32_t mss = 4096;                // mss (bytes): the packet a window of 1 is
  uint32_t retx_reset_threshold = 5;  // retx_reset_threshold: timeouts in a row that reset to min_cwnd

  // Throws std::invalid_argument naming the key.
  static SwiftConfig parse(const Params& params, uint64_t line_rate_bps);
};

class Swift final : public Algorithm {
 public:
  Swift(const SwiftConfig& cfg, uint64_t line_rate_bps);

  void on_tx(uint64_t now_ns, uint32_t bytes) override;
  void on_ack(uint64_t now_ns, uint64_t bytes, uint64_t rtt_ns) override;
  void on_nak(uint64_t now_ns) override;
  void on_timeout(uint64_t now_ns) override;
  void on_telemetry(uint64_t now_ns, const IntStack& stack) override;

  // State, for tests and traces.
  double cwnd() const { return cwnd_; }  // packets
  double target_delay_ns() const;
  uint32_t hops() const { return hops_; }
  const SwiftConfig& config() const { return cfg_; }

 private:
  bool can_decrease(uint64_t now) const;
  void decrease(uint64_t now, double factor);
  void publish();

  SwiftConfig cfg_;
  double line_;
  double cwnd_;
  double fs_alpha_, fs_beta_;  // flow scaling: fs = fs_alpha / sqrt(cwnd) + fs_beta, within [0, fs_range]
  uint32_t hops_;
  double rtt_ns_ = 0;  // the latest sample: the period of "once per RTT" and of sub-packet pacing
  uint64_t last_decrease_ = 0;
  bool decreased_ = false;
  uint32_t retransmits_ = 0;
  uint64_t snd_nxt_ = 0, acked_ = 0;  // payload bytes sent / acknowledged
  uint64_t published_window_ = 0;     // cwnd's window, before the in-flight floor
};

std::unique_ptr<Algorithm> make_swift(const Params& params, uint64_t line_rate_bps);

}  // namespace uroce::cc
