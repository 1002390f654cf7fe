#include "fabric/host_mac.h"

#include <algorithm>

namespace uroce::fabric {

namespace {

// 802.3x PAUSE: MAC control opcode 0x0001 with one pause time for the whole link.
constexpr uint16_t kPauseOpcode = 0x0001;
constexpr uint64_t kRetryNs = 10'000;  // how soon to look again at frames the port or credit held back

uint16_t ether_type(const PktBuf* b) {
  return b->len >= 14 ? static_cast<uint16_t>(b->data[12] << 8 | b->data[13]) : 0;
}

}  // namespace

HostMac::HostMac(PacketIo* inner, const Clock* clock, uint64_t rate_bps, uint64_t mac, bool credit_link,
                 uint32_t hold_limit)
    : inner_(inner),
      clock_(clock),
      mac_(mac),
      credit_link_(credit_link),
      hold_limit_(hold_limit),
      q_(false, 0, 0) {
  q_.set_rate_bps(rate_bps);
}

HostMac::~HostMac() {
  inner_->free_burst(staged_, staged_n_);
  q_.clear([this](const Queued& q) {
    PktBuf* b = q.buf;
    inner_->free_burst(&b, 1);
  });
}

uint16_t HostMac::transmit(PktBuf** bufs, uint16_t n) {
  if (!credit_link_) return inner_->tx_burst(bufs, n);  // no FCTBS to keep
  // Lengths and priorities are read before tx_burst: a transmitted buffer belongs to the port.
  uint32_t blocks[kBurst];
  uint8_t prio[kBurst];
  const uint16_t m = std::min<uint16_t>(n, kBurst);
  for (uint16_t i = 0; i < m; ++i) {
    blocks[i] = credit_blocks(bufs[i]->len);
    prio[i] = frame_prio(bufs[i]->data, bufs[i]->len);
  }
  const uint16_t k = inner_->tx_burst(bufs, m);
  for (uint16_t i = 0; i < k; ++i) fctbs_[prio[i]] += blocks[i];
  return k;
}

uint16_t HostMac::tx_burst(PktBuf** bufs, uint16_t n) {
  if (idle()) return transmit(bufs, n);
  const uint64_t now = clock_->now_ns();
  flush(now);
  if (idle()) return transmit(bufs, n);
  // Something is paused, waits or is credit-limited: queue behind it, so each priority keeps its order.
  const size_t before = q_.frames();
  uint16_t i = 0;
  for (; i < n && held_frames() < hold_limit_; ++i) q_.push(Queued{bufs[i], 0, {}});
  c_.tx_refused += n - i;
  flush(now);
  if (q_.frames() > before) c_.tx_held += q_.frames() - before;
  return i;
}

uint16_t HostMac::rx_burst(PktBuf** bufs, uint16_t n) {
  const uint16_t got = inner_->rx_burst(bufs, n);
  uint16_t kept = 0;
  bool control = false;
  for (uint16_t i = 0; i < got; ++i) {
    PktBuf* b = bufs[i];
    const uint16_t type = ether_type(b);
    if (type == kEtherTypeMacControl) {
      take_control(b, clock_->now_ns());
      control = true;
      inner_->free_burst(&b, 1);
      continue;
    }
    if (is_credit_frame(b->data, b->len)) {
      take_credit(b->data, b->len);
      control = true;
      inner_->free_burst(&b, 1);
      continue;
    }
    if (credit_link_) {
      const uint8_t vl = frame_prio(b->data, b->len);
      abr_[vl] += credit_blocks(b->len);
      // The host's receive buffer drains at once: the frame's blocks go back to the sender.
      if (credit_mask_ >> vl & 1) credit_due_ = true;
    }
    bufs[kept++] = b;
  }
  if (credit_due_) send_credit();
  if (control) flush();  // an XON or new credit may have released held frames
  return kept;
}

void HostMac::take_control(const PktBuf* b, uint64_t now) {
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
    return;
  }
  bool resumed = false;
  const uint8_t paused = q_.apply_pfc(pfc, now, &resumed);
  paused_mask_ = static_cast<uint8_t>((paused_mask_ & ~pfc.enable) | paused);
}

