// DCTCP (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010) in the rate-based form the HPCC authors'
// ns-3 RDMA simulator runs (cc_mode 8): alpha is an EWMA of the fraction of acknowledged data whose ACK
// echoed ECN (BTH BECN), updated once per window of data; an echo cuts the rate by alpha / 2 at most once
// per window; a window without a cut adds dctcp_rate_ai. As there, the rate also sets a window: the bytes
// the rate sends in one base RTT.
#pragma once

#include <cstdint>
#include <memory>

#include "cc/cc.h"

namespace uroce::cc {

struct DctcpConfig {
  double g = 1.0 / 16;              // g: alpha's EWMA gain
  double initial_alpha = 1;         // initial_alpha
  uint64_t ai_bps = 1'000'000'000;  // dctcp_rate_ai (Mb/s): additive step per window
  uint64_t min_bps = 100'000'000;   // min_rate (Mb/s)
  uint64_t base_rtt_ns = 10'000;    // base_rtt (us): window = rate * base_rtt; 0: no window

  // Throws std::invalid_argument naming the key.
  static DctcpConfig parse(const Params& params, uint64_t line_rate_bps);
};

class Dctcp final : public Algorithm {
 public:
  Dctcp(const DctcpConfig& cfg, uint64_t line_rate_bps);

  void on_tx(uint64_t now_ns, uint32_t bytes) override;
  void on_ecn_echo(uint64_t now_ns) override;
  void on_ack(uint64_t now_ns, uint64_t bytes, uint64_t rtt_ns) override;
  void on_nak(uint64_t now_ns) override;
  void on_timeout(uint64_t now_ns) override;

  // State, for tests and traces.
  double alpha() const { return alpha_; }
  double rate() const { return rate_; }
  bool in_cwr() const { return cwr_; }  // cut in this window: no further cut, no increase
  uint64_t echoes() const { return echoes_; }
  const DctcpConfig& config() const { return cfg_; }

 private:
  void set_rate(double r);
  void set_window();

  DctcpConfig cfg_;
  double line_;
  double rate_;
  double alpha_;
  bool echo_ = false;  // the next on_ack's bytes were ECN-echoed
  bool cwr_ = false;
  bool first_round_ = true;
  uint64_t echoes_ = 0;
  uint64_t snd_nxt_ = 0, acked_ = 0;  // payload bytes sent / acknowledged
  uint64_t round_end_ = 0;            // the window ends once acked_ passes this
  uint64_t cwr_end_ = 0;              // CWR ends once acked_ passes this
  uint64_t round_bytes_ = 0, round_marked_ = 0;
};

std::unique_ptr<Algorithm> make_dctcp(const Params& params, uint64_t line_rate_bps);

}  // namespace uroce::cc
