#include "transport/recv_queue.h"

#include <cerrno>

namespace uroce {

RecvQueue::RecvQueue(uint32_t max_wr, uint32_t max_sge)
    : wqes_(max_wr ? max_wr : 1),
      sges_(static_cast<size_t>(wqes_.size()) * (max_sge ? max_sge : 1)),
      max_sge_(max_sge ? max_sge : 1) {}

int RecvQueue::post(const RecvWr& wr) {
  if (wr.num_sge > max_sge_) return EINVAL;
  if (count_ == wqes_.size()) return ENOMEM;
  const uint32_t slot = static_cast<uint32_t>((head_ + count_) % wqes_.size());
  Sge* sge = &sges_[static_cast<size_t>(slot) * max_sge_];
  RecvWqe& w = wqes_[slot];
  w.wr_id = wr.wr_id;
  w.num_sge = wr.num_sge;
  w.length = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    sge[i] = wr.sg_list[i];
    w.length += sge[i].length;
  }
  w.sge = sge;
  ++count_;
  return 0;
}

void RecvQueue::pop() {
  head_ = static_cast<uint32_t>((head_ + 1) % wqes_.size());
  --count_;
}

}  // namespace uroce
