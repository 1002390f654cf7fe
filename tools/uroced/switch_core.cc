#include "tools/uroced/switch_core.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tools/uroced/cm_track.h"

namespace uroce::uroced {

namespace {

constexpr uint32_t kEthHeader = 14;
constexpr uint64_t kMaxFrameBytes = 4224;
constexpr uint64_t kBurstWindowNs = 100'000;
constexpr uint64_t kAgeScanNs = 1'000'000'000;

bool is_group(const uint8_t* mac) { return mac[0] & 1; }

size_t ring_capacity(const PortConfig& cfg) {
  // Enough slots for a full buffer of minimum-size frames would be huge; a full buffer of 64-byte frames
  // is bounded by the slot count instead (4096 slots, or more for big buffers of big frames).
  size_t want = std::max<size_t>(4096, cfg.buffer_bytes / 1024);
  size_t cap = 1;
  while (cap < want) cap <<= 1;
  return cap;
}

}  // namespace

Switch::~Switch() {
  for (size_t i = 0; i < ports_.size(); ++i)
    if (ports_[i].io) remove_port(static_cast<int>(i));
}

uint64_t Switch::key(const uint8_t* mac) {
  uint64_t k = 0;
  for (int i = 0; i < 6; ++i) k = k << 8 | mac[i];
  return k;
}

int Switch::add_port(PacketIo* io, std::string name, const PortConfig& cfg, uint64_t now_ns) {
  size_t id = 0;
  while (id < ports_.size() && ports_[id].io) ++id;
  if (id == ports_.size()) ports_.emplace_back();
  Port& p = ports_[id];
  p = Port{};
  p.io = io;
  p.name = std::move(name);
  p.red = Red(seed_ * 0x9E3779B97F4A7C15ULL + id + 1);
  p.loss = Loss((seed_ ^ 0x6C6F7373ULL) * 0xBF58476D1CE4E5B9ULL + id + 1);  // a stream apart from RED's
  configure_port(static_cast<int>(id), cfg, now_ns);
  return static_cast<int>(id);
}

void Switch::configure_port(int id, const PortConfig& cfg, uint64_t now_ns) {
  Port& p = ports_[id];
  p.cfg = cfg;
  if (p.cfg.rate_bps && !p.cfg.burst_bytes)
    p.cfg.burst_bytes = std::max(2 * kMaxFrameBytes, p.cfg.rate_bps / 8 * kBurstWindowNs / 1'000'000'000);
  p.bucket.configure(p.cfg.rate_bps, p.cfg.burst_bytes, now_ns);
  p.red.configure(p.cfg.red);
  p.loss.configure(p.cfg.loss);
  const size_t cap = ring_capacity(p.cfg);
  if (cap > p.ring.size()) {
    std::vector<Entry> ring(cap);
    for (size_t i = 0; i < p.count; ++i) ring[i] = p.ring[(p.head + i) & (p.ring.size() - 1)];
    p.ring = std::move(ring);
    p.head = 0;
  }
}

void Switch::add_static_mac(const Mac& mac, int id) { macs_[key(mac.data())] = {id, true, 0}; }

void Switch::free_to_origin(const Entry& e) {
  PktBuf* b = e.buf;
  ports_[e.origin].c.held_bytes -= b->len;
  ports_[e.origin].io->free_burst(&b, 1);
}

void Switch::remove_port(int id) {
  Port& gone = ports_[id];
  // Frames queued to the port go back to their pools first...
  for (size_t i = 0; i < gone.count; ++i) free_to_origin(gone.ring[(gone.head + i) & (gone.ring.size() - 1)]);
  gone.head = gone.count = 0;
  // ...then frames the port received that wait at other ports (kept in order, the others compacted).
  for (Port& p : ports_) {
    if (!p.io || p.count == 0) continue;
    const size_t mask = p.ring.size() - 1;
    size_t kept = 0;
    for (size_t i = 0; i < p.count; ++i) {
      const Entry e = p.ring[(p.head + i) & mask];
      if (e.origin == id) {
        p.c.queue_bytes -= e.buf->len;
        p.c.queue_frames--;
        free_to_origin(e);
      } else {
        p.ring[(p.head + kept++) & mask] = e;
      }
    }
    p.count = kept;
  }
  for (auto it = macs_.begin(); it != macs_.end();) it = it->second.port == id ? macs_.erase(it) : ++it;
  gone = Port{};
  if (default_port_ == id) default_port_ = -1;
}

bool Switch::has_queued() const {
  for (const Port& p : ports_)
    if (p.count) return true;
  return false;
}

void Switch::enqueue(int out, PktBuf* b, int origin) {
  Port& p = ports_[out];
  ports_[origin].c.held_bytes += b->len;  // free_to_origin() or drain() gives it back
  if (p.loss.drop()) {
    p.c.drop_loss++;
    free_to_origin({b, origin});
    return;
  }
  const uint64_t depth = p.c.queue_bytes;
  if (depth + b->len > p.cfg.buffer_bytes || p.count == p.ring.size()) {
    p.c.drop_queue_full++;
    free_to_origin({b, origin});
    return;
  }
  if (p.red.select(depth)) {
    switch (mark_ce(b->data, b->len)) {
      case EcnResult::kMarked:
        p.c.ecn_marked++;
        break;
      case EcnResult::kAlreadyCe:
        p.c.ecn_already_ce++;
        break;
      case EcnResult::kNotEct:
      case EcnResult::kNotIp:
        p.c.ecn_not_ect++;
        break;
    }
  }
  p.ring[(p.head + p.count) & (p.ring.size() - 1)] = {b, origin};
  p.count++;
  p.c.queue_frames++;
  p.c.queue_bytes += b->len;
  p.c.queue_max_bytes = std::max(p.c.queue_max_bytes, p.c.queue_bytes);
}

void Switch::flood(PktBuf* b, int in) {
  Port& src = ports_[in];
  src.c.flooded++;
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
      enqueue(last, copy, in);
    }
    last = static_cast<int>(o);
  }
  if (last >= 0) {
    enqueue(last, b, in);
  } else {
    src.io->free_burst(&b, 1);
  }
}

