// CRC-32 by carry-less multiplication ("Fast CRC Computation for Generic Polynomials Using PCLMULQDQ",
// Gopal et al., Intel 2009), with VPCLMULQDQ folding two 128-bit lanes per instruction.
//
// Notation. A message bit string is a polynomial over GF(2) whose first bit (bit 0 of byte 0: the CRC is
// reflected) is the highest-degree coefficient. The raw CRC of a message M is M(x) * x^32 mod P(x); zlib's
// convention adds an initial value I (XORed into the first 32 message bits) and a final complement.
// R(a, w) names the w-bit register image of a polynomial a of degree < w in this reflected order: bit m
// holds the coefficient of x^(w-1-m). A 16-byte little-endian load of message bytes is exactly R(A, 128)
// for that 16-byte chunk A; its low qword is R(H, 64) and its high qword R(L, 64), where A = H x^64 + L.
//
// The reflected-product rule. PCLMULQDQ on R(a, 64) and R(b, 64) sets result bit j+k from a's bit j and
// b's bit k, i.e. the coefficient of x^(126-(j+k)) of a*b: the 128-bit result is R(a * b * x, 128).
// Every constant below is therefore stored as R(c, 64) with c carrying one factor x less than the math
// asks for.
//
// Folding. A chunk A that stands D bytes before chunk B contributes A x^(8D) to the message, and modulo P
//   A x^(8D) = H x^(8D+64) + L x^(8D) == H * (x^(8D+63) mod P) * x + L * (x^(8D-1) mod P) * x,
// which has degree <= 95 and can therefore be XORed onto B. With k = {R(x^(8D+63) mod P, 64),
// R(x^(8D-1) mod P, 64)} that is clmul(A.lo, k.lo) ^ clmul(A.hi, k.hi). A 256-bit register holds two
// adjacent chunks and folds both with the same k.
//
// Reduction of the last 128-bit chunk X to the 32-bit CRC X x^32 mod P:
//   1. X x^32 is X folded onto 4 zero bytes (D = 4): U = fold(X) with degree <= 94.
//   2. U = G x^64 + F (G in U's low qword, F in the high one): V = G * (x^64 mod P) + F, degree < 64.
//   3. Barrett: V = A x^32 + B; q = floor(A * mu / x^32) with mu = floor(x^64 / P) is floor(V / P), and
//      the CRC is the low 32 coefficients of B + q * P. Multiplying by R(mu * x^31, 64) and
//      R(P * x^31, 64) (the 33-bit reflections of mu and P) puts q in the low dword of the first product
//      and (q P mod x^32) next to B in the second, so the CRC is dword 1 of V ^ that product.
#include "transport/wire/crc32_avx2.h"

#include <cpuid.h>
#include <immintrin.h>

#include <cstring>

// Only the functions below use AVX2 + VPCLMULQDQ (target attributes, not per-file -m flags, so that no
// inline function from a header is ever emitted as AVX2 code and picked by the linker for other callers).
#define UROCE_AVX2_CLMUL __attribute__((target("avx2,pclmul,vpclmulqdq")))
// The 512-bit fold (fold_blocks_zmm) and nothing else: it is called, never inlined, from the AVX2 code.
#define UROCE_AVX512_CLMUL __attribute__((target("avx512f,avx512bw,avx512vl,avx2,pclmul,vpclmulqdq")))

