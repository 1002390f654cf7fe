// The 64-bit mixing function the fabric hashes with (ECMP path choice, per-flow salts) and the simulator
// derives its random streams with.
#pragma once

#include <cstdint>

namespace uroce::fabric {

// SplitMix64 finaliser: turns (seed, stream index) into distinct, well-mixed values.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace uroce::fabric