void Switch::forward(PktBuf* b, int in, uint64_t now_ns) {
  Port& src = ports_[in];
  src.c.rx_frames++;
  src.c.rx_bytes += b->len;
  if (b->len < kEthHeader) {
    src.c.drop_filtered++;
    src.io->free_burst(&b, 1);
    return;
  }
  if (gsi_tap_ && is_gsi_frame(b->data, b->len)) gsi_tap_(b->data, b->len);
  const uint8_t* dst = b->data;
  const uint8_t* smac = b->data + 6;
  if (!is_group(smac)) {
    auto [it, fresh] = macs_.try_emplace(key(smac), MacEntry{in, false, now_ns});
    if (!fresh && !it->second.is_static) {
      it->second.port = in;
      it->second.seen_ns = now_ns;
    }
  }
  if (is_group(dst)) {
    flood(b, in);
    return;
  }
  const auto it = macs_.find(key(dst));
  if (it == macs_.end()) {
    if (default_port_ >= 0 && default_port_ != in) {
      src.c.unknown_to_uplink++;
      enqueue(default_port_, b, in);
      return;
    }
    src.c.drop_unknown++;
    src.io->free_burst(&b, 1);
    return;
  }
  if (it->second.port == in) {
    src.c.drop_filtered++;
    src.io->free_burst(&b, 1);
    return;
  }
  enqueue(it->second.port, b, in);
}

bool Switch::inject(const uint8_t* frame, uint16_t len) {
  if (len < kEthHeader) return false;
  const auto it = macs_.find(key(frame));
  const int out = it != macs_.end() ? it->second.port : default_port_;
  if (!valid(out)) return false;
  // The buffer comes from the egress port's own pool and counts as that port's (freed to it, whatever
  // becomes of the frame).
  PktBuf* b = nullptr;
  if (ports_[out].io->alloc_burst(&b, 1) != 1) return false;
  if (b->cap < len) {
    ports_[out].io->free_burst(&b, 1);
    return false;
  }
  std::memcpy(b->data, frame, len);
  b->len = len;
  enqueue(out, b, out);
  return true;
}

// A head frame that waits for tokens (not for backpressure) sets the time the loop must look again.
void Switch::note_token_wait(const Port& p, uint64_t now_ns) {
  if (p.count == 0 || p.bucket.unlimited()) return;
  const uint16_t len = p.ring[p.head].buf->len;
  if (!p.bucket.allows(len)) next_ready_ns_ = std::min(next_ready_ns_, p.bucket.ready_at(len, now_ns));
}

