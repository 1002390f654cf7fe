// A FIFO of trivially copyable values on one growing ring: push_back, front, pop_front. Unlike std::deque,
// which allocates a block every few hundred bytes pushed and frees it when emptied, it allocates only when
// it holds more than ever before (doubling), so a queue with a steady depth allocates nothing on the
// datapath (DESIGN.md; ctest verbs_alloc_test). Single-threaded, as the Device that owns it.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

namespace uroce {

template <typename T>
class Fifo {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  T& front() { return slots_[head_]; }
  void pop_front() {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --count_;
  }
  void push_back(const T& v) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) & (slots_.size() - 1)] = v;
    ++count_;
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 64 : 2 * slots_.size());
    for (size_t i = 0; i < count_; ++i) bigger[i] = slots_[(head_ + i) & (slots_.size() - 1)];
    slots_.swap(bigger);
    head_ = 0;
  }
  std::vector<T> slots_;  // a power of two long (or empty)
  size_t head_ = 0, count_ = 0;
};

}  // namespace uroce
