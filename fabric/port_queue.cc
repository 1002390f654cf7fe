#include "fabric/port_queue.h"

#include <algorithm>

#include "transport/clock.h"

namespace uroce::fabric {

PortQueue::PortQueue(bool int_enabled, uint32_t credit_vl_bytes, uint8_t credit_mask)
    : int_enabled_(int_enabled), credit_mask_(credit_mask), credit_limit_(credit_vl_bytes / kCreditBlock) {
  for (int p = 0; p < kPriorities; ++p) {
    credits_[p] = credit_limit_;
    pause_since_[p] = kNever;
  }
}

void PortQueue::start_credits(uint8_t mask) {
  credit_mask_ = mask;
  credit_limit_ = UINT32_MAX;
  for (int p = 0; p < kPriorities; ++p) credits_[p] = 0;
}

void PortQueue::push(const Queued& in) {
  Queued q = in;
  if (!q.meta.classified) {
    const FrameClass c = classify(q.buf->data, q.buf->len, 0);
    q.meta.prio = c.prio;
    q.meta.roce_request = c.roce_request;
    q.meta.classified = true;
  }
  q_[q.meta.prio].push(q);
  prio_bytes_[q.meta.prio] += q.buf->len;
  ++frames_;
  bytes_ += q.buf->len;
  stats_.max_bytes = std::max<uint64_t>(stats_.max_bytes, bytes_);
}

void PortQueue::push_control(const Queued& in) {
  Queued q = in;
  q.meta.control = true;
  q.meta.classified = true;
  ctrl_.push(q);
}

bool PortQueue::eligible(uint8_t p, uint64_t now) {
  if (q_[p].empty() || pause_until_[p] > now) return false;
  if (credit_vl(p) && credits_[p] < credit_blocks(q_[p].front().buf->len)) {
    ++stats_.credit_stall;
    return false;
  }
  return true;
}

const Queued* PortQueue::peek(uint64_t now) const {
  if (!ctrl_.empty()) return &ctrl_.front();
  for (int p = kPriorities - 1; p >= 0; --p) {
    if (q_[p].empty() || pause_until_[p] > now) continue;
    if (credit_vl(static_cast<uint8_t>(p)) && credits_[p] < credit_blocks(q_[p].front().buf->len)) continue;
    return &q_[p].front();
  }
  return nullptr;
}

bool PortQueue::credit_blocked(uint64_t now) const {
  for (uint8_t p = 0; p < kPriorities; ++p)
    if (!q_[p].empty() && pause_until_[p] <= now && credit_vl(p) &&
        credits_[p] < credit_blocks(q_[p].front().buf->len))
      return true;
  return false;
}

bool PortQueue::pop(uint64_t now, Queued* q) {
  if (!ctrl_.empty()) {
    *q = ctrl_.pop();
    tx_bytes_ += q->buf->len;
    return true;
  }
  for (int p = kPriorities - 1; p >= 0; --p) {
    if (!eligible(static_cast<uint8_t>(p), now)) continue;
    *q = q_[p].pop();
    const uint32_t len = q->buf->len;
    prio_bytes_[p] -= len;
    --frames_;
    bytes_ -= len;
    if (credit_vl(static_cast<uint8_t>(p))) credits_[p] -= credit_blocks(len);
    tx_bytes_ += len;
    if (int_enabled_ && q->meta.roce_request && !q->meta.shared) stamp_int(q->buf, now);
    return true;
  }
  return false;
}

void PortQueue::stamp_int(PktBuf* b, uint64_t now) {
  if (b->telemetry == nullptr || b->telemetry->hops >= cc::kMaxIntHops) return;
  cc::IntHop& h = b->telemetry->hop[b->telemetry->hops++];
  h.ts_ns = now;
  h.tx_bytes = tx_bytes_;
  h.qlen_bytes = static_cast<uint32_t>(bytes_);
  h.line_rate_bps = rate_bps_;
  ++stats_.int_stamped;
}

void PortQueue::account_pause(uint8_t p, uint64_t now) {
  if (pause_since_[p] == kNever) return;
  stats_.paused_ns += std::min(now, pause_until_[p]) - std::min(pause_since_[p], now);
  pause_since_[p] = kNever;
}

uint8_t PortQueue::apply_pfc(const PfcFrame& pfc, uint64_t now, bool* resumed) {
  ++stats_.pause_rx;
  if (pfc_trace_) {
    bool pause = false;
    for (int p = 0; p < kPriorities; ++p) pause = pause || ((pfc.enable >> p & 1) && pfc.quanta[p] != 0);
    pfc_trace_(now, pause);
  }
  uint8_t paused = 0;
  *resumed = false;
  for (int p = 0; p < kPriorities; ++p) {
    if (!(pfc.enable >> p & 1)) continue;
    const uint64_t until = now + pfc_quanta_ns(pfc.quanta[p], rate_bps_);
    if (pause_until_[p] > now) account_pause(static_cast<uint8_t>(p), now);
    pause_until_[p] = until;
    if (until > now) {
      pause_since_[p] = now;
      paused |= static_cast<uint8_t>(1u << p);
    } else {
      *resumed = true;
    }
  }
  return paused;
}

bool PortQueue::pause_timer(uint8_t prio, uint64_t now) {
  if (pause_until_[prio] > now) return false;  // refreshed by a later frame
  account_pause(prio, now);
  return true;
}

void PortQueue::clear(const std::function<void(const Queued&)>& release) {
  while (!ctrl_.empty()) release(ctrl_.pop());
  remove_if([](const Queued&) { return true; }, release);
}

void PortQueue::remove_if(const std::function<bool(const Queued&)>& drop,
                          const std::function<void(const Queued&)>& release) {
  for (int p = 0; p < kPriorities; ++p) {
    const size_t n = q_[p].size();
    for (size_t i = 0; i < n; ++i) {
      const Queued q = q_[p].pop();
      if (!drop(q)) {
        q_[p].push(q);
        continue;
      }
      prio_bytes_[p] -= q.buf->len;
      --frames_;
      bytes_ -= q.buf->len;
      release(q);
    }
  }
}

}  // namespace uroce::fabric
