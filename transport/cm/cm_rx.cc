// CmAgent: received MADs, one handler per CM message (Linux cm.c cm_*_handler and cma.c's event mapping).
// A handler returns what became of the MAD; nothing a peer sends can crash the agent, and a MAD that is not
// valid for the connection's state changes nothing.
#include <algorithm>
#include <cerrno>

#include "transport/cm/cm_conn.h"

namespace uroce::cm {

namespace {

template <size_t N>
std::vector<uint8_t> tail(const std::array<uint8_t, N>& a, size_t from) {
  return std::vector<uint8_t>(a.begin() + static_cast<std::ptrdiff_t>(from), a.end());
}

bool is_zero(const Gid& g) {
  return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

void CmAgent::on_mad(const Address& from, std::span<const uint8_t> bytes) {
  CmMad m;
  const MadError err = decode_mad(bytes, &m);
  RxResult r = RxResult::kMalformed;
  if (err != MadError::kOk) {
    ++stats_.malformed[static_cast<size_t>(err)];
  } else {
    r = std::visit(
        [&](const auto& b) -> RxResult {
          using T = std::decay_t<decltype(b)>;
          if constexpr (std::is_same_v<T, Req>) return rx_req(from, m.hdr, b);
          if constexpr (std::is_same_v<T, Mra>) return rx_mra(b);
          if constexpr (std::is_same_v<T, Rej>) return rx_rej(b);
          if constexpr (std::is_same_v<T, Rep>) return rx_rep(from, b);
          if constexpr (std::is_same_v<T, Rtu>) return rx_rtu(b);
          if constexpr (std::is_same_v<T, Dreq>) return rx_dreq(from, m.hdr, b);
          if constexpr (std::is_same_v<T, Drep>) return rx_drep(b);
          if constexpr (std::is_same_v<T, SidrReq>) return rx_sidr_req(from, m.hdr, b);
          if constexpr (std::is_same_v<T, SidrRep>) return rx_sidr_rep(b);
        },
        m.body);
  }
  ++stats_.rx[static_cast<size_t>(r)];
}

void CmAgent::send_rej_unmatched(const Address& to, uint64_t tid, uint32_t remote_comm_id, uint16_t reason) {
  // Linux cm_issue_rej: no comm ID of ours, the REQ's as the remote one, the REQ's TID.
  Rej r;
  r.remote_comm_id = remote_comm_id;
  r.message_rejected = 0;
  r.reason = reason;
  MadHeader rh;
  rh.tid = tid;
  send(to, rh, r);
}

bool CmAgent::hold_req(const Address& from, const MadHeader& h, const Req& m) {
  if (redispatching_ || cfg_.no_listener_grace_ns == 0 || held_.size() >= kMaxHeldReqs) return false;
  for (const HeldReq& r : held_)  // a retransmission of a REQ already held waits with it
    if (r.remote_comm_id == m.local_comm_id && r.from.gid == from.gid) return true;
  held_.push_back({from, encode_mad(h, CmBody{m}), m.service_id, h.tid, m.local_comm_id,
                   now_ns() + cfg_.no_listener_grace_ns});
  return true;
}

const CmAgent::Listener* CmAgent::pick_listener(uint64_t service_id, const Gid* dst_ip) const {
  auto [lo, hi] = listeners_.equal_range(service_id);
  const Listener* wildcard = nullptr;
  for (auto it = lo; it != hi; ++it) {
    if (is_zero(it->second.p.ip))
      wildcard = &it->second;
    else if (dst_ip && it->second.p.ip == *dst_ip)
      return &it->second;
  }
  return wildcard;
}

// --- REQ (passive side) ---

RxResult CmAgent::rx_req(const Address& from, const MadHeader& h, const Req& m) {
  // A retransmitted REQ (Linux cm_dup_req_handler): the rdma_cm's delayed MRA goes out now if the consumer
  // has not answered yet; in timewait the connection is stale.
  if (auto it = by_remote_.find({m.local_comm_id, m.local_ca_guid}); it != by_remote_.end()) {
    Conn& c = *conns_.at(it->second);
    if (c.state == CmState::kReqRcvd || c.state == CmState::kMraReqSent) {
      send_mra(c, 0);
      c.state = CmState::kMraReqSent;
    } else if (c.state == CmState::kTimewait) {
      send_rej(c, kRejStaleConn, {}, {});
    }
    return RxResult::kDuplicate;
  }

  auto reject_unmatched = [&](uint16_t reason) { send_rej_unmatched(from, h.tid, m.local_comm_id, reason); };
  // A new comm ID from a QP we are still connected to (Linux cm_match_req, cm_insert_remote_qpn): the peer
  // lost that connection; the new one is refused as stale and the old one disconnected.
  if (auto it = by_remote_qpn_.find({m.local_qpn, m.local_ca_guid}); it != by_remote_qpn_.end()) {
    reject_unmatched(kRejStaleConn);
    Conn& old = *conns_.at(it->second);
    if (old.state == CmState::kEstablished) {
      old.state = CmState::kDreqSent;
      send_dreq(old, {}, true);
    }
    return RxResult::kStale;
  }
  auto [lo, hi] = listeners_.equal_range(m.service_id);
  if (lo == hi) {
    if (!hold_req(from, h, m)) reject_unmatched(kRejInvalidServiceId);
    return RxResult::kNoListener;
  }
  const bool want_cma = lo->second.p.cma;
  CmaHdr cma;
  if (want_cma && decode_cma_hdr(m.private_data, &cma) != CmaError::kOk) {
    reject_unmatched(kRejConsumerDefined);  // the rdma_cm refuses it, the IB CM sends REJ 28
    return RxResult::kBadCmaHdr;
  }
  const Listener* l = pick_listener(m.service_id, want_cma ? &cma.dst_ip : nullptr);
  if (!l && hold_req(from, h, m)) return RxResult::kNoListener;
  const uint32_t comm_id = l ? alloc_comm_id() : 0;
  if (!l || comm_id == 0) {
    reject_unmatched(l ? kRejNoResources : kRejInvalidServiceId);
    return RxResult::kNoListener;
  }

  Conn& c = new_conn(CmState::kReqRcvd, false, false);
  c.local_comm_id = comm_id;
  by_comm_id_.emplace(comm_id, c.id);
  c.remote_comm_id = m.local_comm_id;
  c.remote_guid = m.local_ca_guid;
  by_remote_.emplace(std::pair{c.remote_comm_id, c.remote_guid}, c.id);
  by_remote_qpn_.emplace(std::pair{m.local_qpn, c.remote_guid}, c.id);
  c.has_remote_key = true;
  c.tid = h.tid;
  c.peer = from;
  c.service_id = m.service_id;
  c.listen_id = l->id;
  c.remote_qpn = m.local_qpn;
  // Linux cm_req_handler: the REP waits the REQ's local CM response time, with the REQ's retry count.
  c.timeout_ms = cm_convert_to_ms(m.local_cm_response_timeout);
  c.max_cm_retries = m.max_cm_retries;
  c.path.sgid = m.primary.remote_gid;
  c.path.dgid = m.primary.local_gid;
  c.path.flow_label = m.primary.flow_label;
  c.path.hop_limit = m.primary.hop_limit;
  c.path.traffic_class = m.primary.traffic_class;
  c.path.sl = m.primary.sl;
  c.path.packet_life_time = m.primary.local_ack_timeout > 0 ? m.primary.local_ack_timeout - 1 : 0;

  Event ev = base_event(c, EventType::kConnectRequest);
  ev.listen_id = l->id;
  ev.peer_starting_psn = m.starting_psn;
  ev.responder_resources = m.initiator_depth;
  ev.initiator_depth = m.responder_resources;
  ev.retry_count = m.retry_count;
  ev.rnr_retry_count = m.rnr_retry_count;
  ev.path_mtu = m.path_mtu;
  ev.qp_timeout = m.primary.local_ack_timeout;
  ev.flow_control = m.flow_control;
  ev.srq = m.srq;
  ev.transport = m.transport;
  ev.has_cma = want_cma;
  ev.cma = cma;
  ev.private_data = tail(m.private_data, want_cma ? kCmaHdrLen : 0);
  emit(c, std::move(ev));
  return RxResult::kHandled;
}

// --- replies to the active side ---

RxResult CmAgent::rx_rep(const Address& from, const Rep& m) {
  Conn* c = by_comm_id(m.remote_comm_id);
  if (!c || c->ud) return RxResult::kUnknownId;
  if (c->state == CmState::kReqSent || c->state == CmState::kMraReqRcvd) {
    disarm(*c);
    c->state = CmState::kRepRcvd;
    c->remote_comm_id = m.local_comm_id;
    c->remote_qpn = m.local_qpn;
    c->remote_guid = m.local_ca_guid;
    c->peer = from;
    Event ev = base_event(*c, EventType::kConnectResponse);
    ev.peer_starting_psn = m.starting_psn;
    ev.responder_resources = m.initiator_depth;
    ev.initiator_depth = m.responder_resources;
    ev.rnr_retry_count = m.rnr_retry_count;
    ev.qp_timeout = cm_ack_timeout(m.target_ack_delay, c->path.packet_life_time);
    ev.flow_control = m.flow_control;
    ev.srq = m.srq;
    ev.private_data = tail(m.private_data, 0);
    emit(*c, std::move(ev));
    return RxResult::kHandled;
  }
  if (m.local_comm_id != c->remote_comm_id) return RxResult::kIdMismatch;
  // A retransmitted REP (Linux cm_dup_rep_handler): delayed MRA while the consumer decides, RTU once done.
  switch (c->state) {
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
      send_mra(*c, 1);
      c->state = CmState::kMraRepSent;
      return RxResult::kDuplicate;
    case CmState::kEstablished:
      outbox_.push_back({c->peer, c->rtu});
      ++stats_.tx;
      return RxResult::kDuplicate;
    default:
      return RxResult::kUnexpected;
  }
}

RxResult CmAgent::rx_mra(const Mra& m) {
  Conn* c = by_comm_id(m.remote_comm_id);
  if (!c || c->ud) return RxResult::kUnknownId;
  if (c->remote_comm_id && m.local_comm_id != c->remote_comm_id) return RxResult::kIdMismatch;
  CmState next;
  if (c->state == CmState::kReqSent && m.message_mraed == 0)
    next = CmState::kMraReqRcvd;
  else if (c->state == CmState::kRepSent && m.message_mraed == 1)
    next = CmState::kMraRepRcvd;
  else if (c->state == CmState::kMraReqRcvd || c->state == CmState::kMraRepRcvd)
    return RxResult::kDuplicate;
  else
    return RxResult::kUnexpected;
  // Linux cm_mra_handler: the peer's service time plus the path's ACK timeout before the next retry.
  c->state = next;
  c->cur_timeout_ms = cm_convert_to_ms(m.service_timeout) +
                      cm_convert_to_ms(static_cast<uint8_t>(c->path.packet_life_time + 1));
  arm(*c, now_ns() + c->cur_timeout_ms * 1'000'000);
  return RxResult::kHandled;
}

RxResult CmAgent::rx_rej(const Rej& m) {
  Conn* c = nullptr;
  if (m.reason == kRejTimeout && m.ari_length >= 8) {
    // Linux cm_acquire_rejected_id: an active side that gave up before it learnt our comm ID names itself
    // by its comm ID and, in the ARI, its CA GUID.
    uint64_t guid = 0;
    for (int i = 0; i < 8; ++i) guid = guid << 8 | m.ari[static_cast<size_t>(i)];
    if (auto it = by_remote_.find({m.local_comm_id, guid}); it != by_remote_.end())
      c = conns_.at(it->second).get();
  } else {
    c = by_comm_id(m.remote_comm_id);
  }
  if (!c || c->ud) return RxResult::kUnknownId;
  if (c->remote_comm_id && m.local_comm_id && m.local_comm_id != c->remote_comm_id)
    return RxResult::kIdMismatch;
  switch (c->state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
    case CmState::kReqRcvd:
    case CmState::kMraReqSent:
      if (m.reason == kRejStaleConn)
        enter_timewait(*c);
      else
        to_idle(*c);
      break;
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
    case CmState::kEstablished:
      enter_timewait(*c);
      break;
    default:
      return RxResult::kUnexpected;
  }
  Event ev = base_event(*c, EventType::kRejected);
  ev.status = m.reason;
  ev.private_data = tail(m.private_data, 0);
  emit(*c, std::move(ev));
  return RxResult::kHandled;
}

RxResult CmAgent::rx_rtu(const Rtu& m) {
  Conn* c = by_comm_id(m.remote_comm_id);
  if (!c || c->ud) return RxResult::kUnknownId;
  if (m.local_comm_id != c->remote_comm_id) return RxResult::kIdMismatch;
  if (c->state == CmState::kEstablished) return RxResult::kDuplicate;
  if (c->state != CmState::kRepSent && c->state != CmState::kMraRepRcvd) return RxResult::kUnexpected;
  disarm(*c);
  c->state = CmState::kEstablished;
  emit(*c, base_event(*c, EventType::kEstablished));  // passive: no connection parameters
  return RxResult::kHandled;
}

// --- disconnection ---

RxResult CmAgent::rx_dreq(const Address& from, const MadHeader& h, const Dreq& m) {
  Conn* c = by_comm_id(m.remote_comm_id);
  if (!c || c->ud || m.local_comm_id != c->remote_comm_id) {
    // Linux cm_issue_drep: a DREQ for a connection this agent does not know is answered, so that a peer
    // whose DREP was lost (or that lost its state) leaves timewait instead of retrying.
    Drep d;
    d.local_comm_id = m.remote_comm_id;
    d.remote_comm_id = m.local_comm_id;
    MadHeader rh;
    rh.tid = h.tid;
    send(from, rh, d);
    return c ? RxResult::kIdMismatch : RxResult::kUnknownId;
  }
  // Linux cm_dreq_handler: the DREQ must name our QP.
  if (m.remote_qpn != c->local_qpn) return RxResult::kBadQpn;
  switch (c->state) {
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
    case CmState::kEstablished:
    case CmState::kDreqSent:
      disarm(*c);
      c->state = CmState::kDreqRcvd;
      c->tid = h.tid;
      report_disconnect(*c, 0);
      return RxResult::kHandled;
    case CmState::kTimewait:
      c->tid = h.tid;
      send_drep(*c, {});
      return RxResult::kDuplicate;
    case CmState::kDreqRcvd:
      return RxResult::kDuplicate;
    default:
      return RxResult::kUnexpected;
  }
}

RxResult CmAgent::rx_drep(const Drep& m) {
  Conn* c = by_comm_id(m.remote_comm_id);
  if (!c || c->ud) return RxResult::kUnknownId;
  if (m.local_comm_id != c->remote_comm_id) return RxResult::kIdMismatch;
  if (c->state == CmState::kTimewait) return RxResult::kDuplicate;
  if (c->state != CmState::kDreqSent && c->state != CmState::kDreqRcvd) return RxResult::kUnexpected;
  enter_timewait(*c);
  report_disconnect(*c, 0);
  return RxResult::kHandled;
}

// --- SIDR ---

RxResult CmAgent::rx_sidr_req(const Address& from, const MadHeader& h, const SidrReq& m) {
  if (by_sidr_remote_.contains({m.request_id, from.gid})) return RxResult::kDuplicate;
  auto answer = [&](uint8_t status) {
    SidrRep s;
    s.request_id = m.request_id;
    s.status = status;
    s.service_id = m.service_id;
    MadHeader rh;
    rh.tid = h.tid;
    send(from, rh, s);
  };
  auto [lo, hi] = listeners_.equal_range(m.service_id);
  if (lo == hi) {
    answer(kSidrUnsupported);
    return RxResult::kNoListener;
  }
  const bool want_cma = lo->second.p.cma;
  CmaHdr cma;
  if (want_cma && decode_cma_hdr(m.private_data, &cma) != CmaError::kOk) {
    answer(kSidrReject);
    return RxResult::kBadCmaHdr;
  }
  const Listener* l = pick_listener(m.service_id, want_cma ? &cma.dst_ip : nullptr);
  if (!l) {
    answer(kSidrUnsupported);
    return RxResult::kNoListener;
  }
  Conn& c = new_conn(CmState::kSidrReqRcvd, false, true);
  c.remote_comm_id = m.request_id;
  c.tid = h.tid;
  c.peer = from;
  by_sidr_remote_.emplace(std::pair{m.request_id, from.gid}, c.id);
  c.has_remote_key = true;
  c.service_id = m.service_id;
  c.listen_id = l->id;
  c.path.dgid = from.gid;
  if (want_cma) c.path.sgid = cma.dst_ip;

  Event ev = base_event(c, EventType::kConnectRequest);
  ev.listen_id = l->id;
  ev.has_cma = want_cma;
  ev.cma = cma;
  ev.private_data = tail(m.private_data, want_cma ? kCmaHdrLen : 0);
  emit(c, std::move(ev));
  return RxResult::kHandled;
}

RxResult CmAgent::rx_sidr_rep(const SidrRep& m) {
  Conn* c = by_comm_id(m.request_id);
  if (!c || !c->ud) return RxResult::kUnknownId;
  if (c->state != CmState::kSidrReqSent) return RxResult::kDuplicate;
  to_idle(*c);
  Event ev = base_event(*c, m.status == kSidrSuccess ? EventType::kEstablished : EventType::kUnreachable);
  ev.status = m.status;
  if (m.status == kSidrSuccess) {
    ev.peer_qpn = m.qpn;
    ev.qkey = m.qkey;
    ev.private_data = tail(m.private_data, 0);
  }
  emit(*c, std::move(ev));
  return RxResult::kHandled;
}

}  // namespace uroce::cm
