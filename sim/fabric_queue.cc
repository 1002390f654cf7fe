#include "sim/fabric_queue.h"

#include "sim/link.h"

namespace uroce::sim {

FabricQueue::FabricQueue(QueueOwner* owner, uint32_t port, bool int_enabled, uint32_t credit_vl_bytes,
                         uint8_t credit_mask)
    : owner_(owner), port_(port), q_(int_enabled, credit_vl_bytes, credit_mask) {}

FabricQueue::~FabricQueue() {
  q_.clear([](const fabric::Queued& q) { BufferPool::release(q.buf); });
}

void FabricQueue::bind(Link& link, EventQueue& events) {
  link_ = &link;
  events_ = &events;
  q_.set_rate_bps(link.config().rate_bps);
}

bool FabricQueue::enqueue(const SimFrame& f, uint64_t /*now*/) {
  fabric::Queued q{f.buf, f.flip_bit, BufferPool::meta(f.buf)};
  q.meta.shared = BufferPool::refs(f.buf) != 1;
  q_.push(q);
  return true;
}

void FabricQueue::send_control(const SimFrame& f, uint64_t now) {
  q_.push_control(fabric::Queued{f.buf, f.flip_bit, {}});
  if (link_) link_->kick(now);
}

bool FabricQueue::dequeue(SimFrame* f, uint64_t now) {
  fabric::Queued q;
  if (!q_.pop(now, &q)) return false;
  *f = SimFrame{q.buf, q.tag};
  if (!q.meta.control && owner_) owner_->on_leave(port_, &q, now);
  return true;
}

void FabricQueue::apply_pfc(const fabric::PfcFrame& pfc, uint64_t now) {
  bool resumed = false;
  const uint8_t paused = q_.apply_pfc(pfc, now, &resumed);
  for (uint32_t p = 0; p < fabric::kPriorities; ++p)
    if ((paused >> p & 1) && events_)
      events_->schedule(q_.pause_until(static_cast<uint8_t>(p)), this, kPauseEnd | p << 4);
  if (resumed && link_) link_->kick(now);
}

void FabricQueue::return_credits(uint8_t vl, uint32_t blocks, uint64_t at) {
  if (events_) events_->schedule(at, this, kCredit | uint32_t{vl} << 4 | blocks << 8);
}

void FabricQueue::on_event(const Event& ev) {
  const auto p = static_cast<uint8_t>((ev.kind >> 4) & 0xF);
  if ((ev.kind & 0xF) == kPauseEnd) {
    if (!q_.pause_timer(p, ev.time)) return;
  } else {
    q_.add_credits(p, ev.kind >> 8);
  }
  if (link_) link_->kick(ev.time);
}

}  // namespace uroce::sim
