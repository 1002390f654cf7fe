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
  // A reading that need not be ordered after the loads and stores before it, where that is cheaper (see
  // provider/fast_clock.h). Callers keep their own maximum if they compare it with ordered readings.
  virtual uint64_t now_ns_unordered() const { return now_ns(); }
};

class SteadyClock final : public Clock {
 public:
  uint64_t now_ns() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
};

// A clock that moves only when told to. Single-threaded. Its unordered readings can be made to lag behind
// the ordered ones, as an unfenced read on one CPU may lag a fenced one just taken on another.
class ManualClock final : public Clock {
 public:
  uint64_t now_ns() const override { return now_; }
  uint64_t now_ns_unordered() const override { return now_ > lag_ ? now_ - lag_ : 0; }
  void set(uint64_t t) { now_ = t; }
  void advance(uint64_t dt) { now_ += dt; }
  void set_unordered_lag(uint64_t ns) { lag_ = ns; }

 private:
  uint64_t now_ = 0;
  uint64_t lag_ = 0;
};

constexpr uint64_t kNever = UINT64_MAX;

}  // namespace uroce
