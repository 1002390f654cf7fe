// Deterministic random numbers for the switch model and the simulator. One seed fixes a whole run:
// SimNetwork derives an independent stream per link (and one for nodes) from it, so extra traffic on one link
// does not change the loss pattern of another, and a failing test reproduces from the seed it prints; a
// switch draws its ECN marks from a stream of its own, in virtual time and in uroced alike.
#pragma once

#include <cstdint>
#include <random>

#include "fabric/hash.h"

namespace uroce::fabric {

// Draws are computed here instead of with std::*_distribution, whose output is library-specific: a seed
// gives the same run with libstdc++ and libc++.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}

  uint64_t next() { return gen_(); }

  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

  // True with probability p. Draws nothing when p <= 0 or p >= 1, so a disabled impairment costs nothing.
  bool chance(double p) { return p > 0 && (p >= 1 || uniform() < p); }

  // Uniform in [0, n) for n > 0 (multiply-shift; bias below n / 2^64).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(gen_()) * n) >> 64);
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace uroce::fabric
