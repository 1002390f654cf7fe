// 24-bit packet sequence number arithmetic (IBA 9.7.1). Comparisons are valid within half the PSN space,
// which is why a QP never has more than 2^23 packets outstanding.
#pragma once

#include <cstdint>

namespace uroce {

constexpr uint32_t kPsnMask = 0xFFFFFF;

constexpr uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }

// a - b as a signed distance in [-2^23, 2^23).
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>((a - b) << 8)) >> 8;
}

constexpr bool psn_before(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }

static_assert(psn_diff(0, 0xFFFFFF) == 1);
static_assert(psn_diff(0xFFFFFF, 0) == -1);
static_assert(psn_add(0xFFFFFE, 3) == 1);

}  // namespace uroce
