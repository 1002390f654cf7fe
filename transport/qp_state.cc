// The QP state machine (IBA ch. 10-11): which transitions modify_qp accepts with which attribute
// masks, what each transition does, and how a QP in error flushes its work.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "transport/device.h"
#include "transport/params.h"
#include "transport/psn.h"
#include "transport/wr_opcode.h"

namespace uroce {

namespace {

constexpr int kRc = 0, kUc = 1, kUd = 2, kXrcIni = 3, kXrcTgt = 4;
int type_index(QpType t, XrcRole x) {
  if (x != XrcRole::kNone) return x == XrcRole::kInitiator ? kXrcIni : kXrcTgt;
  return t == QpType::kRc ? kRc : t == QpType::kUc ? kUc : kUd;
}

struct Rule {
  bool valid = false;
  uint32_t req[5] = {0, 0, 0, 0, 0};
  uint32_t opt[5] = {0, 0, 0, 0, 0};
};

constexpr uint32_t kAltMig = kQpAltPath | kQpPathMigState;

// Required and optional attribute masks per transition and QP type, as libibverbs users expect them (the
// same table Linux's ib_modify_qp_is_ok applies).
constexpr auto kRules = [] {
  std::array<std::array<Rule, 7>, 7> t{};
  using S = QpState;
  auto at = [&t](S a, S b) -> Rule& { return t[static_cast<int>(a)][static_cast<int>(b)]; };
  for (int s = 0; s < 7; ++s) {
    t[s][static_cast<int>(S::kReset)].valid = true;
    t[s][static_cast<int>(S::kErr)].valid = true;
  }
  at(S::kReset, S::kInit) = {true,
                             {kQpPkeyIndex | kQpPort | kQpAccessFlags,
                              kQpPkeyIndex | kQpPort | kQpAccessFlags, kQpPkeyIndex | kQpPort | kQpQkey},
                             {0, 0, 0}};
  at(S::kInit, S::kInit) = {true,
                            {0, 0, 0},
                            {kQpPkeyIndex | kQpPort | kQpAccessFlags, kQpPkeyIndex | kQpPort | kQpAccessFlags,
                             kQpPkeyIndex | kQpPort | kQpQkey}};
  at(S::kInit, S::kRtr) = {true,
                           {kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer,
                            kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn, 0},
                           {kQpAltPath | kQpAccessFlags | kQpPkeyIndex,
                            kQpAltPath | kQpAccessFlags | kQpPkeyIndex, kQpPkeyIndex | kQpQkey}};
  at(S::kRtr, S::kRts) = {
      true,
      {kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic, kQpSqPsn, kQpSqPsn},
      {kQpCurState | kAltMig | kQpAccessFlags | kQpMinRnrTimer | kQpRateLimit,
       kQpCurState | kAltMig | kQpAccessFlags | kQpRateLimit, kQpCurState | kQpQkey | kQpRateLimit}};
  const Rule rts_like = {
      true,
      {0, 0, 0},
      {kQpCurState | kQpAccessFlags | kAltMig | kQpMinRnrTimer | kQpRateLimit,
       kQpCurState | kQpAccessFlags | kAltMig | kQpRateLimit, kQpCurState | kQpQkey | kQpRateLimit}};
  at(S::kRts, S::kRts) = rts_like;
  at(S::kSqd, S::kRts) = rts_like;
  at(S::kRts, S::kSqd) = {true, {0, 0, 0}, {kQpEnSqdAsyncNotify, kQpEnSqdAsyncNotify, kQpEnSqdAsyncNotify}};
  at(S::kSqd, S::kSqd) = {true,
                          {0, 0, 0},
                          {kQpPort | kQpAv | kAltMig | kQpAccessFlags | kQpPkeyIndex | kQpMinRnrTimer |
                               kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic | kQpMaxDestRdAtomic,
                           kQpAv | kAltMig | kQpAccessFlags | kQpPkeyIndex, kQpPkeyIndex | kQpQkey}};
  at(S::kSqe, S::kRts) = {true, {0, 0, 0}, {0, kQpCurState | kQpAccessFlags, kQpCurState | kQpQkey}};
  // SQE -> RTS does not exist for RC: an RC send error takes the QP to ERR.
  // XRC initiators and targets follow RC, except where one half of RC is missing: an initiator has no
  // responder (no MAX_DEST_RD_ATOMIC or MIN_RNR_TIMER), a target no requester (RTS needs only the timeout
  // and SQ PSN).
  for (auto& row : t)
    for (Rule& r : row) {
      r.req[kXrcIni] = r.req[kXrcTgt] = r.req[kRc];
      r.opt[kXrcIni] = r.opt[kXrcTgt] = r.opt[kRc];
    }
  at(S::kInit, S::kRtr).req[kXrcIni] = kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
  at(S::kRtr, S::kRts).req[kXrcTgt] = kQpSqPsn | kQpTimeout;
  for (auto& row : t)
    for (Rule& r : row) r.opt[kXrcIni] &= ~(kQpMinRnrTimer | kQpMaxDestRdAtomic);
  return t;
}();

bool values_valid(const QpAttr& a, uint32_t mask, Mtu port_mtu) {
  if ((mask & kQpPort) && a.port_num != 1) return false;
  if ((mask & kQpPkeyIndex) && a.pkey_index != 0) return false;
  if ((mask & kQpPathMtu) && (a.path_mtu < Mtu::k256 || a.path_mtu > port_mtu)) return false;
  if ((mask & kQpMaxQpRdAtomic) && a.max_rd_atomic > params::kMaxRdAtomic) return false;
  if ((mask & kQpMaxDestRdAtomic) && a.max_dest_rd_atomic > params::kMaxRdAtomic) return false;
  if ((mask & kQpTimeout) && a.timeout > 31) return false;
  if ((mask & kQpRetryCnt) && a.retry_cnt > 7) return false;
  if ((mask & kQpRnrRetry) && a.rnr_retry > 7) return false;
  if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31) return false;
  if ((mask & kQpDestQpn) && a.dest_qp_num > kPsnMask) return false;
  constexpr uint32_t kQpAccessKnown =
      kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic | kAccessMwBind;
  if ((mask & kQpAccessFlags) && (a.qp_access_flags & ~kQpAccessKnown)) return false;
  return true;
}

}  // namespace

