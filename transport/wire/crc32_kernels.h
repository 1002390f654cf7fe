// Every CRC-32 kernel this build has, and the one-time choice of the one crc32_update (icrc.h) and the
// ICRC run on this CPU. All compute zlib's crc32 (reflected IEEE 802.3 polynomial, all-ones initial value
// and final complement) with its continuation rule: update(update(0, a), b) == crc32(a || b).
//
// The choice, made once on first use:
//   AVX2 + VPCLMULQDQ without AVX-512: ours on 256-bit registers (crc32_avx2.cc), the only kernel there
//     that folds 256 bits per carry-less multiply (ISA-L falls back to 128 bits);
//   AVX-512 + VPCLMULQDQ: ours on 256 or 512-bit registers, whichever crc32_faster measures faster on this
//     CPU. ISA-L's 512-bit kernel (by16_10) is not a candidate where ours runs: the ICRC of a frame, the
//     datapath's use, runs in one pass with its headers masked in registers and the payload copied on the
//     way only with ours (the gather and copy members below); with ISA-L it is a masked copy of the headers
//     and one call per piece;
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
  // The ICRC's one-pass CRC over a masked head and pieces (crc32_avx2_gather's contract), for kernels that
  // have one; else null (the ICRC then masks a copy of the head and calls update per piece).
  uint32_t (*gather)(const uint8_t* head, size_t head_len, const uint8_t* mask,
                     std::span<const std::span<const uint8_t>> pieces);
  bool (*runs)();     // whether this CPU (and this libisal) can execute it
  const char* needs;  // what runs() checks, for a test's skip message
};

// Every kernel, whether or not this CPU can run it.
std::span<const Crc32Kernel> crc32_kernels();

// The kernel crc32_update uses on this CPU (see above).
const Crc32Kernel& crc32_chosen();

// Of two kernels this CPU runs, the one with the shorter best time over a 4 KiB buffer (a few hundred
// alternating calls, well under a millisecond).
const Crc32Kernel& crc32_faster(const Crc32Kernel& a, const Crc32Kernel& b);

}  // namespace uroce::wire
