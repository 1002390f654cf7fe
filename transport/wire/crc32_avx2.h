// CRC-32 (reflected IEEE 802.3 polynomial, zlib's init and final XOR) folded with VPCLMULQDQ on 256-bit
// registers, which needs only AVX2 + VPCLMULQDQ (AMD Zen 3 and later, Intel Ice Lake and later; ISA-L's
// fastest kernel needs AVX-512), and the same on 512-bit registers where the CPU has AVX-512 (each
// multiply then folds 64 bytes). crc32_kernels.cc decides which one crc32_update and the ICRC use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace uroce::wire {

// True when this CPU can run the functions below: AVX2, PCLMULQDQ and VPCLMULQDQ (CPUID.7.0:ECX[10]), with
// the OS saving YMM state.
bool crc32_avx2_runs();

// zlib-compatible continuation, as crc32_update: crc32_avx2(crc32_avx2(0, a), b) == crc32(a || b).
// Requires crc32_avx2_runs(); any length (below 16 bytes a byte-at-a-time table) and alignment.
uint32_t crc32_avx2(uint32_t crc, const uint8_t* p, size_t n);

// The same CRC of src[0, n), and src copied to dst on the way (one pass over the bytes instead of two).
// dst and src must not overlap; same requirements as crc32_avx2.
uint32_t crc32_copy_avx2(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t n);

// CRC-32 of P || pieces[0] || pieces[1] ..., with the CRC register starting at 0 instead of zlib's
// all-ones, and zlib's final complement: one pass and one final reduction however many pieces there are.
// P is head[0, head_len) preceded by zeros up to the next multiple of 16 bytes, then ORed with mask (that
// many bytes). 16 <= head_len <= 64; pieces may have any length, including 0. Its caller, the ICRC, sets the
// invariant fields to ones and zlib's initial value through the mask (see icrc.cc). Same CPU requirements
// as crc32_avx2.
uint32_t crc32_avx2_gather(const uint8_t* head, size_t head_len, const uint8_t* mask,
                           std::span<const std::span<const uint8_t>> pieces);

// True when this CPU can also run the 512-bit versions below: crc32_avx2_runs() and AVX-512 F, BW and VL
// with the OS saving ZMM state.
bool crc32_avx512_runs();

// The three functions above folding on 512-bit registers: same results and contracts, and they require
// crc32_avx512_runs().
uint32_t crc32_avx512(uint32_t crc, const uint8_t* p, size_t n);
uint32_t crc32_copy_avx512(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t n);
uint32_t crc32_avx512_gather(const uint8_t* head, size_t head_len, const uint8_t* mask,
                             std::span<const std::span<const uint8_t>> pieces);

}  // namespace uroce::wire
