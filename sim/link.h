// One direction of a wire: egress queue -> serializer -> impairments -> propagation -> sink.
//
// A frame occupies the wire for len * 8 / rate_bps seconds; frames queue behind each other (FIFO by
// default). Fractional nanoseconds carry over between back-to-back frames, so over a busy period the
// link moves exactly rate_bps. Impairments are drawn from the link's own random stream when a frame
// finishes serialization: loss first; a surviving frame may be duplicated; each copy independently may
// be corrupted (one random bit) and may be held back by an extra uniform delay in
// [1, reorder_window_ns], which lets later frames overtake it.
//
// Ownership: send() takes over one buffer reference. The link holds it through queue, wire and flight and
// releases it after the sink has copied the frame (or when the frame is dropped).
#pragma once

#include <cstdint>
#include <memory>

#include "sim/counters.h"
#include "sim/egress_queue.h"
#include "sim/event_queue.h"
#include "fabric/rng.h"

namespace uroce::sim {

struct LinkConfig {
  uint64_t rate_bps = 100'000'000'000;  // 0: infinitely fast (no serialization time)
  uint64_t delay_ns = 1000;             // propagation
  double loss = 0;                      // P(frame vanishes after serialization)
  double duplicate = 0;                 // P(surviving frame arrives twice)
  double reorder = 0;                   // P(a copy gets the extra delay); needs reorder_window_ns > 0
  uint64_t reorder_window_ns = 0;
  double corrupt = 0;              // P(a copy arrives with one random bit flipped)
  uint64_t queue_limit_bytes = 0;  // FIFO tail drop beyond this many waiting bytes; 0: unlimited
};

// The far end of a link: a SimPort or a switch port. receive() runs when a copy arrives at `now`; the
// sink copies what it keeps into its own pool and must not keep f.buf (the link releases it afterwards).
class FrameSink {
 public:
  virtual void receive(const SimFrame& f, uint64_t now) = 0;

 protected:
  ~FrameSink() = default;
};

class Link final : public EventTarget {
 public:
  // `queue` null: a FifoQueue with cfg.queue_limit_bytes.
  Link(EventQueue& events, const LinkConfig& cfg, FrameSink& sink, uint64_t seed,
       std::unique_ptr<EgressQueue> queue = nullptr);
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Queues the frame at time `now`, taking over its reference; on tail drop releases it and returns false.
  bool send(const SimFrame& f, uint64_t now);

  // Starts the serializer if it is idle and the queue has an eligible frame.
  void kick(uint64_t now);

  bool busy() const { return busy_; }
  const EgressQueue& queue() const { return *queue_; }
  EgressQueue& queue() { return *queue_; }
  const LinkConfig& config() const { return cfg_; }
  const LinkCounters& counters() const { return counters_; }

  void on_event(const Event& ev) override;

 private:
  enum Kind : uint32_t { kTxDone, kArrive };

  void finish_tx(const Event& ev);
  void launch(SimFrame f, uint64_t t);  // one copy onto the propagation path

  EventQueue& events_;
  LinkConfig cfg_;
  FrameSink& sink_;
  fabric::Rng rng_;
  std::unique_ptr<EgressQueue> queue_;
  LinkCounters counters_;
  bool busy_ = false;   // a frame is being serialized (its kTxDone event is pending)
  uint64_t carry_ = 0;  // remainder of bits * 1e9 / rate from back-to-back frames; 0 when idle
};

}  // namespace uroce::sim
