// CmAgent: consumer calls, message formatting, timers. Received MADs are handled in cm_rx.cc.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/cm/cm_conn.h"

namespace uroce::cm {

namespace {
constexpr uint64_t kNsPerMs = 1'000'000;

template <size_t N>
bool copy_private(std::array<uint8_t, N>& dst, size_t offset, std::span<const uint8_t> src) {
  if (src.size() > N - offset) return false;
  std::copy(src.begin(), src.end(), dst.begin() + static_cast<std::ptrdiff_t>(offset));
  return true;
}
}  // namespace

const char* cm_state_name(CmState s) {
  static constexpr const char* kNames[] = {"IDLE",         "LISTEN",       "REQ_SENT",      "REQ_RCVD",
                                           "MRA_REQ_SENT", "MRA_REQ_RCVD", "REP_SENT",      "REP_RCVD",
                                           "MRA_REP_SENT", "MRA_REP_RCVD", "ESTABLISHED",   "DREQ_SENT",
                                           "DREQ_RCVD",    "TIMEWAIT",     "SIDR_REQ_SENT", "SIDR_REQ_RCVD"};
  static_assert(std::size(kNames) == static_cast<size_t>(CmState::kCount));
  const auto i = static_cast<size_t>(s);
  return i < std::size(kNames) ? kNames[i] : "?";
}

const char* event_name(EventType t) {
  switch (t) {
    case EventType::kConnectRequest:
      return "CONNECT_REQUEST";
    case EventType::kConnectResponse:
      return "CONNECT_RESPONSE";
    case EventType::kUnreachable:
      return "UNREACHABLE";
    case EventType::kRejected:
      return "REJECTED";
    case EventType::kEstablished:
      return "ESTABLISHED";
    case EventType::kDisconnected:
      return "DISCONNECTED";
    case EventType::kTimewaitExit:
      return "TIMEWAIT_EXIT";
  }
  return "?";
}

const char* rx_result_name(RxResult r) {
  static constexpr const char* kNames[] = {"handled",    "malformed", "unknown_id",  "id_mismatch",
                                           "unexpected", "bad_qpn",   "bad_cma_hdr", "no_listener",
                                           "duplicate",  "stale"};
  static_assert(std::size(kNames) == static_cast<size_t>(RxResult::kCount));
  const auto i = static_cast<size_t>(r);
  return i < std::size(kNames) ? kNames[i] : "?";
}

// Linux cm_ack_timeout: the packet life time plus one, raised so that it also covers the CA's ACK delay.
uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time) {
  int t = packet_life_time + 1;
  if (t >= ca_ack_delay)
    t += ca_ack_delay >= t - 1;
  else
    t = ca_ack_delay + (t >= ca_ack_delay - 1);
  return static_cast<uint8_t>(std::min(t, 31));
}

CmAgent::CmAgent(const AgentConfig& cfg, const Clock& clock, std::function<uint32_t()> random)
    : cfg_(cfg), clock_(clock), random_(std::move(random)) {
  cfg_.id_index_bits = std::min(cfg_.id_index_bits, 24u);
  hi_tid_ = random_();
  next_seq_ = random_();
}

CmAgent::~CmAgent() = default;

// --- ids ---

uint32_t CmAgent::alloc_comm_id() {
  const unsigned low_bits = 32 - cfg_.id_index_bits;
  const uint32_t mask = low_bits >= 32 ? ~0u : (1u << low_bits) - 1;
  const uint32_t top = cfg_.id_index_bits ? cfg_.id_index << low_bits : 0;
  for (uint64_t tries = 0; tries <= mask; ++tries) {
    const uint32_t id = top | (next_seq_++ & mask);
    if (id != 0 && !by_comm_id_.contains(id)) return id;  // 0 means "no comm ID" in REJ
  }
  return 0;
}

CmAgent::Conn* CmAgent::find(CmId id) {
  auto it = conns_.find(id);
  return it == conns_.end() || it->second->destroyed ? nullptr : it->second.get();
}
const CmAgent::Conn* CmAgent::find(CmId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() || it->second->destroyed ? nullptr : it->second.get();
}

