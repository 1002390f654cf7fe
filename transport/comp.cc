// Completer: turns responses into send completions (IBA 9.7.5-9.7.6). ACKs acknowledge every request up to
// their PSN; READ responses and ATOMIC ACKs carry data and implicitly acknowledge what precedes them; NAKs
// rewind the requester (go-back-N) or end the QP with the matching error status; the local ACK timeout and
// the RNR timer bound how long and how often it retries.
#include <algorithm>

#include "transport/device.h"
#include "transport/psn.h"
#include "transport/wr_opcode.h"

namespace uroce {

namespace {

using namespace wire;

uint32_t last_psn(const SendWqe& w) { return psn_add(w.first_psn, w.npkts - 1); }

// The first PSN of `w` not yet answered: a READ's first missing response packet, else its first PSN.
uint32_t expected_response(const SendWqe& w, uint32_t mtu) {
  return psn_add(w.first_psn, static_cast<uint32_t>(w.read_done / mtu));
}

}  // namespace

void Qp::arm_retry_timer() {
  // Local ACK timeout 4.096 us * 2^timeout (IBA ch. 9, local ACK timeout); 0 means the timer is disabled.
  comp_.retry_deadline = attr_.timeout ? dev_->now() + (4096ull << attr_.timeout) : kNever;
  if (sr_) {  // armed on progress, as the retry timer: the probe starts over
    comp_.sr.probe_backoff = 0;
    comp_.sr.probe_deadline = dev_->now() + sr_probe_interval();
  }
}

uint64_t Qp::sr_probe_interval() const {
  const SrRequester& r = comp_.sr;
  const uint64_t base = r.min_rtt_ns ? std::max(params::kSrProbeMinNs, params::kSrProbeRtts * r.min_rtt_ns)
                                     : params::kSrProbeInitNs;
  return base << r.probe_backoff;
}

// Selective repeat's probe (SrRequester::probe_deadline): the round scans again from the oldest
// unacknowledged PSN, so that it and whatever else the latest bitmap lacks (re-sends that were lost too, at
// heavy loss) go again, oldest first; without a bitmap (no round yet) the oldest PSN alone.
void Qp::sr_probe(uint64_t now) {
  SrRequester& r = comp_.sr;
  r.probe_deadline = kNever;
  if (comp_.una == req_.psn_hw || error()) return;
  if (!r.active) {
    r.active = true;
    r.base = r.scan = r.end = comp_.una;
    std::fill(std::begin(r.held), std::end(r.held), 0);
  }
  r.scan = comp_.una;  // everything the latest bitmap lacks, oldest first
  if (psn_before(r.end, psn_add(comp_.una, 1))) r.end = psn_add(comp_.una, 1);
  if (r.probe_backoff < params::kSrProbeMaxBackoff) ++r.probe_backoff;
  r.probe_deadline = now + sr_probe_interval();
}

void Qp::on_response(const ParsedPacket& pkt) {
  dev_->activate(this);
  if (type() != QpType::kRc || error()) return;
  ++cnt_.rx_packets;
  cnt_.rx_bytes += pkt.frame_len;
  // READ responses are data too: a CE mark on one asks the responder's QP, which sent it, to slow down.
  if (pkt.ecn() == Ecn::kCe) resp_np_ecn(pkt);
  // HPCC: the INT stack the responder echoed reaches the algorithm before the acknowledgement it came with.
  if (dev_->rx_int_) cc_->on_telemetry(dev_->now(), *dev_->rx_int_);
  if (bth_becn(pkt.bth())) cc_->on_ecn_echo(dev_->now());  // DCTCP: the ACK's requests were CE-marked
  const uint32_t m = pkt.op().mask;
  if (m & kOpRead) {
    comp_read_response(pkt);
  } else if (m & kOpAtomic) {
    comp_atomic_ack(pkt);
  } else if (pkt.opcode == op::kUroceSrNak) {
    comp_sr_nak(pkt);
  } else {
    comp_ack(bth_psn(pkt.bth()), pkt.aeth());
  }
  cc_account();
}

// Marks complete every SEND/WRITE up to and including `psn`. A READ or ATOMIC inside that range whose
// response has not (fully) arrived means the response was lost (an implicit NAK): the requester re-sends it,
// and comp_.una stops there. Returns true when it rewound the requester that way. `rtt_ns` is the RTT sample
// the acknowledgement gives CC when it advances (0: none).
bool Qp::comp_acknowledge_through(uint32_t psn, uint64_t rtt_ns) {
  const uint32_t old_una = comp_.una;
  uint32_t new_una = psn_add(psn, 1);
  bool rewound = false;
  for (uint32_t i = comp_idx_; i != post_idx_; ++i) {
    SendWqe& w = sq_at(i);
    if (w.state == WqeState::kPosted || psn_diff(last_psn(w), psn) > 0) break;
    if (w.state == WqeState::kDone) continue;
    if (is_rd_atomic(w.opcode)) {
      // Responses leave the responder in PSN order, so a later acknowledgement overtook or outlived them.
      dev_->cnt().add(Counter::kImplicitNak);
      new_una = psn_add(w.first_psn, static_cast<uint32_t>(w.read_done / mtu()));
      comp_rewind(new_una);
      rewound = true;
      break;
    }
    w.state = WqeState::kDone;
    if (consumes_recv_wqe(w.opcode)) --req_.credit_msgs_out;
  }
  if (psn_diff(new_una, comp_.una) > 0) comp_.una = new_una;
  if (rtt_ns && sr_ && (!comp_.sr.min_rtt_ns || rtt_ns < comp_.sr.min_rtt_ns)) comp_.sr.min_rtt_ns = rtt_ns;
  if (comp_.una != old_una) {
    comp_.retry_left = attr_.retry_cnt;  // forward progress resets the retry budgets
    comp_.rnr_retry_left = attr_.rnr_retry;
    const uint64_t acked =
        acked_bytes(psn_add(comp_.una, kPsnMask), static_cast<uint32_t>(psn_diff(comp_.una, old_una)));
    req_.inflight_bytes = req_.inflight_bytes > acked ? req_.inflight_bytes - acked : 0;
    cc_->on_ack(dev_->now(), acked, rtt_ns);
    if (comp_.una == req_.psn_hw) {
      comp_.retry_deadline = kNever;
    } else {
      arm_retry_timer();
    }
  }
  comp_retire();
  return rewound;
}

void Qp::comp_ack(uint32_t psn, const Aeth& aeth) {
  if (psn_diff(psn, req_.psn_hw) >= 0) {  // acknowledges a PSN never sent
    dev_->cnt().add(Counter::kGhostResponse);
    return;
  }
  if (psn_diff(psn, comp_.una) < -1) {  // older than what is already acknowledged
    dev_->cnt().add(Counter::kDuplicateResponse);
    return;
  }
  const uint8_t value = aeth_value(aeth);
  switch (aeth_kind(aeth)) {
    case AethKind::kAck:
      comp_acknowledge_through(psn, rtt_sample(psn));
      // Selective repeat: the round is over once everything it knew lost is acknowledged.
      if (comp_.sr.active && !comp_.sr.again && !psn_before(comp_.una, comp_.sr.end)) comp_.sr.active = false;
      req_.credits = value == 31 ? -1 : aeth_credit_count(value) - static_cast<int64_t>(req_.credit_msgs_out);
      if (req_.credits < -1) req_.credits = 0;
      // The responder has nothing left for us to fill: give it time to say so before probing.
      req_.probe_at =
          req_.credits == 0 && req_.credit_msgs_out == 0 ? dev_->now() + params::kCreditProbeDelayNs : 0;
      return;
    case AethKind::kRnrNak: {
      ++cnt_.rnr_naks_rcvd;
      dev_->cnt().add(Counter::kRnrNakRcvd);
      cc_->on_nak(dev_->now());
      const bool rewound = comp_acknowledge_through(psn_add(psn, kPsnMask));  // everything before psn
      if (attr_.rnr_retry != 7) {  // 7 means retry forever (IBA ch. 9, RNR NAK)
        if (comp_.rnr_retry_left == 0) return comp_fatal(WcStatus::kRnrRetryExcErr);
        --comp_.rnr_retry_left;
      }
      req_.rnr_until = dev_->now() + rnr_timer_ns(value);
      comp_.retry_deadline = kNever;
      if (!rewound) comp_rewind(psn);
      return;
    }
    case AethKind::kNak: {
      const bool rewound = comp_acknowledge_through(psn_add(psn, kPsnMask));
      if (error()) return;
      if (value == kNakPsnSeq) {
        ++cnt_.seq_naks_rcvd;
        dev_->cnt().add(Counter::kSeqNakRcvd);
        cc_->on_nak(dev_->now());
        if (!rewound) comp_rewind(psn);
        return;
      }
      dev_->cnt().add(Counter::kNakRcvd);
      return comp_fatal(value == kNakInvReq      ? WcStatus::kRemInvReqErr
                        : value == kNakRemAccess ? WcStatus::kRemAccessErr
                        : value == kNakInvRdReq  ? WcStatus::kRemInvRdReqErr
                                                 : WcStatus::kRemOpErr);
    }
    case AethKind::kReserved:
      dev_->cnt().add(Counter::kDropMalformed);
      return;
  }
}

// Selective repeat: a sequence-error NAK with the responder's bitmap of what it holds after the NAKed PSN.
// Everything before that PSN is acknowledged, as by any NAK; the round (SrRequester) learns which packets are
// lost. A requester without selective repeat never asked for this NAK: it takes it as a plain one.
void Qp::comp_sr_nak(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  const Aeth& aeth = pkt.aeth();
  if (!sr_ || aeth_kind(aeth) != AethKind::kNak || aeth_value(aeth) != kNakPsnSeq ||
      pkt.payload_len != kSrNakPayloadBytes)
    return comp_ack(psn, aeth);
  if (psn_diff(psn, req_.psn_hw) >= 0) {
    dev_->cnt().add(Counter::kGhostResponse);
    return;
  }
  if (psn_diff(psn, comp_.una) < -1) {
    dev_->cnt().add(Counter::kDuplicateResponse);
    return;
  }
  const bool rewound = comp_acknowledge_through(psn_add(psn, kPsnMask));
  if (error()) return;
  ++cnt_.seq_naks_rcvd;
  dev_->cnt().add(Counter::kSeqNakRcvd);
  cc_->on_nak(dev_->now());
  if (rewound) return;  // a lost READ response: going back N from there re-sends this gap too
  SrRequester& r = comp_.sr;
  r.base = psn;
  const uint8_t* body = pkt.payload();
  std::fill(std::begin(r.held), std::end(r.held), 0);
  for (uint32_t i = 0; i < kSrNakBitmapBytes * 8; ++i)
    if ((body[i / 8] >> (i % 8)) & 1) r.held[i / 64] |= uint64_t{1} << (i % 64);
  uint32_t highest = 0;
  for (uint32_t i = 0; i < 4; ++i) highest = highest << 8 | body[kSrNakBitmapBytes + i];
  highest &= kPsnMask;
  // Known lost: the NAKed PSN and whatever did not arrive before the highest PSN that did (packets are sent
  // in PSN order; beyond the bitmap the responder had no room and dropped them).
  if (psn_before(highest, psn) || !psn_before(highest, req_.psn_hw)) highest = psn;
  r.highest = highest;
  const uint32_t end = psn_add(highest, 1);
  if (!r.active) {
    r.active = true;
    r.again = false;
    r.scan = psn;
    r.end = end;
    return;
  }
  if (psn_before(psn, r.scan)) {
    // Re-sent already in this round: lost again if a packet first sent after that re-send has arrived.
    const SrRequester::Resent& x = r.resent[psn & (params::kSrWindow - 1)];
    if (x.psn != psn || psn_diff(highest, x.hw) >= 0) {
      r.again = true;
      r.again_psn = psn;
    }
  } else {
    r.scan = psn;
  }
  if (psn_before(r.end, end)) r.end = end;
}

bool Qp::sr_held(uint32_t psn) const {
  const int32_t d = psn_diff(psn, comp_.sr.base);
  if (d < 0 || d >= static_cast<int32_t>(kSrNakBitmapBytes * 8)) return false;
  return (comp_.sr.held[d / 64] >> (d % 64)) & 1;
}

// A response arrived at `psn` for a later request while `expect` is still missing: responses leave the
// responder in PSN order, so the missing one was lost. Go back to it at once rather than waiting for the
// local ACK timeout. Responses of the round already on the wire keep arriving with rising PSNs and must not
// rewind again; a PSN that falls back means the re-sent round has started and lost its head too.
void Qp::comp_implicit_nak(uint32_t expect, uint32_t psn) {
  ++cnt_.out_of_sequence;
  dev_->cnt().add(Counter::kImplicitNak);
  if (comp_.go_back != GoBack::kNone && comp_.rewound_at == expect) {
    const bool same_round = psn_diff(psn, comp_.gap_psn) > 0;
    comp_.gap_psn = psn;
    if (same_round || comp_.go_back != GoBack::kResent) return;
  }
  comp_.go_back = GoBack::kRewound;
  comp_.rewound_at = expect;
  comp_.gap_psn = psn;
  comp_rewind(expect);
}

// Finds the READ/ATOMIC WQE a response at `psn` answers. The oldest unanswered one must come first; a
// response for a later one means a response of the oldest was lost (implicit NAK) but is still placed, so
// the go-back-N round that follows need not fetch it again. Returns nullptr after counting anything else.
SendWqe* Qp::comp_match_response(uint32_t psn, bool read, bool* oldest_out) {
  if (psn_diff(psn, req_.psn_hw) >= 0) {
    dev_->cnt().add(Counter::kGhostResponse);
    return nullptr;
  }
  SendWqe* oldest = nullptr;
  for (uint32_t i = comp_idx_; i != post_idx_; ++i) {
    SendWqe& w = sq_at(i);
    if (w.state == WqeState::kPosted || psn_diff(psn, w.first_psn) < 0) break;
    if (!is_rd_atomic(w.opcode) || w.state == WqeState::kDone) continue;
    if (!oldest) oldest = &w;
    if (psn_diff(psn, last_psn(w)) > 0) continue;
    const uint32_t expect = expected_response(w, mtu());
    const int32_t d = psn_diff(psn, expect);
    if (d < 0) break;
    const uint32_t oldest_expect = expected_response(*oldest, mtu());
    if (d > 0 || read != (w.opcode == WrOpcode::kRdmaRead)) {
      comp_implicit_nak(oldest_expect, psn);
      return nullptr;
    }
    if (&w != oldest) comp_implicit_nak(oldest_expect, psn);
    if (comp_.go_back != GoBack::kNone && comp_.rewound_at == expect)
      comp_.go_back = GoBack::kNone;  // the lost response has come back
    *oldest_out = &w == oldest;
    return &w;
  }
  dev_->cnt().add(Counter::kDuplicateResponse);
  return nullptr;
}

// Bookkeeping once the response that ends a READ or ATOMIC is placed.
void Qp::comp_rd_atomic_done(SendWqe& w, bool oldest) {
  w.state = WqeState::kDone;
  if (!oldest) return;  // completes in order, after the older ones (and still counts as outstanding)
  comp_.una = psn_add(last_psn(w), 1);
  if (comp_.una == req_.psn_hw) comp_.retry_deadline = kNever;
  comp_retire();
}

void Qp::comp_read_response(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  bool oldest = false;
  SendWqe* w = comp_match_response(psn, true, &oldest);
  if (!w) return;
  const uint32_t m = pkt.op().mask;
  const uint64_t left = w->length - w->read_done;
  // The READ's first response starts a stream (FIRST/ONLY). Later, the packet at the expected PSN is right
  // from whichever stream carries it: the one a re-sent READ asked for (FIRST/ONLY at its PSN), or the
  // earlier stream still on its way (MIDDLE/LAST), which a responder keeps sending instead of answering a
  // duplicate READ it will reach anyway. Both carry the same bytes for a PSN; refusing the earlier stream
  // would leave nothing the requester accepts, retry after retry.
  const bool first_ok = (m & kStartsMessage) || w->read_done > 0;
  const bool len_ok = (m & kEndsMessage) ? pkt.payload_len == left : pkt.payload_len == mtu() && left > mtu();
  if (!first_ok || !len_ok) {
    dev_->cnt().add(Counter::kDropMalformed);
    return;
  }
  sge_scatter(dev_->mrs_, w->sge, w->num_sge, w->read_done, pkt.payload(), pkt.payload_len);
  w->read_done += pkt.payload_len;
  // A response stream's first packet answers the READ request sent at its PSN: that is the RTT sample.
  cc_->on_ack(dev_->now(), pkt.payload_len, (m & kStartsMessage) ? rtt_sample(psn) : 0);
  if (oldest) {
    // The response acknowledges every request before the READ, and is progress.
    comp_acknowledge_through(psn_add(w->first_psn, kPsnMask));
    if (psn_diff(psn_add(psn, 1), comp_.una) > 0) comp_.una = psn_add(psn, 1);
    comp_.retry_left = attr_.retry_cnt;
    arm_retry_timer();
  }
  if (m & kEndsMessage) comp_rd_atomic_done(*w, oldest);
}

void Qp::comp_atomic_ack(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  bool oldest = false;
  SendWqe* w = comp_match_response(psn, false, &oldest);
  if (!w) return;
  const uint64_t orig = pkt.atomic_ack_eth().orig.get();
  sge_scatter(dev_->mrs_, w->sge, w->num_sge, 0, reinterpret_cast<const uint8_t*>(&orig), 8);
  cc_->on_ack(dev_->now(), 8, rtt_sample(psn));
  if (oldest) {
    comp_acknowledge_through(psn_add(psn, kPsnMask));
    comp_.retry_left = attr_.retry_cnt;
    arm_retry_timer();
  }
  comp_rd_atomic_done(*w, oldest);
}

// Completes finished WQEs in posting order (a completion never overtakes an earlier WQE's).
void Qp::comp_retire() {
  while (comp_idx_ != post_idx_) {
    SendWqe& w = sq_at(comp_idx_);
    if (w.state != WqeState::kDone) break;
    if (w.status != WcStatus::kSuccess) {  // a local error: flush() completes it with its status
      enter_error();
      return;
    }
    // A READ or ATOMIC stops counting against max_rd_atomic only now, retired in order: until then an older
    // one may be asked again, and the responder must still hold its saved resource (it keeps one per
    // outstanding request and reuses them in turn, so a new READ sent earlier would have replaced it).
    if (is_rd_atomic(w.opcode)) --req_.rd_atomic_out;
    complete_send(w, WcStatus::kSuccess);
    ++comp_idx_;
  }
  if (static_cast<int32_t>(send_idx_ - comp_idx_) < 0) {  // acknowledged past a rewound send position
    send_idx_ = comp_idx_;
    send_pkt_ = 0;
  }
  // Everything before the oldest WQE still open is acknowledged (some were answered out of order).
  const bool open = comp_idx_ != post_idx_ && sq_at(comp_idx_).state != WqeState::kPosted;
  const uint32_t floor = open ? expected_response(sq_at(comp_idx_), mtu()) : req_.psn_hw;
  if (psn_diff(floor, comp_.una) > 0) comp_.una = floor;
  if (comp_.una == req_.psn_hw) comp_.retry_deadline = kNever;
  sqd_check_drained();
}

// Go-back-N: transmit again from `psn`, which lies in an outstanding WQE.
void Qp::comp_rewind(uint32_t psn) {
  for (uint32_t i = comp_idx_; i != post_idx_; ++i) {
    SendWqe& w = sq_at(i);
    if (w.state == WqeState::kPosted) break;
    if (psn_diff(psn, w.first_psn) < 0 || psn_diff(psn, last_psn(w)) > 0) continue;
    uint32_t k = static_cast<uint32_t>(psn_diff(psn, w.first_psn));
    if (w.opcode == WrOpcode::kRdmaRead) k = std::max(k, static_cast<uint32_t>(w.read_done / mtu()));
    send_idx_ = i;
    send_pkt_ = k;
    comp_.sr.active = false;  // going back N re-sends whatever a selective round would
    req_.inflight_bytes = 0;
    req_.pkts_since_ackreq = 0;
    return;
  }
}

// The WQE at the head of the unacknowledged work fails with `status`; the QP goes to ERR and
// raises QP_FATAL; everything after it is flushed.
void Qp::comp_fatal(WcStatus status) {
  for (uint32_t i = comp_idx_; i != post_idx_; ++i) {
    SendWqe& w = sq_at(i);
    if (w.state != WqeState::kDone) {
      w.status = status;
      break;
    }
  }
  comp_retire();
  enter_error();
  dev_->raise(EventType::kQpFatal, qpn_);
}

void Qp::on_timer(uint64_t now) {
  if (cc_->next_timer_ns() <= now) {
    cc_->on_timer(now);
    cc_account();
  }
  if (sr_ && comp_.sr.probe_deadline <= now) sr_probe(now);
  if (comp_.retry_deadline > now) return;
  comp_.retry_deadline = kNever;
  if (comp_.una == req_.psn_hw || error()) return;
  ++cnt_.timeouts;
  dev_->cnt().add(Counter::kTimeouts);
  if (comp_.retry_left == 0) return comp_fatal(WcStatus::kRetryExcErr);
  --comp_.retry_left;
  cc_->on_timeout(now);
  comp_rewind(comp_.una);
  arm_retry_timer();  // counts from the re-send (re-armed by it), or again if nothing could be re-sent
}

}  // namespace uroce
