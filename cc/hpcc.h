// HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019): window-based, paced at W / T,
// driven by the in-band telemetry (INT) each switch stamps on data packets and the responder echoes in its
// ACK. Each ACK estimates the bottleneck's normalised inflight bytes U from the change in every hop's
// tx_bytes and its queue; the window follows U towards the target utilisation eta with multiplicative
// decrease and additive (after maxStage rounds, multiplicative) increase, the reference window Wc moving once
// per RTT.
#pragma once

#include <cstdint>
#include <memory>

#include "cc/cc.h"

namespace uroce::cc {

struct HpccConfig {
  uint64_t base_rtt_ns = 10'000;  // T: the fabric's base RTT (base_rtt, us)
  double eta = 0.95;              // target utilisation
  uint32_t max_stage = 5;         // additive-increase rounds before a multiplicative increase
  double w_ai = 0;                // additive step in bytes (w_ai); 0 in the parameter: (1 - eta) * BDP / 100
  double w_min = 4096;            // smallest window in bytes (w_min): one 4096-byte-MTU packet per T

  // Parameters: base_rtt (us), eta, max_stage, w_ai, w_min (bytes). Throws std::invalid_argument naming the
  // key.
  static HpccConfig parse(const Params& params, uint64_t line_rate_bps);
};

class Hpcc final : public Algorithm {
 public:
  Hpcc(const HpccConfig& cfg, uint64_t line_rate_bps);

  void on_tx(uint64_t now_ns, uint32_t bytes) override;
  void on_telemetry(uint64_t now_ns, const IntStack& stack) override;
  void on_ack(uint64_t now_ns, uint64_t bytes, uint64_t rtt_ns) override;
  void on_nak(uint64_t now_ns) override;

  // State, for tests and traces.
  double utilisation() const { return u_; }
  double window() const { return w_; }
  double reference_window() const { return wc_; }
  double initial_window() const { return w_init_; }
  uint32_t stage() const { return stage_; }
  const HpccConfig& config() const { return cfg_; }

 private:
  double measure_inflight(const IntStack& ack);
  void compute_window(double u, bool update_wc);
  void publish();

  HpccConfig cfg_;
  uint64_t line_bps_;
  double w_init_;  // bytes: line rate * T
  double w_, wc_;
  double u_ = 0;
  uint32_t stage_ = 0;
  uint64_t snd_nxt_ = 0, acked_ = 0, last_update_seq_ = 0;  // bytes
  IntStack last_;  // the INT stack of the previous ACK (L in the paper)
  bool have_last_ = false;
  IntStack pending_;  // the stack on_telemetry delivered for the ACK that follows
  bool have_pending_ = false;
};

std::unique_ptr<Algorithm> make_hpcc(const Params& params, uint64_t line_rate_bps);

}  // namespace uroce::cc