CmAgent::Conn* CmAgent::by_comm_id(uint32_t local_comm_id) {
  auto it = by_comm_id_.find(local_comm_id);
  return it == by_comm_id_.end() ? nullptr : conns_.at(it->second).get();
}

CmAgent::Conn& CmAgent::new_conn(CmState state, bool active, bool ud) {
  while (next_handle_ == 0 || conns_.contains(next_handle_)) ++next_handle_;
  auto c = std::make_unique<Conn>();
  c->id = next_handle_++;
  c->state = state;
  c->active = active;
  c->ud = ud;
  Conn& ref = *c;
  conns_.emplace(ref.id, std::move(c));
  return ref;
}

void CmAgent::drop_remote_key(Conn& c) {
  if (!c.has_remote_key) return;
  auto erase_mine = [&c](auto& map, const auto& key) {
    if (auto it = map.find(key); it != map.end() && it->second == c.id) map.erase(it);
  };
  if (c.ud) {
    erase_mine(by_sidr_remote_, std::pair{c.remote_comm_id, c.peer.gid});
  } else {
    erase_mine(by_remote_, std::pair{c.remote_comm_id, c.remote_guid});
    erase_mine(by_remote_qpn_, std::pair{c.remote_qpn, c.remote_guid});
  }
  c.has_remote_key = false;
}

void CmAgent::erase(Conn& c) {
  disarm(c);
  drop_remote_key(c);
  if (c.local_comm_id) by_comm_id_.erase(c.local_comm_id);
  conns_.erase(c.id);  // c is gone
}

CmState CmAgent::state(CmId id) const {
  const Conn* c = find(id);
  return c ? c->state : CmState::kIdle;
}

uint32_t CmAgent::local_comm_id(CmId id) const {
  const Conn* c = find(id);
  return c ? c->local_comm_id : 0;
}

// --- sending and timers ---

void CmAgent::send(const Address& to, const MadHeader& hdr, const CmBody& body) {
  outbox_.push_back({to, encode_mad(hdr, body)});
  ++stats_.tx;
}

void CmAgent::send_tracked(Conn& c, const CmBody& body, uint64_t tid, uint64_t timeout_ms, uint8_t retries) {
  MadHeader h;
  h.tid = tid;
  send(c.peer, h, body);
  c.last = outbox_.back().mad;
  c.cur_timeout_ms = timeout_ms;
  c.retries_left = retries;
  arm(c, now_ns() + timeout_ms * kNsPerMs);
}

void CmAgent::arm(Conn& c, uint64_t deadline_ns) {
  disarm(c);
  c.deadline = deadline_ns;
  timers_.insert({deadline_ns, c.id});
}

void CmAgent::disarm(Conn& c) {
  if (c.deadline == kNever) return;
  timers_.erase({c.deadline, c.id});
  c.deadline = kNever;
}

uint64_t CmAgent::next_deadline_ns() const {
  const uint64_t t = timers_.empty() ? kNever : timers_.begin()->first;
  return held_.empty() ? t : std::min(t, held_.front().deadline);
}

void CmAgent::poll() {
  const uint64_t now = now_ns();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    const CmId id = timers_.begin()->second;
    timers_.erase(timers_.begin());
    Conn& c = *conns_.at(id);
    c.deadline = kNever;
    on_timeout(c);
  }
  while (!held_.empty() && held_.front().deadline <= now) {
    const HeldReq r = held_.front();
    held_.pop_front();
    send_rej_unmatched(r.from, r.tid, r.remote_comm_id, kRejInvalidServiceId);
  }
}

