// Time as the transport sees it. The engine never reads the system clock directly: a real port gives it
// SteadyClock, the simulator a virtual clock that only moves when the simulation says so.
#pragma once

#include <chrono>
#include <cstdint>

namespace uroce {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() const = 0;
};

class SteadyClock final : public Clock {
 public:
  uint64_t now_ns() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
};

// A clock that moves only when told to. Single-threaded.
class ManualClock final : public Clock {
 public:
  uint64_t now_ns() const override { return now_; }
  void set(uint64_t t) { now_ = t; }
  void advance(uint64_t dt) { now_ += dt; }

 private:
  uint64_t now_ = 0;
};

constexpr uint64_t kNever = UINT64_MAX;

}  // namespace uroce
