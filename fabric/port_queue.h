// The egress queue of a switch port, and of a host NIC's uplink when the fabric has flow control (a paused
// host must stop sending too). Clock-agnostic: every call takes `now`, and what must happen later (a pause
// that ends, credits that arrive) is the driver's to schedule: the simulator with its event queue
// (sim/fabric_queue.h), uroced by looking again on its next pass (tools/uroced/switch_core.h).
//
// Eight priority FIFOs served in strict priority (7 first), plus a control FIFO (PFC frames) served before
// all of them and never paused or credit-limited. A priority is not eligible while it is paused by a
// received PFC frame or, with credit flow control, while the credits for its VL do not cover the head
// frame (credits in 64-byte blocks, returned by the receiver as its buffer drains). The queue takes every
// frame it is offered: admission (shared buffer, thresholds, headroom) is the switch's decision (switch.h).
//
// At dequeue it stamps an IntHop on RoCE request packets when INT is on and the buffer carries a telemetry
// side band (the simulator's buffers do; real ports have none).
//
// Ownership: push() and push_control() take the frame's buffer; pop() hands it back to the caller; clear()
// hands every frame still held to a callback.
#pragma once

#include <cstdint>
#include <functional>

#include "fabric/fabric.h"
#include "fabric/ring.h"

namespace uroce::fabric {

// What the switch knows about a buffered frame besides its bytes: where it came in and at which priority it
// is counted.
struct FrameMeta {
  uint16_t in_port = 0;
  uint8_t prio = 0;
  bool lossless = false;      // counted against its ingress port's PFC/credit accounting
  bool roce_request = false;  // gets an INT hop at egress
  bool ect = false;           // ECN-capable (ECT(0) or ECT(1)): may be marked CE
  bool classified = false;    // the fields above are set
  bool shared = false;        // the buffer is shared with other copies (flooding): never rewritten
  bool control = false;       // a MAC control frame (push_control): no departure accounting
};

// A queued frame: its buffer, a word the driver keeps with it (the simulator's bit flip, uroced's ingress
// port), and its metadata.
struct Queued {
  PktBuf* buf = nullptr;
  uint32_t tag = 0;
  FrameMeta meta;
};

struct QueueStats {
  uint64_t pause_rx = 0;      // PFC frames received that paused or resumed this queue
  uint64_t paused_ns = 0;     // summed over priorities, of time a priority was paused with frames waiting
  uint64_t credit_stall = 0;  // dequeue attempts blocked by missing credits
  uint64_t int_stamped = 0;
  uint64_t max_bytes = 0;  // deepest the data queues got
};

class PortQueue {
 public:
  // credit_vl_bytes: 0 = no credit flow control; else every VL in `credit_mask` starts with that many bytes
  // of credit.
  PortQueue(bool int_enabled, uint32_t credit_vl_bytes, uint8_t credit_mask);
  PortQueue(const PortQueue&) = delete;
  PortQueue& operator=(const PortQueue&) = delete;

  // The line rate: pause quanta are bit times at this rate, and INT hops report it.
  void set_rate_bps(uint64_t bps) { rate_bps_ = bps; }
  uint64_t rate_bps() const { return rate_bps_; }

  // Queues a data frame (classified here when the driver has not).
  void push(const Queued& q);
  // Queues a MAC control frame ahead of all data (its meta.control is set).
  void push_control(const Queued& q);
  // Moves the next frame to transmit into *q: control first, then the highest eligible priority. false:
  // nothing eligible now.
  bool pop(uint64_t now, Queued* q);
  // The frame pop() would take at `now` (nullptr: none eligible), left in place.
  const Queued* peek(uint64_t now) const;
  // Some priority has frames, is not paused and lacks the credit for its head frame.
  bool credit_blocked(uint64_t now) const;

  size_t frames() const { return frames_ + ctrl_.size(); }
  size_t data_frames() const { return frames_; }
  size_t bytes() const { return bytes_; }
  size_t prio_bytes(uint8_t prio) const { return prio_bytes_[prio]; }
  bool has_control() const { return !ctrl_.empty(); }

  // Applies a received PFC frame: each enabled priority pauses for its quanta at the line rate (0: resumes
  // now). Returns the priorities that are paused now (the driver looks again at pause_until(p) for each);
  // *resumed is set when some priority resumed (the queue may send again at once).
  uint8_t apply_pfc(const PfcFrame& p, uint64_t now, bool* resumed);
  uint64_t pause_until(uint8_t prio) const { return pause_until_[prio]; }
  bool paused(uint8_t prio, uint64_t now) const { return pause_until_[prio] > now; }
  // The pause of `prio` may have ended at `now` (a timer the driver set from pause_until): true when it did
  // (a later frame may have extended it).
  bool pause_timer(uint8_t prio, uint64_t now);
  // Called with every PFC frame apply_pfc() takes: pause is true when it pauses some priority (quanta > 0),
  // false when it only resumes.
  void set_pfc_trace(std::function<void(uint64_t now, bool pause)> f) { pfc_trace_ = std::move(f); }

  // Credits the receiver returned for VL `vl` have arrived.
  void add_credits(uint8_t vl, uint32_t blocks) { credits_[vl] += blocks; }
  // The credit of VL `vl` is now `blocks` (a credit update with absolute counts).
  void set_credits(uint8_t vl, uint32_t blocks) { credits_[vl] = blocks; }
  // Turns credit flow control on for the VLs in `mask` with no credit yet (a host MAC that learns its
  // credits from the link's first credit update); credit_limit() is then the largest credit a VL may hold.
  void start_credits(uint8_t mask);
  uint32_t credits(uint8_t vl) const { return credits_[vl]; }
  uint32_t credit_limit() const { return credit_limit_; }
  bool credit_vl(uint8_t vl) const { return credit_limit_ != 0 && (credit_mask_ >> vl & 1); }

  uint64_t tx_bytes() const { return tx_bytes_; }
  const QueueStats& stats() const { return stats_; }

  // Hands every frame still queued (control frames too) to `release`, emptying the queue.
  void clear(const std::function<void(const Queued&)>& release);
  // Removes the data frames `drop` selects (kept ones stay in order), handing each to `release` first.
  void remove_if(const std::function<bool(const Queued&)>& drop,
                 const std::function<void(const Queued&)>& release);

 private:
  bool eligible(uint8_t prio, uint64_t now);
  void stamp_int(PktBuf* b, uint64_t now);
  void account_pause(uint8_t prio, uint64_t now);

  bool int_enabled_;
  uint8_t credit_mask_;
  uint32_t credit_limit_;  // blocks per VL; 0: no credit flow control
  uint64_t rate_bps_ = 0;
  Ring<Queued> ctrl_;
  Ring<Queued> q_[kPriorities];
  size_t prio_bytes_[kPriorities] = {};
  uint64_t pause_until_[kPriorities] = {};
  uint64_t pause_since_[kPriorities] = {};  // start of the current paused interval (kNotPaused: none)
  uint32_t credits_[kPriorities] = {};
  size_t frames_ = 0, bytes_ = 0;
  uint64_t tx_bytes_ = 0;
  QueueStats stats_;
  std::function<void(uint64_t, bool)> pfc_trace_;
};

}  // namespace uroce::fabric
