// Giving up the core while a busy-polling thread waits, on hosts with more busy pollers than cores (uroced
// and the processes it serves, provider/verbs_cq.cc and tools/uroced/daemon.cc), and backing off when that
// hurts: a yield that kept the thread off its core for kLongNs or more went to a process with work of its
// own (a compiler, a bandwidth test), not to a peer that answers and yields back, so the thread stops
// yielding for kOffNs.
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdint>

namespace uroce::runtime {

class YieldBackoff {
 public:
  static constexpr uint64_t kLongNs = 1'000'000, kOffNs = 20'000'000;
  // How long a waiting thread spins before it yields: a direct peer answers within microseconds, and a
  // yield that overlaps the answer delays it.
  static constexpr uint64_t kSpinFirstNs = 8'000;

  // The std::chrono::steady_clock reading in nanoseconds that yield() expects.
  static uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  // The calling thread's: what one of its yields found (the core went elsewhere for long) holds for all of
  // the places it waits in.
  static YieldBackoff& this_thread() {
    thread_local YieldBackoff backoff;
    return backoff;
  }
  // Yields unless backing off. `now_ns` is a now_ns() (or SteadyClock) reading taken just before.
  void yield(uint64_t now_ns) {
    if (now_ns < off_until_) return;
    sched_yield();
    if (YieldBackoff::now_ns() - now_ns >= kLongNs) off_until_ = now_ns + kOffNs;
  }

 private:
  uint64_t off_until_ = 0;
};

}  // namespace uroce::runtime
