#include "sim/egress_queue.h"

namespace uroce::sim {

FifoQueue::~FifoQueue() {
  while (!ring_.empty()) BufferPool::release(ring_.pop().buf);
}

bool FifoQueue::enqueue(const SimFrame& f, uint64_t /*now*/) {
  if (limit_bytes_ != 0 && bytes_ + f.buf->len > limit_bytes_) return false;
  ring_.push(f);
  bytes_ += f.buf->len;
  return true;
}

bool FifoQueue::dequeue(SimFrame* f, uint64_t /*now*/) {
  if (ring_.empty()) return false;
  *f = ring_.pop();
  bytes_ -= f->buf->len;
  return true;
}

}  // namespace uroce::sim
