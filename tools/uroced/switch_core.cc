#include "tools/uroced/switch_core.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tools/uroced/cm_track.h"
#include "transport/wire/address.h"

namespace uroce::uroced {

namespace {

constexpr uint32_t kEthHeader = 14;
constexpr uint64_t kMaxFrameBytes = 4224;
constexpr uint64_t kBurstWindowNs = 100'000;
constexpr uint64_t kAgeScanNs = 1'000'000'000;

// The model's switch-wide knobs as uroced runs it: no shared-buffer limit (each port has its own buffer),
// no dynamic threshold, PFC (or credits) on the priorities a port's PortConfig makes lossless.
fabric::FabricConfig realtime_fabric(uint32_t credit_bytes, uint64_t pfc_watchdog_ns) {
  fabric::FabricConfig fc;
  fc.enabled = true;
  fc.buffer_bytes = uint64_t{1} << 40;
  fc.dt_alpha = 0;
  fc.flow_control = credit_bytes ? fabric::FlowControl::kCredit : fabric::FlowControl::kPfc;
  fc.credit_bytes = credit_bytes;
  fc.pfc_watchdog_ns = pfc_watchdog_ns;
  fc.lossless_mask = 0xFF;
  return fc;
}

}  // namespace

Switch::Switch(uint64_t seed, uint32_t credit_bytes, uint64_t pfc_watchdog_ns)
    : core_(realtime_fabric(credit_bytes, pfc_watchdog_ns), *this, seed),
      seed_(seed),
      credit_bytes_(credit_bytes) {
  core_.set_learning(true, kLearnAgeNs);
  core_.set_flooding(true);
}

Switch::~Switch() {
  for (size_t i = 0; i < ports_.size(); ++i)
    if (ports_[i].io) remove_port(static_cast<int>(i));
}

int Switch::add_port(PacketIo* io, std::string name, const PortConfig& cfg, uint64_t now_ns) {
  size_t id = 0;
  while (id < ports_.size() && ports_[id].io) ++id;
  if (id == ports_.size()) {
    ports_.emplace_back();
    core_.add_port();
  }
  Port& p = ports_[id];
  p = Port{};
  p.io = io;
  p.name = std::move(name);
  p.credits = credit_bytes_ != 0;
  p.q = std::make_unique<fabric::PortQueue>(false, credit_bytes_, p.credits ? 0xFF : 0);
  p.q->set_rate_bps(fabric::kRealTimeLineRateBps);
  p.loss = Loss((seed_ ^ 0x6C6F7373ULL) * 0xBF58476D1CE4E5B9ULL + id + 1);
  // The egress queue starts with credit_bytes of credit until the process's first update says more.
  configure_port(static_cast<int>(id), cfg, now_ns);
  if (p.credits) send_credit(static_cast<uint32_t>(id), now_ns);
  return static_cast<int>(id);
}

void Switch::set_no_credit_peer(int id) {
  Port& p = ports_[id];
  if (!p.credits) return;
  p.credits = false;
  p.credit_due = false;
  auto q = std::make_unique<fabric::PortQueue>(false, 0, 0);
  q->set_rate_bps(fabric::kRealTimeLineRateBps);
  p.q->clear([this](const fabric::Queued& f) { free_to_origin(f); });  // the first credit update
  p.q = std::move(q);
  apply_params(id);
}

void Switch::return_credits(uint32_t port, uint8_t prio, uint32_t blocks, uint64_t /*now*/) {
  Port& p = ports_[port];
  if (!p.credits || !p.io) return;
  p.held[prio] -= std::min(blocks, p.held[prio]);
  p.credit_due = true;
}

void Switch::send_credit(uint32_t id, uint64_t now_ns) {
  Port& p = ports_[id];
  PktBuf* b = nullptr;
  if (p.io->alloc_burst(&b, 1) != 1) return;  // credit_due stays: the next pass tries again
  if (b->cap < fabric::kCreditFrameLen) {
    p.io->free_burst(&b, 1);
    return;
  }
  fabric::CreditFrame cf;
  cf.vl_mask = 0xFF;
  const uint32_t limit = credit_bytes_ / fabric::kCreditBlock;
  for (uint8_t vl = 0; vl < fabric::kPriorities; ++vl) {
    cf.fctbs[vl] = p.fctbs[vl];
    cf.fccl[vl] = p.abr[vl] + limit - std::min(p.held[vl], limit);
  }
  b->len = fabric::build_credit(b->data, core_.port_mac(id), cf);
  p.q->push_control(fabric::Queued{b, id, {}});
  p.c.credit_tx++;
  p.credit_due = false;
  p.credit_sent_ns = now_ns;
}

// A credit update from the port's process: what it transmitted (what it sent that has not come is lost)
// and its limit for this port's egress.
bool Switch::take_credit(Port& p, const PktBuf* b) {
  fabric::CreditFrame cf;
  if (!p.credits || !fabric::parse_credit(b->data, b->len, &cf)) return false;
  p.c.credit_rx++;
  p.credit_heard = true;
  uint32_t staged[fabric::kPriorities] = {};
  for (uint16_t i = 0; i < p.staged_n; ++i)
    if (!p.staged[i].meta.control)
      staged[p.staged[i].meta.prio] += fabric::credit_blocks(p.staged[i].buf->len);
  for (uint8_t vl = 0; vl < fabric::kPriorities; ++vl) {
    if (!(cf.vl_mask >> vl & 1)) continue;
    p.abr[vl] = cf.fctbs[vl];
    p.q->set_credits(vl, fabric::credit_left(cf.fccl[vl], p.fctbs[vl] + staged[vl]));
  }
  return true;
}

void Switch::configure_port(int id, const PortConfig& cfg, uint64_t now_ns) {
  Port& p = ports_[id];
  p.cfg = cfg;
  if (p.cfg.rate_bps && !p.cfg.burst_bytes)
    p.cfg.burst_bytes = std::max(2 * kMaxFrameBytes, p.cfg.rate_bps / 8 * kBurstWindowNs / 1'000'000'000);
  p.bucket.configure(p.cfg.rate_bps, p.cfg.burst_bytes, now_ns);
  p.loss.configure(p.cfg.loss);
  apply_params(id);
}

// A port's knobs as the model's: ECN profile and where it marks, the lossy buffer, and the PFC thresholds
// of a lossless port (headroom: what one burst read past XOFF may add before reading stops).
void Switch::apply_params(int id) {
  const PortConfig& c = ports_[id].cfg;
  fabric::PortParams pp;
  pp.ecn.enabled = c.red.enabled;
  pp.ecn.kmin_bytes = static_cast<uint32_t>(std::min<uint64_t>(c.red.kmin, UINT32_MAX));
  pp.ecn.kmax_bytes = static_cast<uint32_t>(std::min<uint64_t>(c.red.kmax, UINT32_MAX));
  pp.ecn.pmax = c.red.pmax;
  pp.ecn_at = c.ecn_at;
  pp.limit_bytes = c.buffer_bytes;
  // With credits, a credit peer's frames are lossless and a port without one (the uplink) lossy.
  pp.lossless_mask = (credit_bytes_ ? ports_[id].credits : c.pause_bytes != 0) ? 0xFF : 0;
  const uint64_t pause = std::min<uint64_t>(c.pause_bytes, UINT32_MAX / 4);
  pp.pfc_xoff_bytes = static_cast<uint32_t>(pause / 2);
  pp.pfc_xon_bytes = static_cast<uint32_t>(pause / 4);
  pp.pfc_headroom_bytes = static_cast<uint32_t>(pause - pause / 2 + kBurst * kMaxFrameBytes);
  core_.set_port_params(static_cast<uint32_t>(id), pp);
}

void Switch::add_static_mac(const Mac& mac, int id) {
  core_.add_static_mac(wire::mac_to_u64(mac.data()), static_cast<uint32_t>(id));
}

const PortCounters& Switch::counters(int id) const {
  const Port& p = ports_[id];
  const fabric::SwitchPortCounters& m = core_.port_counters(static_cast<uint32_t>(id));
  p.c.ecn_marked = m.ecn_marked;
  p.c.ecn_not_ect = core_.ecn_tally(static_cast<uint32_t>(id)).not_ect;
  p.c.ecn_already_ce = core_.ecn_tally(static_cast<uint32_t>(id)).already_ce;
  p.c.pfc_xoff_sent = m.pfc_xoff_sent;
  p.c.pfc_xon_sent = m.pfc_xon_sent;
  p.c.pfc_rx = m.pfc_rx;
  p.c.drop_credit = m.drop_credit;
  p.c.pfc_storms = m.pfc_storms;
  p.c.pfc_ignored = m.pfc_ignored;
  p.c.credit_stall = p.credit_stalls;
  p.c.held_bytes = core_.ingress_bytes(static_cast<uint32_t>(id));
  uint64_t staged = 0;
  for (uint16_t i = 0; i < p.staged_n; ++i) staged += p.staged[i].buf->len;
  p.c.queue_frames = p.q ? p.q->data_frames() + p.staged_n : 0;
  p.c.queue_bytes = p.q ? p.q->bytes() + staged : 0;
  return p.c;
}

void Switch::free_to_origin(const fabric::Queued& q) {
  PktBuf* b = q.buf;
  ports_[q.tag].io->free_burst(&b, 1);
}

void Switch::remove_port(int id) {
  Port& gone = ports_[id];
  const uint64_t now = last_now_ns_;
  auto discard = [&](const fabric::Queued& q) {
    if (!q.meta.control) core_.discarded(q, now);
    free_to_origin(q);
  };
  // Frames the port received that wait at other ports go back to it first (the rest kept in order): their
  // release may queue an XON to this port, which the next step frees too.
  for (size_t o = 0; o < ports_.size(); ++o) {
    Port& p = ports_[o];
    if (!p.io || static_cast<int>(o) == id) continue;
    p.q->remove_if([id](const fabric::Queued& q) { return static_cast<int>(q.tag) == id; }, discard);
    uint16_t kept = 0;
    for (uint16_t i = 0; i < p.staged_n; ++i) {
      if (static_cast<int>(p.staged[i].tag) == id)
        discard(p.staged[i]);
      else
        p.staged[kept++] = p.staged[i];
    }
    p.staged_n = kept;
  }
  // ...then every frame queued to the port, whatever its origin.
  for (uint16_t i = 0; i < gone.staged_n; ++i) discard(gone.staged[i]);
  gone.staged_n = 0;
  gone.q->clear(discard);
  core_.reset_port(static_cast<uint32_t>(id));
  std::erase_if(wakes_, [id](const Wake& w) { return static_cast<int>(w.port) == id; });
  gone = Port{};
}

bool Switch::has_queued() const {
  for (const Port& p : ports_)
    if (p.io && (p.staged_n || p.q->frames())) return true;
  return false;
}

bool Switch::send_control(uint32_t port, const uint8_t* frame, uint16_t len, uint64_t /*now*/) {
  Port& p = ports_[port];
  // Without PFC frames the port's ingress is held back only by not being read (poll()); the model keeps its
  // XOFF state without a frame.
  if (!p.cfg.pfc_frames) return false;
  PktBuf* b = nullptr;
  if (p.io == nullptr || p.io->alloc_burst(&b, 1) != 1) return false;
  if (b->cap < len) {
    p.io->free_burst(&b, 1);
    return false;
  }
  std::memcpy(b->data, frame, len);
  b->len = len;
  p.q->push_control(fabric::Queued{b, port, {}});
  return true;
}

void Switch::enqueue(int out, PktBuf* b, const fabric::FrameMeta& m, uint64_t now_ns, bool flood_copy) {
  Port& p = ports_[out];
  const auto o = static_cast<uint32_t>(out);
  if (p.loss.drop()) {
    p.c.drop_loss++;
    free_to_origin({b, m.in_port, m});
    return;
  }
  if (!core_.admit(m.in_port, o, m, b->len, now_ns)) {
    p.c.drop_queue_full++;
    free_to_origin({b, m.in_port, m});
    return;
  }
  fabric::Queued q{b, m.in_port, m};
  core_.enqueue(o, &q, now_ns, flood_copy);
  p.q->push(q);
  p.c.queue_max_bytes = std::max<uint64_t>(p.c.queue_max_bytes, p.q->bytes());
}

void Switch::flood(PktBuf* b, int in, const fabric::FrameMeta& m, uint64_t now_ns) {
  Port& src = ports_[in];
  src.c.flooded++;
  core_.count_flood();
  int last = -1;
  for (size_t o = 0; o < ports_.size(); ++o) {
    if (!ports_[o].io || static_cast<int>(o) == in) continue;
    if (last >= 0) {
      PktBuf* copy = nullptr;
      if (src.io->alloc_burst(&copy, 1) != 1) {
        src.c.drop_flood_nobuf++;
        continue;
      }
      if (copy->cap < b->len) {  // a port's buffers all have the same room: cannot happen, but be safe
        src.io->free_burst(&copy, 1);
        src.c.drop_flood_nobuf++;
        continue;
      }
      std::memcpy(copy->data, b->data, b->len);
      copy->len = b->len;
      enqueue(last, copy, m, now_ns, true);
    }
    last = static_cast<int>(o);
  }
  if (last >= 0) {
    enqueue(last, b, m, now_ns, true);
  } else {
    src.io->free_burst(&b, 1);
  }
}

void Switch::forward(PktBuf* b, int in, uint64_t now_ns) {
  Port& src = ports_[in];
  src.c.rx_frames++;
  src.c.rx_bytes += b->len;
  if (fabric::is_credit_frame(b->data, b->len)) {  // link-local: ends here
    if (!take_credit(src, b)) src.c.drop_filtered++;
    src.io->free_burst(&b, 1);
    return;
  }
  if (src.credits &&
      (b->len < kEthHeader || (b->data[12] << 8 | b->data[13]) != fabric::kEtherTypeMacControl)) {
    // A data frame the process counted in its FCTBS: received, and held until its credit goes back. Until the
    // process has answered an update it does not know it sends under credit: such frames are taken as lossy
    // ones (the egress buffer bounds them) and not held against its credit.
    const uint8_t vl = fabric::frame_prio(b->data, b->len);
    src.abr[vl] += fabric::credit_blocks(b->len);
    if (src.credit_heard) src.held[vl] += fabric::credit_blocks(b->len);
  }
  if (b->len >= kEthHeader && gsi_tap_ && is_gsi_frame(b->data, b->len)) gsi_tap_(b->data, b->len);
  const fabric::Switch::Verdict v = core_.ingress(static_cast<uint32_t>(in), b->data, b->len, now_ns);
  using Kind = fabric::Switch::Verdict::Kind;
  switch (v.kind) {
    case Kind::kPfc: {
      bool resumed;
      src.q->apply_pfc(v.pfc, now_ns, &resumed);  // the next drain looks at the pause again
      src.io->free_burst(&b, 1);
      return;
    }
    case Kind::kDropped:
      (v.unknown ? src.c.drop_unknown : src.c.drop_filtered)++;
      src.io->free_burst(&b, 1);
      return;
    case Kind::kFlood:
      flood(b, in, v.meta, now_ns);
      return;
    case Kind::kForward: {
      if (v.to_default) src.c.unknown_to_uplink++;
      fabric::FrameMeta m = v.meta;
      if (src.credits && !src.credit_heard) m.lossless = false;  // sent before it knew of credit (above)
      enqueue(static_cast<int>(v.out), b, m, now_ns);
      return;
    }
  }
}

bool Switch::inject(const uint8_t* frame, uint16_t len) {
  if (len < kEthHeader) return false;
  const int out = core_.lookup(wire::mac_to_u64(frame));
  if (!valid(out)) return false;
  // The buffer comes from the egress port's own pool and counts as that port's (freed to it, whatever
  // becomes of the frame); a frame the daemon makes is never held against anyone's PFC accounting.
  PktBuf* b = nullptr;
  if (ports_[out].io->alloc_burst(&b, 1) != 1) return false;
  if (b->cap < len) {
    ports_[out].io->free_burst(&b, 1);
    return false;
  }
  std::memcpy(b->data, frame, len);
  b->len = len;
  fabric::FrameMeta m = core_.meta_of(static_cast<uint32_t>(out), frame, len);
  m.lossless = false;
  enqueue(out, b, m, last_now_ns_);
  return true;
}

// A head frame that waits for tokens (not for backpressure) sets the time the loop must look again.
void Switch::note_token_wait(const Port& p, uint64_t now_ns) {
  if (p.bucket.unlimited()) return;
  uint32_t len = 0;
  if (p.staged_n) {
    len = p.staged[0].buf->len;
  } else if (const fabric::Queued* h = p.q->peek(now_ns)) {
    len = h->buf->len;
  } else {
    return;
  }
  if (!p.bucket.allows(len)) next_ready_ns_ = std::min(next_ready_ns_, p.bucket.ready_at(len, now_ns));
}

uint32_t Switch::drain(int id, uint64_t now_ns) {
  Port& p = ports_[id];
  if (p.staged_n == 0 && p.q->frames() == 0) return 0;
  p.bucket.refill(now_ns);
  // What the bucket allows: first the frames already dequeued, then more from the queue (each marked and
  // counted as it leaves the queue).
  uint16_t n = 0;
  uint64_t bytes = 0;
  while (n < p.staged_n && p.bucket.allows(static_cast<uint32_t>(bytes + p.staged[n].buf->len)))
    bytes += p.staged[n++].buf->len;
  while (n == p.staged_n && n < kBurst) {
    const fabric::Queued* h = p.q->peek(now_ns);
    if (h == nullptr && p.credits && p.q->credit_blocked(now_ns)) p.credit_stalls++;
    if (h == nullptr || !p.bucket.allows(static_cast<uint32_t>(bytes + h->buf->len))) break;
    fabric::Queued q;
    p.q->pop(now_ns, &q);
    if (!q.meta.control) core_.departing(static_cast<uint32_t>(id), &q);
    p.staged[p.staged_n++] = q;
    bytes += q.buf->len;
    ++n;
  }
  if (n == 0) {
    note_token_wait(p, now_ns);
    return 0;
  }
  // Lengths are read before tx_burst: a transmitted buffer belongs to the port (and may be back in its pool).
  PktBuf* burst[kBurst];
  uint16_t lens[kBurst];
  for (uint16_t i = 0; i < n; ++i) {
    burst[i] = p.staged[i].buf;
    lens[i] = p.staged[i].buf->len;
  }
  const uint16_t sent = p.io->tx_burst(burst, n);
  uint64_t sent_bytes = 0;
  for (uint16_t i = 0; i < sent; ++i) {
    sent_bytes += lens[i];
    if (p.staged[i].meta.control) continue;
    if (p.credits) p.fctbs[p.staged[i].meta.prio] += fabric::credit_blocks(lens[i]);
    core_.left(p.staged[i], now_ns);
  }
  std::copy(p.staged + sent, p.staged + p.staged_n, p.staged);
  p.staged_n = static_cast<uint16_t>(p.staged_n - sent);
  p.bucket.take(static_cast<uint32_t>(sent_bytes));
  p.c.tx_frames += sent;
  p.c.tx_bytes += sent_bytes;
  note_token_wait(p, now_ns);
  return sent;
}

void Switch::run_wakes(uint64_t now_ns) {
  for (size_t i = 0; i < wakes_.size();) {
    if (wakes_[i].at > now_ns) {
      next_ready_ns_ = std::min(next_ready_ns_, wakes_[i].at);
      ++i;
      continue;
    }
    const Wake w = wakes_[i];
    wakes_[i] = wakes_.back();
    wakes_.pop_back();
    core_.on_refresh(w.port, w.prio, now_ns);  // may add a wake at the end, looked at next pass
  }
}

uint32_t Switch::poll(uint64_t now_ns) {
  last_now_ns_ = now_ns;
  uint32_t work = 0;
  PktBuf* bufs[kBurst];
  for (size_t i = 0; i < ports_.size(); ++i) {
    Port& p = ports_[i];
    if (!p.io) continue;
    if (p.cfg.pause_bytes && core_.ingress_bytes(static_cast<uint32_t>(i)) >= p.cfg.pause_bytes) {
      if (!p.paused) p.c.pauses++;
      p.paused = true;
      continue;
    }
    p.paused = false;
    const uint16_t n = p.io->rx_burst(bufs, kBurst);
    for (uint16_t k = 0; k < n; ++k) forward(bufs[k], static_cast<int>(i), now_ns);
    work += n;
  }
  for (size_t i = 0; i < ports_.size(); ++i) {
    Port& p = ports_[i];
    if (p.io && p.credits &&
        (p.credit_due || now_ns - p.credit_sent_ns >= (p.credit_heard ? kCreditRefreshNs : kCreditHelloNs)))
      send_credit(static_cast<uint32_t>(i), now_ns);
  }
  next_ready_ns_ = UINT64_MAX;
  run_wakes(now_ns);
  for (size_t i = 0; i < ports_.size(); ++i)
    if (ports_[i].io) work += drain(static_cast<int>(i), now_ns);
  if (now_ns >= next_age_ns_) {
    next_age_ns_ = now_ns + kAgeScanNs;
    core_.age(now_ns);
  }
  return work;
}

std::string format_counters(const PortCounters& c, const PortConfig& cfg) {
  char buf[896];
  std::snprintf(buf, sizeof buf,
                "rx_frames=%lu rx_bytes=%lu tx_frames=%lu tx_bytes=%lu drop_unknown=%lu drop_filtered=%lu "
                "drop_queue_full=%lu drop_loss=%lu drop_flood_nobuf=%lu flooded=%lu unknown_to_uplink=%lu "
                "ecn_marked=%lu "
                "ecn_not_ect=%lu ecn_already_ce=%lu queue_bytes=%lu queue_frames=%lu queue_max_bytes=%lu "
                "held_bytes=%lu pauses=%lu pfc_xoff_sent=%lu pfc_xon_sent=%lu pfc_rx=%lu credit_tx=%lu "
                "credit_rx=%lu credit_stall=%lu drop_credit=%lu pfc_storms=%lu pfc_ignored=%lu "
                "rate_bps=%lu buffer_bytes=%lu pause_bytes=%lu loss=%g ecn=%s",
                c.rx_frames, c.rx_bytes, c.tx_frames, c.tx_bytes, c.drop_unknown, c.drop_filtered,
                c.drop_queue_full, c.drop_loss, c.drop_flood_nobuf, c.flooded, c.unknown_to_uplink,
                c.ecn_marked, c.ecn_not_ect, c.ecn_already_ce, c.queue_bytes, c.queue_frames,
                c.queue_max_bytes, c.held_bytes, c.pauses, c.pfc_xoff_sent, c.pfc_xon_sent, c.pfc_rx,
                c.credit_tx, c.credit_rx, c.credit_stall, c.drop_credit, c.pfc_storms, c.pfc_ignored,
                cfg.rate_bps, cfg.buffer_bytes, cfg.pause_bytes, cfg.loss, cfg.red.enabled ? "on" : "off");
  std::string s = buf;
  if (cfg.red.enabled) {
    std::snprintf(buf, sizeof buf, " ecn_kmin=%lu ecn_kmax=%lu ecn_pmax=%g ecn_at=%s", cfg.red.kmin,
                  cfg.red.kmax, cfg.red.pmax,
                  cfg.ecn_at == fabric::EcnAt::kEnqueue ? "enqueue" : "departure");
    s += buf;
  }
  return s;
}

}  // namespace uroce::uroced
