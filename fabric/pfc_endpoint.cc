#include "fabric/pfc_endpoint.h"

#include <algorithm>

namespace uroce::fabric {

namespace {

// 802.3x PAUSE: MAC control opcode 0x0001 with one pause time for the whole link.
constexpr uint16_t kPauseOpcode = 0x0001;

}  // namespace

PfcEndpoint::PfcEndpoint(PacketIo* inner, const Clock* clock, uint64_t rate_bps, uint32_t hold_limit)
    : inner_(inner), clock_(clock), hold_limit_(hold_limit), q_(false, 0, 0) {
  q_.set_rate_bps(rate_bps);
}

PfcEndpoint::~PfcEndpoint() {
  inner_->free_burst(staged_, staged_n_);
  q_.clear([this](const Queued& q) {
    PktBuf* b = q.buf;
    inner_->free_burst(&b, 1);
  });
}

uint16_t PfcEndpoint::tx_burst(PktBuf** bufs, uint16_t n) {
  if (paused_mask_ == 0 && staged_n_ == 0 && q_.frames() == 0) return inner_->tx_burst(bufs, n);
  const uint64_t now = clock_->now_ns();
  flush(now);
  if (paused_mask_ == 0 && staged_n_ == 0 && q_.frames() == 0) return inner_->tx_burst(bufs, n);
  // Something is paused or still waits: queue behind it, so each priority keeps its order.
  const size_t before = q_.frames();
  uint16_t i = 0;
  for (; i < n && held_frames() < hold_limit_; ++i) q_.push(Queued{bufs[i], 0, {}});
  c_.tx_refused += n - i;
  flush(now);
  if (q_.frames() > before) c_.tx_held += q_.frames() - before;
  return i;
}

uint16_t PfcEndpoint::rx_burst(PktBuf** bufs, uint16_t n) {
  const uint16_t got = inner_->rx_burst(bufs, n);
  uint16_t kept = 0;
  bool control = false;
  for (uint16_t i = 0; i < got; ++i) {
    const PktBuf* b = bufs[i];
    if (b->len >= 14 && b->data[12] == (kEtherTypeMacControl >> 8) &&
        b->data[13] == (kEtherTypeMacControl & 0xFF)) {
      take_control(b, clock_->now_ns());
      control = true;
      inner_->free_burst(&bufs[i], 1);
      continue;
    }
    bufs[kept++] = bufs[i];
  }
  if (control) flush();  // an XON may have released held frames
  return kept;
}

bool PfcEndpoint::take_control(const PktBuf* b, uint64_t now) {
  PfcFrame pfc;
  if (parse_pfc(b->data, b->len, &pfc)) {
    ++c_.pfc_rx;
  } else if (b->len >= 18 && (b->data[14] << 8 | b->data[15]) == kPauseOpcode) {
    ++c_.pause_rx;
    pfc.enable = 0xFF;
    const auto quanta = static_cast<uint16_t>(b->data[16] << 8 | b->data[17]);
    std::fill(std::begin(pfc.quanta), std::end(pfc.quanta), quanta);
  } else {
    ++c_.mac_control_rx;
    return false;
  }
  bool resumed = false;
  const uint8_t paused = q_.apply_pfc(pfc, now, &resumed);
  paused_mask_ = static_cast<uint8_t>((paused_mask_ & ~pfc.enable) | paused);
  return true;
}

void PfcEndpoint::end_pauses(uint64_t now) {
  for (uint8_t p = 0; p < kPriorities; ++p)
    if ((paused_mask_ >> p & 1) && q_.pause_timer(p, now)) paused_mask_ &= static_cast<uint8_t>(~(1u << p));
}

uint32_t PfcEndpoint::flush() {
  if (paused_mask_ == 0 && staged_n_ == 0 && q_.frames() == 0) return 0;  // no clock read on the fast path
  return flush(clock_->now_ns());
}

uint32_t PfcEndpoint::flush(uint64_t now) {
  if (paused_mask_) end_pauses(now);
  uint32_t sent = 0;
  for (;;) {
    if (staged_n_ == 0) {
      Queued q;
      while (staged_n_ < kBurst && q_.pop(now, &q)) staged_[staged_n_++] = q.buf;
      if (staged_n_ == 0) return sent;
    }
    const uint16_t k = inner_->tx_burst(staged_, staged_n_);
    sent += k;
    std::copy(staged_ + k, staged_ + staged_n_, staged_);
    staged_n_ = static_cast<uint16_t>(staged_n_ - k);
    if (staged_n_ != 0) return sent;  // the port is full: try again on the next pass
  }
}

uint64_t PfcEndpoint::next_deadline() const {
  if (staged_n_ != 0) return clock_->now_ns() + 10'000;  // the port refused frames: look again soon
  if (q_.frames() == 0) return kNever;
  uint64_t d = kNever;
  for (uint8_t p = 0; p < kPriorities; ++p)
    if ((paused_mask_ >> p & 1) && q_.prio_bytes(p) != 0) d = std::min(d, q_.pause_until(p));
  return d == kNever ? clock_->now_ns() : d;  // held frames no pause holds: due now
}

}  // namespace uroce::fabric
