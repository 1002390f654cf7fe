// The fabric model's forwarding path of SimSwitch (see sim_switch.h and docs/fabric.md): route (ECMP),
// admit against the shared buffer and thresholds, mark ECN, account ingress bytes for PFC / credits, and
// on departure release it all again.
#include <algorithm>

#include "sim/sim_switch.h"
#include "transport/wire/address.h"

namespace uroce::sim {

const std::vector<uint32_t>* SimSwitch::route(uint64_t mac) const {
  const auto it = routes_.find(mac);
  return it == routes_.end() ? nullptr : &it->second;
}

std::unique_ptr<EgressQueue> SimSwitch::make_fabric_queue(uint32_t port) {
  const fabric::FabricConfig& fc = cfg_.fabric;
  return std::make_unique<FabricQueue>(this, port, fc.int_enabled,
                                       fc.flow_control == fabric::FlowControl::kCredit ? fc.credit_bytes : 0,
                                       fc.lossless_mask);
}

bool SimSwitch::admit(uint32_t in, uint32_t out, const FrameMeta& m, uint32_t len) {
  const fabric::FabricConfig& fc = cfg_.fabric;
  SwitchPortCounters& c = port_cnt_[out];
  if (used_ + len > fc.buffer_bytes) {
    ++c.drop_buffer;
    return false;
  }
  if (m.lossless) {
    const uint64_t held = ing_[in].bytes[m.prio] + len;
    if (fc.flow_control == fabric::FlowControl::kPfc &&
        held > uint64_t{fc.pfc_xoff_bytes} + fc.pfc_headroom_bytes) {
      ++c.drop_headroom;
      return false;
    }
    if (fc.flow_control == fabric::FlowControl::kCredit && held > fc.credit_bytes) {
      ++c.drop_credit;
      return false;
    }
    return true;
  }
  const uint64_t q = fabric_queue(out).prio_bytes(m.prio) + len;
  if ((fc.port_limit_bytes != 0 && q > fc.port_limit_bytes) ||
      (fc.dt_alpha > 0 &&
       static_cast<double>(q) > fc.dt_alpha * static_cast<double>(fc.buffer_bytes - used_))) {
    ++c.drop_threshold;
    return false;
  }
  return true;
}

void SimSwitch::forward_fabric(uint32_t in, const SimFrame& f, uint64_t now) {
  const fabric::FabricConfig& fc = cfg_.fabric;
  ++port_cnt_[in].rx_frames;
  const uint16_t len = f.buf->len;
  if (len < 14) {
    ++counters_.runt;
    return;
  }
  fabric::PfcFrame pfc;
  if (fabric::parse_pfc(f.buf->data, len, &pfc)) {
    ++port_cnt_[in].pfc_rx;
    fabric_queue(in).apply_pfc(pfc, now);
    return;
  }
  const fabric::FrameClass cls = fabric::classify(f.buf->data, len, fc.ecmp_salt);
  FrameMeta m;
  m.in_port = static_cast<uint16_t>(in);
  m.prio = cls.prio;
  m.lossless = fc.flow_control != fabric::FlowControl::kNone && (fc.lossless_mask >> cls.prio & 1);
  m.roce_request = cls.roce_request;
  m.ect = cls.ecn == 1 || cls.ecn == 2;
  m.classified = true;
  // Credits of a frame that never gets a departure must still go back, or the link starves.
  auto give_back_credits = [&] {
    if (m.lossless && fc.flow_control == fabric::FlowControl::kCredit && feeder_[in] != nullptr)
      static_cast<FabricQueue&>(feeder_[in]->queue())
          .return_credits(m.prio, fabric::credit_blocks(len), now + feeder_[in]->config().delay_ns);
  };

  const uint64_t dst = wire::mac_to_u64(f.buf->data);
  uint32_t out;
  if (const std::vector<uint32_t>* r = route(dst); r != nullptr && !r->empty()) {
    out = (*r)[r->size() == 1 ? 0 : cls.flow_hash % r->size()];
  } else if (const auto it = table_.find(dst); it != table_.end()) {
    out = it->second;
  } else {
    ++counters_.unknown_dst;
    give_back_credits();
    return;
  }
  if (out == in) {
    ++counters_.filtered;
    give_back_credits();
    return;
  }
  if (!admit(in, out, m, len)) {
    give_back_credits();
    return;
  }
  PktBuf* b = copy_frame(pool_, f);
  if (b == nullptr) {
    ++counters_.no_buffer;
    ++port_cnt_[out].drop_buffer;
    give_back_credits();
    return;
  }
  BufferPool::meta(b) = m;
  used_ += len;
  if (m.lossless) ing_[in].bytes[m.prio] += len;
  if (m.lossless && fc.flow_control == fabric::FlowControl::kPfc && !ing_[in].xoff[m.prio] &&
      ing_[in].bytes[m.prio] >= fc.pfc_xoff_bytes)
    send_pfc(in, m.prio, true, now);
  ++counters_.forwarded;
  egress_[out]->send(SimFrame{b}, now);
}

void SimSwitch::on_leave(uint32_t port, const SimFrame& f, uint64_t now) {
  const FrameMeta& m = BufferPool::meta(f.buf);
  const uint32_t len = f.buf->len;
  const fabric::FabricConfig& fc = cfg_.fabric;
  // ECN is marked as the frame leaves, on the depth of the queue it leaves behind (as shared-buffer switch
  // ASICs and the ns-3 HPCC model do): the mark carries the newest state, without the queueing delay.
  if (fc.ecn.enabled && m.ect && BufferPool::refs(f.buf) == 1 &&
      rng_.chance(fabric::red_mark_probability(fc.ecn, fabric_queue(port).prio_bytes(m.prio))) &&
      fabric::mark_ce(f.buf->data, fabric::classify(f.buf->data, f.buf->len, 0)))
    ++port_cnt_[port].ecn_marked;
  used_ -= len;
  if (!m.lossless) return;
  IngressAcct& a = ing_[m.in_port];
  a.bytes[m.prio] -= len;
  if (fc.flow_control == fabric::FlowControl::kPfc && a.xoff[m.prio] && a.bytes[m.prio] < fc.pfc_xon_bytes)
    send_pfc(m.in_port, m.prio, false, now);
  if (fc.flow_control == fabric::FlowControl::kCredit && feeder_[m.in_port] != nullptr) {
    Link* l = feeder_[m.in_port];
    static_cast<FabricQueue&>(l->queue())
        .return_credits(m.prio, fabric::credit_blocks(len), now + l->config().delay_ns);
  }
}

void SimSwitch::send_pfc(uint32_t port, uint8_t prio, bool xoff, uint64_t now) {
  IngressAcct& a = ing_[port];
  a.xoff[prio] = xoff;
  PktBuf* b = pool_.alloc();
  if (b == nullptr) return;  // no memory for a control frame: a refresh retries XOFF
  fabric::PfcFrame p;
  p.enable = static_cast<uint8_t>(1u << prio);
  p.quanta[prio] = xoff ? cfg_.fabric.pfc_quanta : 0;
  b->len = fabric::build_pfc(b->data, port_mac(port), p);
  BufferPool::meta(b).classified = true;
  ++(xoff ? port_cnt_[port].pfc_xoff_sent : port_cnt_[port].pfc_xon_sent);
  fabric_queue(port).send_control(SimFrame{b}, now);
  if (xoff && !a.refresh_pending[prio] && events_ != nullptr) {
    a.refresh_pending[prio] = true;
    const uint64_t half = fabric::pfc_quanta_ns(cfg_.fabric.pfc_quanta, egress_[port]->config().rate_bps) / 2;
    events_->schedule(now + std::max<uint64_t>(half, 1), this, port << 3 | prio);
  }
}

void SimSwitch::on_event(const Event& ev) {
  const uint32_t port = ev.kind >> 3;
  const uint8_t prio = ev.kind & 7;
  ing_[port].refresh_pending[prio] = false;
  if (ing_[port].xoff[prio]) send_pfc(port, prio, true, ev.time);
}

}  // namespace uroce::sim
