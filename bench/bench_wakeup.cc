// What waking a sleeping thread costs on this machine, by where the woken thread waits: the cost behind
// the progress thread's latency and the device lock's spin (docs/latency.md, provider/device_lock.h).
//
// A waker thread, pinned to one CPU and busy there (as a polling application is), writes a byte into a pipe
// every 100 us; the woken thread, blocked in read(), notes how long after the write it ran. Three places for
// the woken thread: the waker's own CPU (the baseline: it must preempt the waker), another CPU with nothing
// to run (it may be halted), and another CPU that a spinning thread keeps busy (it must be interrupted and
// preempt the spinner). Each figure is beside the baseline as a ratio. Needs two CPUs for the last two.
//
// Run: build/release/bench/bench_wakeup [wake-ups per case, default 2000]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tests/support/cpus.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

using uroce::test::pin_this_thread;

struct Result {
  double p10, p50, p90, p99;  // us
};

// `n` wake-ups of a thread pinned to `woken_cpu` by a busy thread pinned to `waker_cpu`; with `spinner`, a
// third thread keeps woken_cpu busy meanwhile.
Result measure(int waker_cpu, int woken_cpu, bool spinner, int n) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(2);
  std::atomic<int64_t> written{0};
  std::atomic<int> seen{0};  // wake-ups the reader has timed: the next write waits for it
  std::atomic<bool> stop{false}, ready{false};
  std::vector<double> lat;
  lat.reserve(n);
  std::thread spin;
  if (spinner)
    spin = std::thread([&] {
      pin_this_thread(woken_cpu);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  std::thread woken([&] {
    pin_this_thread(woken_cpu);
    ready = true;
    char c;
    for (int i = 0; i < n; ++i) {
      if (read(fds[0], &c, 1) != 1) break;
      lat.push_back(static_cast<double>(now_ns() - written.load()) / 1000.0);
      seen = i + 1;
    }
  });
  pin_this_thread(waker_cpu);
  while (!ready) std::this_thread::yield();
  for (int i = 0; i < n; ++i) {
    while (seen.load() < i) {
    }
    const int64_t t0 = now_ns();
    while (now_ns() - t0 < 100'000) {
    }
    written = now_ns();
    const char c = 'x';
    if (write(fds[1], &c, 1) != 1) break;
  }
  woken.join();
  stop = true;
  if (spin.joinable()) spin.join();
  close(fds[0]);
  close(fds[1]);
  std::sort(lat.begin(), lat.end());
  auto at = [&](double q) { return lat.empty() ? 0.0 : lat[static_cast<size_t>(q * (lat.size() - 1))]; };
  return {at(0.10), at(0.50), at(0.90), at(0.99)};
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(10, std::atoi(argv[1])) : 2000;
  const std::vector<int> cpus = uroce::test::allowed_cpus();
  if (cpus.empty()) return 2;
  std::printf(
      "wake-up latency: a thread blocked in read() on a pipe, from a busy thread's write() to the\n"
      "reader running; %d wake-ups 100 us apart per case, microseconds\n",
      n);
  std::printf("%-36s %8s %8s %8s %8s %10s\n", "where the woken thread waits", "p10", "median", "p90", "p99",
              "x baseline");
  const Result base = measure(cpus[0], cpus[0], false, n);
  auto row = [&](const char* name, const Result& r) {
    std::printf("%-36s %8.1f %8.1f %8.1f %8.1f %10.2f\n", name, r.p10, r.p50, r.p90, r.p99,
                base.p50 > 0 ? r.p50 / base.p50 : 0.0);
  };
  row("the waker's CPU (baseline)", base);
  if (cpus.size() < 2) {
    std::printf("(one CPU: no cross-CPU cases)\n");
    return 0;
  }
  row("another CPU, idle", measure(cpus[0], cpus[1], false, n));
  row("another CPU, running a spinner", measure(cpus[0], cpus[1], true, n));
  return 0;
}
