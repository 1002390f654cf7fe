// example_aimd: the smallest useful algorithm, and the worked example of docs/cc.md. Rate-based AIMD: every
// CNP or NAK multiplies the rate by md; while below line rate, a timer adds ai_rate every period. The rate
// stays within [min_rate, line rate]. Data is ECN-capable so that switches mark instead of dropping and the
// receiver answers marks with CNPs. It is registered (UROCE_CC=example_aimd) and tested
// (tests/cc/example_aimd_test.cc) so that the walk-through stays true; it is not a tuned algorithm.
//
// The increase runs on a timer, not per ACK: ACKs are coalesced (one per 16 packets or per message), so a
// flow cut to a crawl would wait a long time for the ACKs that raise it again.
#include <algorithm>
#include <memory>

#include "cc/cc.h"
#include "cc/param_reader.h"

namespace uroce::cc {

namespace {

class ExampleAimd final : public Algorithm {
 public:
  ExampleAimd(uint64_t line_bps, uint64_t ai_bps, double md, uint64_t min_bps, uint64_t period_ns)
      : line_(line_bps), ai_(ai_bps), md_(md), min_(min_bps), period_(period_ns) {
    rate_bps = line_bps;  // start at line rate
    ecn_capable = true;   // let switches mark, so that the receiver sends CNPs
  }

  void on_cnp(uint64_t now) override { decrease(now); }
  void on_nak(uint64_t now) override { decrease(now); }
  void on_timer(uint64_t now) override {
    set(rate_bps + ai_);
    next_ = rate_bps < line_ ? now + period_ : kNoTimer;  // at line rate the timer sleeps
  }
  uint64_t next_timer_ns() const override { return next_; }

 private:
  void decrease(uint64_t now) {
    set(static_cast<uint64_t>(static_cast<double>(rate_bps) * md_));
    if (next_ == kNoTimer) next_ = now + period_;
  }
  void set(uint64_t r) {
    r = std::clamp(r, min_, line_);
    if (r == rate_bps) return;
    rate_bps = r;
    ++rate_changes;  // every algorithm counts its rate changes; the transport adds them to cc_rate_changes
  }

  uint64_t line_, ai_;
  double md_;
  uint64_t min_, period_;
  uint64_t next_ = kNoTimer;
};

}  // namespace

// The factory registry.cc names. ParamReader gives each parameter a default and a range and rejects unknown
// keys, naming them.
std::unique_ptr<Algorithm> make_example_aimd(const Params& params, uint64_t line_rate_bps) {
  ParamReader r("example_aimd", params);
  const double line_mbps = static_cast<double>(line_rate_bps) / 1e6;
  const auto ai = static_cast<uint64_t>(r.get("ai_rate", 100, 0, line_mbps) * 1e6);  // Mb/s per period
  const double md = r.get("md", 0.5, 0.01, 1);
  const auto min = static_cast<uint64_t>(r.get("min_rate", 10, 0.001, line_mbps) * 1e6);  // Mb/s
  const auto period = static_cast<uint64_t>(r.get("period", 50, 0.001, 1e9) * 1e3);       // us
  r.finish();
  return std::make_unique<ExampleAimd>(line_rate_bps, ai, md, min, period);
}

}  // namespace uroce::cc