Qp::Qp(Device* dev, uint32_t qpn, Pd* pd, const QpInitAttr& init)
    : dev_(dev),
      qpn_(qpn),
      pd_(pd),
      init_(init),
      cc_(cc::make(dev->cfg_.cc, dev->rp_params_, dev->cfg_.link_rate_bps)) {
  uint32_t slots = 1;
  while (slots < init.cap.max_send_wr) slots <<= 1;
  sq_.resize(slots);
  sq_mask_ = slots - 1;
  const uint32_t sge_per = init.cap.max_send_sge ? init.cap.max_send_sge : 1;
  sq_sges_.resize(static_cast<size_t>(slots) * sge_per);
  sq_inline_.resize(static_cast<size_t>(slots) * init.cap.max_inline_data);
  if (!init.srq) rq_ = std::make_unique<RecvQueue>(init.cap.max_recv_wr, init.cap.max_recv_sge);
  if (init.type == QpType::kRc) rtt_ring_.resize(params::kRttRing);
  attr_.cap = init.cap;
  attr_.qp_state = QpState::kReset;
  attr_.path_mtu = Mtu::k1024;
  sr_ = dev->cfg_.selective_repeat && init.type == QpType::kRc && init.xrc == XrcRole::kNone;
}

Qp::~Qp() = default;

int Qp::set_selective_repeat(bool on) {
  if (attr_.qp_state != QpState::kReset || (on && (type() != QpType::kRc || init_.xrc != XrcRole::kNone)))
    return EINVAL;
  sr_ = on;
  return 0;
}

RecvQueue& Qp::rq() { return init_.srq ? init_.srq->rq : *rq_; }

