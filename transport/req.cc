// Requester: turns send-queue WQEs into request packets (IBA 9.7.1-9.7.4). Assigns PSNs, segments by path
// MTU, sets AckReq, honours fences, max_rd_atomic, end-to-end credits and the CC pacer, and re-sends from a
// rewound position when the completer asks for go-back-N.
#include <algorithm>
#include <cerrno>

#include "transport/device.h"
#include "transport/params.h"
#include "transport/psn.h"
#include "transport/wr_opcode.h"

namespace uroce {

namespace {

using namespace wire;

// The wire opcode of packet k of n of a SEND or WRITE (IBA table 39: RC and UC share the layout).
uint8_t data_opcode(QpType t, WrOpcode op, uint32_t k, uint32_t n) {
  const uint8_t base = static_cast<uint8_t>((t == QpType::kUc ? op::kUcSendFirst : op::kRcSendFirst) +
                                            (is_write(op) ? op::kRcWriteFirst : 0));
  const uint8_t imm = has_imm(op) ? 1 : 0;
  const bool inv = op == WrOpcode::kSendWithInv;
  if (n == 1) return inv ? uint8_t{op::kRcSendOnlyInv} : static_cast<uint8_t>(base + 4 + imm);  // ONLY
  if (k == 0) return base;                                                                      // FIRST
  if (k + 1 < n) return static_cast<uint8_t>(base + 1);                                         // MIDDLE
  return inv ? uint8_t{op::kRcSendLastInv} : static_cast<uint8_t>(base + 2 + imm);              // LAST
}

}  // namespace

bool consumes_recv_wqe(WrOpcode op) {
  return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm || op == WrOpcode::kSendWithInv ||
         op == WrOpcode::kRdmaWriteWithImm;
}

int Qp::post_send(const SendWr& wr) {
  dev_->activate(this);
  if (init_.xrc == XrcRole::kTarget) return EINVAL;  // an XRC target has no send queue
  const QpState st = attr_.qp_state;
  if (st == QpState::kReset || st == QpState::kInit || st == QpState::kRtr) return EINVAL;
  if (post_idx_ - comp_idx_ >= attr_.cap.max_send_wr) return ENOMEM;
  if (wr.num_sge > attr_.cap.max_send_sge || !wr_op_allowed(type(), wr.opcode)) return EINVAL;
  uint64_t len = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) len += wr.sg_list[i].length;
  if (len > params::kMaxMsgSize) return EINVAL;
  const bool inl = wr.send_flags & kSendInline;
  const bool aw = is_atomic_write(wr.opcode);
  // An ATOMIC WRITE's 8 bytes travel in the WQE itself, so its inline form needs no inline buffer.
  if (inl && !aw && (len > attr_.cap.max_inline_data || is_rd_atomic(wr.opcode))) return EINVAL;
  if (is_atomic(wr.opcode) && (wr.num_sge != 1 || len != 8)) return EINVAL;
  if (aw && len != 8) return EINVAL;
  if (type() == QpType::kUd && (!wr.ah || len > mtu_bytes(dev_->cfg_.port_mtu))) return EINVAL;
  if (is_local_op(wr.opcode) && (wr.num_sge || (wr.send_flags & kSendInline))) return EINVAL;
  // A bind that can never succeed fails now, as ibv_post_send(3) reports it; what depends on the window's
  // state when the bind executes (a type 2 window still bound, the MR gone) fails its completion instead.
  if (wr.opcode == WrOpcode::kBindMw)
    if (int e = dev_->mrs_.bind_static_check(wr.bind, pd_)) return e;