namespace uroce::wire {
namespace {

// P(x) = x^32 + x^26 + ... + 1 (IEEE 802.3) in plain order: bit i is the coefficient of x^i.
constexpr uint64_t kPoly = 0x104C11DB7;

// x^e mod P, degree < 32, plain order.
constexpr uint64_t xpow_mod(unsigned e) {
  uint64_t r = 1;
  for (unsigned i = 0; i < e; ++i) {
    r <<= 1;
    if (r >> 32) r ^= kPoly;
  }
  return r;
}

// floor(x^64 / P), degree 32, plain order. The first long-division step leaves x^64 - x^32 P, which fits
// in 64 bits.
constexpr uint64_t mu() {
  uint64_t q = uint64_t{1} << 32;
  uint64_t rem = (kPoly ^ (uint64_t{1} << 32)) << 32;
  for (int d = 63; d >= 32; --d) {
    if ((rem >> d) & 1) {
      q |= uint64_t{1} << (d - 32);
      rem ^= kPoly << (d - 32);
    }
  }
  return q;
}

// R(a, w) from the plain-order a (degree < w).
constexpr uint64_t reflect(uint64_t a, unsigned w) {
  uint64_t r = 0;
  for (unsigned i = 0; i < w; ++i)
    if ((a >> i) & 1) r |= uint64_t{1} << (w - 1 - i);
  return r;
}

// Fold constants for a distance of `bytes`, repeated for both 128-bit lanes.
struct alignas(32) FoldConst {
  uint64_t k[4];
};

constexpr FoldConst fold_const(unsigned bytes) {
  const uint64_t hi_chunk = reflect(xpow_mod(8 * bytes + 63), 64);
  const uint64_t lo_chunk = reflect(xpow_mod(8 * bytes - 1), 64);
  return {{hi_chunk, lo_chunk, hi_chunk, lo_chunk}};
}

// The main loop keeps kAcc independent 256-bit accumulators, so each lane folds kAcc * 32 bytes ahead and
// kAcc carry-less multiply chains overlap. On Zen 3 (one VPCLMULQDQ per ~2 cycles, latency ~4) 2, 4 and 8
// accumulators measured the same at 1-4 KiB: the loop is bound by multiply throughput, 16 bytes each.
// That limit is the CPU's: 8 independent VPCLMULQDQ take 16 cycles whether on XMM or YMM registers or
// mixed (one multiplier, 2 cycles an instruction), so a folding CRC tops out at 8 bytes per cycle there
// (bench_wire prints it as the ceiling). Handing the integer units a share of the input in the same loop
// (slicing-by-16 table lookups, combined at the end by one more fold) measured slower: the 16 table loads
// per 16 bytes saturate the load ports before they add throughput.
constexpr int kAcc = 4;
constexpr size_t kStride = kAcc * 32;

struct Consts {
  FoldConst stride = fold_const(kStride);
  FoldConst merge[kAcc - 1] = {};  // accumulator i onto the last one: (kAcc - 1 - i) * 32 bytes
  FoldConst d48 = fold_const(48);
  FoldConst d32 = fold_const(32);
  FoldConst d16 = fold_const(16);
  FoldConst d4 = fold_const(4);
  uint64_t fold64[2] = {reflect(xpow_mod(63), 64), 0};
  uint64_t barrett[2] = {reflect(mu(), 33), reflect(kPoly, 33)};
  // pshufb controls for the partial last chunk: byte i is i - 16 for 16 <= i < 32, else 0x80 (zero).
  uint8_t shuffle[48] = {};
};

constexpr Consts make_consts() {
  Consts c;
  for (int i = 0; i < kAcc - 1; ++i) c.merge[i] = fold_const(32 * static_cast<unsigned>(kAcc - 1 - i));
  for (int i = 0; i < 48; ++i) c.shuffle[i] = i >= 16 && i < 32 ? static_cast<uint8_t>(i - 16) : 0x80;
  return c;
}

alignas(32) constexpr Consts kC = make_consts();

// The same on 512-bit registers (four lanes, one constant pair repeated): kAcc accumulators of 64 bytes,
// so each lane folds kStrideZmm bytes ahead. Where the CPU multiplies four lanes at once (Zen 4, Ice Lake
// and later) this moves 64 bytes per VPCLMULQDQ instead of 32, the ceiling of the 256-bit kernel there.
constexpr size_t kStrideZmm = kAcc * 64;

struct alignas(64) FoldConst512 {
  uint64_t k[8];
};

constexpr FoldConst512 fold_const512(unsigned bytes) {
  const FoldConst f = fold_const(bytes);
  return {{f.k[0], f.k[1], f.k[0], f.k[1], f.k[0], f.k[1], f.k[0], f.k[1]}};
}

struct ConstsZmm {
  FoldConst512 stride = fold_const512(kStrideZmm);
  FoldConst512 merge[kAcc - 1] = {};  // accumulator i onto the last one: (kAcc - 1 - i) * 64 bytes
  FoldConst512 d64 = fold_const512(64);
};

constexpr ConstsZmm make_consts_zmm() {
  ConstsZmm c;
  for (int i = 0; i < kAcc - 1; ++i) c.merge[i] = fold_const512(64 * static_cast<unsigned>(kAcc - 1 - i));
  return c;
}

alignas(64) constexpr ConstsZmm kZ = make_consts_zmm();

// Cross-check against the values published with the Intel paper.
static_assert(reflect(kPoly, 33) == 0x1DB710641);
static_assert(reflect(mu(), 33) == 0x1F7011641);
// And xpow_mod / reflect against zlib's byte table: entry b is the register after the byte b alone, starting
// from 0, i.e. b(x) x^32 mod P. Byte 0x01 is x^7 (bit 0 comes first, with the highest degree), byte 0x80
// is 1.
static_assert(reflect(xpow_mod(39), 32) == 0x77073096);  // crc_table[0][0x01]
static_assert(reflect(xpow_mod(32), 32) == 0xEDB88320);  // crc_table[0][0x80], the reflected polynomial

// Inputs shorter than one 16-byte chunk go a byte at a time through the classic table: entry b is the
// register after byte b alone, starting from 0 (b(x) x^32 mod P, reflected).
struct ByteTable {
  uint32_t t[256];
};

constexpr ByteTable make_byte_table() {
  ByteTable bt{};
  for (unsigned b = 0; b < 256; ++b) {
    // Byte b is sum of x^(7 - i) over its set bits i.
    uint64_t r = 0;
    for (unsigned i = 0; i < 8; ++i)
      if ((b >> i) & 1) r ^= xpow_mod(32 + 7 - i);
    bt.t[b] = static_cast<uint32_t>(reflect(r, 32));
  }
  return bt;
}

constexpr ByteTable kBytes = make_byte_table();
static_assert(kBytes.t[0x01] == 0x77073096 && kBytes.t[0xFF] == 0x2D02EF8D);  // zlib's crc_table[0]

UROCE_AVX2_CLMUL inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
UROCE_AVX2_CLMUL inline __m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

UROCE_AVX2_CLMUL inline __m256i fold256(__m256i a, const FoldConst& c) {
  const __m256i k = load256(c.k);
  return _mm256_xor_si256(_mm256_clmulepi64_epi128(a, k, 0x00), _mm256_clmulepi64_epi128(a, k, 0x11));
}

UROCE_AVX2_CLMUL inline __m128i fold128(__m128i a, const FoldConst& c) {
  const __m128i k = load128(c.k);
  return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

// Stores a block just loaded from src + off at dst + off when copying (kCopy), else nothing.
template <bool kCopy>
UROCE_AVX2_CLMUL inline __m256i take256(const uint8_t* p, const uint8_t* src, uint8_t* dst) {
  const __m256i v = load256(p);
  if constexpr (kCopy) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (p - src)), v);
  return v;
}
template <bool kCopy>
UROCE_AVX2_CLMUL inline __m128i take128(const uint8_t* p, const uint8_t* src, uint8_t* dst) {
  const __m128i v = load128(p);
  if constexpr (kCopy) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (p - src)), v);
  return v;
}

