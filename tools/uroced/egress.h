// Egress knobs of one uroced port, free of DPDK so unit tests drive them in virtual time: a token-bucket
// rate limit, RED/ECN marking on the instantaneous queue depth, random frame loss, and the CE marking of a
// frame in place.
#pragma once

#include <cstdint>

#include "fabric/fabric.h"

namespace uroce::uroced {

// Token bucket in bytes of frame (Ethernet header through ICRC; no preamble, gap or FCS: memif carries
// none). rate_bps = 0 means unlimited. The bucket starts full.
class TokenBucket {
 public:
  void configure(uint64_t rate_bps, uint64_t burst_bytes, uint64_t now_ns);
  bool unlimited() const { return rate_bps_ == 0; }
  // Adds the tokens earned since the last refill, capped at the burst.
  void refill(uint64_t now_ns);
  // True when a frame of `bytes` may leave now (the bucket holds at least that many tokens).
  bool allows(uint32_t bytes) const { return unlimited() || tokens_ >= bytes; }
  void take(uint32_t bytes) {
    if (!unlimited()) tokens_ -= bytes;
  }
  // When a frame of `bytes` will be allowed, assuming nothing else takes tokens (now_ns if it is already).
  uint64_t ready_at(uint32_t bytes, uint64_t now_ns) const;
  uint64_t rate_bps() const { return rate_bps_; }
  uint64_t burst_bytes() const { return burst_; }

 private:
  uint64_t rate_bps_ = 0;
  uint64_t burst_ = 0;
  double tokens_ = 0;  // bytes
  uint64_t last_ns_ = 0;
};

// A port's RED with ECN only (as DCQCN-era switches are configured), given to the switch model
// (fabric::red_mark_probability, fabric::Switch): a frame is selected with probability 0 up to kmin bytes of
// queue, pmax * (q - kmin) / (kmax - kmin) up to kmax, and 1 above. A selected ECT frame is marked CE; a
// selected Not-ECT frame passes unmarked (and is counted): RED never drops here, the buffer limit does.
struct RedParams {
  bool enabled = false;
  uint64_t kmin = 0;  // bytes
  uint64_t kmax = 0;  // bytes, > kmin
  double pmax = 0;    // 0..1
};

// The seeded random stream of one egress decision (xorshift64*): a run with the same seed and the same
// frames makes the same choices.
class Xorshift64 {
 public:
  explicit Xorshift64(uint64_t seed = 1) : state_(seed ? seed : 1) {}
  uint64_t next();
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Random loss, as on a lossy link: each frame offered to the port is dropped with probability p,
// independently of the others (Bernoulli). p = 0 never drops and draws nothing from the stream.
class Loss {
 public:
  Loss() = default;
  explicit Loss(uint64_t seed) : rng_(seed) {}
  void configure(double p) { p_ = p; }
  double probability() const { return p_; }
  bool drop() { return p_ > 0 && (p_ >= 1 || rng_.unit() < p_); }

 private:
  double p_ = 0;
  Xorshift64 rng_;
};

// CE marking is the simulator's (fabric/fabric.h), shared: an Ethernet frame of `len` bytes, in
// place, with or without one 802.1Q tag.
using fabric::EcnResult;
inline EcnResult mark_ce(uint8_t* frame, uint32_t len) { return fabric::mark_ce_frame(frame, len); }

}  // namespace uroce::uroced
