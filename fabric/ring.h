// A FIFO ring of trivially copyable items (a switch port's queues, the simulator's rings). It grows by
// doubling when full and never shrinks, so once a simulation has warmed up push/pop never allocate.
#pragma once

#include <bit>
#include <cstddef>
#include <vector>

namespace uroce::fabric {

template <class T>
class Ring {
 public:
  explicit Ring(size_t capacity = 64) : items_(std::bit_ceil(capacity < 2 ? size_t{2} : capacity)) {}

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }

  void push(const T& v) {
    if (size() == items_.size()) grow();
    items_[tail_++ & mask()] = v;
  }
  const T& front() const { return items_[head_ & mask()]; }
  T pop() { return items_[head_++ & mask()]; }

 private:
  size_t mask() const { return items_.size() - 1; }
  void grow() {
    const size_t n = size();
    std::vector<T> bigger(items_.size() * 2);
    for (size_t i = 0; i < n; ++i) bigger[i] = items_[(head_ + i) & mask()];
    items_.swap(bigger);
    head_ = 0;
    tail_ = n;
  }

  std::vector<T> items_;  // size is a power of two; head_/tail_ are free-running indices
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace uroce::fabric
