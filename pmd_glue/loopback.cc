#include "pmd_glue/loopback.h"

#include <cstring>
#include <mutex>

#include "transport/wire/address.h"

namespace uroce::glue {

LoopbackPort::LoopbackPort(LoopbackHub& hub, const wire::MacAddr& mac, std::function<void()> wake,
                           uint32_t frames, uint16_t max_frame)
    : hub_(hub),
      mac_(mac),
      wake_(std::move(wake)),
      max_frame_(max_frame),
      storage_(static_cast<size_t>(frames) * max_frame),
      bufs_(frames),
      free_(frames),
      rx_(frames) {
  for (uint32_t i = 0; i < frames; ++i) {
    bufs_[i].data = storage_.data() + static_cast<size_t>(i) * max_frame;
    bufs_[i].cap = max_frame;
    bufs_[i].impl = this;
    free_.bounded_push(&bufs_[i]);
  }
  hub_.attach(this);
}

LoopbackPort::~LoopbackPort() { hub_.detach(this); }

uint16_t LoopbackPort::alloc_burst(PktBuf** bufs, uint16_t n) {
  uint16_t i = 0;
  while (i < n && free_.pop(bufs[i])) {
    bufs[i]->len = 0;
    ++i;
  }
  return i;
}

uint16_t LoopbackPort::tx_burst(PktBuf** bufs, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) {
    if (!hub_.forward(*bufs[i])) ++dropped_;  // like a wire with nobody on it: the frame is lost
    free_.bounded_push(bufs[i]);
  }
  return n;
}

uint16_t LoopbackPort::rx_burst(PktBuf** bufs, uint16_t n) {
  uint16_t i = 0;
  while (i < n && rx_.pop(bufs[i])) ++i;
  return i;
}

void LoopbackPort::free_burst(PktBuf** bufs, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) free_.bounded_push(bufs[i]);
}

bool LoopbackPort::deliver(const PktBuf& src) {
  PktBuf* b;
  if (src.len > max_frame_ || !free_.pop(b)) return false;
  std::memcpy(b->data, src.data, src.len);
  b->len = src.len;
  if (!rx_.bounded_push(b)) {
    free_.bounded_push(b);
    return false;
  }
  return true;
}

LoopbackHub& LoopbackHub::instance() {
  static LoopbackHub hub;
  return hub;
}

bool LoopbackHub::forward(const PktBuf& frame) {
  if (frame.len < 6) return false;
  std::shared_lock lock(mu_);  // holds off the destination's detach until it has been woken
  auto it = ports_.find(wire::mac_to_u64(frame.data));
  if (it == ports_.end()) return false;
  LoopbackPort* dst = it->second;
  if (!dst->deliver(frame)) return false;
  if (dst->wake_) dst->wake_();  // must not block or lock: an eventfd write
  return true;
}

void LoopbackHub::attach(LoopbackPort* port) {
  std::unique_lock lock(mu_);
  ports_[wire::mac_to_u64(port->mac().data())] = port;
}

void LoopbackHub::detach(LoopbackPort* port) {
  std::unique_lock lock(mu_);
  auto it = ports_.find(wire::mac_to_u64(port->mac().data()));
  if (it != ports_.end() && it->second == port) ports_.erase(it);
}

}  // namespace uroce::glue