void CmAgent::on_timeout(Conn& c) {
  if (c.state == CmState::kTimewait) {
    // After timewait the peer's comm ID may be reused; the consumer learns it with TIMEWAIT_EXIT.
    drop_remote_key(c);
    c.state = CmState::kIdle;
    if (c.destroyed) return erase(c);
    emit(c, base_event(c, EventType::kTimewaitExit));
    return;
  }
  if (c.retries_left > 0) {
    --c.retries_left;
    outbox_.push_back({c.peer, c.last});
    ++stats_.tx;
    ++stats_.retransmits;
    arm(c, now_ns() + c.cur_timeout_ms * kNsPerMs);
    return;
  }
  ++stats_.timeouts;
  switch (c.state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
    case CmState::kSidrReqSent: {
      to_idle(c);
      Event ev = base_event(c, EventType::kUnreachable);
      ev.status = -ETIMEDOUT;
      emit(c, std::move(ev));
      break;
    }
    case CmState::kDreqSent:
      enter_timewait(c);
      report_disconnect(c, -ETIMEDOUT);
      break;
    default:
      break;
  }
}

void CmAgent::to_idle(Conn& c) {
  disarm(c);
  drop_remote_key(c);
  c.state = CmState::kIdle;
}

void CmAgent::enter_timewait(Conn& c) {
  disarm(c);
  c.state = CmState::kTimewait;
  // Linux cm_enter_timewait: the path's ACK timeout (packet life time + 1), converted to ms.
  arm(c, now_ns() + cm_convert_to_ms(static_cast<uint8_t>(c.path.packet_life_time + 1)) * kNsPerMs);
}

Event CmAgent::base_event(const Conn& c, EventType t) const {
  Event ev;
  ev.type = t;
  ev.id = c.id;
  ev.ud = c.ud;
  ev.peer = c.peer;
  ev.service_id = c.service_id;
  ev.peer_guid = c.remote_guid;
  ev.peer_qpn = c.remote_qpn;
  ev.path = c.path;
  return ev;
}

void CmAgent::emit(Conn& c, Event ev) {
  if (!c.destroyed) events_.push_back(std::move(ev));
}

void CmAgent::report_disconnect(Conn& c, int status) {
  if (c.disconnect_reported) return;
  c.disconnect_reported = true;
  Event ev = base_event(c, EventType::kDisconnected);
  ev.status = status;
  emit(c, std::move(ev));
}

bool CmAgent::pop_mad(OutMad* out) {
  if (outbox_.empty()) return false;
  *out = outbox_.front();
  outbox_.pop_front();
  return true;
}

bool CmAgent::pop_event(Event* out) {
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

// --- message formatting ---

void CmAgent::send_rej(Conn& c, uint16_t reason, std::span<const uint8_t> ari,
                       std::span<const uint8_t> priv) {
  Rej r;
  // Linux cm_format_rej: a REQ not yet answered is rejected without a local comm ID.
  switch (c.state) {
    case CmState::kReqRcvd:
      r.message_rejected = 0;
      break;
    case CmState::kMraReqSent:
      r.local_comm_id = c.local_comm_id;
      r.message_rejected = 0;
      break;
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
      r.local_comm_id = c.local_comm_id;
      r.message_rejected = 1;
      break;
    default:
      r.local_comm_id = c.local_comm_id;
      r.message_rejected = 2;
      break;
  }
  r.remote_comm_id = c.remote_comm_id;
  r.reason = reason;
  r.ari_length = static_cast<uint8_t>(std::min(ari.size(), kRejAriLen));
  std::copy_n(ari.begin(), r.ari_length, r.ari.begin());
  copy_private(r.private_data, 0, priv.first(std::min(priv.size(), kRejPrivateLen)));
  MadHeader h;
  h.tid = c.tid;
  send(c.peer, h, r);
}

void CmAgent::send_mra(Conn& c, uint8_t message_mraed) {
  Mra m;
  m.local_comm_id = c.local_comm_id;
  m.remote_comm_id = c.remote_comm_id;
  m.message_mraed = message_mraed;
  m.service_timeout = kCmaMraServiceTimeout;
  MadHeader h;
  h.tid = c.tid;
  send(c.peer, h, m);
}

void CmAgent::send_dreq(Conn& c, std::span<const uint8_t> priv, bool track) {
  Dreq d;
  d.local_comm_id = c.local_comm_id;
  d.remote_comm_id = c.remote_comm_id;
  d.remote_qpn = c.remote_qpn;
  copy_private(d.private_data, 0, priv);
  // Linux cm_format_dreq: a new TID of this agent's, not the REQ's.
  const uint64_t tid = form_tid(hi_tid_, c.local_comm_id);
  if (track) return send_tracked(c, d, tid, c.timeout_ms, c.max_cm_retries);
  MadHeader h;
  h.tid = tid;
  send(c.peer, h, d);
}

void CmAgent::send_drep(Conn& c, std::span<const uint8_t> priv) {
  Drep d;
  d.local_comm_id = c.local_comm_id;
  d.remote_comm_id = c.remote_comm_id;
  copy_private(d.private_data, 0, priv);
  MadHeader h;
  h.tid = c.tid;  // the DREQ's
  send(c.peer, h, d);
}

// --- consumer calls ---

int CmAgent::listen(const ListenParams& p, CmId* out) {
  auto [lo, hi] = listeners_.equal_range(p.service_id);
  for (auto it = lo; it != hi; ++it)
    if (it->second.p.ip == p.ip) return -EADDRINUSE;
  Conn& c = new_conn(CmState::kListen, false, false);
  c.service_id = p.service_id;
  listeners_.emplace(p.service_id, Listener{c.id, p});
  *out = c.id;
  // The REQs that came for this service before it listened are taken now (or rejected at once if they
  // name another address).
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->service_id != p.service_id) {
      ++it;
      continue;
    }
    const HeldReq r = *it;
    it = held_.erase(it);
    redispatching_ = true;
    on_mad(r.from, r.mad);
    redispatching_ = false;
  }
  return 0;
}

