#include "provider/fast_clock.h"

#include <cpuid.h>

#include <fstream>
#include <string>

namespace uroce::provider {
namespace {

bool invariant_tsc() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8)) != 0;
}

bool kernel_clocksource_is_tsc() {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  return f && (f >> name) && name == "tsc";
}

// One (TSC, CLOCK_MONOTONIC) pair: the TSC read just before and after the clock, taking the tightest of a few
// tries, so the pair is known to within ~10 ns.
void sample(const SteadyClock& steady, uint64_t* tsc, uint64_t* ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 8; ++i) {
    const uint64_t t0 = __builtin_ia32_rdtsc();
    const uint64_t n = steady.now_ns();
    const uint64_t t1 = __builtin_ia32_rdtsc();
    if (t1 - t0 < best) {
      best = t1 - t0;
      *tsc = t0 + (t1 - t0) / 2;
      *ns = n;
    }
  }
}

}  // namespace

FastClock::FastClock(bool allow_tsc) {
  if (!allow_tsc || !invariant_tsc() || !kernel_clocksource_is_tsc()) return;
  uint64_t tsc0 = 0, ns0 = 0, tsc1 = 0, ns1 = 0;
  sample(steady_, &tsc0, &ns0);
  do {
    sample(steady_, &tsc1, &ns1);
  } while (ns1 - ns0 < 2'000'000);
  if (tsc1 <= tsc0) return;
  ns_per_tick_q32_ = static_cast<uint64_t>((static_cast<unsigned __int128>(ns1 - ns0) << 32) / (tsc1 - tsc0));
  if (ns_per_tick_q32_ == 0) return;
  base_tsc_ = tsc1;
  base_ns_ = ns1;
  tsc_ = true;
}

const FastClock& fast_clock() {
  static const FastClock clock;
  return clock;
}

}  // namespace uroce::provider
