#include "transport/wire/crc32_kernels.h"

#include <cpuid.h>
#include <isa-l/crc.h>

#include <chrono>
#include <cstring>

#include "transport/wire/crc32_avx2.h"

// ISA-L's per-CPU variants behind crc32_gzip_refl. Exported by libisal but not declared in its header; weak,
// so a libisal without one of them leaves it null (and the kernel reported as not runnable) instead of
// failing to link.
extern "C" {
uint32_t crc32_gzip_refl_by8(uint32_t, const unsigned char*, uint64_t) __attribute__((weak));
uint32_t crc32_gzip_refl_by8_02(uint32_t, const unsigned char*, uint64_t) __attribute__((weak));
uint32_t crc32_gzip_refl_by16_10(uint32_t, const unsigned char*, uint64_t) __attribute__((weak));
}

namespace uroce::wire {
namespace {

bool cpu_has_vpclmulqdq() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & bit_VPCLMULQDQ) != 0;
}

// ISA-L's own dispatch conditions for each variant.
bool runs_by8() {
  return crc32_gzip_refl_by8 != nullptr && __builtin_cpu_supports("sse4.1") &&
         __builtin_cpu_supports("pclmul");
}
bool runs_by8_02() {
  return crc32_gzip_refl_by8_02 != nullptr && __builtin_cpu_supports("avx") &&
         __builtin_cpu_supports("pclmul");
}
bool avx512_vpclmul() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd") && cpu_has_vpclmulqdq();
}
bool runs_by16_10() { return crc32_gzip_refl_by16_10 != nullptr && avx512_vpclmul(); }
bool always() { return true; }

uint32_t isal(uint32_t crc, const uint8_t* p, size_t n) { return crc32_gzip_refl(crc, p, n); }
uint32_t isal_base(uint32_t crc, const uint8_t* p, size_t n) {
  return crc32_gzip_refl_base(crc, const_cast<uint8_t*>(p), n);  // not const in its header
}
uint32_t by8(uint32_t crc, const uint8_t* p, size_t n) { return crc32_gzip_refl_by8(crc, p, n); }
uint32_t by8_02(uint32_t crc, const uint8_t* p, size_t n) { return crc32_gzip_refl_by8_02(crc, p, n); }
uint32_t by16_10(uint32_t crc, const uint8_t* p, size_t n) { return crc32_gzip_refl_by16_10(crc, p, n); }

enum : size_t { kYmm, kZmm, kIsal, kNumKernels = 7 };

constexpr Crc32Kernel kKernels[kNumKernels] = {
    {"vpclmul_ymm", crc32_avx2, crc32_copy_avx2, crc32_avx2_gather, crc32_avx2_runs,
     "AVX2, PCLMULQDQ and VPCLMULQDQ"},
    {"vpclmul_zmm", crc32_avx512, crc32_copy_avx512, crc32_avx512_gather, crc32_avx512_runs,
     "AVX2, AVX-512 F/BW/VL, PCLMULQDQ and VPCLMULQDQ"},
    {"isal", isal, nullptr, nullptr, always, "nothing (ISA-L picks its own variant)"},
    {"isal_base", isal_base, nullptr, nullptr, always, "nothing (table code)"},
    {"isal_by8", by8, nullptr, nullptr, runs_by8, "SSE4.1 and PCLMULQDQ, and a libisal exporting it"},
    {"isal_by8_02", by8_02, nullptr, nullptr, runs_by8_02, "AVX and PCLMULQDQ, and a libisal exporting it"},
    {"isal_by16_10", by16_10, nullptr, nullptr, runs_by16_10,
     "AVX-512 F/VL/BW/DQ/CD and VPCLMULQDQ, and a libisal exporting it"},
};

const Crc32Kernel& choose() {
  if (!crc32_avx2_runs()) return kKernels[kIsal];
  if (!crc32_avx512_runs()) return kKernels[kYmm];
  return crc32_faster(kKernels[kYmm], kKernels[kZmm]);
}

}  // namespace

std::span<const Crc32Kernel> crc32_kernels() { return kKernels; }

const Crc32Kernel& crc32_chosen() {
  static const Crc32Kernel& k = choose();
  return k;
}

const Crc32Kernel& crc32_faster(const Crc32Kernel& a, const Crc32Kernel& b) {
  uint8_t buf[4096];
  for (size_t i = 0; i < sizeof(buf); ++i) buf[i] = static_cast<uint8_t>(i * 13 + 5);
  using Clock = std::chrono::steady_clock;
  Clock::duration best[2] = {Clock::duration::max(), Clock::duration::max()};
  uint32_t sink = 0;
  // Alternating rounds, so a frequency change or an interruption hits both; the best round of each counts.
  for (int round = 0; round < 32; ++round) {
    for (int k = 0; k < 2; ++k) {
      const Crc32Kernel& kern = k == 0 ? a : b;
      const auto t0 = Clock::now();
      for (int i = 0; i < 8; ++i) sink = kern.update(sink, buf, sizeof(buf));
      const auto t = Clock::now() - t0;
      if (t < best[k]) best[k] = t;
    }
  }
  asm volatile("" : : "r"(sink));
  return best[1] < best[0] ? b : a;
}

}  // namespace uroce::wire