// 32 or more bytes: folds everything from p down to whole 32-byte blocks into one register, then into one
// 128-bit chunk. `carry` is XORed onto the first 16 bytes (what came before, see fold_all). Advances p past
// the bytes consumed (fewer than 32 remain). With kCopy, every byte folded is also stored at the same
// offset from dst as it lies from src.
template <bool kCopy>
UROCE_AVX2_CLMUL inline __m128i fold_blocks(const uint8_t*& p, const uint8_t* end, __m128i carry,
                                            const uint8_t* src, uint8_t* dst) {
  const __m256i seed = _mm256_zextsi128_si256(carry);
  __m256i acc;
  if (end - p >= static_cast<ptrdiff_t>(kStride)) {
    __m256i a[kAcc];
#pragma GCC unroll 8
    for (int i = 0; i < kAcc; ++i) a[i] = take256<kCopy>(p + 32 * i, src, dst);
    a[0] = _mm256_xor_si256(a[0], seed);
    p += kStride;
    for (; end - p >= static_cast<ptrdiff_t>(kStride); p += kStride) {
#pragma GCC unroll 8
      for (int i = 0; i < kAcc; ++i)
        a[i] = _mm256_xor_si256(fold256(a[i], kC.stride), take256<kCopy>(p + 32 * i, src, dst));
    }
    acc = a[kAcc - 1];
#pragma GCC unroll 8
    for (int i = 0; i < kAcc - 1; ++i) acc = _mm256_xor_si256(acc, fold256(a[i], kC.merge[i]));
  } else {
    acc = _mm256_xor_si256(take256<kCopy>(p, src, dst), seed);
    p += 32;
  }
  for (; end - p >= 32; p += 32) acc = _mm256_xor_si256(fold256(acc, kC.d32), take256<kCopy>(p, src, dst));
  return _mm_xor_si128(fold128(_mm256_castsi256_si128(acc), kC.d16), _mm256_extracti128_si256(acc, 1));
}

