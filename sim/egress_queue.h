// What waits for a link's serializer. The Link asks its queue for the next frame whenever the wire goes
// idle. Switch models with ECN marking, traffic classes or PFC replace FifoQueue by overriding
// enqueue/dequeue; a queue that holds frames back (dequeue returns false while it still has frames) calls
// Link::kick() when it lets them go.
//
// A queue that rewrites frame bytes (e.g. sets CE) must first make sure it holds the only reference
// (BufferPool::refs(f.buf) == 1): flooded copies share a buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "sim/buffer_pool.h"
#include "fabric/ring.h"

namespace uroce::sim {

struct LinkConfig;
class Link;
class EventQueue;

class EgressQueue {
 public:
  virtual ~EgressQueue() = default;

  // Called once by the Link that serves this queue (a queue that holds frames back kicks it, and may
  // schedule events of its own).
  virtual void bind(Link& /*link*/, EventQueue& /*events*/) {}

  // Offers a frame at time `now`. true: the queue now owns the frame's reference. false: refused (the
  // caller still owns the reference and drops it).
  virtual bool enqueue(const SimFrame& f, uint64_t now) = 0;

  // Moves the next frame to serialize into *f; the caller then owns its reference. false: none eligible.
  virtual bool dequeue(SimFrame* f, uint64_t now) = 0;

  // Frames and bytes waiting (not counting the frame on the wire).
  virtual size_t frames() const = 0;
  virtual size_t bytes() const = 0;
};

// FIFO with tail drop: a frame is refused when the bytes already waiting plus its own would exceed
// limit_bytes (0 = unlimited). The frame being serialized has left the queue and does not count.
class FifoQueue : public EgressQueue {
 public:
  explicit FifoQueue(uint64_t limit_bytes) : limit_bytes_(limit_bytes) {}
  ~FifoQueue() override;

  bool enqueue(const SimFrame& f, uint64_t now) override;
  bool dequeue(SimFrame* f, uint64_t now) override;
  size_t frames() const override { return ring_.size(); }
  size_t bytes() const override { return bytes_; }

 private:
  uint64_t limit_bytes_;
  fabric::Ring<SimFrame> ring_;
  size_t bytes_ = 0;
};

// Builds the egress queue for a new link; SwitchConfig carries one so a switch model picks its queues.
using QueueFactory = std::function<std::unique_ptr<EgressQueue>(const LinkConfig&)>;

}  // namespace uroce::sim