int CmAgent::connect(const ConnectParams& p, CmId* out) {
  const size_t hdr = p.cma ? kCmaHdrLen : 0;
  if (p.private_data.size() + hdr > (p.ud ? kSidrReqPrivateLen : kReqPrivateLen)) return -EINVAL;
  const uint32_t comm_id = alloc_comm_id();
  if (comm_id == 0) return -ENOMEM;
  Conn& c = new_conn(p.ud ? CmState::kSidrReqSent : CmState::kReqSent, true, p.ud);
  c.local_comm_id = comm_id;
  by_comm_id_.emplace(comm_id, c.id);
  c.tid = form_tid(hi_tid_, comm_id);
  c.peer = Address{p.path.dgid, kGsiQpn};
  c.service_id = p.service_id;
  c.path = p.path;
  c.max_cm_retries = p.max_cm_retries;
  *out = c.id;

  if (p.ud) {
    // Linux cma_resolve_ib_udp: 1 << (CMA_CM_RESPONSE_TIMEOUT - 8) ms per try.
    c.timeout_ms = cm_convert_to_ms(p.cm_response_timeout);
    SidrReq s;
    s.request_id = comm_id;
    s.service_id = p.service_id;
    if (p.cma) encode_cma_hdr(p.cma_hdr, s.private_data.data());
    copy_private(s.private_data, hdr, p.private_data);
    send_tracked(c, s, c.tid, c.timeout_ms, c.max_cm_retries);
    return 0;
  }

  // Linux cm_send_req: twice the packet life time plus the peer's CM response time.
  c.timeout_ms = 2 * cm_convert_to_ms(p.path.packet_life_time) + cm_convert_to_ms(p.cm_response_timeout);
  c.local_qpn = p.qpn;
  Req r;
  r.local_comm_id = comm_id;
  r.service_id = p.service_id;
  r.local_ca_guid = cfg_.local_guid;
  r.local_qpn = p.qpn;
  r.responder_resources = p.responder_resources;
  r.initiator_depth = p.initiator_depth;
  r.remote_cm_response_timeout = p.cm_response_timeout;
  r.transport = p.transport;
  r.flow_control = p.flow_control;
  r.starting_psn = p.starting_psn & 0xFFFFFF;
  r.local_cm_response_timeout = p.cm_response_timeout;
  r.retry_count = std::min<uint8_t>(p.retry_count, 7);
  r.rnr_retry_count = std::min<uint8_t>(p.rnr_retry_count, 7);
  r.path_mtu = p.path_mtu;
  r.max_cm_retries = p.max_cm_retries;
  r.srq = p.srq;
  // RoCE routes by GID: beyond one hop the LIDs are the permissive LID (Linux cm_format_req).
  const bool subnet_local = p.path.hop_limit <= 1;
  r.primary.local_lid = subnet_local ? 0 : 0xFFFF;
  r.primary.remote_lid = subnet_local ? 0 : 0xFFFF;
  r.primary.local_gid = p.path.sgid;
  r.primary.remote_gid = p.path.dgid;
  r.primary.flow_label = p.path.flow_label;
  r.primary.traffic_class = p.path.traffic_class;
  r.primary.hop_limit = p.path.hop_limit;
  r.primary.sl = p.path.sl;
  r.primary.subnet_local = subnet_local;
  r.primary.local_ack_timeout = cm_ack_timeout(cfg_.ca_ack_delay, p.path.packet_life_time);
  if (p.cma) encode_cma_hdr(p.cma_hdr, r.private_data.data());
  copy_private(r.private_data, hdr, p.private_data);
  send_tracked(c, r, c.tid, c.timeout_ms, c.max_cm_retries);
  return 0;
}