UROCE_AVX512_CLMUL inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

// clmul(a.lo, k.lo) ^ clmul(a.hi, k.hi) ^ b in each 128-bit lane: one three-way XOR.
UROCE_AVX512_CLMUL inline __m512i fold512(__m512i a, const FoldConst512& c, __m512i b) {
  const __m512i k = load512(c.k);
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00), _mm512_clmulepi64_epi128(a, k, 0x11),
                                   b, 0x96);
}

template <bool kCopy>
UROCE_AVX512_CLMUL inline __m512i take512(const uint8_t* p, const uint8_t* src, uint8_t* dst) {
  const __m512i v = load512(p);
  if constexpr (kCopy) _mm512_storeu_si512(dst + (p - src), v);
  return v;
}

// fold_blocks on 512-bit registers, for 64 or more bytes (fewer than 32 remain after it). Not inline: the
// AVX2 code calls it, and only when the CPU runs AVX-512.
template <bool kCopy>
UROCE_AVX512_CLMUL __attribute__((noinline)) __m128i fold_blocks_zmm(const uint8_t*& p, const uint8_t* end,
                                                                     __m128i carry, const uint8_t* src,
                                                                     uint8_t* dst) {
  const __m512i seed = _mm512_zextsi128_si512(carry);
  __m512i acc;
  if (end - p >= static_cast<ptrdiff_t>(kStrideZmm)) {
    __m512i a[kAcc];
#pragma GCC unroll 8
    for (int i = 0; i < kAcc; ++i) a[i] = take512<kCopy>(p + 64 * i, src, dst);
    a[0] = _mm512_xor_si512(a[0], seed);
    p += kStrideZmm;
    for (; end - p >= static_cast<ptrdiff_t>(kStrideZmm); p += kStrideZmm) {
#pragma GCC unroll 8
      for (int i = 0; i < kAcc; ++i) a[i] = fold512(a[i], kZ.stride, take512<kCopy>(p + 64 * i, src, dst));
    }
    acc = a[kAcc - 1];
#pragma GCC unroll 8
    for (int i = 0; i < kAcc - 1; ++i) acc = fold512(a[i], kZ.merge[i], acc);
  } else {
    acc = _mm512_xor_si512(take512<kCopy>(p, src, dst), seed);
    p += 64;
  }
  for (; end - p >= 64; p += 64) acc = fold512(acc, kZ.d64, take512<kCopy>(p, src, dst));
  // The low 32 bytes fold 32 bytes ahead onto the high 32, then as fold_blocks. (Zero-masked extracts: the
  // plain ones and _mm512_castsi512_si256 pass an undefined vector through, which GCC 12 warns about.)
  const __m256i low = _mm512_maskz_extracti64x4_epi64(0xF, acc, 0);
  const __m256i high = _mm512_maskz_extracti64x4_epi64(0xF, acc, 1);
  __m256i y = _mm256_xor_si256(fold256(low, kC.d32), high);
  if (end - p >= 32) {
    y = _mm256_xor_si256(fold256(y, kC.d32), take256<kCopy>(p, src, dst));
    p += 32;
  }
  return _mm_xor_si128(fold128(_mm256_castsi256_si128(y), kC.d16), _mm256_extracti128_si256(y, 1));
}

