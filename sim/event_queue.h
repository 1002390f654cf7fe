// The simulator's agenda: events ordered by (time, sequence number). The sequence number is the order in
// which events were scheduled, so simultaneous events always run in the same order and one seed
// reproduces one run exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/buffer_pool.h"
#include "transport/clock.h"

namespace uroce::sim {

struct Event;

// Anything that schedules events and handles them when they fall due: a link's serializer today; switch
// schedulers and PFC pause timers later.
class EventTarget {
 public:
  virtual void on_event(const Event& ev) = 0;

 protected:
  ~EventTarget() = default;
};

struct Event {
  uint64_t time = 0;
  uint64_t seq = 0;
  EventTarget* target = nullptr;
  uint32_t kind = 0;  // meaning private to the target
  SimFrame frame;     // when frame.buf is set the event holds one reference, which on_event takes over
};

class EventQueue {
 public:
  EventQueue() { heap_.reserve(4096); }
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;
  ~EventQueue() { clear(); }

  // Takes over the reference in `frame` (if any) until the event is handled.
  void schedule(uint64_t time, EventTarget* target, uint32_t kind, SimFrame frame = {});

  uint64_t next_time() const { return heap_.empty() ? kNever : heap_.front().time; }
  size_t size() const { return heap_.size(); }
  uint64_t scheduled_total() const { return next_seq_; }

  // Moves the earliest event into *ev if it is due at `now` (time <= now).
  bool pop_due(uint64_t now, Event* ev);

  // Drops every pending event, releasing the buffer references they hold.
  void clear();

 private:
  std::vector<Event> heap_;  // binary min-heap on (time, seq); grows amortised, never shrinks
  uint64_t next_seq_ = 0;
};

}  // namespace uroce::sim