int CmAgent::accept(CmId id, const AcceptParams& p) {
  Conn* c = find(id);
  if (!c) return -ENOENT;
  switch (c->state) {
    case CmState::kReqRcvd:
    case CmState::kMraReqSent: {
      if (p.private_data.size() > kRepPrivateLen) return -EINVAL;
      Rep r;
      r.local_comm_id = c->local_comm_id;
      r.remote_comm_id = c->remote_comm_id;
      r.local_qpn = p.qpn;
      r.starting_psn = p.starting_psn & 0xFFFFFF;
      r.responder_resources = p.responder_resources;
      r.initiator_depth = p.initiator_depth;
      r.target_ack_delay = cfg_.ca_ack_delay;
      r.flow_control = p.flow_control;
      r.rnr_retry_count = std::min<uint8_t>(p.rnr_retry_count, 7);
      r.srq = p.srq;
      r.local_ca_guid = cfg_.local_guid;
      copy_private(r.private_data, 0, p.private_data);
      c->local_qpn = p.qpn;
      c->state = CmState::kRepSent;
      send_tracked(*c, r, c->tid, c->timeout_ms, c->max_cm_retries);
      return 0;
    }
    case CmState::kSidrReqRcvd: {
      if (p.private_data.size() > kSidrRepPrivateLen) return -EINVAL;
      SidrRep s;
      s.request_id = c->remote_comm_id;
      s.status = kSidrSuccess;
      s.qpn = p.qpn;
      s.qkey = p.qkey;
      s.service_id = c->service_id;
      copy_private(s.private_data, 0, p.private_data);
      MadHeader h;
      h.tid = c->tid;
      send(c->peer, h, s);
      to_idle(*c);
      return 0;
    }
    case CmState::kRepRcvd:
    case CmState::kMraRepSent: {
      if (p.private_data.size() > kRtuPrivateLen) return -EINVAL;
      Rtu r;
      r.local_comm_id = c->local_comm_id;
      r.remote_comm_id = c->remote_comm_id;
      copy_private(r.private_data, 0, p.private_data);
      MadHeader h;
      h.tid = c->tid;
      send(c->peer, h, r);
      c->rtu = outbox_.back().mad;
      c->state = CmState::kEstablished;
      return 0;
    }
    default:
      return -EINVAL;
  }
}

int CmAgent::reject(CmId id, uint16_t reason, std::span<const uint8_t> private_data) {
  Conn* c = find(id);
  if (!c) return -ENOENT;
  switch (c->state) {
    case CmState::kReqRcvd:
    case CmState::kMraReqSent:
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
      if (private_data.size() > kRejPrivateLen) return -EINVAL;
      send_rej(*c, reason, {}, private_data);
      to_idle(*c);
      return 0;
    case CmState::kSidrReqRcvd: {
      if (private_data.size() > kSidrRepPrivateLen) return -EINVAL;
      SidrRep s;
      s.request_id = c->remote_comm_id;
      s.status = kSidrReject;
      s.service_id = c->service_id;
      copy_private(s.private_data, 0, private_data);
      MadHeader h;
      h.tid = c->tid;
      send(c->peer, h, s);
      to_idle(*c);
      return 0;
    }
    default:
      return -EINVAL;
  }
}