// The state x followed by r < 16 more bytes, which are bytes 16 - r .. 15 of `last` (its other bytes are
// ignored). The first r bytes of x, as a zero-padded chunk 16 bytes ahead, fold onto the next 16 bytes:
// the rest of x followed by the r new ones.
UROCE_AVX2_CLMUL inline __m128i absorb_tail(__m128i x, __m128i last, size_t r) {
  const __m128i head_ctl = load128(kC.shuffle + r);       // byte j: x[j + r - 16], or zero
  const __m128i rest_ctl = load128(kC.shuffle + 16 + r);  // byte j: x[j + r], or zero
  const __m128i rest = _mm_blendv_epi8(last, _mm_shuffle_epi8(x, rest_ctl), head_ctl);
  return _mm_xor_si128(fold128(_mm_shuffle_epi8(x, head_ctl), kC.d16), rest);
}

// X x^32 mod P for the chunk x (steps 1-3 above), returned with zlib's final complement.
UROCE_AVX2_CLMUL inline uint32_t reduce(__m128i x) {
  const __m128i u = fold128(x, kC.d4);
  __m128i v = _mm_xor_si128(_mm_clmulepi64_si128(u, load128(kC.fold64), 0x00), u);
  v = _mm_srli_si128(v, 8);
  const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
  const __m128i b = load128(kC.barrett);
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(v, low32), b, 0x00);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), b, 0x10);
  return ~static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(v, t), 1));
}

}  // namespace

bool crc32_avx2_runs() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || (ecx & bit_VPCLMULQDQ) == 0) return false;
  // libgcc's avx2 check includes the OS's XCR0 support for YMM state.
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul");
}

bool crc32_avx512_runs() {
  // libgcc's avx512 checks include the OS's XCR0 support for ZMM and mask state.
  return crc32_avx2_runs() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

namespace {

// The state after src[0, n), n >= 16: its last 16-byte chunk with everything before folded in, not yet
// reduced; kWide folds on 512-bit registers (only where crc32_avx512_runs()). `carry` is XORed onto the first
// 16 bytes: zlib's initial value ~crc in the low dword, or the state of what precedes src folded 16 bytes
// ahead.
template <bool kCopy, bool kWide>
UROCE_AVX2_CLMUL inline __m128i fold_all(__m128i carry, const uint8_t* src, size_t n, uint8_t* dst) {
  const uint8_t* p = src;
  const uint8_t* const end = p + n;
  __m128i x;
  if (kWide && n >= kStrideZmm) {  // below one stride the 256-bit code is as fast
    x = fold_blocks_zmm<kCopy>(p, end, carry, src, dst);
  } else if (n >= 32) {
    x = fold_blocks<kCopy>(p, end, carry, src, dst);
  } else {
    x = _mm_xor_si128(take128<kCopy>(p, src, dst), carry);
    p += 16;
  }
  if (end - p >= 16) {
    x = _mm_xor_si128(fold128(x, kC.d16), take128<kCopy>(p, src, dst));
    p += 16;
  }
  if (const auto r = end - p; r > 0) {
    if constexpr (kCopy) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n - 16), load128(end - 16));
    x = absorb_tail(x, load128(end - 16), static_cast<size_t>(r));
  }
  return x;
}

