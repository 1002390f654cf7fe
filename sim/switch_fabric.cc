// The fabric model's forwarding path of SimSwitch (see sim_switch.h and docs/fabric.md): the switch model
// of fabric/switch.h decides (route, admit, account, mark, PFC, credits); this file moves the frames in
// virtual time: copies an admitted frame into the switch's pool, hands it to the egress link, and keeps
// the model's timers on the event queue.
#include <algorithm>
#include <cstring>

#include "sim/sim_switch.h"

namespace uroce::sim {

std::unique_ptr<EgressQueue> SimSwitch::make_fabric_queue(uint32_t port) {
  const fabric::FabricConfig& fc = cfg_.fabric;
  return std::make_unique<FabricQueue>(this, port, fc.int_enabled,
                                       fc.flow_control == fabric::FlowControl::kCredit ? fc.credit_bytes : 0,
                                       fc.lossless_mask);
}

void SimSwitch::forward_fabric(uint32_t in, const SimFrame& f, uint64_t now) {
  const uint16_t len = f.buf->len;
  const fabric::Switch::Verdict v = core_.ingress(in, f.buf->data, len, now);
  using Kind = fabric::Switch::Verdict::Kind;
  if (v.kind == Kind::kPfc) fabric_queue(in).apply_pfc(v.pfc, now);
  if (v.kind != Kind::kForward) return;  // the model floods nothing here (flooding is off)
  if (!core_.admit(in, v.out, v.meta, len, now)) return;
  PktBuf* b = copy_frame(pool_, f);
  if (b == nullptr) {
    core_.no_buffer(in, v.out, v.meta, len, now);
    return;
  }
  BufferPool::meta(b) = v.meta;
  fabric::Queued q{b, kNoFlip, v.meta};
  core_.enqueue(v.out, &q, now);
  egress_[v.out]->send(SimFrame{b}, now);
}

void SimSwitch::on_leave(uint32_t port, fabric::Queued* q, uint64_t now) { core_.departed(port, q, now); }

bool SimSwitch::send_control(uint32_t port, const uint8_t* frame, uint16_t len, uint64_t now) {
  PktBuf* b = pool_.alloc();
  if (b == nullptr) return false;  // no memory for a control frame: a refresh retries XOFF
  std::memcpy(b->data, frame, len);
  b->len = len;
  BufferPool::meta(b).classified = true;
  fabric_queue(port).send_control(SimFrame{b}, now);
  return true;
}

void SimSwitch::return_credits(uint32_t port, uint8_t prio, uint32_t blocks, uint64_t now) {
  Link* l = feeder_[port];
  if (l != nullptr)
    static_cast<FabricQueue&>(l->queue()).return_credits(prio, blocks, now + l->config().delay_ns);
}

void SimSwitch::wake(uint64_t at, uint32_t port, uint8_t prio) {
  if (events_ != nullptr) events_->schedule(at, this, port << 3 | prio);
}

void SimSwitch::on_event(const Event& ev) { core_.on_refresh(ev.kind >> 3, ev.kind & 7, ev.time); }

}  // namespace uroce::sim
