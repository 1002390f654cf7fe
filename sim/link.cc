#include "sim/link.h"

namespace uroce::sim {

Link::Link(EventQueue& events, const LinkConfig& cfg, FrameSink& sink, uint64_t seed,
           std::unique_ptr<EgressQueue> queue)
    : events_(events),
      cfg_(cfg),
      sink_(sink),
      rng_(seed),
      queue_(queue ? std::move(queue) : std::make_unique<FifoQueue>(cfg.queue_limit_bytes)) {
  queue_->bind(*this, events_);
}

bool Link::send(const SimFrame& f, uint64_t now) {
  if (!queue_->enqueue(f, now)) {
    ++counters_.queue_dropped;
    BufferPool::release(f.buf);
    return false;
  }
  kick(now);
  return true;
}

void Link::kick(uint64_t now) {
  if (busy_) return;
  SimFrame f;
  if (!queue_->dequeue(&f, now)) {
    carry_ = 0;
    return;
  }
  busy_ = true;
  uint64_t ser_ns = 0;
  if (cfg_.rate_bps != 0) {
    const uint64_t scaled = uint64_t{f.buf->len} * 8 * 1'000'000'000 + carry_;
    ser_ns = scaled / cfg_.rate_bps;
    carry_ = scaled % cfg_.rate_bps;
  }
  events_.schedule(now + ser_ns, this, kTxDone, f);
}

void Link::on_event(const Event& ev) {
  if (ev.kind == kTxDone) {
    finish_tx(ev);
    return;
  }
  // kArrive: the sink copies the frame in; this copy's reference ends here.
  ++counters_.delivered_frames;
  counters_.delivered_bytes += ev.frame.buf->len;
  sink_.receive(ev.frame, ev.time);
  BufferPool::release(ev.frame.buf);
}

void Link::finish_tx(const Event& ev) {
  busy_ = false;
  const SimFrame f = ev.frame;
  ++counters_.sent_frames;
  counters_.sent_bytes += f.buf->len;
  if (rng_.chance(cfg_.loss)) {
    ++counters_.lost;
    BufferPool::release(f.buf);
  } else {
    const bool dup = rng_.chance(cfg_.duplicate);
    if (dup) {
      ++counters_.duplicated;
      BufferPool::add_ref(f.buf);  // the second copy's reference
    }
    launch(f, ev.time);
    if (dup) launch(f, ev.time);
  }
  kick(ev.time);  // back-to-back: the next frame starts the instant this one ends
}

void Link::launch(SimFrame f, uint64_t t) {
  if (f.buf->len > 0 && rng_.chance(cfg_.corrupt)) {
    ++counters_.corrupted;
    f.flip_bit = static_cast<uint32_t>(rng_.below(uint64_t{f.buf->len} * 8));
  }
  uint64_t arrive = t + cfg_.delay_ns;
  if (cfg_.reorder_window_ns > 0 && rng_.chance(cfg_.reorder)) {
    ++counters_.reordered;
    arrive += 1 + rng_.below(cfg_.reorder_window_ns);
  }
  events_.schedule(arrive, this, kArrive, f);
}

}  // namespace uroce::sim