  const uint32_t slot = post_idx_ & sq_mask_;
  // Every field is written here rather than by assigning a fresh SendWqe: zeroing the whole slot first was
  // a third of this function's time in an ib_send_bw 64 B sender. The address vector and the bind request
  // are read only by UD sends and binds, so only those copy them.
  static_assert(sizeof(SendWqe) == 184, "a new SendWqe field must be set below");
  SendWqe& w = sq_[slot];
  w.wr_id = wr.wr_id;
  w.remote_addr = wr.remote_addr;
  w.compare_add = wr.compare_add;
  w.swap = wr.swap;
  w.length = len;
  w.atomic_orig = 0;
  w.rkey = wr.rkey;
  w.imm_be = wr.imm_data_be;
  w.flags = wr.send_flags;
  w.first_psn = 0;
  w.npkts = 0;
  w.read_done = 0;
  w.opcode = wr.opcode;
  w.state = WqeState::kPosted;
  w.status = WcStatus::kSuccess;
  if (wr.opcode == WrOpcode::kBindMw) w.bind = wr.bind;
  w.xrc_srqn = wr.xrc_srqn & kPsnMask;
  const uint32_t sge_per = attr_.cap.max_send_sge ? attr_.cap.max_send_sge : 1;
  Sge* sge = &sq_sges_[static_cast<size_t>(slot) * sge_per];
  if (aw && inl) {
    sge_gather(wr.sg_list, wr.num_sge, 0, reinterpret_cast<uint8_t*>(&w.compare_add), 8);
    w.num_sge = 0;
  } else if (inl) {
    // Inline data is copied now: the application may reuse its buffers as soon as post_send returns.
    uint8_t* data = &sq_inline_[static_cast<size_t>(slot) * attr_.cap.max_inline_data];
    sge_gather(wr.sg_list, wr.num_sge, 0, data, static_cast<uint32_t>(len));
    sge[0] = Sge{reinterpret_cast<uint64_t>(data), static_cast<uint32_t>(len), 0};
    w.num_sge = 1;
  } else {
    std::copy(wr.sg_list, wr.sg_list + wr.num_sge, sge);
    w.num_sge = wr.num_sge;
  }
  w.sge = sge;
  if (wr.ah) {
    w.av = *wr.ah;
    w.remote_qpn = wr.remote_qpn & kPsnMask;
    w.remote_qkey = wr.remote_qkey;
  } else {
    w.remote_qpn = 0;
    w.remote_qkey = 0;
  }
  ++post_idx_;
  if (st == QpState::kErr) flush();
  return 0;
}

int Qp::validate_local(const SendWqe& w) const {
  if (w.flags & kSendInline) return 0;
  const uint32_t need = is_rd_atomic(w.opcode) ? uint32_t{kAccessLocalWrite} : 0u;
  for (uint32_t i = 0; i < w.num_sge; ++i) {
    const Sge& s = w.sge[i];
    if (s.length && !dev_->mrs_.check_local(s.lkey, pd_, s.addr, s.length, need)) return -1;
  }
  return 0;
}

ReqWait Qp::req_blocked(const SendWqe& w) const {
  if (w.state != WqeState::kPosted) return ReqWait::kNone;
  if (attr_.qp_state == QpState::kSqd) return ReqWait::kSqDrain;  // draining: start nothing new
  if (type() != QpType::kRc) return ReqWait::kNone;
  if ((w.flags & kSendFence) && req_.rd_atomic_out) return ReqWait::kFence;
  if (is_rd_atomic(w.opcode) && req_.rd_atomic_out >= std::max<uint32_t>(1, attr_.max_rd_atomic))
    return ReqWait::kRdAtomicLimit;
  // End-to-end flow control (IBA 9.7.7.2): with no credit left, one WQE-consuming message may still be sent
  // as a probe when none is outstanding, so a stalled requester learns when the responder has buffers again.
  // After an ACK that advertised no credit, the probe first waits for a credit update (params.h).
  if (consumes_recv_wqe(w.opcode) && req_.credits == 0 &&
      (req_.credit_msgs_out > 0 || (req_.probe_at && dev_->now() < req_.probe_at)))
    return ReqWait::kNoCredit;
  return ReqWait::kNone;
}

ReqWait Qp::req_wait() const {
  if (send_idx_ == post_idx_) return ReqWait::kIdle;
  if (error() || (attr_.qp_state != QpState::kRts && attr_.qp_state != QpState::kSqd))
    return ReqWait::kQpState;
  const SendWqe& w = sq_at(send_idx_);
  if (w.status != WcStatus::kSuccess) return ReqWait::kLocalError;  // it waits for the completer
  if (cc_->window_bytes && req_.inflight_bytes >= cc_->window_bytes) return ReqWait::kWindow;
  return req_blocked(w);
}