int Qp::modify(const QpAttr& a, uint32_t mask) {
  dev_->activate(this);
  const QpState cur = attr_.qp_state;
  if ((mask & kQpCurState) && a.cur_qp_state != cur) return EINVAL;
  const QpState next = (mask & kQpState) ? a.qp_state : cur;
  if (static_cast<int>(next) > static_cast<int>(QpState::kErr)) return EINVAL;
  const Rule& rule = kRules[static_cast<int>(cur)][static_cast<int>(next)];
  const int t = type_index(type(), init_.xrc);
  const uint32_t given = mask & ~kQpState;
  if (!rule.valid || (given & rule.req[t]) != rule.req[t] || (given & ~(rule.req[t] | rule.opt[t])))
    return EINVAL;
  if (!values_valid(a, mask, dev_->cfg_.port_mtu)) return EINVAL;
  if (mask & kQpAv) {
    // The source GID must exist and be of the destination's family (IPv4-mapped or IPv6).
    const Gid* sgid = dev_->gid(a.ah.sgid_index);
    if (!sgid || gid_is_ipv4(*sgid) != gid_is_ipv4(a.ah.dgid)) return EINVAL;
    wire::MacAddr mac;
    if (!dev_->resolve_mac(a.ah.dgid, &mac)) return EHOSTUNREACH;
  }

  if (mask & kQpAccessFlags) attr_.qp_access_flags = a.qp_access_flags;
  if (mask & kQpQkey) attr_.qkey = a.qkey;
  if (mask & kQpAv) attr_.ah = a.ah;
  if (mask & kQpPathMtu) attr_.path_mtu = a.path_mtu;
  if (mask & kQpTimeout) attr_.timeout = a.timeout;
  if (mask & kQpRetryCnt) attr_.retry_cnt = comp_.retry_left = a.retry_cnt;
  if (mask & kQpRnrRetry) attr_.rnr_retry = comp_.rnr_retry_left = a.rnr_retry;
  if (mask & kQpRqPsn) attr_.rq_psn = resp_.epsn = a.rq_psn & kPsnMask;
  if (mask & kQpSqPsn) attr_.sq_psn = req_.npsn = comp_.una = a.sq_psn & kPsnMask;
  if (mask & kQpMaxQpRdAtomic) attr_.max_rd_atomic = a.max_rd_atomic;
  if (mask & kQpMaxDestRdAtomic) {
    attr_.max_dest_rd_atomic = a.max_dest_rd_atomic;
    resp_.res.assign(a.max_dest_rd_atomic ? a.max_dest_rd_atomic : 1, RdAtomicRes{});
  }
  if (mask & kQpMinRnrTimer) attr_.min_rnr_timer = a.min_rnr_timer;
  if (mask & kQpDestQpn) attr_.dest_qp_num = a.dest_qp_num;
  if (mask & kQpEnSqdAsyncNotify) attr_.en_sqd_async_notify = a.en_sqd_async_notify;
  if (mask & kQpRateLimit) attr_.rate_limit_kbps = a.rate_limit_kbps;

  if ((next == QpState::kErr || next == QpState::kReset) &&
      (cur == QpState::kRtr || cur == QpState::kRts || cur == QpState::kSqd || cur == QpState::kSqe))
    resp_flush_acks();
  attr_.qp_state = next;
  if (next == cur) {
    if (mask & kQpAv) build_template();
    return 0;
  }
  switch (next) {
    case QpState::kReset:
      flush();  // no completions from RESET: drop everything quietly
      reset_connection();
      break;
    case QpState::kInit:
      break;
    case QpState::kRtr:
      build_template();
      resp_.jobs.assign(2u * attr_.max_dest_rd_atomic + 8u, RespJob{});
      resp_.jobs_head = resp_.jobs_count = 0;
      resp_.seq = RespSeq::kInOrder;
      resp_.msg = RespMsg::kIdle;
      resp_sr_setup();
      break;
    case QpState::kRts:
      if (cur != QpState::kRtr) break;  // SQD -> RTS resumes the same connection
      req_.psn_hw = req_.npsn;
      comp_.sr = SrRequester{};
      if (sr_) comp_.sr.resent.assign(params::kSrWindow, SrRequester::Resent{});
      // No credits are advertised before the first ACK: send one probe message at a time until then.
      req_.credits = 0;
      req_.probe_at = 0;
      break;
    case QpState::kSqd:
      attr_.sq_draining = true;
      sqd_check_drained();  // an idle send queue is drained at once
      break;
    case QpState::kSqe:
      break;
    case QpState::kErr:
      attr_.qp_state = cur;  // enter_error does the transition and the flush
      enter_error();
      break;
  }
  return 0;
}

