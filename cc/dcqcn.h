// DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015),
// with the parameters and defaults of NVIDIA ConnectX NICs (see dcqcn.cc for the sources). Rate-based: a CNP
// cuts the current rate by alpha/2 and remembers the rate before the cut as the target; a timer and a byte
// counter then raise the rate back in fast-recovery, additive-increase and hyper-increase stages.
#pragma once

#include <cstdint>
#include <memory>

#include "cc/cc.h"

namespace uroce::cc {

struct DcqcnConfig {
  uint64_t time_reset_ns = 300'000;  // rpg_time_reset: rate-increase timer period
  uint64_t byte_reset = 32'767;      // rpg_byte_reset: rate-increase byte counter period (0: off)
  uint32_t threshold = 1;            // rpg_threshold: F, fast-recovery stages of each counter
  uint64_t ai_bps = 5'000'000;       // rpg_ai_rate
  uint64_t hai_bps = 50'000'000;     // rpg_hai_rate
  uint64_t min_bps = 1'000'000;      // rpg_min_rate
  uint64_t max_bps = 0;              // rpg_max_rate (0 in the knob: the line rate)
  uint32_t gd = 11;                  // rpg_gd: cut = alpha * 2^(10 - gd) (11: alpha / 2)
  uint32_t min_dec_fac = 50;         // rpg_min_dec_fac: one cut keeps at least this % of the rate
  // On a CNP the target rate Rt becomes the current rate Rc: always with clamp_tgt_rate; with
  // clamp_tgt_rate_after_time_inc, when the last increase since the previous cut came from the timer.
  // Otherwise Rt keeps the rate the flow had before the congestion and fast recovery heads back there.
  bool clamp_tgt_rate = false;                // clamp_tgt_rate (ConnectX default 0)
  bool clamp_tgt_rate_after_time_inc = true;  // clamp_tgt_rate_after_time_inc (ConnectX default 1)
  double g = 5.0 / 1024;                      // 1 - dce_tcp_g / 1024: alpha's EWMA gain
  uint64_t alpha_period_ns = 1'000;           // dce_tcp_rtt: alpha decays once per period without a CNP
  double initial_alpha = 1023.0 / 1024;       // initial_alpha_value / 1024
  uint64_t monitor_ns = 4'000;                // rate_reduce_monitor_period: at most one cut per period
  uint64_t first_cnp_bps = 0;                 // rate_to_set_on_first_cnp (0: cut as usual)
  uint64_t np_min_cnp_interval_ns = 4'000;    // min_time_between_cnps: the notification point's knob

  // Reads ConnectX-named parameters (units as the knobs: us, bytes, Mb/s, 1/1024). Throws
  // std::invalid_argument naming the key for an unknown key or a value out of range.
  static DcqcnConfig parse(const Params& params, uint64_t line_rate_bps);
};

class Dcqcn final : public Algorithm {
 public:
  Dcqcn(const DcqcnConfig& cfg, uint64_t line_rate_bps);

  void on_cnp(uint64_t now_ns) override;
  void on_tx(uint64_t now_ns, uint32_t bytes) override;
  void on_timer(uint64_t now_ns) override;
  uint64_t next_timer_ns() const override { return timer_at_; }

  // State, for tests and traces.
  uint64_t current_rate() const { return rc_; }
  uint64_t target_rate() const { return rt_; }
  double alpha(uint64_t now_ns) const;
  uint32_t time_stage() const { return t_stage_; }
  uint32_t byte_stage() const { return b_stage_; }
  const DcqcnConfig& config() const { return cfg_; }

 private:
  void increase();
  void publish();
  bool recovering() const { return rc_ < cfg_.max_bps || rt_ < cfg_.max_bps; }

  DcqcnConfig cfg_;
  uint64_t rc_;  // current rate
  uint64_t rt_;  // target rate
  double alpha_;
  uint64_t alpha_at_ = 0;  // when alpha_ was last set; it decays lazily from there
  bool cnp_seen_ = false;
  uint64_t last_cut_ = 0;
  uint32_t t_stage_ = 0, b_stage_ = 0;  // timer and byte-counter events since the last cut
  uint64_t bytes_ = 0;                  // sent since the last byte-counter event
  uint64_t timer_at_ = kNoTimer;
};

std::unique_ptr<Algorithm> make_dcqcn(const Params& params, uint64_t line_rate_bps);

}  // namespace uroce::cc
