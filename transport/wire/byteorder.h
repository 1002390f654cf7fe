// Big-endian integer types for wire structs. Only transport/wire/ uses them directly; the rest of the
// code reads packets through the accessors in headers.h.
#pragma once

#include <cstdint>
#include <cstring>

namespace uroce::wire {

// An unaligned big-endian unsigned integer of N bytes (N = 1..8) stored as raw bytes, so a packed struct
// made of these has no padding and any alignment.
template <unsigned N>
struct BeUint {
  static_assert(N >= 1 && N <= 8);
  using Value = std::conditional_t<(N <= 2), uint16_t, std::conditional_t<(N <= 4), uint32_t, uint64_t>>;

  uint8_t b[N];

  constexpr Value get() const {
    Value v = 0;
    for (unsigned i = 0; i < N; ++i) v = static_cast<Value>((v << 8) | b[i]);
    return v;
  }
  constexpr void set(Value v) {
    for (unsigned i = 0; i < N; ++i) b[N - 1 - i] = static_cast<uint8_t>(v >> (8 * i));
  }
};

using be16 = BeUint<2>;
using be24 = BeUint<3>;
using be32 = BeUint<4>;
using be64 = BeUint<8>;

static_assert(sizeof(be16) == 2 && sizeof(be24) == 3 && sizeof(be32) == 4 && sizeof(be64) == 8);

}  // namespace uroce::wire
