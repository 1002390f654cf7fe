// TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter", SIGCOMM 2015):
// rate-based, driven by RTT samples. Below T_low the rate grows additively, above T_high it falls in
// proportion to how far the RTT is past T_high, and in between it follows the RTT gradient: additive increase
// (hyper-additive after several non-positive gradients in a row) while the RTT falls or holds, multiplicative
// decrease while it rises.
#pragma once

#include <cstdint>
#include <memory>

#include "cc/cc.h"

namespace uroce::cc {

struct TimelyConfig {
  double t_low_ns = 50'000;         // t_low (us)
  double t_high_ns = 500'000;       // t_high (us)
  double min_rtt_ns = 20'000;       // min_rtt (us): normalises the gradient
  double alpha = 0.875;             // EWMA weight of the newest RTT difference
  double beta = 0.8;                // multiplicative decrease factor
  uint64_t delta_bps = 10'000'000;  // delta (Mb/s): additive step
  uint32_t hai_after = 5;           // hai_after: non-positive gradients in a row before HAI
  uint32_t hai_n = 5;               // hai_n: HAI adds hai_n * delta
  uint64_t min_bps = 10'000'000;    // min_rate (Mb/s)

  // Throws std::invalid_argument naming the key.
  static TimelyConfig parse(const Params& params, uint64_t line_rate_bps);
};

class Timely final : public Algorithm {
 public:
  Timely(const TimelyConfig& cfg, uint64_t line_rate_bps);

  void on_tx(uint64_t now_ns, uint32_t bytes) override;
  void on_ack(uint64_t now_ns, uint64_t bytes, uint64_t rtt_ns) override;
  void on_nak(uint64_t now_ns) override;

  // State, for tests and traces.
  double rtt_diff_ns() const { return rtt_diff_; }
  uint32_t negative_gradients() const { return neg_count_; }
  double rate() const { return rate_; }
  const TimelyConfig& config() const { return cfg_; }

 private:
  void set_rate(double r);

  TimelyConfig cfg_;
  double line_;
  double rate_;
  double prev_rtt_ = 0;
  bool have_prev_ = false;
  double rtt_diff_ = 0;
  uint32_t neg_count_ = 0;
  uint64_t snd_nxt_ = 0, acked_ = 0, next_update_ = 0;  // bytes: one update per RTT
};

std::unique_ptr<Algorithm> make_timely(const Params& params, uint64_t line_rate_bps);

}  // namespace uroce::cc
