#include "transport/cq.h"

#include <cerrno>

namespace uroce {

Cq::Cq(uint32_t handle, uint32_t cqe) : ring_(cqe), handle_(handle) {}

bool Cq::push(const Wc& wc, bool solicited) {
  if (overrun_ || count_ == ring_.size()) {
    overrun_ = true;
    return false;
  }
  ring_[(head_ + count_) % ring_.size()] = wc;
  ++count_;
  if (armed_ && (!solicited_only_ || solicited || wc.status != WcStatus::kSuccess)) {
    armed_ = false;
    if (on_notify) on_notify(this);
  }
  return true;
}

int Cq::poll(int max, Wc* out) {
  int n = 0;
  while (n < max && count_) {
    out[n++] = ring_[head_];
    head_ = static_cast<uint32_t>((head_ + 1) % ring_.size());
    --count_;
  }
  return n;
}

int Cq::resize(uint32_t cqe) {
  if (cqe < count_) return EINVAL;
  std::vector<Wc> ring(cqe);
  for (uint32_t i = 0; i < count_; ++i) ring[i] = ring_[(head_ + i) % ring_.size()];
  ring_ = std::move(ring);
  head_ = 0;
  return 0;
}

}  // namespace uroce