// BIND_MW and LOCAL_INV take effect when the requester reaches them, after every earlier WQE has started:
// a bind is visible to the requests that follow it. They use no PSN and complete in order with the rest; one
// that fails completes with MW_BIND_ERR (bind) or LOC_QP_OP_ERR (invalidate), as Linux rxe reports them, and
// the QP goes to ERR.
void Qp::run_local_op(SendWqe& w) {
  const bool ok = w.opcode == WrOpcode::kBindMw ? dev_->mrs_.bind(w.bind, this, pd_)
                                                : dev_->mrs_.invalidate(w.imm_be, pd_, nullptr);
  if (!ok) w.status = w.opcode == WrOpcode::kBindMw ? WcStatus::kMwBindErr : WcStatus::kLocQpOpErr;
  w.first_psn = req_.npsn;
  w.npkts = 0;
  w.state = WqeState::kDone;
  if (ok) {
    ++send_idx_;
    send_pkt_ = 0;
  }
  comp_retire();
}

void Qp::req_local_ops() {
  while (req_ready()) {
    SendWqe& w = sq_at(send_idx_);
    if (w.state != WqeState::kPosted || !is_local_op(w.opcode)) return;
    run_local_op(w);
  }
}

void Qp::start_wqe(SendWqe& w) {
  if (is_local_op(w.opcode)) return run_local_op(w);
  if (validate_local(w) != 0) {
    w.status = WcStatus::kLocProtErr;
    w.state = WqeState::kDone;
    comp_retire();
    return;
  }
  // An ATOMIC WRITE reads its source SGEs once, when it starts: every copy of the packet, retransmits
  // included, carries that one value.
  // The SGEs are in their regions' IOVA space: gathered through the MR table.
  if (is_atomic_write(w.opcode) && !(w.flags & kSendInline))
    sge_gather_crc(dev_->mrs_, w.sge, w.num_sge, 0, reinterpret_cast<uint8_t*>(&w.compare_add), 8, 0);
  const uint32_t m = mtu();
  w.npkts = is_atomic(w.opcode) || type() == QpType::kUd
                ? 1
                : std::max<uint32_t>(1, static_cast<uint32_t>((w.length + m - 1) / m));
  w.first_psn = req_.npsn;
  req_.npsn = psn_add(req_.npsn, w.npkts);
  if (is_rd_atomic(w.opcode)) ++req_.rd_atomic_out;
  if (type() == QpType::kRc && consumes_recv_wqe(w.opcode)) {
    ++req_.credit_msgs_out;
    if (req_.credits > 0) --req_.credits;
  }
  w.state = WqeState::kSending;
}

uint32_t Qp::req_transmit(uint32_t budget) {
  uint32_t sent = 0;
  const uint64_t now = dev_->now();
  req_.tx_now_ns = now;
  if (comp_.sr.active) {
    sent = req_sr_resend(budget, now);
    if (sr_resend_pending()) return sent;  // new packets wait for the re-sends
  }
  while (sent < budget && req_ready() && now >= req_.rnr_until && now >= pace_next()) {
    SendWqe& w = sq_at(send_idx_);
    // Going back N re-sends what the responder discarded. A READ or ATOMIC already answered (placed while
    // an older one was missing) is not asked again; a READ resumes at its first missing packet.
    if (w.state == WqeState::kDone && w.status == WcStatus::kSuccess) {
      ++send_idx_;
      send_pkt_ = 0;
      continue;
    }
    if (w.opcode == WrOpcode::kRdmaRead)
      send_pkt_ = std::max(send_pkt_, static_cast<uint32_t>(w.read_done / mtu()));
    if (w.state == WqeState::kPosted) {
      if (req_.credits == 0 && consumes_recv_wqe(w.opcode) && type() == QpType::kRc &&
          req_.credit_msgs_out == 0)
        dev_->cnt().add(Counter::kCreditStall);
      start_wqe(w);
      if (w.status != WcStatus::kSuccess) break;
      if (is_local_op(w.opcode)) continue;
    }
    if (!req_send_packet(w)) break;
    ++sent;
  }
  return sent;
}

bool Qp::req_send_packet(SendWqe& w) {
  bool last = true;
  if (!req_emit(w, send_pkt_, false, &last)) return false;
  if (!last) {
    ++send_pkt_;
    return true;
  }
  send_pkt_ = 0;
  ++send_idx_;
  if (type() == QpType::kRc) {
    w.state = WqeState::kSent;
  } else {
    w.state = WqeState::kDone;  // UC and UD complete once sent: there is no acknowledgement
    comp_retire();
  }
  return true;
}

