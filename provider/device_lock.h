// The lock that serialises a device (engine.h): a std::mutex whose contended lock() first waits by spinning
// while the holder runs on another CPU, and only then sleeps in the kernel.
//
// The holders are an application thread inside a verb and the progress thread, each for a pass or a
// verb's bookkeeping: a few microseconds. A plain mutex puts the loser to sleep at once, and waking a
// thread on another CPU is an inter-processor interrupt; on a paravirtualised 2-CPU VM that costs 15-22 us
// from the wake-up to the sleeper running (4-5 us on one CPU; bench/bench_wakeup.cc), several
// times the wait it replaced. In ib_write_lat the application and its progress thread met on the lock in
// about one post in four, and each meeting put one of them to sleep (futex waits, perf trace, 2026-12-06).
// Spinning is useless when the holder last took the lock on this CPU: it cannot release it while we hold the
// CPU, so lock() then sleeps at once. The holder's CPU is where it took the lock; a holder that moved since
// or was preempted costs at most the spin bound.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace uroce::provider {

class DeviceLock {
 public:
  // How long a contended lock() spins before it sleeps: a little longer than a cross-CPU wake-up costs
  // on the VMs this runs on, and than a typical pass.
  static constexpr std::chrono::nanoseconds kSpin{20'000};

  DeviceLock() = default;
  explicit DeviceLock(std::chrono::nanoseconds spin) : spin_(spin) {}
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  void lock() {
    if (!mu_.try_lock()) lock_contended();
    holder_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    holder_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    holder_cpu_.store(kFree, std::memory_order_relaxed);
    mu_.unlock();
  }

  // Contended lock() calls that spun (the holder ran on another CPU), and those that went to sleep (after
  // spinning in vain, or at once). For tests and stats.
  uint64_t spun() const { return spun_.load(std::memory_order_relaxed); }
  uint64_t slept() const { return slept_.load(std::memory_order_relaxed); }

 private:
  void lock_contended() {
    const int cpu = sched_getcpu();
    if (cpu >= 0 && holder_cpu_.load(std::memory_order_relaxed) != cpu) {
      // Reads the holder's CPU until it is free, and only then tries: a failed try_lock takes the mutex's
      // line from the holder, who writes it to unlock.
      spun_.fetch_add(1, std::memory_order_relaxed);
      const auto until = std::chrono::steady_clock::now() + spin_;
      for (;;) {
        for (int i = 0; i < 32; ++i) {
          __builtin_ia32_pause();
          if (holder_cpu_.load(std::memory_order_relaxed) == kFree && mu_.try_lock()) return;
        }
        if (std::chrono::steady_clock::now() >= until) break;
      }
    }
    slept_.fetch_add(1, std::memory_order_relaxed);
    mu_.lock();
  }
  std::mutex mu_;
  static constexpr int kFree = -2;
  std::atomic<int> holder_cpu_{kFree};  // the CPU the holder took the lock on (-1: unknown), or kFree
  const std::chrono::nanoseconds spin_ = kSpin;
  std::atomic<uint64_t> spun_{0}, slept_{0};
};

}  // namespace uroce::provider