uint32_t Switch::drain(int id, uint64_t now_ns) {
  Port& p = ports_[id];
  if (p.count == 0) return 0;
  p.bucket.refill(now_ns);
  const size_t mask = p.ring.size() - 1;
  PktBuf* burst[kBurst];
  uint16_t n = 0;
  uint64_t bytes = 0;
  while (n < kBurst && n < p.count) {
    PktBuf* b = p.ring[(p.head + n) & mask].buf;
    if (!p.bucket.allows(static_cast<uint32_t>(bytes + b->len))) break;
    burst[n++] = b;
    bytes += b->len;
  }
  if (n == 0) {
    note_token_wait(p, now_ns);
    return 0;
  }
  // Lengths are read before tx_burst: a transmitted buffer belongs to the port (and may be back in its pool).
  uint16_t lens[kBurst];
  for (uint16_t i = 0; i < n; ++i) lens[i] = burst[i]->len;
  const uint16_t sent = p.io->tx_burst(burst, n);
  uint64_t sent_bytes = 0;
  for (uint16_t i = 0; i < sent; ++i) {
    sent_bytes += lens[i];
    ports_[p.ring[(p.head + i) & mask].origin].c.held_bytes -= lens[i];
  }
  p.bucket.take(static_cast<uint32_t>(sent_bytes));
  p.head = (p.head + sent) & mask;
  p.count -= sent;
  p.c.tx_frames += sent;
  p.c.tx_bytes += sent_bytes;
  p.c.queue_frames -= sent;
  p.c.queue_bytes -= sent_bytes;
  note_token_wait(p, now_ns);
  return sent;
}

void Switch::age(uint64_t now_ns) {
  if (now_ns < next_age_ns_) return;
  next_age_ns_ = now_ns + kAgeScanNs;
  for (auto it = macs_.begin(); it != macs_.end();)
    it = !it->second.is_static && now_ns - it->second.seen_ns > kLearnAgeNs ? macs_.erase(it) : ++it;
}

uint32_t Switch::poll(uint64_t now_ns) {
  uint32_t work = 0;
  PktBuf* bufs[kBurst];
  for (size_t i = 0; i < ports_.size(); ++i) {
    Port& p = ports_[i];
    if (!p.io) continue;
    if (p.cfg.pause_bytes && p.c.held_bytes >= p.cfg.pause_bytes) {
      if (!p.paused) p.c.pauses++;
      p.paused = true;
      continue;
    }
    p.paused = false;
    const uint16_t n = p.io->rx_burst(bufs, kBurst);
    for (uint16_t k = 0; k < n; ++k) forward(bufs[k], static_cast<int>(i), now_ns);
    work += n;
  }
  next_ready_ns_ = UINT64_MAX;
  for (size_t i = 0; i < ports_.size(); ++i)
    if (ports_[i].io) work += drain(static_cast<int>(i), now_ns);
  age(now_ns);
  return work;
}

std::string format_counters(const PortCounters& c, const PortConfig& cfg) {
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "rx_frames=%lu rx_bytes=%lu tx_frames=%lu tx_bytes=%lu drop_unknown=%lu drop_filtered=%lu "
                "drop_queue_full=%lu drop_loss=%lu drop_flood_nobuf=%lu flooded=%lu unknown_to_uplink=%lu "
                "ecn_marked=%lu "
                "ecn_not_ect=%lu ecn_already_ce=%lu queue_bytes=%lu queue_frames=%lu queue_max_bytes=%lu "
                "held_bytes=%lu pauses=%lu "
                "rate_bps=%lu buffer_bytes=%lu pause_bytes=%lu loss=%g ecn=%s",
                c.rx_frames, c.rx_bytes, c.tx_frames, c.tx_bytes, c.drop_unknown, c.drop_filtered,
                c.drop_queue_full, c.drop_loss, c.drop_flood_nobuf, c.flooded, c.unknown_to_uplink,
                c.ecn_marked, c.ecn_not_ect, c.ecn_already_ce, c.queue_bytes, c.queue_frames,
                c.queue_max_bytes, c.held_bytes, c.pauses, cfg.rate_bps, cfg.buffer_bytes, cfg.pause_bytes,
                cfg.loss, cfg.red.enabled ? "on" : "off");
  std::string s = buf;
  if (cfg.red.enabled) {
    std::snprintf(buf, sizeof buf, " ecn_kmin=%lu ecn_kmax=%lu ecn_pmax=%g", cfg.red.kmin, cfg.red.kmax,
                  cfg.red.pmax);
    s += buf;
  }
  return s;
}

}  // namespace uroce::uroced
