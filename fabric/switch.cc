#include "fabric/switch.h"

#include <algorithm>

#include "transport/wire/address.h"

namespace uroce::fabric {
namespace {

constexpr uint16_t kEthHeaderLen = 14;
constexpr uint64_t kGroupBit = uint64_t{1} << 40;  // I/G bit: lowest bit of the first octet

}  // namespace

Switch::Switch(const FabricConfig& cfg, SwitchDriver& driver, uint64_t seed)
    : cfg_(cfg), driver_(driver), rng_(seed) {}

uint32_t Switch::add_port(uint64_t mac) {
  const auto port = static_cast<uint32_t>(ports_.size());
  ports_.emplace_back();
  Port& p = ports_.back();
  p.mac = mac;
  p.params.ecn = cfg_.ecn;
  p.params.lossless_mask = cfg_.flow_control == FlowControl::kNone ? 0 : cfg_.lossless_mask;
  p.params.pfc_xoff_bytes = cfg_.pfc_xoff_bytes;
  p.params.pfc_xon_bytes = cfg_.pfc_xon_bytes;
  p.params.pfc_headroom_bytes = cfg_.pfc_headroom_bytes;
  return port;
}

void Switch::reset_port(uint32_t port) {
  for (auto it = macs_.begin(); it != macs_.end();) it = it->second.port == port ? macs_.erase(it) : ++it;
  Port& p = ports_[port];
  Port fresh;
  fresh.mac = p.mac;
  fresh.params = p.params;
  p = fresh;
  if (default_port_ == static_cast<int>(port)) default_port_ = -1;
}

uint64_t Switch::port_mac(uint32_t port) const {
  return ports_[port].mac != 0 ? ports_[port].mac : 0x02FE00000000ULL | uint64_t{id_} << 16 | port;
}

uint64_t Switch::ingress_bytes(uint32_t port) const {
  uint64_t sum = 0;
  for (uint64_t b : ports_[port].bytes) sum += b;
  return sum;
}

void Switch::add_static_mac(uint64_t mac, uint32_t port) { macs_[mac] = {port, true, 0}; }

const std::vector<uint32_t>* Switch::route(uint64_t mac) const {
  const auto it = routes_.find(mac);
  return it == routes_.end() ? nullptr : &it->second;
}

void Switch::learn(uint64_t src, uint32_t in, uint64_t now) {
  auto [it, fresh] = macs_.try_emplace(src, MacEntry{in, false, now});
  if (!fresh && !it->second.is_static) {
    it->second.port = in;
    it->second.seen_ns = now;
  }
}

void Switch::age(uint64_t now) {
  if (age_ns_ == 0) return;
  for (auto it = macs_.begin(); it != macs_.end();)
    it = !it->second.is_static && now - it->second.seen_ns > age_ns_ ? macs_.erase(it) : ++it;
}

Switch::Verdict Switch::ingress(uint32_t in, const uint8_t* frame, uint16_t len, uint64_t now) {
  Verdict v;
  Port& p = ports_[in];
  ++p.c.rx_frames;
  if (len < kEthHeaderLen) {
    ++counters_.runt;
    return v;
  }
  if (parse_pfc(frame, len, &v.pfc)) {
    ++p.c.pfc_rx;
    v.kind = Verdict::Kind::kPfc;
    if (cfg_.pfc_watchdog_ns) watchdog(in, &v.pfc, now);
    return v;
  }
  const FrameClass cls = classify(frame, len, cfg_.ecmp_salt);
  v.meta = meta_of(in, cls);
  const FrameMeta& m = v.meta;
  const uint64_t dst = wire::mac_to_u64(frame);
  if (learn_) {
    const uint64_t src = wire::mac_to_u64(frame + 6);
    if (!(src & kGroupBit)) learn(src, in, now);
  }
  if ((dst & kGroupBit) && flood_ && route(dst) == nullptr) {
    v.kind = Verdict::Kind::kFlood;
    return v;
  }
  int found = find_port(dst, cls.flow_hash, &v.to_default);
  if (v.to_default && static_cast<uint32_t>(found) == in) found = -1;  // never back out of the default port
  if (found < 0) {
    ++counters_.unknown_dst;
    v.unknown = true;
    give_back_credits(in, m, len, now);
    return v;
  }
  const auto out = static_cast<uint32_t>(found);
  if (out == in) {
    ++counters_.filtered;
    give_back_credits(in, m, len, now);
    return v;
  }
  v.kind = Verdict::Kind::kForward;
  v.out = out;
  return v;
}

FrameMeta Switch::meta_of(uint32_t in, const FrameClass& cls) const {
  FrameMeta m;
  m.in_port = static_cast<uint16_t>(in);
  m.prio = cls.prio;
  m.lossless = ports_[in].params.lossless_mask >> cls.prio & 1;
  m.roce_request = cls.roce_request;
  m.ect = cls.ecn == 1 || cls.ecn == 2;
  m.classified = true;
  return m;
}

FrameMeta Switch::meta_of(uint32_t in, const uint8_t* frame, uint16_t len) const {
  return meta_of(in, classify(frame, len, cfg_.ecmp_salt));
}

int Switch::find_port(uint64_t mac, uint64_t flow_hash, bool* by_default) const {
  *by_default = false;
  if (const std::vector<uint32_t>* r = route(mac); r != nullptr && !r->empty())
    return static_cast<int>((*r)[r->size() == 1 ? 0 : flow_hash % r->size()]);
  if (const auto it = macs_.find(mac); it != macs_.end()) return static_cast<int>(it->second.port);
  *by_default = default_port_ >= 0;
  return default_port_;
}

int Switch::lookup(uint64_t mac, uint64_t flow_hash) const {
  bool by_default;
  return find_port(mac, flow_hash, &by_default);
}

// Credits of a frame that never gets a departure must still go back, or the link starves.
void Switch::give_back_credits(uint32_t in, const FrameMeta& m, uint32_t len, uint64_t now) {
  if (m.lossless && cfg_.flow_control == FlowControl::kCredit)
    driver_.return_credits(in, m.prio, credit_blocks(len), now);
}

bool Switch::admit(uint32_t in, uint32_t out, const FrameMeta& m, uint32_t len, uint64_t now) {
  SwitchPortCounters& c = ports_[out].c;
  bool ok = true;
  if (used_ + len > cfg_.buffer_bytes) {
    ++c.drop_buffer;
    ok = false;
  } else if (m.lossless) {
    const PortParams& ip = ports_[in].params;
    const uint64_t held = ports_[in].bytes[m.prio] + len;
    if (cfg_.flow_control == FlowControl::kPfc &&
        held > uint64_t{ip.pfc_xoff_bytes} + ip.pfc_headroom_bytes) {
      ++c.drop_headroom;
      ok = false;
    } else if (cfg_.flow_control == FlowControl::kCredit && held > cfg_.credit_bytes) {
      ++c.drop_credit;
      ok = false;
    }
  } else {
    const uint64_t limit =
        ports_[out].params.limit_bytes != 0 ? ports_[out].params.limit_bytes : cfg_.port_limit_bytes;
    const uint64_t q = driver_.queue(out).prio_bytes(m.prio) + len;
    if ((limit != 0 && q > limit) ||
        (cfg_.dt_alpha > 0 &&
         static_cast<double>(q) > cfg_.dt_alpha * static_cast<double>(cfg_.buffer_bytes - used_))) {
      ++c.drop_threshold;
      ok = false;
    }
  }
  if (!ok) give_back_credits(in, m, len, now);
  return ok;
}

void Switch::no_buffer(uint32_t in, uint32_t out, const FrameMeta& m, uint32_t len, uint64_t now) {
  ++counters_.no_buffer;
  ++ports_[out].c.drop_buffer;
  give_back_credits(in, m, len, now);
}

void Switch::enqueue(uint32_t out, Queued* q, uint64_t now, bool flood_copy) {
  const FrameMeta& m = q->meta;
  const uint32_t len = q->buf->len;
  used_ += len;
  if (m.lossless) {
    Port& in = ports_[m.in_port];
    in.bytes[m.prio] += len;
    if (cfg_.flow_control == FlowControl::kPfc && !in.xoff[m.prio] &&
        in.bytes[m.prio] >= in.params.pfc_xoff_bytes)
      send_pfc(m.in_port, m.prio, true, now);
  }
  if (!flood_copy) ++counters_.forwarded;
  const PortParams& pp = ports_[out].params;
  if (pp.ecn_at == EcnAt::kEnqueue && pp.ecn.enabled && !m.shared)
    mark(out, q, driver_.queue(out).prio_bytes(m.prio));
}

// Classic RED at enqueue selects any frame; an ECT one becomes CE, the others pass and are tallied.
void Switch::mark(uint32_t port, Queued* q, uint64_t depth) {
  Port& p = ports_[port];
  if (!rng_.chance(red_mark_probability(p.params.ecn, depth))) return;
  switch (mark_ce_frame(q->buf->data, q->buf->len)) {
    case EcnResult::kMarked:
      ++p.c.ecn_marked;
      break;
    case EcnResult::kAlreadyCe:
      ++p.tally.already_ce;
      break;
    case EcnResult::kNotEct:
    case EcnResult::kNotIp:
      ++p.tally.not_ect;
      break;
  }
}

void Switch::departed(uint32_t port, Queued* q, uint64_t now) {
  departing(port, q);
  left(*q, now);
}

void Switch::departing(uint32_t port, Queued* q) {
  const FrameMeta& m = q->meta;
  Port& p = ports_[port];
  // At departure the mark carries the newest state of the queue, without the queueing delay.
  if (p.params.ecn_at == EcnAt::kDeparture && p.params.ecn.enabled && m.ect && !m.shared &&
      rng_.chance(red_mark_probability(p.params.ecn, driver_.queue(port).prio_bytes(m.prio))) &&
      mark_ce(q->buf->data, classify(q->buf->data, q->buf->len, 0)))
    ++p.c.ecn_marked;
}

void Switch::release(const Queued& q, uint64_t now, bool credits) {
  const FrameMeta& m = q.meta;
  const uint32_t len = q.buf->len;
  used_ -= len;
  if (!m.lossless) return;
  Port& in = ports_[m.in_port];
  in.bytes[m.prio] -= len;
  if (cfg_.flow_control == FlowControl::kPfc && in.xoff[m.prio] && in.bytes[m.prio] < in.params.pfc_xon_bytes)
    send_pfc(m.in_port, m.prio, false, now);
  if (credits && cfg_.flow_control == FlowControl::kCredit)
    driver_.return_credits(m.in_port, m.prio, credit_blocks(len), now);
}

// Rewrites a received PFC frame as the watchdog lets it act: a priority found in a storm is resumed (quanta
// 0) and its later XOFFs dropped from the frame (enable bit cleared) while they keep coming.
void Switch::watchdog(uint32_t in, PfcFrame* pfc, uint64_t now) {
  Port& p = ports_[in];
  const uint64_t rate = driver_.queue(in).rate_bps();
  for (uint8_t prio = 0; prio < kPriorities; ++prio) {
    const auto bit = static_cast<uint8_t>(1u << prio);
    if (!(pfc->enable & bit)) continue;
    const uint16_t quanta = pfc->quanta[prio];
    if (p.storm[prio]) {
      if (quanta != 0 && now - p.last_xoff[prio] < cfg_.pfc_watchdog_ns) {
        p.last_xoff[prio] = now;
        pfc->enable &= static_cast<uint8_t>(~bit);
        ++p.c.pfc_ignored;
        continue;
      }
      p.storm[prio] = false;  // quiet for a detection time, or an XON: the device is heard again
      p.paused_from[prio] = kNeverPaused;
    }
    if (quanta == 0) {
      p.paused_from[prio] = kNeverPaused;
      continue;
    }
    if (p.paused_from[prio] == kNeverPaused || now > p.pause_end[prio]) p.paused_from[prio] = now;
    p.pause_end[prio] = now + pfc_quanta_ns(quanta, rate);
    p.last_xoff[prio] = now;
    if (now - p.paused_from[prio] >= cfg_.pfc_watchdog_ns) {
      p.storm[prio] = true;
      ++p.c.pfc_storms;
      pfc->quanta[prio] = 0;  // resume it now
    }
  }
}

void Switch::send_pfc(uint32_t port, uint8_t prio, bool xoff, uint64_t now) {
  Port& p = ports_[port];
  p.xoff[prio] = xoff;
  PfcFrame pfc;
  pfc.enable = static_cast<uint8_t>(1u << prio);
  pfc.quanta[prio] = xoff ? cfg_.pfc_quanta : 0;
  uint8_t frame[kPfcFrameLen];
  const uint16_t len = build_pfc(frame, port_mac(port), pfc);
  if (!driver_.send_control(port, frame, len, now)) return;
  ++(xoff ? p.c.pfc_xoff_sent : p.c.pfc_xon_sent);
  if (xoff && !p.refresh_pending[prio]) {
    p.refresh_pending[prio] = true;
    const uint64_t half = pfc_quanta_ns(cfg_.pfc_quanta, driver_.queue(port).rate_bps()) / 2;
    driver_.wake(now + std::max<uint64_t>(half, 1), port, prio);
  }
}

void Switch::on_refresh(uint32_t port, uint8_t prio, uint64_t now) {
  Port& p = ports_[port];
  p.refresh_pending[prio] = false;
  if (p.xoff[prio]) send_pfc(port, prio, true, now);
}

}  // namespace uroce::fabric