bool Qp::req_emit(SendWqe& w, uint32_t k, bool sr_resend, bool* last_out) {
  const uint32_t psn = psn_add(w.first_psn, k);
  const uint64_t offset = static_cast<uint64_t>(k) * mtu();
  PacketHeaders h = hdr_;
  if (type() == QpType::kUd) fill_headers(w.av, w.remote_qpn, &h);
  h.bth.psn = psn;
  if (cc_->ecn_capable)
    h.ip.tclass = static_cast<uint8_t>((h.ip.tclass & ~3) | static_cast<uint8_t>(Ecn::kEct0));
  uint32_t len = 0;
  bool last = true;
  const Sge* sge = w.sge;
  uint32_t num_sge = w.num_sge;
  const Sge atomic_write_value{reinterpret_cast<uint64_t>(&w.compare_add), 8, 0};

  if (w.opcode == WrOpcode::kRdmaRead) {
    // A re-sent READ asks only for what has not arrived: it starts at response packet k, with that PSN.
    h.bth.opcode = op::kRcReadRequest;
    h.reth = {w.remote_addr + offset, w.rkey, static_cast<uint32_t>(w.length - std::min(offset, w.length))};
  } else if (is_atomic(w.opcode)) {
    h.bth.opcode = w.opcode == WrOpcode::kAtomicCmpAndSwp ? op::kRcCmpSwap : op::kRcFetchAdd;
    h.atomic = {w.remote_addr, w.rkey, w.opcode == WrOpcode::kAtomicCmpAndSwp ? w.swap : w.compare_add,
                w.opcode == WrOpcode::kAtomicCmpAndSwp ? w.compare_add : 0};
  } else if (type() == QpType::kUd) {
    h.bth.opcode = has_imm(w.opcode) ? op::kUdSendOnlyImm : op::kUdSendOnly;
    h.deth = {(w.remote_qkey & params::kUdQkeyPrivilegedBit) ? attr_.qkey : w.remote_qkey, qpn_};
    h.imm_be = w.imm_be;
    h.bth.se = w.flags & kSendSolicited;
    len = static_cast<uint32_t>(w.length);
  } else if (is_atomic_write(w.opcode)) {
    h.bth.opcode = op::kRcAtomicWrite;
    h.reth = {w.remote_addr, w.rkey, 8};
    h.bth.ackreq = true;
    req_.pkts_since_ackreq = 0;
    len = 8;
    sge = &atomic_write_value;
    num_sge = 1;
  } else {
    h.bth.opcode = data_opcode(type(), w.opcode, k, w.npkts);
    len = static_cast<uint32_t>(std::min<uint64_t>(mtu(), w.length - offset));
    last = k + 1 == w.npkts;
    if (k == 0) h.reth = {w.remote_addr, w.rkey, static_cast<uint32_t>(w.length)};
    if (last) {
      h.imm_be = w.imm_be;
      h.ieth_rkey = w.imm_be;  // SEND with Invalidate: the rkey the responder invalidates
      // SE belongs to the packet that completes a receive: SEND or WRITE with immediate (IBA 9.2, BTH).
      h.bth.se = (w.flags & kSendSolicited) && (!is_write(w.opcode) || has_imm(w.opcode));
    }
    // A CC window about to fill asks for the ACK that reopens it (else the QP stalls until the retry timer).
    // So does a packet sent a quarter of the local ACK timeout after the last that asked (or after the first
    // packet sent with nothing outstanding): a QP paced far down (DCQCN goes to 1 Mb/s, where a 64 KiB
    // message takes half a second) would otherwise see no ACK within the timeout, go back to the message's
    // start, and time out again until its retries run out.
    if (comp_.una == req_.psn_hw) req_.last_ackreq_ns = req_.tx_now_ns;
    h.bth.ackreq = type() == QpType::kRc &&
                   (last || ++req_.pkts_since_ackreq >= params::kAckReqEvery ||
                    (cc_->window_bytes && req_.inflight_bytes + len >= cc_->window_bytes) ||
                    (attr_.timeout && req_.tx_now_ns - req_.last_ackreq_ns >= (1024ull << attr_.timeout)));
    if (h.bth.ackreq) {
      req_.pkts_since_ackreq = 0;
      req_.last_ackreq_ns = req_.tx_now_ns;
    }
  }

  h.xrc_srqn = w.xrc_srqn;  // XRC opcodes carry it (emit() turns RC opcodes into XRC ones)
  if (sr_) {
    h.bth.resv7 = kBthResv7SelectiveRepeat;  // tells the responder that this requester reads SR NAKs
    if (sr_resend) h.bth.ackreq = true;      // the ACK (or next NAK) that shows the gap filled comes at once
  }
  if (!emit(h, sge, num_sge, offset, len, true)) return false;
  *last_out = last;
  if (comp_.go_back == GoBack::kRewound && psn == comp_.rewound_at) comp_.go_back = GoBack::kResent;
  const bool resent = psn_before(psn, req_.psn_hw);
  if (resent) {
    ++cnt_.retransmits;
    dev_->cnt().add(Counter::kRetransmits);
  }
  rtt_sent(psn, !resent, len);
  // A READ request reserves the PSNs of all its responses.
  const uint32_t end = w.opcode == WrOpcode::kRdmaRead ? psn_add(w.first_psn, w.npkts) : psn_add(psn, 1);
  if (psn_diff(end, req_.psn_hw) > 0) req_.psn_hw = end;

  if (type() == QpType::kRc) {
    if (!sr_resend) req_.inflight_bytes += len;  // a selective re-send replaces bytes still counted
    if (comp_.retry_deadline == kNever) arm_retry_timer();
  }
  return true;
}

