// The device lock (provider/device_lock.h): mutual exclusion, and how a contended lock() waits: spinning
// while the holder runs on another CPU, asleep at once when the holder took it on this CPU.
#include "provider/device_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/cpus.h"

namespace uroce::provider {
namespace {

using namespace std::chrono_literals;

using test::allowed_cpus;

void pin_self(int cpu) { ASSERT_TRUE(test::pin_this_thread(cpu)); }

TEST(DeviceLock, KeepsOutEveryOtherHolder) {
  DeviceLock lk;
  uint64_t counter = 0;  // not atomic: only the lock protects it
  constexpr int kThreads = 3, kRounds = 100'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard g(lk);
        ++counter;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, uint64_t{kThreads} * kRounds);
  EXPECT_TRUE(lk.try_lock());
  EXPECT_FALSE(lk.try_lock());
  lk.unlock();
}

// A holder pinned to holder_cpu takes `lk` and keeps it until a waiter pinned to waiter_cpu has decided how
// to wait for it (spin or sleep), then releases it; the waiter then takes it.
void contend(DeviceLock& lk, int holder_cpu, int waiter_cpu) {
  std::atomic<bool> held{false};
  std::thread holder([&] {
    pin_self(holder_cpu);
    lk.lock();
    held = true;
    while (lk.spun() == 0 && lk.slept() == 0) std::this_thread::yield();
    lk.unlock();
  });
  pin_self(waiter_cpu);
  while (!held) std::this_thread::yield();
  lk.lock();
  lk.unlock();
  holder.join();
}

// The holder on another CPU releases the lock while the waiter spins: it takes it without sleeping (the spin
// bound is far longer than the test).
TEST(DeviceLock, SpinsWhileTheHolderRunsOnAnotherCpu) {
  const auto cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  DeviceLock lk(60s);
  contend(lk, cpus[0], cpus[1]);
  EXPECT_EQ(lk.spun(), 1u);
  EXPECT_EQ(lk.slept(), 0u);
}

// Both on one CPU: the holder cannot release the lock while the waiter spins there, so the waiter sleeps at
// once (it would otherwise spin for the 5 s bound first, and count as having spun).
TEST(DeviceLock, SleepsAtOnceWhenTheHolderIsOnItsCpu) {
  const auto cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  DeviceLock lk(5s);
  contend(lk, cpus[0], cpus[0]);
  EXPECT_EQ(lk.spun(), 0u);
  EXPECT_EQ(lk.slept(), 1u);
}

}  // namespace
}  // namespace uroce::provider
