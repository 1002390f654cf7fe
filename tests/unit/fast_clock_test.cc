// The engines' clock (provider/fast_clock.h): CLOCK_MONOTONIC's nanoseconds, from the TSC where the CPU and
// the kernel allow it. Whichever source this machine gives it, it must keep CLOCK_MONOTONIC's rate and never
// go back.
#include "provider/fast_clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace uroce::provider {
namespace {

// Elapsed time on `clock` over a spell of at least `spell_ns` on CLOCK_MONOTONIC, and that spell.
void measure(const Clock& clock, uint64_t spell_ns, uint64_t* clock_ns, uint64_t* steady_ns) {
  const SteadyClock steady;
  const uint64_t c0 = clock.now_ns(), s0 = steady.now_ns();
  uint64_t s1;
  do {
    s1 = steady.now_ns();
  } while (s1 - s0 < spell_ns);
  *clock_ns = clock.now_ns() - c0;
  *steady_ns = s1 - s0;
}

void expect_steady_rate(const Clock& clock) {
  uint64_t c = 0, s = 0;
  measure(clock, 30'000'000, &c, &s);
  // Within 0.1% plus the reads' own jitter (a thread preempted between the two reads adds to both sides).
  EXPECT_NEAR(static_cast<double>(c), static_cast<double>(s), 0.001 * static_cast<double>(s) + 50'000.0)
      << "clock " << c << " ns vs CLOCK_MONOTONIC " << s << " ns";
}

TEST(FastClock, WithoutTheTscItIsSteadyClock) {
  const FastClock clock(false);
  EXPECT_FALSE(clock.uses_tsc());
  EXPECT_EQ(clock.ns_per_tick(), 0.0);
  expect_steady_rate(clock);
}

TEST(FastClock, KeepsSteadyClocksRateAndOrigin) {
  const FastClock& clock = fast_clock();
  if (!clock.uses_tsc()) {
    GTEST_SKIP()
        << "this machine's TSC is not usable (not invariant, or the kernel's clocksource is not tsc): "
           "the clock is steady_clock, tested above";
  }
  EXPECT_GT(clock.ns_per_tick(), 0.0);
  expect_steady_rate(clock);
  // The same origin as CLOCK_MONOTONIC (std::chrono::steady_clock), so deadlines from either agree.
  const SteadyClock steady;
  const uint64_t a = steady.now_ns(), t = clock.now_ns(), b = steady.now_ns();
  EXPECT_GE(t + 100'000, a);
  EXPECT_LE(t, b + 100'000);
}

// The unordered reading is the same clock: it lands between ordered readings around it (give or take the few
// nanoseconds RDTSC may run ahead), on the TSC and on the steady_clock fallback alike.
TEST(FastClock, AnUnorderedReadingIsTheSameClock) {
  const FastClock steady_only(false);
  for (const FastClock* clock : {&fast_clock(), &steady_only}) {
    for (int i = 0; i < 1000; ++i) {
      const uint64_t a = clock->now_ns(), u = clock->now_ns_unordered(), b = clock->now_ns();
      ASSERT_GE(u + 1'000, a) << "reading " << i;
      ASSERT_LE(u, b + 1'000) << "reading " << i;
    }
  }
}

TEST(FastClock, NeverGoesBackOnAnyThread) {
  const FastClock& clock = fast_clock();
  std::atomic<uint64_t> latest{0};
  std::atomic<int> backwards{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      uint64_t last = 0;
      for (int i = 0; i < 200'000; ++i) {
        // A reading taken after another thread published its own must not be older than it.
        const uint64_t seen = latest.load(std::memory_order_acquire);
        const uint64_t now = clock.now_ns();
        if (now < last || now < seen) backwards.fetch_add(1, std::memory_order_relaxed);
        last = now;
        uint64_t prev = seen;
        while (prev < now && !latest.compare_exchange_weak(prev, now, std::memory_order_acq_rel)) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(backwards.load(), 0);
}

}  // namespace
}  // namespace uroce::provider