bool Qp::sr_resend_pending() const {
  const SrRequester& r = comp_.sr;
  return r.active && (r.again || psn_before(r.scan, r.end)) && !error() &&
         (attr_.qp_state == QpState::kRts || attr_.qp_state == QpState::kSqd);
}

// Selective repeat: the next packet of the round to re-send. First a re-send that was lost again; then the
// oldest request packet at or after the scan position, before the round's end, in a WQE not yet done, that
// the responder's bitmap does not show held. A READ and an ATOMIC are one request packet each (a READ at its
// first missing response).
bool Qp::req_sr_next(uint32_t* idx, uint32_t* k_out, uint32_t* psn_out) {
  SrRequester& r = comp_.sr;
  if (psn_before(r.scan, comp_.una)) r.scan = comp_.una;
  for (uint32_t i = comp_idx_; i != post_idx_; ++i) {
    const SendWqe& w = sq_at(i);
    if (w.state == WqeState::kPosted) break;
    if (w.state == WqeState::kDone) continue;
    uint32_t k = 0, n = 1;
    if (w.opcode == WrOpcode::kRdmaRead) {
      k = static_cast<uint32_t>(w.read_done / mtu());
      n = k + 1;
    } else if (!is_rd_atomic(w.opcode)) {
      n = w.npkts;
    }
    if (r.again) {
      const int32_t d = psn_diff(r.again_psn, w.first_psn);
      if (d < 0) break;
      if (static_cast<uint32_t>(d) >= w.npkts) continue;
      if (static_cast<uint32_t>(d) < k || static_cast<uint32_t>(d) >= n) break;
      *idx = i;
      *k_out = static_cast<uint32_t>(d);
      *psn_out = r.again_psn;
      return true;
    }
    if (!psn_before(w.first_psn, r.end)) break;
    if (n == w.npkts && psn_diff(r.scan, w.first_psn) > 0)
      k = std::max(k, static_cast<uint32_t>(psn_diff(r.scan, w.first_psn)));
    for (; k < n; ++k) {
      const uint32_t psn = psn_add(w.first_psn, k);
      if (!psn_before(psn, r.end)) return false;
      if (psn_before(psn, r.scan) || sr_held(psn)) continue;
      *idx = i;
      *k_out = k;
      *psn_out = psn;
      return true;
    }
  }
  return false;
}

// Re-sends what the round knows to be lost, before any new packet. Returns the packets sent.
uint32_t Qp::req_sr_resend(uint32_t budget, uint64_t now) {
  uint32_t sent = 0;
  SrRequester& r = comp_.sr;
  while (sent < budget && sr_resend_pending() && now >= req_.rnr_until && now >= pace_next()) {
    uint32_t i, k, psn;
    const bool again = r.again;
    if (!req_sr_next(&i, &k, &psn)) {
      if (again) {
        r.again = false;  // acknowledged meanwhile, or nothing there to send
      } else {
        r.scan = r.end;
      }
      continue;
    }
    bool last;
    r.resent[psn & (params::kSrWindow - 1)] = {psn, req_.psn_hw};
    if (!req_emit(sq_at(i), k, true, &last)) break;
    dev_->cnt().add(Counter::kSrRetransmits);
    if (again) {
      r.again = false;
    } else {
      r.scan = psn_add(psn, 1);
    }
    ++sent;
  }
  return sent;
}

}  // namespace uroce
