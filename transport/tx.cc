// Packet emission shared by the requester and the responder: frame construction from the QP's header
// template, payload gathered straight from registered memory, pacing and CC bookkeeping (send times for RTT
// samples, INT echo, rate-change accounting, CNPs handled); and the scheduling entry points the device's
// engine calls (transmit, has_tx_work, next_timer, next_tx_time).
#include <algorithm>

#include "transport/device.h"
#include "transport/params.h"
#include "transport/wire/address.h"

namespace uroce {

bool Qp::emit(const wire::PacketHeaders& h, const Sge* sge, uint32_t num_sge, uint64_t offset, uint32_t len,
              bool paced, const cc::IntStack* echo) {
  PktBuf* buf = dev_->alloc_tx();
  if (!buf) return false;
  if (echo && buf->telemetry) *buf->telemetry = *echo;
  size_t hl;
  if (init_.xrc != XrcRole::kNone && h.bth.opcode < wire::op::kUcSendFirst) {
    // The roles build RC packets; an XRC QP sends the same operation from the XRC opcode range.
    wire::PacketHeaders x = h;
    x.bth.opcode = static_cast<uint8_t>(x.bth.opcode + wire::op::kXrcBase);
    hl = wire::build_headers(x, len, buf->data);
  } else {
    hl = wire::build_headers(h, len, buf->data);
  }
  if (len <= params::kSealWholeFrame) {
    // A short payload is copied, then the whole frame checksummed in one pass.
    sge_gather(dev_->mrs_, sge, num_sge, offset, buf->data + hl, len);
    wire::seal_frame(buf->data, hl, len);
  } else {
    // Payload gathered from registered memory and checksummed in one pass.
    const uint32_t crc = sge_gather_crc(dev_->mrs_, sge, num_sge, offset, buf->data + hl, len,
                                        wire::icrc_after_headers(buf->data, hl));
    wire::finish_trailer(crc, len, buf->data + hl + len);
  }
  buf->len = static_cast<uint16_t>(hl + len + wire::trailer_len(len));

  const uint64_t now = dev_->now();
  emitted_ns_ = now;
  cnt_.tx_packets++;
  cnt_.tx_bytes += buf->len;
  if (paced) {  // data: requests and READ responses
    pace_start_ns_ = std::max(pace_next(), now);
    pace_len_ = buf->len;
    cc_->on_tx(now, len);
    cc_account();
  }
  // Only UD datagrams are multicast in the IBA: a group address on a connected QP gets no local copies.
  if (init_.type == QpType::kUd && wire::is_multicast_gid(h.ip.dst))
    dev_->transmit_mcast(buf, h.ip.dst);
  else
    dev_->transmit(buf, dev_->is_local_gid(h.ip.dst));
  return true;
}

// The next paced frame may start once the last one has left at the current rate: the stricter of the CC rate
// and the QP's rate limit. Evaluated when asked, so a rate the algorithm raises (or cuts) in between applies
// to the gap already running: a flow cut to a crawl is not stuck behind one long gap after it recovers.
uint64_t Qp::pace_next() const {
  uint64_t gap = 0;
  if (cc_->rate_bps) gap = static_cast<uint64_t>(pace_len_) * 8'000'000'000ull / cc_->rate_bps;
  if (attr_.rate_limit_kbps)
    gap = std::max<uint64_t>(gap, static_cast<uint64_t>(pace_len_) * 8'000'000ull / attr_.rate_limit_kbps);
  return pace_start_ns_ + gap;
}

// Karn's rule: a PSN sent more than once gives no RTT sample, since its ACK cannot say which copy it answers.
void Qp::rtt_sent(uint32_t psn, bool first_time, uint32_t len) {
  if (rtt_ring_.empty()) return;
  RttSlot& s = rtt_ring_[psn & (params::kRttRing - 1)];
  if (first_time) {
    sent_bytes_ += len;
    s = RttSlot{psn, false, emitted_ns_, sent_bytes_};
  } else if (s.psn == psn) {
    s.resent = true;
  }
}

uint64_t Qp::rtt_sample(uint32_t psn) const {
  if (rtt_ring_.empty()) return 0;
  const RttSlot& s = rtt_ring_[psn & (params::kRttRing - 1)];
  if (s.psn != psn || s.resent) return 0;
  const uint64_t now = dev_->now();
  return now > s.sent_ns ? now - s.sent_ns : 0;
}

// Exact when the ring still holds `last_psn`; otherwise a PSN counts as a full MTU, bounded by what was sent.
uint64_t Qp::acked_bytes(uint32_t last_psn, uint32_t npsn) {
  const RttSlot* s = rtt_ring_.empty() ? nullptr : &rtt_ring_[last_psn & (params::kRttRing - 1)];
  const uint64_t end = s && s->psn == last_psn
                           ? s->end_bytes
                           : std::min(sent_bytes_, acked_bytes_ + static_cast<uint64_t>(npsn) * mtu());
  if (end <= acked_bytes_) return 0;
  const uint64_t acked = end - acked_bytes_;
  acked_bytes_ = end;
  return acked;
}

void Qp::cc_account() {
  if (cc_->rate_changes == cc_changes_seen_) return;
  dev_->cnt().add(Counter::kCcRateChanges, cc_->rate_changes - cc_changes_seen_);
  cc_changes_seen_ = cc_->rate_changes;
}

void Qp::replace_cc(std::unique_ptr<cc::Algorithm> algo) {
  dev_->activate(this);
  cc_ = std::move(algo);
  cc_changes_seen_ = cc_->rate_changes;
}

// Reaction point (DCQCN RP): a CNP for this QP goes to its algorithm.
void Qp::on_cnp() {
  dev_->activate(this);
  dev_->cnt().add(Counter::kCnpRcvd);
  ++cnt_.cnp_handled;
  ++cc_->cnp_handled;
  cc_->on_cnp(dev_->now());
  cc_account();
}

// Scheduling entry points (device.cc).

uint32_t Qp::transmit(uint32_t budget) {
  // Memory-window operations at the head of the send queue need no packet: they run before the responses,
  // as an RNIC's send queue runs beside its responder (an invalidation is not held up by a long READ).
  req_local_ops();
  // A held ACK (ACK coalescing) goes now, ahead of the QP's own next request, rather than after it.
  if (resp_.jobs_count && req_ready()) resp_.jobs[resp_.jobs_head].not_before = 0;
  // Responses first: they unblock the peer's requester and carry no local backlog.
  const uint32_t sent = resp_transmit(budget);
  return sent + req_transmit(budget - sent);
}

bool Qp::has_tx_work() const { return resp_.jobs_count || req_ready() || sr_resend_pending(); }

uint64_t Qp::next_timer() const {
  const uint64_t t = std::min(comp_.retry_deadline, cc_->next_timer_ns());
  return sr_ && comp_.una != req_.psn_hw ? std::min(t, comp_.sr.probe_deadline) : t;
}

uint64_t Qp::next_tx_time() const {
  uint64_t t = kNever;
  if (resp_.jobs_count) {
    const RespJob& j = resp_.jobs[resp_.jobs_head];
    t = j.kind == RespJob::kRead ? pace_next() : j.kind == RespJob::kAck ? j.not_before : 0;
  }
  const ReqWait w = req_wait();
  if (w == ReqWait::kNone || sr_resend_pending())
    t = std::min(t, std::max(req_.rnr_until, pace_next()));
  else if (w == ReqWait::kNoCredit && req_.credit_msgs_out == 0)
    t = std::min(t, req_.probe_at);  // the credit probe's wait (kNoCredit with none out: probe_at is set)
  return t;
}

}  // namespace uroce