std::string Qp::debug_state() const {
  const auto name = [](std::string_view v) { return static_cast<int>(v.size()); };
  const std::string_view wait = state_name(req_wait(), kReqWaitNames);
  const std::string_view go_back = state_name(comp_.go_back, kGoBackNames);
  const std::string_view msg = state_name(resp_.msg, kRespMsgNames);
  const std::string_view seq = state_name(resp_.seq, kRespSeqNames);
  char buf[384];
  std::snprintf(
      buf, sizeof(buf),
      "qp %u %s: sq post=%u send=%u.%u comp=%u head=%d/%d | req npsn=%u hw=%u rd_out=%u credits=%lld "
      "wait=%.*s | comp una=%u retry_left=%u timer=%s go_back=%.*s@%u | resp epsn=%u msn=%u msg=%.*s "
      "seq=%.*s wqe=%d jobs=%u",
      qpn_, qp_state_name(attr_.qp_state), post_idx_, send_idx_, send_pkt_, comp_idx_,
      static_cast<int>(sq_at(send_idx_).state), static_cast<int>(sq_at(send_idx_).status), req_.npsn,
      req_.psn_hw, req_.rd_atomic_out, static_cast<long long>(req_.credits), name(wait), wait.data(),
      comp_.una, comp_.retry_left, comp_.retry_deadline == kNever ? "off" : "on", name(go_back),
      go_back.data(), comp_.rewound_at, resp_.epsn, resp_.msn, name(msg), msg.data(), name(seq), seq.data(),
      resp_.wqe.has_value(), resp_.jobs_count);
  return buf;
}

void Qp::query(QpAttr* out) const {
  *out = attr_;
  out->cur_qp_state = attr_.qp_state;
  out->sq_psn = req_.npsn;
  out->rq_psn = resp_.epsn;
  out->sq_draining = attr_.qp_state == QpState::kSqd && !sq_idle();
}

bool Qp::sq_idle() const { return comp_idx_ == post_idx_ || sq_at(comp_idx_).state == WqeState::kPosted; }

// The SQ Drained event is raised once every WQE started before SQD has completed.
void Qp::sqd_check_drained() {
  if (attr_.qp_state != QpState::kSqd || !attr_.sq_draining || !sq_idle()) return;
  attr_.sq_draining = false;
  if (attr_.en_sqd_async_notify) dev_->raise(EventType::kSqDrained, qpn_);
}

// RESET ends the connection: a QP connected again starts with fresh sequence state, MSN 0 and
// no saved READ/ATOMIC results. Attributes stay until the next transitions set them.
void Qp::reset_connection() {
  post_idx_ = send_idx_ = comp_idx_ = send_pkt_ = 0;
  while (!init_.srq && !rq().empty()) rq().pop();
  req_.pkts_since_ackreq = 0;
  req_.rnr_until = 0;
  comp_.go_back = GoBack::kNone;
  comp_.gap_psn = 0;
  comp_.sr = SrRequester{};
  pace_start_ns_ = 0;
  pace_len_ = 0;
  resp_.msn = 0;
  resp_.seq = RespSeq::kInOrder;
  resp_.nak_gap_psn = 0;
  resp_.recv_off = 0;
  resp_.write_va = resp_.write_left = resp_.write_len = 0;
  std::fill(resp_.res.begin(), resp_.res.end(), RdAtomicRes{});
  resp_.res_next = 0;
  resp_.unacked_pkts = 0;
  resp_.last_req_ns = UINT64_MAX;
  resp_.hold_misses = resp_.since_probe = 0;  // a new connection's requester may stream
  resp_.zero_credits_sent = false;
  resp_.comm_est = false;
}

void Qp::build_template() { fill_headers(attr_.ah, attr_.dest_qp_num, &hdr_); }

