// The egress queue of the switch model, also used for a host NIC's uplink when the fabric has flow
// control (a paused host link must stop sending too).
//
// Eight priority FIFOs served in strict priority (7 first), plus a control FIFO (PFC frames) served
// before all of them and never paused or credit-limited. A priority is not eligible while it is paused
// by a received PFC frame or, with credit flow control, while the credits for its VL do not cover the
// head frame (credits in 64-byte blocks, returned by the receiver as its buffer drains). The queue admits
// every frame it is offered: admission (shared buffer, thresholds, headroom) is the switch's decision,
// made before Link::send.
//
// At dequeue it stamps an IntHop on RoCE request packets (when INT is on) and tells its owner (the switch)
// that the frame has left the buffer, so the switch can release buffer accounting, send XON, and return
// credits upstream.
#pragma once

#include <cstdint>
#include <functional>

#include "fabric/fabric.h"
#include "sim/egress_queue.h"
#include "sim/event_queue.h"
#include "sim/ring.h"

namespace uroce::sim {

class Link;

class QueueOwner {
 public:
  // `f` has been dequeued for transmission on port `port` (the owner's numbering) at `now`.
  virtual void on_leave(uint32_t port, const SimFrame& f, uint64_t now) = 0;

 protected:
  ~QueueOwner() = default;
};

struct QueueStats {
  uint64_t pause_rx = 0;      // PFC frames received that paused or resumed this queue
  uint64_t paused_ns = 0;     // summed over priorities, of time a priority was paused with frames waiting
  uint64_t credit_stall = 0;  // dequeue attempts blocked by missing credits
  uint64_t int_stamped = 0;
  uint64_t max_bytes = 0;  // deepest the data queues got
};

class FabricQueue final : public EgressQueue, public EventTarget {
 public:
  // owner/port: who is told about departures (null for a host uplink). credit_vl_bytes: 0 = no credit
  // flow control; else every VL in `credit_mask` starts with that many bytes of credit.
  FabricQueue(QueueOwner* owner, uint32_t port, bool int_enabled, uint32_t credit_vl_bytes,
              uint8_t credit_mask);
  ~FabricQueue() override;

  void bind(Link& link, EventQueue& events) override;
  bool enqueue(const SimFrame& f, uint64_t now) override;
  bool dequeue(SimFrame* f, uint64_t now) override;
  size_t frames() const override { return frames_; }
  size_t bytes() const override { return bytes_; }

  size_t prio_bytes(uint8_t prio) const { return prio_bytes_[prio]; }
  // Sends a MAC control frame ahead of all data (takes over the reference).
  void send_control(const SimFrame& f, uint64_t now);
  // Applies a received PFC frame: each enabled priority pauses for its quanta (0: resumes now).
  void apply_pfc(const fabric::PfcFrame& p, uint64_t now);
  bool paused(uint8_t prio, uint64_t now) const { return pause_until_[prio] > now; }
  // Called with every PFC frame apply_pfc() takes: pause is true when it pauses some priority (quanta > 0),
  // false when it only resumes.
  void set_pfc_trace(std::function<void(uint64_t now, bool pause)> f) { pfc_trace_ = std::move(f); }
  // Credits returned by the receiver arrive at `at` (>= now).
  void return_credits(uint8_t vl, uint32_t blocks, uint64_t at);
  uint32_t credits(uint8_t vl) const { return credits_[vl]; }
  uint32_t credit_limit() const { return credit_limit_; }
  uint64_t tx_bytes() const { return tx_bytes_; }
  const QueueStats& stats() const { return stats_; }
  uint64_t rate_bps() const;

  void on_event(const Event& ev) override;

 private:
  enum Kind : uint32_t { kPauseEnd = 1, kCredit = 2 };
  bool eligible(uint8_t prio, uint64_t now);
  void stamp_int(PktBuf* b, uint64_t now);
  void account_pause(uint8_t prio, uint64_t now);

  QueueOwner* owner_;
  uint32_t port_;
  bool int_enabled_;
  uint8_t credit_mask_;
  uint32_t credit_limit_;  // blocks per VL; 0: no credit flow control
  Link* link_ = nullptr;
  EventQueue* events_ = nullptr;
  Ring<SimFrame> ctrl_;
  Ring<SimFrame> q_[fabric::kPriorities];
  size_t prio_bytes_[fabric::kPriorities] = {};
  uint64_t pause_until_[fabric::kPriorities] = {};
  uint64_t pause_since_[fabric::kPriorities] =
      {};  // start of the current paused interval (kNever: not paused)
  uint32_t credits_[fabric::kPriorities] = {};
  size_t frames_ = 0, bytes_ = 0;
  uint64_t tx_bytes_ = 0;
  QueueStats stats_;
  std::function<void(uint64_t, bool)> pfc_trace_;
};

}  // namespace uroce::sim
