// Every CRC-32 kernel this build has, and the one-time choice of the one crc32_update (icrc.h) and the
// ICRC run on this CPU. All compute zlib's crc32 (reflected IEEE 802.3 polynomial, all-ones initial value
// and final complement) with its continuation rule: update(update(0, a), b) == crc32(a || b).
//
// The choice, made once on first use:
//   AVX2 + VPCLMULQDQ without AVX-512: ours (crc32_avx2.cc), the only kernel there that folds 256 bits per
//     carry-less multiply (ISA-L falls back to 128 bits);
//   AVX-512 + VPCLMULQDQ: ours or ISA-L's dispatcher (its by16_10 512-bit kernel there), whichever
//     crc32_faster measures faster on this CPU;
//   anything else: ISA-L's dispatcher (PCLMULQDQ 128-bit kernels, or its table code).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace uroce::wire {

struct Crc32Kernel {
  const char* name;
  uint32_t (*update)(uint32_t crc, const uint8_t* p, size_t n);
  // The same CRC with src copied to dst on the way, for kernels that fuse the two; else null.
  uint32_t (*copy)(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t n);
  bool (*runs)();     // whether this CPU (and this libisal) can execute it
  const char* needs;  // what runs() checks, for a test's skip message
};

// Every kernel, whether or not this CPU can run it.
std::span<const Crc32Kernel> crc32_kernels();

// The kernel crc32_update uses on this CPU (see above).
const Crc32Kernel& crc32_chosen();

// True when crc32_chosen() is ours (crc32_avx2), which the ICRC then also runs in one pass over its pieces.
bool crc32_avx2_chosen();

// Of two kernels this CPU runs, the one with the shorter best time over a 4 KiB buffer (a few hundred
// alternating calls, well under a millisecond).
const Crc32Kernel& crc32_faster(const Crc32Kernel& a, const Crc32Kernel& b);

}  // namespace uroce::wire