void HostMac::take_credit(const uint8_t* frame, uint16_t len) {
  CreditFrame cf;
  if (!parse_credit(frame, len, &cf)) {
    ++c_.credit_malformed;
    return;
  }
  if (!credit_link_) {
    ++c_.credit_ignored;
    return;
  }
  ++c_.credit_rx;
  if (credit_mask_ == 0) {
    credit_mask_ = cf.vl_mask;  // the link's first update: credit flow control begins on its VLs
    q_.start_credits(cf.vl_mask);
  }
  for (uint8_t vl = 0; vl < kPriorities; ++vl) {
    if (!(cf.vl_mask & credit_mask_ & (1u << vl))) continue;
    abr_[vl] = cf.fctbs[vl];  // what the peer sent and we did not get is not coming
    peer_fccl_[vl] = cf.fccl[vl];
  }
  update_credits();
  credit_due_ = true;  // answer: the peer learns what we received and grant
}

// The queue's credit per VL: the peer's limit less what we transmitted and what waits already dequeued.
void HostMac::update_credits() {
  uint32_t staged[kPriorities] = {};
  for (uint16_t i = 0; i < staged_n_; ++i)
    staged[frame_prio(staged_[i]->data, staged_[i]->len)] += credit_blocks(staged_[i]->len);
  for (uint8_t vl = 0; vl < kPriorities; ++vl)
    if (credit_mask_ >> vl & 1) q_.set_credits(vl, credit_left(peer_fccl_[vl], fctbs_[vl] + staged[vl]));
}

void HostMac::send_credit() {
  PktBuf* b = nullptr;
  if (inner_->alloc_burst(&b, 1) != 1) return;  // credit_due_ stays set: the next pass tries again
  CreditFrame cf;
  cf.vl_mask = credit_mask_;
  for (uint8_t vl = 0; vl < kPriorities; ++vl) {
    if (!(credit_mask_ >> vl & 1)) continue;
    cf.fctbs[vl] = fctbs_[vl];
    cf.fccl[vl] = abr_[vl] + kHostCreditBytes / kCreditBlock;
  }
  b->len = build_credit(b->data, mac_, cf);
  if (inner_->tx_burst(&b, 1) != 1) {
    inner_->free_burst(&b, 1);
    return;
  }
  ++c_.credit_tx;
  credit_due_ = false;
}

void HostMac::end_pauses(uint64_t now) {
  for (uint8_t p = 0; p < kPriorities; ++p)
    if ((paused_mask_ >> p & 1) && q_.pause_timer(p, now)) paused_mask_ &= static_cast<uint8_t>(~(1u << p));
}

uint32_t HostMac::flush() {
  if (credit_due_) send_credit();
  if (paused_mask_ == 0 && staged_n_ == 0 && q_.frames() == 0) return 0;  // no clock read on the fast path
  return flush(clock_->now_ns());
}

uint32_t HostMac::flush(uint64_t now) {
  if (paused_mask_) end_pauses(now);
  uint32_t sent = 0;
  for (;;) {
    if (staged_n_ == 0) {
      Queued q;
      while (staged_n_ < kBurst && q_.pop(now, &q)) staged_[staged_n_++] = q.buf;
      if (staged_n_ == 0) return sent;
    }
    const uint16_t k = transmit(staged_, staged_n_);
    sent += k;
    std::copy(staged_ + k, staged_ + staged_n_, staged_);
    staged_n_ = static_cast<uint16_t>(staged_n_ - k);
    if (staged_n_ != 0) return sent;  // the port is full: try again on the next pass
  }
}

uint64_t HostMac::next_deadline() const {
  const uint64_t now = clock_->now_ns();
  if (staged_n_ != 0 || credit_due_) return now + kRetryNs;  // the port refused: look again soon
  if (q_.frames() == 0) return kNever;
  uint64_t d = kNever;
  for (uint8_t p = 0; p < kPriorities; ++p)
    if ((paused_mask_ >> p & 1) && q_.prio_bytes(p) != 0) d = std::min(d, q_.pause_until(p));
  // Frames no pause holds wait for credit, which comes with a received frame.
  return d == kNever ? now + kRetryNs : d;
}

}  // namespace uroce::fabric
