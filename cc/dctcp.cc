// DCTCP, rate-based, as the HPCC authors' ns-3 RDMA simulator runs it (RdmaHw::HandleAckDctcp, cc_mode 8),
// on every ACK:
//   count the ACK's bytes, and whether its ECN echo was set
//   the ACK passes the end of the window (what had been sent when the window began): a new window
//     alpha = (1 - g) * alpha + g * F, F = echoed bytes / acknowledged bytes in the window that ended
//     (the first window only starts the count)
//   in CWR and the ACK passes what had been sent at the cut: CWR ends
//   an echo outside CWR: rate *= 1 - alpha / 2, and CWR until what has been sent so far is acknowledged
//   a new window outside CWR: rate += dctcp_rate_ai
// The rate stays within [min_rate, line rate].
//
// The window is rate * base_rtt (ns-3's variable window, HAS_WIN 1 and VAR_WIN 1 in its DCTCP runs: the
// base-RTT BDP scaled by rate / line rate), so the bytes in flight, and with them the RTT, stay bounded while
// the rate converges; without it one cut per window is one cut per queue-inflated RTT, and a 16:1 incast sits
// at the PFC threshold for milliseconds. The window never drops below the bytes in flight (set_window()).
//
// F is weighted by bytes where ns-3 counts ACKs of single packets: uroce's responder acknowledges up to 16
// packets per ACK and sets the echo (BECN) when any of them arrived CE-marked, so F is the fraction of
// echoed ACK spans, at least the fraction of marked packets.
//
// Defaults: g 1/16 (ns-3's EwmaGain as its DCTCP runs set it), dctcp_rate_ai 1000 Mb/s (the DctcpRateAI
// attribute's default; its run script sets 615 Mb/s, one 1 KB packet per 13 us RTT), min_rate 100 Mb/s,
// alpha starting at 1; base_rtt 10 us is uroce's (HPCC's base_rtt default here).
//
// A NAK rewinds the byte sequence (go-back-N re-sends what was not acknowledged); CNPs are ignored: the
// echo is the feedback, so a peer that sends no BECN leaves the rate at the line rate.
#include "cc/dctcp.h"

#include <algorithm>
#include <cmath>

#include "cc/param_reader.h"

namespace uroce::cc {

DctcpConfig DctcpConfig::parse(const Params& params, uint64_t line_rate_bps) {
  ParamReader r("dctcp", params);
  DctcpConfig c;
  const double line_mbps = static_cast<double>(line_rate_bps) / 1e6;
  c.g = r.get("g", 1.0 / 16, 0, 1);
  c.initial_alpha = r.get("initial_alpha", 1, 0, 1);
  c.ai_bps = static_cast<uint64_t>(std::llround(r.get("dctcp_rate_ai", 1000, 0, line_mbps) * 1e6));
  c.min_bps = static_cast<uint64_t>(std::llround(r.get("min_rate", 100, 0.001, line_mbps) * 1e6));
  c.base_rtt_ns = static_cast<uint64_t>(std::llround(r.get("base_rtt", 10, 0, 1e7) * 1000));
  r.finish();
  return c;
}

Dctcp::Dctcp(const DctcpConfig& cfg, uint64_t line_rate_bps)
    : cfg_(cfg), line_(static_cast<double>(line_rate_bps)), rate_(line_), alpha_(cfg.initial_alpha) {
  rate_bps = line_rate_bps;
  ecn_capable = true;
  set_window();
}

// Never below what is in flight plus one byte: the transport sets AckReq on the packet that fills the
// window, but packets sent under a larger window did not ask for an ACK, and a window cut below them would
// wait for the local ACK timeout. One more packet may go; it asks for the ACK that moves the window on.
void Dctcp::set_window() {
  if (cfg_.base_rtt_ns == 0) return;
  const auto w = static_cast<uint64_t>(rate_ * static_cast<double>(cfg_.base_rtt_ns) / 8e9);
  window_bytes = std::max(w, snd_nxt_ - acked_ + 1);
}

void Dctcp::on_tx(uint64_t /*now*/, uint32_t bytes) { snd_nxt_ += bytes; }

void Dctcp::on_ecn_echo(uint64_t /*now*/) { echo_ = true; }

void Dctcp::on_nak(uint64_t /*now*/) {
  snd_nxt_ = acked_;
  set_window();
}

void Dctcp::on_timeout(uint64_t now) { on_nak(now); }

void Dctcp::on_ack(uint64_t /*now*/, uint64_t bytes, uint64_t /*rtt_ns*/) {
  const bool echo = echo_;
  echo_ = false;
  echoes_ += echo;
  acked_ += bytes;
  snd_nxt_ = std::max(snd_nxt_, acked_);
  round_bytes_ += bytes;
  if (echo) round_marked_ += bytes;

  bool new_round = false;
  if (acked_ > round_end_) {
    new_round = true;
    if (!first_round_ && round_bytes_) {
      const double f = static_cast<double>(round_marked_) / static_cast<double>(round_bytes_);
      alpha_ = (1 - cfg_.g) * alpha_ + cfg_.g * f;
    }
    first_round_ = false;
    round_bytes_ = round_marked_ = 0;
    round_end_ = snd_nxt_;
  }
  if (cwr_ && acked_ > cwr_end_) cwr_ = false;
  if (echo && !cwr_) {
    set_rate(rate_ * (1 - alpha_ / 2));
    cwr_ = true;
    cwr_end_ = snd_nxt_;
  }
  if (!cwr_ && new_round) set_rate(rate_ + static_cast<double>(cfg_.ai_bps));
  set_window();
}

void Dctcp::set_rate(double r) {
  rate_ = std::clamp(r, static_cast<double>(cfg_.min_bps), line_);
  const auto published = static_cast<uint64_t>(rate_);
  if (published == rate_bps) return;
  rate_bps = published;
  ++rate_changes;
}

std::unique_ptr<Algorithm> make_dctcp(const Params& params, uint64_t line_rate_bps) {
  return std::make_unique<Dctcp>(DctcpConfig::parse(params, line_rate_bps), line_rate_bps);
}

}  // namespace uroce::cc
