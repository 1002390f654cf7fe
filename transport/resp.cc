// Responder: executes request packets (IBA 9.7.2-9.7.5): checks the PSN, the opcode sequence, access rights
// and lengths; places SEND data into receive WQEs and WRITE data into registered memory; runs READs and
// ATOMICs; and queues ACKs, NAKs and responses in PSN order. UC and UD reuse the placement code without
// acknowledgements.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/device.h"
#include "transport/params.h"
#include "transport/psn.h"
#include "transport/wire/address.h"

namespace uroce {

namespace {

using namespace wire;

// One bitmap bit per PSN of the reorder window: a NAK can describe everything the responder holds.
static_assert(kSrNakBitmapBytes * 8 == params::kSrWindow);
static_assert((params::kSrWindow & (params::kSrWindow - 1)) == 0);

}  // namespace

int Qp::post_recv(const RecvWr& wr) {
  dev_->activate(this);
  // SRQ users post to the SRQ; XRC QPs have no receive queue
  if (init_.srq || init_.xrc != XrcRole::kNone || attr_.qp_state == QpState::kReset) return EINVAL;
  if (int e = rq_->post(wr)) return e;
  if (error()) flush();  // a receive posted in ERR completes at once with WR_FLUSH_ERR
  // The last ACK told the requester there was no receive WQE left, so it holds its SENDs. Tell it there is
  // one now with a repeat of that ACK carrying the new credit count, rather than let its probe find out
  // (params::kCreditProbeDelayNs). Responses already queued carry the count themselves.
  if (resp_.zero_credits_sent && !error() && !resp_.jobs_count && resp_.seq == RespSeq::kInOrder) {
    resp_.zero_credits_sent = false;
    resp_queue_ack(psn_add(resp_.epsn, kPsnMask));
    dev_->cnt().add(Counter::kCreditUpdateSent);
  }
  return 0;
}

void Qp::on_request(const ParsedPacket& pkt) {
  dev_->activate(this);
  const QpState st = attr_.qp_state;
  if (st == QpState::kReset || st == QpState::kInit || st == QpState::kErr) {
    dev_->cnt().add(Counter::kDropQpState);
    return;
  }
  ++cnt_.rx_packets;
  cnt_.rx_bytes += pkt.frame_len;
  if (pkt.ecn() == Ecn::kCe) {
    resp_np_ecn(pkt);
    resp_.ce_echo = true;  // and the next ACK echoes it (BECN)
  }
  // HPCC: the switches' INT stack goes back to the requester on the next response (its ACK, READ response or
  // ATOMIC ACK). Only ports that model INT (the simulator) provide one.
  if (dev_->rx_int_ && type() == QpType::kRc) resp_.echo_int = *dev_->rx_int_;
  if (!resp_.comm_est && st == QpState::kRtr) {
    resp_.comm_est = true;
    dev_->raise(EventType::kCommEst, qpn_);
  }
  if (init_.xrc == XrcRole::kTarget && !resp_xrc_select(pkt)) return;
  switch (type()) {
    case QpType::kRc:
      return resp_rc(pkt);
    case QpType::kUc:
      return resp_uc(pkt);
    case QpType::kUd:
      return resp_ud(pkt);
  }
}

// An XRC target serves each request from the SRQ its XRCETH names: that SRQ's receive queue, CQ and PD.
// A number that is no SRQ of the target's XRC domain is an invalid request (NAK when it is the expected
// PSN; anything else is dropped as the sequence rules would drop it).
bool Qp::resp_xrc_select(const ParsedPacket& pkt) {
  Srq* s = dev_->find_srq(pkt.xrceth().srqn.get());
  if (s && s->xrcd == init_.xrcd) {
    init_.srq = s;
    init_.recv_cq = s->cq;
    pd_ = s->pd;
    return true;
  }
  dev_->cnt().add(Counter::kDropXrcSrq);
  const uint32_t psn = bth_psn(pkt.bth());
  if (psn == resp_.epsn && (pkt.op().mask & kStartsMessage) && resp_.msg == RespMsg::kIdle)
    resp_fail(psn, kNakInvReq, WcStatus::kRemInvReqErr, EventType::kQpReqErr);
  return false;
}

void Qp::resp_rc(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  const int32_t d = psn_diff(psn, resp_.epsn);
  if (sr_) resp_.sr.peer_sr = bth_resv7(pkt.bth()) & kBthResv7SelectiveRepeat;
  if (d > 0) {  // packets were lost before this one
    ++cnt_.out_of_sequence;
    dev_->cnt().add(Counter::kOutOfSequence);
    if (sr_) return resp_sr_out_of_order(pkt, psn, d);
    // One sequence-error NAK per gap (IBA ch. 9), and the rest of the round is dropped silently. A PSN
    // that falls back means the requester's go-back-N round has begun and lost its head again: that new
    // round gets its own NAK, instead of leaving recovery to the local ACK timeout.
    const bool nak_out = resp_.seq == RespSeq::kNakOut;
    const bool new_round = nak_out && psn_diff(psn, resp_.nak_gap_psn) <= 0;
    resp_.nak_gap_psn = psn;
    if (!nak_out || new_round) {
      resp_.seq = RespSeq::kNakOut;
      ++cnt_.seq_naks_sent;
      dev_->cnt().add(Counter::kSeqNakSent);
      resp_queue(
          RespJob{RespJob::kNak, false, aeth_syndrome(AethKind::kNak, kNakPsnSeq), resp_.epsn, resp_.msn});
    }
    return;
  }
  if (d < 0) return resp_duplicate(pkt);
  resp_.seq = RespSeq::kInOrder;
  resp_execute(pkt);
  if (resp_.sr.count) resp_sr_release();
}

// Selective repeat: the reorder buffer, sized for the path MTU, allocated as the QP enters RTR.
void Qp::resp_sr_setup() {
  SrHold& h = resp_.sr;
  h.count = h.since_nak = 0;
  h.peer_sr = false;
  if (!sr_) {
    h = SrHold{};
    return;
  }
  // Headers at most: Ethernet, VLAN, IPv6, UDP, BTH, RETH, ImmDt; then pad and ICRC.
  h.slot_bytes = mtu() + 128;
  h.frames.assign(static_cast<size_t>(params::kSrWindow) * h.slot_bytes, 0);
  h.pkt.assign(params::kSrWindow, ParsedPacket{});
}

// A request `d` PSNs ahead of the expected one with selective repeat on: held when it fits the window (a
// copy of a packet already held is a duplicate), dropped otherwise. The gap gets one sequence-error NAK, as
// without selective repeat, and for a requester that understands the bitmap, another after every
// kSrRenakEvery packets held meanwhile (its re-send may have been lost too). A go-back-N requester gets a new
// NAK only when its round has begun and lost its head (the PSN falls back), as without selective repeat: it
// goes back on every NAK.
void Qp::resp_sr_out_of_order(const ParsedPacket& pkt, uint32_t psn, int32_t d) {
  SrHold& h = resp_.sr;
  if (static_cast<uint32_t>(d) < params::kSrWindow && pkt.frame_len <= h.slot_bytes) {
    ParsedPacket& slot = h.pkt[psn & (params::kSrWindow - 1)];
    if (slot.frame && bth_psn(slot.bth()) == psn) {
      ++cnt_.duplicates;
      dev_->cnt().add(Counter::kDuplicateRequest);
    } else {
      // A full slot with another PSN holds one from before epsn (stale): overwritten.
      if (!slot.frame) ++h.count;
      uint8_t* dst = &h.frames[static_cast<size_t>(psn & (params::kSrWindow - 1)) * h.slot_bytes];
      std::memcpy(dst, pkt.frame, pkt.frame_len);
      slot = pkt;
      slot.frame = dst;
      dev_->cnt().add(Counter::kSrHeld);
    }
  }
  const bool nak_out = resp_.seq == RespSeq::kNakOut;
  const bool new_round = nak_out && psn_diff(psn, resp_.nak_gap_psn) <= 0;
  resp_.nak_gap_psn = psn;
  if (!nak_out || psn_diff(psn, h.highest) > 0) h.highest = psn;
  const bool repeat = nak_out && h.peer_sr && ++h.since_nak >= params::kSrRenakEvery;
  if (nak_out && !new_round && !repeat) return;
  resp_.seq = RespSeq::kNakOut;
  h.since_nak = 0;
  ++cnt_.seq_naks_sent;
  dev_->cnt().add(Counter::kSeqNakSent);
  resp_queue(RespJob{RespJob::kNak, false, aeth_syndrome(AethKind::kNak, kNakPsnSeq), resp_.epsn, resp_.msn});
}

// The expected PSN has just executed: the held packets that follow it execute now, in PSN order, through
// resp_execute as if they had just arrived (placement, receive matching, READ/ATOMIC responses and ACK
// coalescing as for any packet). Stops at the next gap, which gets its NAK, or where a packet did not advance
// the expected PSN (an RNR NAK, an error: the requester re-sends from there).
void Qp::resp_sr_release() {
  SrHold& h = resp_.sr;
  while (h.count && !error()) {
    ParsedPacket& slot = h.pkt[resp_.epsn & (params::kSrWindow - 1)];
    if (!slot.frame || bth_psn(slot.bth()) != resp_.epsn) break;
    const ParsedPacket pkt = slot;  // its frame stays in place: nothing is held while it executes
    slot.frame = nullptr;
    --h.count;
    dev_->cnt().add(Counter::kSrReleased);
    const uint32_t before = resp_.epsn;
    resp_execute(pkt);
    if (resp_.epsn == before) return;
  }
  if (error() || !h.count) return;
  // What is left lies beyond a new gap (or before epsn, when a READ's PSN range covered it: dropped).
  uint32_t highest = resp_.epsn;
  for (ParsedPacket& slot : h.pkt) {
    if (!slot.frame) continue;
    const uint32_t p = bth_psn(slot.bth());
    if (psn_before(p, resp_.epsn)) {
      slot.frame = nullptr;
      --h.count;
    } else if (psn_diff(p, highest) > 0) {
      highest = p;
    }
  }
  if (!h.count) return;
  resp_.seq = RespSeq::kNakOut;
  resp_.nak_gap_psn = h.highest = highest;
  h.since_nak = 0;
  ++cnt_.seq_naks_sent;
  dev_->cnt().add(Counter::kSeqNakSent);
  resp_queue(RespJob{RespJob::kNak, false, aeth_syndrome(AethKind::kNak, kNakPsnSeq), resp_.epsn, resp_.msn});
}

// The SR NAK's bitmap for a NAK at `base`: bit i is set when PSN base + i has arrived (executed or held).
void Qp::resp_sr_bitmap(uint32_t base, uint8_t* out) const {
  std::memset(out, 0, kSrNakBitmapBytes);
  for (uint32_t i = 0; i < kSrNakBitmapBytes * 8; ++i) {
    const uint32_t p = psn_add(base, i);
    const ParsedPacket& slot = resp_.sr.pkt[p & (params::kSrWindow - 1)];
    if (psn_before(p, resp_.epsn) || (slot.frame && bth_psn(slot.bth()) == p))
      out[i / 8] = static_cast<uint8_t>(out[i / 8] | (1u << (i % 8)));
  }
}

// Takes the next receive WQE for an incoming message. Its SGEs are checked here, when the data lands, as an
// RNIC does: a bad lkey is the receiver's local protection error.
bool Qp::resp_take_recv_wqe() {
  RecvQueue& q = rq();
  if (q.empty()) return false;
  resp_.wqe = q.front();
  q.pop();
  resp_.recv_off = 0;
  if (init_.srq && init_.srq->limit && q.count() < init_.srq->limit) {
    init_.srq->limit = 0;  // one-shot: the application re-arms with modify_srq
    dev_->raise(EventType::kSrqLimitReached, init_.srq->handle);
  }
  return true;
}

// Places `len` payload bytes at resp_.recv_off of the current receive WQE. Returns the completion status an
// error gives the receive (kSuccess when placed).
WcStatus Qp::resp_place(const uint8_t* data, uint32_t len) {
  const RecvWqe& wqe = *resp_.wqe;
  if (resp_.recv_off + len > wqe.length) return WcStatus::kLocLenErr;
  for (uint32_t i = 0; i < wqe.num_sge; ++i) {
    const Sge& s = wqe.sge[i];
    if (s.length && !dev_->mrs_.check(s.lkey, pd_, s.addr, s.length, kAccessLocalWrite))
      return WcStatus::kLocProtErr;
  }
  if (!sge_scatter(dev_->mrs_, wqe.sge, wqe.num_sge, resp_.recv_off, data, len)) return WcStatus::kLocProtErr;
  resp_.recv_off += len;
  return WcStatus::kSuccess;
}

// A request the responder cannot execute. RC: NAK it (the requester's WQE fails with the matching remote
// error), complete the receive WQE if one was taken, raise the async event and go to ERR.
void Qp::resp_fail(uint32_t psn, uint8_t nak, WcStatus recv_status, EventType ev) {
  if (type() == QpType::kUc) return resp_drop_message();  // UC drops the message instead
  const Counter c = nak == kNakInvReq      ? Counter::kInvReqNakSent
                    : nak == kNakRemAccess ? Counter::kRemAccessNakSent
                                           : Counter::kRemOpNakSent;
  dev_->cnt().add(c);
  if (resp_.wqe) {
    complete_recv(*resp_.wqe, recv_status, 0, WcOpcode::kRecv, 0, 0, 0, true);
    resp_.wqe.reset();
  }
  resp_.jobs_count = 0;  // nothing queued may follow a fatal NAK
  resp_queue(RespJob{RespJob::kNak, false, aeth_syndrome(AethKind::kNak, nak), psn, resp_.msn});
  resp_transmit(1);
  dev_->raise(ev, qpn_);
  enter_error();
}

void Qp::resp_execute(const ParsedPacket& pkt) {
  const uint32_t m = pkt.op().mask;
  const uint32_t psn = bth_psn(pkt.bth());
  const bool ok_seq = resp_.msg == RespMsg::kIdle   ? bool(m & kStartsMessage)
                      : resp_.msg == RespMsg::kSend ? (m & kOpSend) && (m & (kMiddle | kLast))
                                                    : (m & kOpWrite) && (m & (kMiddle | kLast));
  const bool full = m & (kFirst | kMiddle);
  const bool ok_len = full ? pkt.payload_len == mtu() : pkt.payload_len <= mtu();
  if (!ok_seq || !ok_len) return resp_fail(psn, kNakInvReq, WcStatus::kRemInvReqErr, EventType::kQpReqErr);

  const uint32_t need = (m & kOpWrite)    ? kAccessRemoteWrite
                        : (m & kOpRead)   ? kAccessRemoteRead
                        : (m & kOpAtomic) ? uint32_t{kAccessRemoteAtomic}
                                          : 0;
  if (need && !(attr_.qp_access_flags & need))
    return resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
  if (need) ++dev_->one_sided_requests_;

  if (m & (kOpRead | kOpAtomic)) {
    // At most max_dest_rd_atomic READ/ATOMIC requests may await their responses (the requester's
    // max_rd_atomic must not exceed it). One beyond is an invalid request, as Linux rxe answers it, never a
    // silent drop.
    if (resp_rd_atomic_queued() >= attr_.max_dest_rd_atomic) {
      dev_->cnt().add(Counter::kRdAtomicOverLimit);
      return resp_fail(psn, kNakInvReq, WcStatus::kSuccess, EventType::kQpReqErr);
    }
    return (m & kOpRead) ? resp_read(pkt) : resp_atomic(pkt);
  }

  // A message that completes a receive needs its WQE before any of its data is placed, so that an RNR NAK
  // leaves nothing half done and the retried packet executes from scratch.
  const bool needs_wqe = (m & kOpSend) || (m & kConsumesRecvWqe);
  if (needs_wqe && !resp_.wqe && !resp_take_recv_wqe()) {
    if (type() == QpType::kUc) return resp_drop_message();  // UC has no RNR NAK: the message is lost
    ++cnt_.rnr_naks_sent;
    dev_->cnt().add(Counter::kRnrNakSent);
    resp_queue(
        RespJob{RespJob::kNak, false, aeth_syndrome(AethKind::kRnrNak, attr_.min_rnr_timer), psn, resp_.msn});
    return;
  }

  if (m & kOpSend) {
    const WcStatus st = resp_place(pkt.payload(), pkt.payload_len);
    if (st == WcStatus::kLocLenErr) return resp_fail(psn, kNakInvReq, st, EventType::kQpReqErr);
    if (st != WcStatus::kSuccess) return resp_fail(psn, kNakRemOp, st, EventType::kQpFatal);
    resp_.msg = RespMsg::kSend;
  } else if (m & kOpAtomicWrite) {
    if (!resp_atomic_write(pkt)) return;
  } else {  // RDMA WRITE
    if (m & kStartsMessage) {
      const Reth& r = pkt.reth();
      resp_.write_va = r.va.get();
      resp_.write_rkey = r.rkey.get();
      resp_.write_len = resp_.write_left = r.dma_len.get();
      // A zero-length WRITE names no memory: its R_Key is not checked.
      if (resp_.write_len && !dev_->mrs_.check_remote(resp_.write_rkey, this, pd_, resp_.write_va,
                                                      resp_.write_len, kAccessRemoteWrite))
        return resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
    }
    if (pkt.payload_len > resp_.write_left || ((m & kEndsMessage) && pkt.payload_len != resp_.write_left))
      return resp_fail(psn, kNakInvReq, WcStatus::kRemInvReqErr, EventType::kQpReqErr);
    // Every packet is checked against the key table when it lands, not only the first: the application may
    // deregister or re-register the region (new keys) between the packets of one message, and then nothing
    // more may be written there (C9-177: an R_Key violation on any packet is a remote access error).
    if (pkt.payload_len &&
        !dev_->mrs_.remote_write(resp_.write_rkey, this, pd_, resp_.write_va, pkt.payload(), pkt.payload_len))
      return resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
    resp_.write_va += pkt.payload_len;
    resp_.write_left -= pkt.payload_len;
    resp_.msg = RespMsg::kWrite;
  }

  if (m & kEndsMessage) {
    if (m & kCompletesRecv) {
      const bool imm = m & kHasImmDt;
      uint32_t imm_be = 0;
      if (imm) std::memcpy(&imm_be, pkt.immdt().b, 4);
      uint32_t flags = imm ? uint32_t{kWcWithImm} : 0u;
      if (m & kHasIeth) {
        // SEND with Invalidate (IBA 9.4.1.1, o10-37.2.x): once its data is placed, the type 2 window it names
        // becomes invalid, and the completion reports the key. Naming anything else (an MR, a type 1
        // window, a window bound through another QP) is an invalid request.
        imm_be = pkt.ieth().rkey.get();
        if (!dev_->mrs_.invalidate(imm_be, pd_, this))
          return resp_fail(psn, kNakInvReq, WcStatus::kRemInvReqErr, EventType::kQpReqErr);
        flags |= kWcWithInv;
      }
      const bool write = m & kOpWrite;
      complete_recv(
          *resp_.wqe, WcStatus::kSuccess, static_cast<uint32_t>(write ? resp_.write_len : resp_.recv_off),
          write ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv, flags, imm_be, 0, bth_se(pkt.bth()));
      resp_.wqe.reset();
    }
    resp_.msg = RespMsg::kIdle;
    resp_.msn = psn_add(resp_.msn, 1);
  }
  resp_.epsn = psn_add(resp_.epsn, 1);
  if (type() != QpType::kRc) return;
  // A request that follows the previous one within the hold time is part of a stream: its ACK may wait for
  // the requests behind it (ACK coalescing, DeviceConfig::ack_hold_ns).
  const uint64_t now = dev_->now();
  const uint64_t hold_ns = dev_->config().ack_hold_ns;
  const bool streaming = hold_ns && now >= resp_.last_req_ns && now - resp_.last_req_ns < hold_ns;
  resp_.last_req_ns = now;
  if (++resp_.unacked_pkts >= params::kMaxPendingAcks)
    resp_queue_ack(psn);
  else if (bth_ackreq(pkt.bth()))
    resp_queue_ack(psn, streaming && resp_may_hold());
}

// Whether a streaming request's ACK may be held. A requester that waits for each ACK before sending its next
// request (one outstanding: a synchronous WRITE or SEND loop, a ping-pong) sends its requests less than a
// hold apart, so they look like a stream, yet each held ACK then delays it by the whole hold and answers
// nothing more: after kAckHoldMisses such holds in a row the QP answers at once. Evidence of a real stream
// (an ACK that answers two requests or more, held or not) puts it back to holding, and so does a probe
// hold every kAckHoldProbeEvery streaming requests (a stream whose requests come one per pass never
// coalesces an ACK that is not held).
bool Qp::resp_may_hold() {
  if (resp_.hold_misses < params::kAckHoldMisses) return true;
  if (resp_.jobs_count) {  // a probe's ACK still held: this request joins it
    const RespJob& tail = resp_tail();
    if (tail.kind == RespJob::kAck && tail.not_before) return true;
  }
  if (++resp_.since_probe < params::kAckHoldProbeEvery) return false;
  resp_.since_probe = 0;
  return true;
}

// An ACK leaves: what it answered tells resp_may_hold() whether holding pays on this QP.
void Qp::resp_ack_sent(const RespJob& ack) {
  if (ack.reqs >= 2)
    resp_.hold_misses = 0;
  else if (ack.held && resp_.hold_misses < params::kAckHoldMisses)
    ++resp_.hold_misses;
}

void Qp::resp_uc(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  const uint32_t m = pkt.op().mask;
  if (psn != resp_.epsn) {  // packets were lost: the message they belonged to is dropped
    ++cnt_.out_of_sequence;
    dev_->cnt().add(Counter::kOutOfSequence);
    if (resp_.msg != RespMsg::kIdle) resp_drop_message();
    resp_.epsn = psn;
  }
  if (resp_.msg == RespMsg::kDropping && (m & kStartsMessage)) resp_.msg = RespMsg::kIdle;
  if (resp_.msg == RespMsg::kDropping || (resp_.msg == RespMsg::kIdle && !(m & kStartsMessage))) {
    resp_.epsn = psn_add(psn, 1);
    return;
  }
  resp_execute(pkt);
}

// UC: forget the message in progress; its receive WQE, if one was taken, is reused for the next message.
void Qp::resp_drop_message() {
  dev_->cnt().add(Counter::kDropUcMessage);
  resp_.msg = RespMsg::kDropping;
  resp_.recv_off = 0;
  resp_.epsn = psn_add(resp_.epsn, 1);
}

void Qp::resp_ud(const ParsedPacket& pkt) {
  const Deth& deth = pkt.deth();
  if (deth.qkey.get() != attr_.qkey) {
    dev_->cnt().add(Counter::kDropQkey);
    return;
  }
  if (!resp_take_recv_wqe()) {
    dev_->cnt().add(Counter::kDropUdNoWqe);
    return;
  }
  // A UD receive buffer starts with the 40-byte GRH (rdma-core ibv_post_recv(3)).
  uint8_t grh[sizeof(Grh)];
  write_recv_grh(pkt, grh);
  WcStatus st = resp_place(grh, sizeof(grh));
  if (st == WcStatus::kSuccess) st = resp_place(pkt.payload(), pkt.payload_len);
  const uint32_t m = pkt.op().mask;
  uint32_t imm_be = 0;
  if (m & kHasImmDt) std::memcpy(&imm_be, pkt.immdt().b, 4);
  const RecvWqe wqe = *resp_.wqe;
  resp_.wqe.reset();
  if (st != WcStatus::kSuccess) return complete_recv(wqe, st, 0, WcOpcode::kRecv, 0, 0, 0, true);
  // The completion's SL carries the packet's network header type, as ConnectX reports it for RoCE (bits 2:0:
  // 1 IPv6, 2 IPv4; bit 3: over UDP, i.e. RoCEv2): UCX's ud_verbs reads it to know where the GID sits in the
  // GRH area (IPv4: the last 4 bytes of the IPv4 header at 20..39) and drops datagrams otherwise.
  const uint8_t net_hdr_type = pkt.ipv6 ? 0x9 : 0xA;
  complete_recv(wqe, WcStatus::kSuccess, static_cast<uint32_t>(sizeof(grh) + pkt.payload_len),
                WcOpcode::kRecv, kWcGrh | ((m & kHasImmDt) ? uint32_t{kWcWithImm} : 0u), imm_be,
                deth.src_qp.get(), bth_se(pkt.bth()), net_hdr_type);
}

// Notification point (DCQCN NP, A17.9): a CE-marked packet makes the receiver send a CNP to the sender's QP,
// at most one per min_time_between_cnps.
void Qp::resp_np_ecn(const ParsedPacket& pkt) {
  dev_->cnt().add(Counter::kEcnMarked);
  ++cnt_.ecn_marked;
  // A datagram to a group is not answered: the CNP's source would be the group address, which no packet may
  // carry as its source (RFC 1112), and each member would slow the sender for the branch it sits on.
  if (is_multicast_gid(pkt.ip_dst())) return;
  const uint64_t now = dev_->now();
  if (now < resp_.next_cnp_ns) return;
  resp_.next_cnp_ns = now + dev_->cnp_interval_ns();
  PacketHeaders h = hdr_;
  const PacketHeaders in = decode_headers(pkt);
  h.eth.dst = in.eth.src;
  h.eth.src = dev_->cfg_.mac;
  h.ip = in.ip;
  h.ip.src = in.ip.dst;
  h.ip.dst = in.ip.src;
  h.ip.tclass = 0xC2;  // DSCP 48 and ECT(0), as ConnectX sends CNPs
  h.udp_sport = in.udp_sport;
  h.bth = BthFields{};
  h.bth.opcode = op::kCnp;
  h.bth.migreq = false;
  h.bth.resv8a = 0x40;  // BECN
  h.bth.dqpn = type() == QpType::kUd ? pkt.deth().src_qp.get() : attr_.dest_qp_num;
  if (emit(h, nullptr, 0, 0, 0, false)) {
    dev_->cnt().add(Counter::kCnpSent);
    ++cnt_.cnp_sent;
  }
}

void Qp::resp_read(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  const Reth& r = pkt.reth();
  const uint64_t len = r.dma_len.get();
  if (len && !dev_->mrs_.check_remote(r.rkey.get(), this, pd_, r.va.get(), len, kAccessRemoteRead))
    return resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
  const uint32_t npkts = std::max<uint32_t>(1, static_cast<uint32_t>((len + mtu() - 1) / mtu()));
  RdAtomicRes& res = resp_.res[resp_.res_next++ % resp_.res.size()];
  res = RdAtomicRes{true, false, psn, psn_add(psn, npkts - 1), 0};
  // C9-148: a READ counts as a message once accepted; its responses carry the incremented MSN.
  resp_.msn = psn_add(resp_.msn, 1);
  resp_queue(RespJob{RespJob::kRead, false, 0, psn, resp_.msn, r.va.get(), len, r.rkey.get()});
  resp_.epsn = psn_add(resp_.epsn, npkts);
  resp_.unacked_pkts = 0;
}

void Qp::resp_atomic(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  const AtomicEth& a = pkt.atomic_eth();
  const uint64_t va = a.va.get();
  // An atomic target must be 8-byte aligned; a misaligned one is an invalid request.
  if (va % 8) return resp_fail(psn, kNakInvReq, WcStatus::kSuccess, EventType::kQpReqErr);
  uint64_t* target = dev_->mrs_.remote_atomic_target(a.rkey.get(), this, pd_, va);
  if (!target) return resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
  // The target may be in use by local threads too: a real atomic, sequentially consistent.
  uint64_t orig;
  if (pkt.opcode == op::kRcCmpSwap) {
    orig = a.compare.get();
    __atomic_compare_exchange_n(target, &orig, a.swap_add.get(), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  } else {
    orig = __atomic_fetch_add(target, a.swap_add.get(), __ATOMIC_SEQ_CST);
  }
  RdAtomicRes& res = resp_.res[resp_.res_next++ % resp_.res.size()];
  res = RdAtomicRes{true, true, psn, psn, orig};
  RespJob job{RespJob::kAtomicAck, false, 0, psn, resp_.msn = psn_add(resp_.msn, 1)};
  job.orig = orig;
  resp_queue(job);
  resp_.epsn = psn_add(resp_.epsn, 1);
  resp_.unacked_pkts = 0;
}

// ATOMIC WRITE (IBA 1.5): the 8 payload bytes land as one aligned 64-bit store, never torn, ordered after
// everything this QP placed before it. Checked as Linux rxe checks it: the QP and the region need remote
// write access; a DMA length or payload other than 8 bytes and a target that is not 8-byte aligned are
// invalid requests. The caller acknowledges it like a WRITE, and a duplicate is acknowledged without being
// executed again. Returns false when it failed the request.
bool Qp::resp_atomic_write(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  const Reth& r = pkt.reth();
  const uint64_t va = r.va.get();
  if (r.dma_len.get() != 8 || pkt.payload_len != 8) {
    resp_fail(psn, kNakInvReq, WcStatus::kSuccess, EventType::kQpReqErr);
    return false;
  }
  const Mr* mr = dev_->mrs_.check_remote(r.rkey.get(), this, pd_, va, 8, kAccessRemoteWrite);
  if (!mr) {
    resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
    return false;
  }
  if (va % 8) {
    resp_fail(psn, kNakInvReq, WcStatus::kSuccess, EventType::kQpReqErr);
    return false;
  }
  // The region's IOVA to the process address. In an ODP region the word must be mapped and writable first:
  // the store itself must stay one CPU store.
  auto* target = reinterpret_cast<uint64_t*>(mr->host(va));
  uint64_t probe;
  if (mr->odp &&
      (!odp_copy(reinterpret_cast<uint8_t*>(&probe), reinterpret_cast<uint64_t>(target), 8, false) ||
       !odp_writable(reinterpret_cast<uint64_t>(target)))) {
    resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
    return false;
  }
  uint64_t value;
  std::memcpy(&value, pkt.payload(), 8);
  __atomic_store_n(target, value, __ATOMIC_RELEASE);
  return true;
}

// A request with a PSN before resp_.epsn: the requester re-sent it because a response was lost. SEND and
// WRITE are not executed again, only acknowledged; a READ is re-executed from the saved resource; an ATOMIC
// is answered with its saved result and never applied twice.
void Qp::resp_duplicate(const ParsedPacket& pkt) {
  const uint32_t psn = bth_psn(pkt.bth());
  const uint32_t m = pkt.op().mask;
  ++cnt_.duplicates;
  dev_->cnt().add(Counter::kDuplicateRequest);
  if (!(m & (kOpRead | kOpAtomic))) return resp_queue_ack(psn_add(resp_.epsn, kPsnMask));
  for (const RdAtomicRes& r : resp_.res) {
    if (!r.valid || psn_diff(psn, r.psn) < 0 || psn_diff(psn, r.last_psn) > 0) continue;
    if ((m & kOpAtomic) && r.is_atomic && r.psn == psn) {
      resp_trim_jobs(psn);
      RespJob job{RespJob::kAtomicAck, true, 0, psn, resp_.msn};
      job.orig = r.orig;
      return resp_queue(job);
    }
    if ((m & kOpRead) && !r.is_atomic) {
      const Reth& reth = pkt.reth();
      const uint64_t len = reth.dma_len.get();
      // The region may have gone since the first execution: a remote access error now, as for a new READ.
      if (len && !dev_->mrs_.check_remote(reth.rkey.get(), this, pd_, reth.va.get(), len, kAccessRemoteRead))
        return resp_fail(psn, kNakRemAccess, WcStatus::kSuccess, EventType::kQpAccessErr);
      if (!resp_trim_jobs(psn)) return;  // an earlier request's responses are still on their way to psn
      return resp_queue(
          RespJob{RespJob::kRead, true, 0, psn, resp_.msn, reth.va.get(), len, reth.rkey.get()});
    }
  }
  // No saved resource (it was reused): drop; the requester retries and times out if this persists.
}

// A duplicate READ or ATOMIC at `psn` means the requester went back to `psn`: every queued response from
// `psn` on is stale (it would be discarded) and goes. Returns false, trimming nothing, when a queued READ
// stream has not reached `psn` yet: the request is then an old duplicate that stream already answers.
bool Qp::resp_trim_jobs(uint32_t psn) {
  for (uint32_t i = 0; i < resp_.jobs_count; ++i) {
    const RespJob& j = resp_.jobs[(resp_.jobs_head + i) % resp_.jobs.size()];
    if (j.kind == RespJob::kRead && psn_before(j.psn, psn) &&
        j.left > static_cast<uint64_t>(psn_diff(psn, j.psn)) * mtu())
      return false;
  }
  while (resp_.jobs_count && !psn_before(resp_tail().psn, psn)) --resp_.jobs_count;
  return true;
}

// Before the QP stops answering (destroyed, or moved to ERR or RESET by the application, as rdma_disconnect
// does right after the last message): an RNIC has sent the acknowledgement of a message before the
// application sees its completion, while here it may still be queued (the port refused frames, the pass's
// budget ran out) or held for ACK coalescing. Otherwise the peer retries into a QP that no longer answers
// and ends with RETRY_EXC_ERR although everything arrived.
void Qp::resp_flush_acks() {
  dev_->flush_tx();  // what is already built first: a blocked device builds nothing new
  while (resp_.jobs_count && resp_.jobs[resp_.jobs_head].kind != RespJob::kRead &&
         resp_send_job(resp_.jobs[resp_.jobs_head])) {
    resp_.jobs_head = static_cast<uint32_t>((resp_.jobs_head + 1) % resp_.jobs.size());
    --resp_.jobs_count;
  }
  dev_->flush_tx();
}

uint32_t Qp::resp_rd_atomic_queued() const {
  uint32_t n = 0;
  for (uint32_t i = 0; i < resp_.jobs_count; ++i) {
    const RespJob& j = resp_.jobs[(resp_.jobs_head + i) % resp_.jobs.size()];
    n += !j.duplicate && (j.kind == RespJob::kRead || j.kind == RespJob::kAtomicAck);
  }
  return n;
}

void Qp::resp_queue(const RespJob& job) {
  // Responses leave in order: a held ACK in front of another response goes with it.
  if (resp_.jobs_count && job.kind != RespJob::kAck) resp_tail().not_before = 0;
  if (resp_.jobs_count == resp_.jobs.size()) {  // full: the requester's retry recovers; counted, never silent
    dev_->cnt().add(Counter::kRespQueueFull);
    return;
  }
  resp_.jobs[(resp_.jobs_head + resp_.jobs_count++) % resp_.jobs.size()] = job;
}

// Coalesces ACKs: a queued ACK not yet sent is moved forward instead of queueing another. `hold`: it may wait
// the device's ack_hold_ns for the requests behind it (a held ACK keeps its first deadline; one that may not
// wait sends it at once).
void Qp::resp_queue_ack(uint32_t psn, bool hold) {
  if (!hold) resp_.unacked_pkts = 0;
  if (resp_.jobs_count) {
    RespJob& tail = resp_tail();
    if (tail.kind == RespJob::kAck) {
      tail.psn = psn;
      tail.msn = resp_.msn;
      ++tail.reqs;
      if (!hold) tail.not_before = 0;
      return;
    }
  }
  RespJob j{RespJob::kAck, false, 0, psn, resp_.msn};
  j.reqs = 1;
  if (hold) {
    j.not_before = dev_->now() + dev_->config().ack_hold_ns;
    j.held = true;
    dev_->cnt().add(Counter::kAcksHeld);
  }
  resp_queue(j);
}

uint8_t Qp::resp_credit_code() const {
  if (init_.srq) return 31;  // an SRQ is shared among QPs: advertise no per-QP limit
  const uint32_t avail = rq_->count();
  return aeth_credit_code(avail);
}

uint32_t Qp::resp_transmit(uint32_t budget) {
  uint32_t sent = 0;
  while (sent < budget && resp_.jobs_count) {
    RespJob& job = resp_.jobs[resp_.jobs_head];
    // READ responses are data: they wait for the pacer (CC rate, QP rate limit). What queues behind them
    // waits too: responses leave in PSN order.
    if (job.kind == RespJob::kRead && dev_->now() < pace_next()) break;
    if (job.kind == RespJob::kAck && job.not_before > dev_->now()) break;
    if (!resp_send_job(job)) break;
    ++sent;
    if (resp_.fatal_nak_queued) {  // a READ's region went away: the NAK that replaced its response is out
      resp_.fatal_nak_queued = false;
      resp_.jobs_count = 0;
      dev_->raise(EventType::kQpAccessErr, qpn_);
      enter_error();
      break;
    }
    const bool done = job.kind != RespJob::kRead || job.left == 0;
    if (job.kind == RespJob::kRead) job.first = false;
    if (job.kind == RespJob::kAck) resp_ack_sent(job);
    if (done) {
      resp_.jobs_head = static_cast<uint32_t>((resp_.jobs_head + 1) % resp_.jobs.size());
      --resp_.jobs_count;
    }
  }
  return sent;
}

// Sends one packet of `job`. READ jobs send one response per call and advance.
bool Qp::resp_send_job(RespJob& job) {
  const cc::IntStack* echo = job.kind != RespJob::kNak && resp_.echo_int.hops ? &resp_.echo_int : nullptr;
  if (!resp_emit_job(job, echo)) return false;
  if (echo) resp_.echo_int.hops = 0;  // echoed once: a later response without a new request carries none
  return true;
}

bool Qp::resp_emit_job(RespJob& job, const cc::IntStack* echo) {
  PacketHeaders h = hdr_;
  h.bth.psn = job.psn;
  h.aeth.msn = job.msn;
  const uint8_t credit_code = resp_credit_code();
  h.aeth.syndrome = job.kind == RespJob::kNak ? job.syndrome : aeth_syndrome(AethKind::kAck, credit_code);
  if (job.kind == RespJob::kAck) resp_.zero_credits_sent = credit_code == 0;
  if (job.kind == RespJob::kNak && sr_ && resp_.sr.peer_sr &&
      job.syndrome == aeth_syndrome(AethKind::kNak, kNakPsnSeq)) {
    // A requester with selective repeat learns which packets after the gap need no re-send.
    uint8_t body[kSrNakPayloadBytes];
    resp_sr_bitmap(job.psn, body);
    const uint32_t highest = resp_.sr.highest;
    for (int i = 0; i < 4; ++i) body[kSrNakBitmapBytes + i] = static_cast<uint8_t>(highest >> (24 - 8 * i));
    const Sge sge{reinterpret_cast<uint64_t>(body), kSrNakPayloadBytes, 0};
    h.bth.opcode = op::kUroceSrNak;
    if (!emit(h, &sge, 1, 0, kSrNakPayloadBytes, false, echo)) return false;
    dev_->cnt().add(Counter::kSrNakSent);
    return true;
  }
  if (job.kind == RespJob::kAck || job.kind == RespJob::kNak) {
    h.bth.opcode = op::kRcAck;
    if (job.kind == RespJob::kAck && resp_.ce_echo) h.bth.resv8a = 0x40;  // BECN: ECN echo (DCTCP)
    if (!emit(h, nullptr, 0, 0, 0, false, echo)) return false;
    if (job.kind == RespJob::kAck) resp_.ce_echo = false;
    if (job.kind == RespJob::kAck) dev_->cnt().add(Counter::kAcksSent);
    return true;
  }
  if (job.kind == RespJob::kAtomicAck) {
    h.bth.opcode = op::kRcAtomicAck;
    h.atomic_ack_orig = job.orig;
    return emit(h, nullptr, 0, 0, 0, false, echo);
  }
  const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(mtu(), job.left));
  const bool last = job.left <= mtu();
  h.bth.opcode = job.first ? (last ? op::kRcReadRespOnly : op::kRcReadRespFirst)
                           : (last ? op::kRcReadRespLast : op::kRcReadRespMiddle);
  if (cc_->ecn_capable)
    h.ip.tclass = static_cast<uint8_t>((h.ip.tclass & ~3) | static_cast<uint8_t>(Ecn::kEct0));
  // Re-check the region on every packet: the application may deregister it while a READ is answered. Then
  // no byte more is read from it: the response becomes NAK Remote Access Error at this PSN (the requester
  // completes the READ with REM_ACCESS_ERR) and the QP goes to ERR once it is sent.
  Sge src{};
  if (len && !dev_->mrs_.remote_read_source(job.rkey, this, pd_, job.va, len, &src)) {
    job.kind = RespJob::kNak;
    job.syndrome = aeth_syndrome(AethKind::kNak, kNakRemAccess);
    dev_->cnt().add(Counter::kRemAccessNakSent);
    resp_.fatal_nak_queued =
        true;  // once the NAK is out (this call, or a later one if no buffer is free now)
    return resp_emit_job(job, nullptr);
  }
  if (!emit(h, &src, 1, 0, len, true, echo)) return false;
  job.va += len;
  job.left -= len;
  job.psn = psn_add(job.psn, 1);
  return true;
}

}  // namespace uroce