template <bool kCopy, bool kWide>
UROCE_AVX2_CLMUL inline uint32_t crc32_core(uint32_t crc, const uint8_t* src, size_t n, uint8_t* dst) {
  if (n < 16) {
    uint32_t r = ~crc;
    for (size_t i = 0; i < n; ++i) {
      if constexpr (kCopy) dst[i] = src[i];
      r = kBytes.t[(r ^ src[i]) & 0xFF] ^ (r >> 8);
    }
    return ~r;
  }
  return reduce(fold_all<kCopy, kWide>(_mm_cvtsi32_si128(static_cast<int>(~crc)), src, n, dst));
}

}  // namespace

namespace {

template <bool kWide>
UROCE_AVX2_CLMUL inline uint32_t gather(const uint8_t* head, size_t head_len, const uint8_t* mask,
                                        std::span<const std::span<const uint8_t>> pieces) {
  // The padded head in registers: chunk 0 is head[0, 16) shifted up by `at` bytes with zeros below, chunk
  // j > 0 is head[16 j - at, 16 j - at + 16). Building it on the stack instead would make each 16-byte
  // load wait for the narrower stores before it (no store-to-load forwarding). Every chunk but the last
  // folds straight onto the last one (16, 32 or 48 bytes ahead), so the folds overlap instead of chaining.
  const size_t len = (head_len + 15) & ~size_t{15};
  const size_t at = len - head_len;
  const FoldConst* const ahead[3] = {&kC.d16, &kC.d32, &kC.d48};
  __m128i x = _mm_or_si128(_mm_shuffle_epi8(load128(head), load128(kC.shuffle + 16 - at)), load128(mask));
  if (len > 16) {
    __m128i sum = fold128(x, *ahead[len / 16 - 2]);
    for (size_t off = 16; off + 16 < len; off += 16)
      sum = _mm_xor_si128(sum, fold128(_mm_or_si128(load128(head + off - at), load128(mask + off)),
                                       *ahead[(len - off) / 16 - 2]));
    x = _mm_xor_si128(sum, _mm_or_si128(load128(head + len - 16 - at), load128(mask + len - 16)));
  }
  for (const auto piece : pieces) {
    const size_t n = piece.size();
    if (n >= 16) {
      x = fold_all<false, kWide>(fold128(x, kC.d16), piece.data(), n, nullptr);
    } else if (n > 0) {
      // Too short to load 16 bytes ending at its end without reading outside the piece.
      alignas(16) uint8_t last[16] = {};
      std::memcpy(last + 16 - n, piece.data(), n);
      x = absorb_tail(x, load128(last), n);
    }
  }
  return reduce(x);
}

}  // namespace

UROCE_AVX2_CLMUL uint32_t crc32_avx2(uint32_t crc, const uint8_t* p, size_t n) {
  return crc32_core<false, false>(crc, p, n, nullptr);
}

UROCE_AVX2_CLMUL uint32_t crc32_copy_avx2(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t n) {
  return crc32_core<true, false>(crc, src, n, dst);
}

UROCE_AVX2_CLMUL uint32_t crc32_avx2_gather(const uint8_t* head, size_t head_len, const uint8_t* mask,
                                            std::span<const std::span<const uint8_t>> pieces) {
  return gather<false>(head, head_len, mask, pieces);
}

UROCE_AVX2_CLMUL uint32_t crc32_avx512(uint32_t crc, const uint8_t* p, size_t n) {
  return crc32_core<false, true>(crc, p, n, nullptr);
}

UROCE_AVX2_CLMUL uint32_t crc32_copy_avx512(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t n) {
  return crc32_core<true, true>(crc, src, n, dst);
}

UROCE_AVX2_CLMUL uint32_t crc32_avx512_gather(const uint8_t* head, size_t head_len, const uint8_t* mask,
                                              std::span<const std::span<const uint8_t>> pieces) {
  return gather<true>(head, head_len, mask, pieces);
}

}  // namespace uroce::wire
