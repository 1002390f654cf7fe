// Receive work queues: the RQ of a QP and the shared receive queue (SRQ).
#pragma once

#include <cstdint>
#include <vector>

#include "transport/cq.h"
#include "transport/mr.h"
#include "transport/verbs_types.h"

namespace uroce {

struct RecvWqe {
  uint64_t wr_id = 0;
  uint32_t num_sge = 0;
  uint64_t length = 0;  // sum of the SGE lengths
  const Sge* sge = nullptr;
};

// A bounded FIFO of receive WQEs whose SGE lists live in one arena allocated at creation.
class RecvQueue {
 public:
  RecvQueue(uint32_t max_wr, uint32_t max_sge);

  // EINVAL for too many SGEs, ENOMEM when full (ibv_post_recv's errnos).
  int post(const RecvWr& wr);
  bool empty() const { return count_ == 0; }
  uint32_t count() const { return count_; }
  uint32_t max_wr() const { return static_cast<uint32_t>(wqes_.size()); }
  uint32_t max_sge() const { return max_sge_; }
  const RecvWqe& front() const { return wqes_[head_]; }
  void pop();

 private:
  std::vector<RecvWqe> wqes_;
  std::vector<Sge> sges_;
  uint32_t max_sge_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
};

// An XRC domain (IBA 11.2.x, XRC annex): XRC SRQs and XRC target QPs belong to one; a request that reaches a
// target QP may name any SRQ of the target's domain.
struct Xrcd {
  uint32_t handle = 0;
  uint32_t refs = 0;  // XRC SRQs and target QPs
};

struct Srq {
  Srq(uint32_t handle, Pd* pd, uint32_t max_wr, uint32_t max_sge)
      : handle(handle), pd(pd), rq(max_wr, max_sge) {}
  uint32_t handle;  // also the SRQ number that XRC requests name (ibv_get_srq_num)
  Pd* pd;
  RecvQueue rq;
  // XRC SRQ: its domain and the CQ its receives complete to (a basic SRQ has neither: the QP's CQ is used).
  Xrcd* xrcd = nullptr;
  Cq* cq = nullptr;
  uint32_t limit = 0;  // armed when non-zero: SRQ_LIMIT_REACHED fires once when fewer WQEs than this remain
  uint32_t qp_refs = 0;
};

}  // namespace uroce
