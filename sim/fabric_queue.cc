#include "sim/fabric_queue.h"

#include <algorithm>

#include "sim/link.h"

namespace uroce::sim {

FabricQueue::FabricQueue(QueueOwner* owner, uint32_t port, bool int_enabled, uint32_t credit_vl_bytes,
                         uint8_t credit_mask)
    : owner_(owner),
      port_(port),
      int_enabled_(int_enabled),
      credit_mask_(credit_mask),
      credit_limit_(credit_vl_bytes / fabric::kCreditBlock) {
  for (int p = 0; p < fabric::kPriorities; ++p) {
    credits_[p] = credit_limit_;
    pause_since_[p] = kNever;
  }
}

FabricQueue::~FabricQueue() {
  while (!ctrl_.empty()) BufferPool::release(ctrl_.pop().buf);
  for (auto& q : q_)
    while (!q.empty()) BufferPool::release(q.pop().buf);
}

void FabricQueue::bind(Link& link, EventQueue& events) {
  link_ = &link;
  events_ = &events;
}

uint64_t FabricQueue::rate_bps() const { return link_ ? link_->config().rate_bps : 0; }

bool FabricQueue::enqueue(const SimFrame& f, uint64_t /*now*/) {
  FrameMeta& m = BufferPool::meta(f.buf);
  if (!m.classified) {
    const fabric::FrameClass c = fabric::classify(f.buf->data, f.buf->len, 0);
    m.prio = c.prio;
    m.roce_request = c.roce_request;
    m.classified = true;
  }
  q_[m.prio].push(f);
  prio_bytes_[m.prio] += f.buf->len;
  ++frames_;
  bytes_ += f.buf->len;
  stats_.max_bytes = std::max<uint64_t>(stats_.max_bytes, bytes_);
  return true;
}

void FabricQueue::send_control(const SimFrame& f, uint64_t now) {
  ctrl_.push(f);
  if (link_) link_->kick(now);
}

bool FabricQueue::eligible(uint8_t p, uint64_t now) {
  if (q_[p].empty() || pause_until_[p] > now) return false;
  if (credit_limit_ != 0 && (credit_mask_ >> p & 1)) {
    if (credits_[p] < fabric::credit_blocks(q_[p].front().buf->len)) {
      ++stats_.credit_stall;
      return false;
    }
  }
  return true;
}

bool FabricQueue::dequeue(SimFrame* f, uint64_t now) {
  if (!ctrl_.empty()) {
    *f = ctrl_.pop();
    tx_bytes_ += f->buf->len;
    return true;
  }
  for (int p = fabric::kPriorities - 1; p >= 0; --p) {
    if (!eligible(static_cast<uint8_t>(p), now)) continue;
    *f = q_[p].pop();
    const uint32_t len = f->buf->len;
    prio_bytes_[p] -= len;
    --frames_;
    bytes_ -= len;
    if (credit_limit_ != 0 && (credit_mask_ >> p & 1)) credits_[p] -= fabric::credit_blocks(len);
    tx_bytes_ += len;
    if (int_enabled_ && BufferPool::meta(f->buf).roce_request) stamp_int(f->buf, now);
    if (owner_) owner_->on_leave(port_, *f, now);
    return true;
  }
  return false;
}

void FabricQueue::stamp_int(PktBuf* b, uint64_t now) {
  // Flooded copies share a buffer; RoCE unicast never is. Stamp only a buffer this queue alone holds.
  if (b->telemetry == nullptr || BufferPool::refs(b) != 1 || b->telemetry->hops >= cc::kMaxIntHops) return;
  cc::IntHop& h = b->telemetry->hop[b->telemetry->hops++];
  h.ts_ns = now;
  h.tx_bytes = tx_bytes_;
  h.qlen_bytes = static_cast<uint32_t>(bytes_);
  h.line_rate_bps = rate_bps();
  ++stats_.int_stamped;
}

void FabricQueue::account_pause(uint8_t p, uint64_t now) {
  if (pause_since_[p] == kNever) return;
  stats_.paused_ns += std::min(now, pause_until_[p]) - std::min(pause_since_[p], now);
  pause_since_[p] = kNever;
}

void FabricQueue::apply_pfc(const fabric::PfcFrame& pfc, uint64_t now) {
  ++stats_.pause_rx;
  if (pfc_trace_) {
    bool pause = false;
    for (int p = 0; p < fabric::kPriorities; ++p)
      pause = pause || ((pfc.enable >> p & 1) && pfc.quanta[p] != 0);
    pfc_trace_(now, pause);
  }
  bool resumed = false;
  for (int p = 0; p < fabric::kPriorities; ++p) {
    if (!(pfc.enable >> p & 1)) continue;
    const uint64_t until = now + fabric::pfc_quanta_ns(pfc.quanta[p], rate_bps());
    if (pause_until_[p] > now) account_pause(static_cast<uint8_t>(p), now);
    pause_until_[p] = until;
    if (until > now) {
      pause_since_[p] = now;
      if (events_) events_->schedule(until, this, kPauseEnd | static_cast<uint32_t>(p) << 4);
    } else {
      resumed = true;
    }
  }
  if (resumed && link_) link_->kick(now);
}

void FabricQueue::return_credits(uint8_t vl, uint32_t blocks, uint64_t at) {
  if (events_) events_->schedule(at, this, kCredit | uint32_t{vl} << 4 | blocks << 8);
}

void FabricQueue::on_event(const Event& ev) {
  const uint8_t p = (ev.kind >> 4) & 0xF;
  if ((ev.kind & 0xF) == kPauseEnd) {
    if (pause_until_[p] > ev.time) return;  // refreshed by a later frame
    account_pause(p, ev.time);
  } else {
    credits_[p] += ev.kind >> 8;
  }
  if (link_) link_->kick(ev.time);
}

}  // namespace uroce::sim