void Qp::fill_headers(const AddressVector& av, uint32_t dqpn, wire::PacketHeaders* out) const {
  wire::PacketHeaders& h = *out;
  h = wire::PacketHeaders{};
  const DeviceConfig& cfg = dev_->cfg_;
  h.eth.src = cfg.mac;
  dev_->resolve_mac(av.dgid, &h.eth.dst);
  h.eth.vlan = cfg.vlan;
  h.eth.vid = cfg.vlan_id;
  h.eth.pcp = av.sl & 7;
  h.ip.ipv6 = !gid_is_ipv4(av.dgid);
  const Gid* src = dev_->gid(av.sgid_index);
  h.ip.src = src ? *src : cfg.gid;
  h.ip.dst = av.dgid;
  h.ip.tclass = av.traffic_class;
  h.ip.ttl = av.hop_limit ? av.hop_limit : 64;
  h.ip.flow_label = av.flow_label;
  // Flow entropy (A17.3.1): a hash of the QP pair in the dynamic port range, so ECMP spreads QPs.
  const uint32_t x = (qpn_ * 0x9E3779B1u) ^ (dqpn * 0x85EBCA77u);
  h.udp_sport =
      av.src_port_entropy ? av.src_port_entropy : static_cast<uint16_t>(0xC000 | ((x >> 16) & 0x3FFF));
  h.bth.dqpn = dqpn;
  h.bth.pkey = 0xFFFF;
}

void Qp::complete_send(SendWqe& w, WcStatus status) {
  const bool signaled = init_.sq_sig_all || (w.flags & kSendSignaled) || status != WcStatus::kSuccess;
  if (!signaled) return;
  Wc wc;
  wc.wr_id = w.wr_id;
  wc.status = status;
  wc.qp_num = qpn_;
  const WrOpInfo& op = kWrOps[static_cast<uint8_t>(w.opcode)];
  wc.opcode = op.wc;
  if (w.opcode == WrOpcode::kRdmaRead) wc.byte_len = static_cast<uint32_t>(w.length);
  if (op.wc_len) wc.byte_len = op.wc_len;
  if (!init_.send_cq->push(wc, true)) dev_->raise(EventType::kCqErr, init_.send_cq->handle());
}

void Qp::complete_recv(const RecvWqe& w, WcStatus status, uint32_t byte_len, WcOpcode op, uint32_t flags,
                       uint32_t imm, uint32_t src_qp, bool solicited, uint8_t sl) {
  Wc wc;
  wc.wr_id = w.wr_id;
  wc.status = status;
  wc.opcode = op;
  wc.byte_len = byte_len;
  wc.imm_data_be = imm;
  wc.wc_flags = flags;
  wc.qp_num = qpn_;
  wc.src_qp = src_qp;
  wc.sl = sl;
  if (!init_.recv_cq->push(wc, solicited)) dev_->raise(EventType::kCqErr, init_.recv_cq->handle());
}

void Qp::enter_error() {
  if (attr_.qp_state == QpState::kErr) return;
  attr_.qp_state = QpState::kErr;
  flush();
}

// Completes everything outstanding with WR_FLUSH_ERR (in ERR) or silently (in RESET). Flush completions are
// generated for unsignaled WQEs too, as RNICs do, so the application can reclaim every buffer.
void Qp::flush() {
  const bool report = attr_.qp_state == QpState::kErr;
  for (; comp_idx_ != post_idx_; ++comp_idx_) {
    SendWqe& w = sq_at(comp_idx_);
    if (report) complete_send(w, w.status != WcStatus::kSuccess ? w.status : WcStatus::kWrFlushErr);
  }
  send_idx_ = comp_idx_;
  send_pkt_ = 0;
  req_.rd_atomic_out = 0;
  req_.credit_msgs_out = 0;
  req_.probe_at = 0;
  req_.inflight_bytes = 0;
  comp_.retry_deadline = kNever;
  resp_.jobs_count = 0;
  if (resp_.wqe && report)
    complete_recv(*resp_.wqe, WcStatus::kWrFlushErr, 0, WcOpcode::kRecv, 0, 0, 0, true);
  resp_.wqe.reset();
  resp_.msg = RespMsg::kIdle;
  if (init_.srq) {
    if (report) dev_->raise(EventType::kQpLastWqeReached, qpn_);
    return;
  }
  while (report && !rq_->empty()) {
    complete_recv(rq_->front(), WcStatus::kWrFlushErr, 0, WcOpcode::kRecv, 0, 0, 0, true);
    rq_->pop();
  }
}

}  // namespace uroce
