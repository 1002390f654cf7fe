// Completion queue: a ring the engine writes and the application polls. A full ring is a CQ overrun: the
// CQ enters the error state and raises IBV_EVENT_CQ_ERR, and later completions are lost.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "transport/verbs_types.h"

namespace uroce {

class Cq {
 public:
  Cq(uint32_t handle, uint32_t cqe);

  uint32_t handle() const { return handle_; }
  uint32_t capacity() const { return static_cast<uint32_t>(ring_.size()); }
  uint32_t depth() const { return count_; }
  bool overrun() const { return overrun_; }

  // Adds a completion. `solicited` marks completions that satisfy a solicited-only arm (a receive of a
  // message with the SE bit, or any error). Returns false on overrun.
  bool push(const Wc& wc, bool solicited);
  int poll(int max, Wc* out);
  // Arms a one-shot notification (ibv_req_notify_cq). The next qualifying completion calls on_notify.
  void arm(bool solicited_only) {
    armed_ = true;
    solicited_only_ = solicited_only;
  }
  // Grows or shrinks the ring keeping queued completions; EINVAL when they would not fit.
  int resize(uint32_t cqe);

  // Called (by the engine thread) when an armed CQ gets a qualifying completion.
  std::function<void(Cq*)> on_notify;

 private:
  std::vector<Wc> ring_;
  uint32_t head_ = 0;  // next to poll
  uint32_t count_ = 0;
  uint32_t handle_;
  bool armed_ = false;
  bool solicited_only_ = false;
  bool overrun_ = false;
};

}  // namespace uroce
