#include "sim/event_queue.h"

#include <algorithm>

namespace uroce::sim {
namespace {

// Heap order: "a after b", so the heap's front is the earliest event.
bool later(const Event& a, const Event& b) { return a.time != b.time ? a.time > b.time : a.seq > b.seq; }

}  // namespace

void EventQueue::schedule(uint64_t time, EventTarget* target, uint32_t kind, SimFrame frame) {
  heap_.push_back(Event{time, next_seq_++, target, kind, frame});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

bool EventQueue::pop_due(uint64_t now, Event* ev) {
  if (heap_.empty() || heap_.front().time > now) return false;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  *ev = heap_.back();
  heap_.pop_back();
  return true;
}

void EventQueue::clear() {
  for (Event& ev : heap_)
    if (ev.frame.buf != nullptr) BufferPool::release(ev.frame.buf);
  heap_.clear();
}

}  // namespace uroce::sim
