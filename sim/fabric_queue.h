// The switch model's egress queue (fabric/port_queue.h) as a link's queue in virtual time: a switch port's,
// and a host NIC's uplink when the fabric has flow control (a paused host link must stop sending too).
//
// This adapter keeps the queue's time: the end of a pause and the arrival of returned credits are events
// on the simulator's queue, and whenever a frame may leave again it kicks the link. At dequeue it tells its
// owner (the switch) that a data frame has left the buffer, so the switch can release buffer accounting,
// send XON, mark ECN and return credits upstream.
#pragma once

#include <cstdint>
#include <functional>

#include "fabric/fabric.h"
#include "fabric/port_queue.h"
#include "sim/egress_queue.h"
#include "sim/event_queue.h"

namespace uroce::sim {

class Link;

class QueueOwner {
 public:
  // Data frame `q` has been dequeued for transmission on port `port` (the owner's numbering) at `now`.
  virtual void on_leave(uint32_t port, fabric::Queued* q, uint64_t now) = 0;

 protected:
  ~QueueOwner() = default;
};

using fabric::QueueStats;

class FabricQueue final : public EgressQueue, public EventTarget {
 public:
  // owner/port: who is told about departures (null for a host uplink). credit_vl_bytes: 0 = no credit
  // flow control; else every VL in `credit_mask` starts with that many bytes of credit.
  FabricQueue(QueueOwner* owner, uint32_t port, bool int_enabled, uint32_t credit_vl_bytes,
              uint8_t credit_mask);
  ~FabricQueue() override;

  void bind(Link& link, EventQueue& events) override;
  // Takes the frame with the switch's FrameMeta from its buffer's side band (BufferPool::meta).
  bool enqueue(const SimFrame& f, uint64_t now) override;
  bool dequeue(SimFrame* f, uint64_t now) override;
  size_t frames() const override { return q_.data_frames(); }
  size_t bytes() const override { return q_.bytes(); }

  size_t prio_bytes(uint8_t prio) const { return q_.prio_bytes(prio); }
  // Sends a MAC control frame ahead of all data (takes over the reference).
  void send_control(const SimFrame& f, uint64_t now);
  // Applies a received PFC frame: each enabled priority pauses for its quanta (0: resumes now).
  void apply_pfc(const fabric::PfcFrame& p, uint64_t now);
  bool paused(uint8_t prio, uint64_t now) const { return q_.paused(prio, now); }
  void set_pfc_trace(std::function<void(uint64_t now, bool pause)> f) { q_.set_pfc_trace(std::move(f)); }
  // Credits returned by the receiver arrive at `at` (>= now).
  void return_credits(uint8_t vl, uint32_t blocks, uint64_t at);
  uint32_t credits(uint8_t vl) const { return q_.credits(vl); }
  uint32_t credit_limit() const { return q_.credit_limit(); }
  uint64_t tx_bytes() const { return q_.tx_bytes(); }
  const QueueStats& stats() const { return q_.stats(); }
  uint64_t rate_bps() const { return q_.rate_bps(); }
  fabric::PortQueue& core() { return q_; }

  void on_event(const Event& ev) override;

 private:
  enum Kind : uint32_t { kPauseEnd = 1, kCredit = 2 };

  QueueOwner* owner_;
  uint32_t port_;
  Link* link_ = nullptr;
  EventQueue* events_ = nullptr;
  fabric::PortQueue q_;
};

}  // namespace uroce::sim
