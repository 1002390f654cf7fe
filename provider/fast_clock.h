// The clock a process's engines run on: CLOCK_MONOTONIC's nanoseconds, read from the TSC where that is
// safe. A datapath thread reads the time several times per poll (when it entered and left the verb, whether
// a timer is due); the vDSO's clock_gettime costs ~20 ns here against ~9 ns for RDTSC, and showed as ~20% of
// an `ib_send_lat` client's samples.
//
// The TSC is used when the CPU says it is invariant (CPUID 0x80000007 EDX bit 8: constant rate, running in
// every C-state) and the kernel's clocksource is "tsc" (Linux drops it when it finds the TSC unsynchronised
// across CPUs or unstable, as on some VMs). The rate is measured against CLOCK_MONOTONIC once, over ~2 ms,
// when the clock is first used: readings then stay within ~10 ppm of CLOCK_MONOTONIC's rate. Anything that
// compares deadlines must take them from the same clock, so there is one per process (fast_clock()).
// Elsewhere it reads CLOCK_MONOTONIC (std::chrono::steady_clock).
#pragma once

#include <cstdint>

#include "transport/clock.h"

namespace uroce::provider {

class FastClock final : public Clock {
 public:
  // allow_tsc false: always steady_clock (tests compare the two).
  explicit FastClock(bool allow_tsc = true);

  uint64_t now_ns() const override {
    if (!tsc_) return steady_.now_ns();
    // LFENCE first, as the kernel's clock_gettime does: RDTSC alone may run before earlier loads complete,
    // and a time read after seeing another thread's would then be older than that thread's.
    __builtin_ia32_lfence();
    return from_tsc(__builtin_ia32_rdtsc());
  }
  // The same clock without that order: the reading may be a little older than one another thread has
  // already published, but RDTSC then overlaps the work around it instead of waiting for it (the LFENCE
  // and RDTSC of now_ns() were over half of an empty poll_cq's own samples). For stamps that need only be
  // about right, such as when an application thread last called in.
  uint64_t now_ns_unordered() const override {
    return tsc_ ? from_tsc(__builtin_ia32_rdtsc()) : steady_.now_ns();
  }
  bool uses_tsc() const { return tsc_; }
  // Nanoseconds per TSC tick, for tests and diagnostics (0 when the TSC is not used).
  double ns_per_tick() const { return tsc_ ? static_cast<double>(ns_per_tick_q32_) / 4294967296.0 : 0; }

 private:
  uint64_t from_tsc(uint64_t tsc) const {
    const int64_t ticks = static_cast<int64_t>(tsc - base_tsc_);
    if (ticks <= 0) return base_ns_;  // never before the calibration point
    return base_ns_ + static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * ns_per_tick_q32_) >> 32);
  }

  SteadyClock steady_;
  bool tsc_ = false;
  uint64_t base_tsc_ = 0;
  uint64_t base_ns_ = 0;
  uint64_t ns_per_tick_q32_ = 0;  // nanoseconds per tick, fixed point with 32 fraction bits
};

// The process's clock (created on first use).
const FastClock& fast_clock();

}  // namespace uroce::provider