int CmAgent::notify_established(CmId id) {
  Conn* c = find(id);
  if (!c) return -ENOENT;
  if (c->state != CmState::kRepSent && c->state != CmState::kMraRepRcvd) return -EINVAL;
  disarm(*c);
  c->state = CmState::kEstablished;
  emit(*c, base_event(*c, EventType::kEstablished));
  return 0;
}

int CmAgent::disconnect(CmId id, std::span<const uint8_t> private_data) {
  Conn* c = find(id);
  if (!c) return -ENOENT;
  if (c->state == CmState::kEstablished) {
    if (private_data.size() > kDreqPrivateLen) return -EINVAL;
    c->state = CmState::kDreqSent;
    send_dreq(*c, private_data, true);
    return 0;
  }
  if (c->state == CmState::kDreqRcvd) {
    if (private_data.size() > kDrepPrivateLen) return -EINVAL;
    send_drep(*c, private_data);
    enter_timewait(*c);
    return 0;
  }
  return -EINVAL;
}

size_t CmAgent::link_lost(int status) {
  size_t n = 0;
  for (auto& [id, cp] : conns_) {
    Conn& c = *cp;
    if (c.destroyed) continue;
    switch (c.state) {
      case CmState::kReqSent:
      case CmState::kMraReqRcvd:
      case CmState::kReqRcvd:
      case CmState::kMraReqSent:
      case CmState::kRepSent:
      case CmState::kMraRepRcvd:
      case CmState::kRepRcvd:
      case CmState::kMraRepSent:
      case CmState::kSidrReqSent: {
        to_idle(c);
        Event ev = base_event(c, EventType::kUnreachable);
        ev.status = status;
        emit(c, std::move(ev));
        ++n;
        break;
      }
      case CmState::kEstablished:
      case CmState::kDreqSent:
      case CmState::kDreqRcvd:
        enter_timewait(c);
        report_disconnect(c, status);
        ++n;
        break;
      default:
        break;
    }
  }
  outbox_.clear();  // nothing queued can leave any more
  return n;
}

int CmAgent::destroy(CmId id) {
  Conn* cp = find(id);
  if (!cp) return -ENOENT;
  Conn& c = *cp;
  // What Linux cm_destroy_id sends in each state.
  switch (c.state) {
    case CmState::kListen: {
      auto [lo, hi] = listeners_.equal_range(c.service_id);
      for (auto it = lo; it != hi; ++it)
        if (it->second.id == c.id) {
          listeners_.erase(it);
          break;
        }
      break;
    }
    case CmState::kReqSent:
    case CmState::kMraReqRcvd: {
      // REJ "timeout" with this CA's GUID as the additional rejection information, as Linux sends it.
      uint8_t guid[8];
      for (int i = 0; i < 8; ++i) guid[i] = static_cast<uint8_t>(cfg_.local_guid >> (56 - 8 * i));
      send_rej(c, kRejTimeout, guid, {});
      break;
    }
    case CmState::kReqRcvd:
    case CmState::kMraReqSent:
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
      send_rej(c, kRejConsumerDefined, {}, {});
      break;
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      send_rej(c, kRejConsumerDefined, {}, {});
      c.destroyed = true;
      enter_timewait(c);
      return 0;
    case CmState::kEstablished:
      send_dreq(c, {}, false);
      c.destroyed = true;
      enter_timewait(c);
      return 0;
    case CmState::kDreqSent:
      c.destroyed = true;
      enter_timewait(c);
      return 0;
    case CmState::kDreqRcvd:
      send_drep(c, {});
      c.destroyed = true;
      enter_timewait(c);
      return 0;
    case CmState::kTimewait:
      c.destroyed = true;
      return 0;
    case CmState::kSidrReqRcvd:
      reject(c.id, kRejConsumerDefined, {});
      break;
    default:
      break;
  }
  erase(c);
  return 0;
}

}  // namespace uroce::cm
