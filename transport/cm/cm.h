// The IB Communication Manager (IBA vol. 1, ch. 12) for one CM agent (one device port, QP1): connection
// state per CM ID, retries and timeouts of the kernel's ib_cm + rdma_cm (Linux cm.c, cma.c), and the events
// the kernel's ucma would hand to librdmacm. Pure and clock-driven: MADs come in through on_mad(), leave
// through a queue the caller drains (pop_mad) and puts on QP1, events leave through another queue
// (pop_event); time moves only through the Clock, and poll() fires due timers. No I/O, no threads: the
// caller serialises calls.
//
// Addresses are abstract: a peer is its GID and CM QPN (1); the caller maps GIDs to IP and frames.
// Conventions, as Linux uses them over RoCE:
//  - each side's StartingPSN on the wire is its own receive PSN; events carry the peer's;
//  - event fields are from the receiver's view: responder_resources is the peer's initiator depth and
//    initiator_depth the peer's responder resources;
//  - private data in events has the kernel's fixed lengths (REQ 56 after the CMA header, REP 196, REJ 148,
//    SIDR_REQ 180 after the CMA header, SIDR_REP 136);
//  - the rdma_cm's delayed MRA: an MRA goes out only when a duplicate REQ (REP) arrives while the consumer
//    has not answered the REQ (REP) yet.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "transport/clock.h"
#include "transport/cm/mad.h"

namespace uroce::cm {

// A CM ID: the caller's handle for a listener or a connection (never 0).
using CmId = uint32_t;

enum class CmState : uint8_t {
  kIdle,
  kListen,
  kReqSent,
  kReqRcvd,
  kMraReqSent,
  kMraReqRcvd,
  kRepSent,
  kRepRcvd,
  kMraRepSent,
  kMraRepRcvd,
  kEstablished,
  kDreqSent,
  kDreqRcvd,
  kTimewait,
  kSidrReqSent,
  kSidrReqRcvd,
  kCount,
};
const char* cm_state_name(CmState s);

// Timing of the CM (IBA 12.7.34 time unit 4.096 us * 2^x; Linux rounds it to 1 << max(x - 8, 0) ms).
constexpr uint64_t cm_convert_to_ms(uint8_t iba_time) {
  return uint64_t{1} << (iba_time > 8 ? iba_time - 8 : 0);
}
constexpr uint8_t kCmaCmResponseTimeout = 20;  // CMA_CM_RESPONSE_TIMEOUT
constexpr uint8_t kCmaMaxCmRetries = 15;       // CMA_MAX_CM_RETRIES
constexpr uint8_t kCmaMraServiceTimeout = 24;  // CMA_CM_MRA_SETTING without the delay flag
constexpr uint8_t kRoceDefaultPacketLifeTime = 18;
constexpr uint8_t kDefaultCaAckDelay = 15;  // rxe's local_ca_ack_delay: REP target ACK delay
// The QP ACK timeout Linux derives from the CA's ACK delay and the path's packet life time (cm_ack_timeout).
uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);

// REJ reasons (IBA table 112, Linux enum ib_cm_rej_reason) and SIDR_REP status values (table 120).
enum RejReason : uint16_t {
  kRejNoQp = 1,
  kRejNoResources = 3,
  kRejTimeout = 4,
  kRejUnsupported = 5,
  kRejInvalidCommId = 6,
  kRejInvalidCommInstance = 7,
  kRejInvalidServiceId = 8,  // no listener
  kRejInvalidTransportType = 9,
  kRejStaleConn = 10,
  kRejInvalidMtu = 26,
  kRejInsufficientRespResources = 27,
  kRejConsumerDefined = 28,
  kRejInvalidClassVersion = 31,
};
enum SidrStatus : uint8_t {
  kSidrSuccess = 0,
  kSidrUnsupported = 1,  // no listener
  kSidrReject = 2,
  kSidrNoQp = 3,
  kSidrRedirect = 4,
  kSidrUnsupportedVersion = 5,
};

// Where a MAD comes from or goes to: the peer's GID and its CM QP (1 for every GSI agent).
struct Address {
  Gid gid{};
  uint32_t qpn = kGsiQpn;
  bool operator==(const Address&) const = default;
};

// A path from this side's view.
struct PathInfo {
  Gid sgid{};  // ours
  Gid dgid{};  // the peer's
  uint32_t flow_label = 0;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint8_t sl = 0;
  uint8_t packet_life_time = kRoceDefaultPacketLifeTime;
};

struct AgentConfig {
  uint64_t local_guid = 0;  // node GUID: REQ/REP Local CA GUID
  // Comm IDs and SIDR Request IDs: the top `id_index_bits` bits are `id_index` (one range per process,
  // handed out by uroced), the rest cycle from a random start. Must leave at least 8 bits to cycle.
  uint32_t id_index = 0;
  unsigned id_index_bits = 10;
  uint8_t ca_ack_delay = kDefaultCaAckDelay;
  // A REQ for a service nobody listens on waits this long for a listener before its REJ 8 (0: at once, as
  // Linux). Servers that close a listener and listen again on the same port while their client is already
  // connecting (perftest -R between its control and data connections) count on the REQ's round trip to a
  // kernel CM taking longer than that; uroced's CM port table gives lookups the same grace.
  uint64_t no_listener_grace_ns = 20'000'000;
};

struct ListenParams {
  uint64_t service_id = 0;
  Gid ip{};         // bound address; all zero = wildcard (takes any CMA destination)
  bool cma = true;  // REQ/SIDR_REQ private data starts with the CMA header (IP ids; AF_IB ids have none)
};

// Active side: RC/UC connection (REQ) or, with ud set, a SIDR query (SIDR_REQ).
struct ConnectParams {
  bool ud = false;
  uint64_t service_id = 0;
  PathInfo path;
  bool cma = true;  // put `cma_hdr` in front of the private data
  CmaHdr cma_hdr;
  std::vector<uint8_t> private_data;  // user bytes: at most 56 (RC) / 180 (UD) with the CMA header
  // RC/UC only:
  CmTransport transport = CmTransport::kRc;
  uint32_t qpn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t path_mtu = 3;  // IB MTU enum
  bool srq = false;
  bool flow_control = false;
  uint8_t cm_response_timeout = kCmaCmResponseTimeout;
  uint8_t max_cm_retries = kCmaMaxCmRetries;
};

// accept(): the passive side's REP (RC) or SIDR_REP (UD); on the active side after CONNECT_RESPONSE it sends
// the RTU (only private_data is used then).
struct AcceptParams {
  uint32_t qpn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t rnr_retry_count = 7;
  bool srq = false;
  bool flow_control = false;
  uint32_t qkey = 0;                  // UD
  std::vector<uint8_t> private_data;  // at most 196 (REP), 224 (RTU), 136 (SIDR_REP)
};

// Event numbers are librdmacm's (enum rdma_cm_event_type) so the ucma layer passes them through.
enum class EventType : uint8_t {
  kConnectRequest = 4,
  kConnectResponse = 5,
  kUnreachable = 7,
  kRejected = 8,
  kEstablished = 9,
  kDisconnected = 10,
  kTimewaitExit = 15,
};
const char* event_name(EventType t);

struct Event {
  EventType type = EventType::kConnectRequest;
  CmId id = 0;         // the connection (for CONNECT_REQUEST: the new one)
  CmId listen_id = 0;  // CONNECT_REQUEST: the listener that took it
  int status = 0;      // 0; -ETIMEDOUT; REJECTED: the REJ reason; UD UNREACHABLE: the SIDR status
  bool ud = false;
  Address peer;
  uint64_t service_id = 0;
  uint64_t peer_guid = 0;
  uint32_t peer_qpn = 0;
  uint32_t peer_starting_psn = 0;
  uint32_t qkey = 0;  // UD ESTABLISHED: the SIDR_REP's Q_Key
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 0;
  uint8_t rnr_retry_count = 0;
  uint8_t path_mtu = 0;
  uint8_t qp_timeout = 0;  // the local ACK timeout the QP uses (CONNECT_REQUEST: the REQ's)
  bool flow_control = false;
  bool srq = false;
  CmTransport transport = CmTransport::kRc;
  PathInfo path;
  bool has_cma = false;
  CmaHdr cma;
  std::vector<uint8_t> private_data;
};

struct OutMad {
  Address to;
  MadBytes mad;
};

// What became of each received MAD. Exactly one counter moves per on_mad() call.
enum class RxResult : uint8_t {
  kHandled,     // drove a transition or answered in its state
  kMalformed,   // decode refused it (see malformed[])
  kUnknownId,   // no connection with that comm ID / request ID (DREQ: answered with a DREP)
  kIdMismatch,  // the comm ID pair does not match the connection's
  kUnexpected,  // not valid in the connection's state (stale, late or duplicate with nothing to do)
  kBadQpn,      // DREQ naming another QPN than ours
  kBadCmaHdr,   // REQ/SIDR_REQ private data without a valid CMA header: REJ 28 / SIDR status 2
  kNoListener,  // REQ found no listener (REJ 8 after the grace, unless one listens by then; a REQ taken
                // then counts again, as kHandled), SIDR_REQ answered SIDR_REP status 1
  kDuplicate,   // a retransmission, answered as the state wants (MRA, RTU, DREP, REJ stale) or ignored
  kStale,       // a REQ from a QP still connected to us under another comm ID: REJ 10, the old one DREQed
  kCount,
};
const char* rx_result_name(RxResult r);

struct CmStats {
  std::array<uint64_t, static_cast<size_t>(RxResult::kCount)> rx{};
  std::array<uint64_t, static_cast<size_t>(MadError::kCount)> malformed{};
  uint64_t tx = 0;           // MADs queued
  uint64_t retransmits = 0;  // of those, timer-driven resends
  uint64_t timeouts = 0;     // retries exhausted
  uint64_t rx_total() const {
    uint64_t n = 0;
    for (uint64_t v : rx) n += v;
    return n;
  }
};

class CmAgent {
 public:
  // `random` seeds the comm-ID sequence and the high half of the agent's Transaction IDs.
  CmAgent(const AgentConfig& cfg, const Clock& clock, std::function<uint32_t()> random);
  ~CmAgent();
  CmAgent(const CmAgent&) = delete;
  CmAgent& operator=(const CmAgent&) = delete;

  // Each returns 0 or a negative errno (-EINVAL for a call not valid in the ID's state, -ENOENT for an
  // unknown ID, -EADDRINUSE for a second listener on the same service ID and address).
  int listen(const ListenParams& p, CmId* out);
  int connect(const ConnectParams& p, CmId* out);
  int accept(CmId id, const AcceptParams& p);
  int reject(CmId id, uint16_t reason = kRejConsumerDefined, std::span<const uint8_t> private_data = {});
  // Passive side: the first data arrived before the RTU (rdma_notify IB_EVENT_COMM_EST).
  int notify_established(CmId id);
  // DREQ when ESTABLISHED, DREP when a DREQ was received (rdma_disconnect).
  int disconnect(CmId id, std::span<const uint8_t> private_data = {});
  // Frees the ID after sending what Linux cm_destroy_id sends in its state; no more events for it. A
  // connection that must still answer late MADs stays in timewait internally.
  int destroy(CmId id);

  // The port's link is gone for good (a direct memif pair whose other process exited): no MAD can reach a
  // peer or come back. Every connection ends without a message, as its timers would end it later: being
  // set up -> UNREACHABLE with `status`, connected or disconnecting -> DISCONNECTED with `status`, then
  // timewait. Listeners stay. Returns how many connections it ended.
  size_t link_lost(int status);
  // A MAD received on QP1 from `from`.
  void on_mad(const Address& from, std::span<const uint8_t> mad);
  // Fires the timers that are due now; answers REJ 8 to the held REQs whose grace ran out.
  void poll();
  // When poll() next has something to do (kNever if nothing): a timer or a held REQ's grace.
  uint64_t next_deadline_ns() const;

  bool pop_mad(OutMad* out);
  bool pop_event(Event* out);
  size_t pending_mads() const { return outbox_.size(); }
  size_t pending_events() const { return events_.size(); }

  CmState state(CmId id) const;  // kIdle for unknown ids
  uint32_t local_comm_id(CmId id) const;
  const CmStats& stats() const { return stats_; }
  size_t connections() const { return conns_.size(); }

 private:
  struct Conn;

  uint32_t alloc_comm_id();
  Conn* find(CmId id);
  const Conn* find(CmId id) const;
  Conn* by_comm_id(uint32_t local_comm_id);
  Conn& new_conn(CmState state, bool active, bool ud);
  void erase(Conn& c);
  void drop_remote_key(Conn& c);
  void send(const Address& to, const MadHeader& hdr, const CmBody& body);
  void send_tracked(Conn& c, const CmBody& body, uint64_t tid, uint64_t timeout_ms, uint8_t retries);
  void arm(Conn& c, uint64_t deadline_ns);
  void disarm(Conn& c);
  void emit(Conn& c, Event ev);
  Event base_event(const Conn& c, EventType t) const;
  void to_idle(Conn& c);
  void enter_timewait(Conn& c);
  void send_rej(Conn& c, uint16_t reason, std::span<const uint8_t> ari, std::span<const uint8_t> priv);
  void send_mra(Conn& c, uint8_t message_mraed);
  void send_dreq(Conn& c, std::span<const uint8_t> priv, bool track);
  void send_drep(Conn& c, std::span<const uint8_t> priv);
  void report_disconnect(Conn& c, int status);
  void on_timeout(Conn& c);
  uint64_t now_ns() const { return clock_.now_ns(); }

  RxResult rx_req(const Address& from, const MadHeader& h, const Req& m);
  RxResult rx_mra(const Mra& m);
  RxResult rx_rej(const Rej& m);
  RxResult rx_rep(const Address& from, const Rep& m);
  RxResult rx_rtu(const Rtu& m);
  RxResult rx_dreq(const Address& from, const MadHeader& h, const Dreq& m);
  RxResult rx_drep(const Drep& m);
  RxResult rx_sidr_req(const Address& from, const MadHeader& h, const SidrReq& m);
  RxResult rx_sidr_rep(const SidrRep& m);
  struct Listener {
    CmId id;
    ListenParams p;
  };
  // A REQ that found no listener, kept for the grace (AgentConfig::no_listener_grace_ns).
  struct HeldReq {
    Address from;
    MadBytes mad;
    uint64_t service_id;
    uint64_t tid;
    uint32_t remote_comm_id;
    uint64_t deadline;
  };
  static constexpr size_t kMaxHeldReqs = 64;  // beyond that a REQ without a listener is REJ 8 at once
  // Holds the REQ (true) or, with no grace or a full queue, leaves it to be rejected now (false).
  bool hold_req(const Address& from, const MadHeader& h, const Req& m);
  void send_rej_unmatched(const Address& to, uint64_t tid, uint32_t remote_comm_id, uint16_t reason);
  // The listener on `service_id` for a request to `dst_ip` (the exact address first, then a wildcard);
  // nullptr when none takes it.
  const Listener* pick_listener(uint64_t service_id, const Gid* dst_ip) const;

  AgentConfig cfg_;
  const Clock& clock_;
  std::function<uint32_t()> random_;
  uint32_t hi_tid_;
  uint32_t next_seq_;
  CmId next_handle_ = 1;

  std::unordered_map<CmId, std::unique_ptr<Conn>> conns_;
  std::unordered_map<uint32_t, CmId> by_comm_id_;
  // Passive connections by (peer's comm ID, peer's CA GUID): duplicate and stale REQ detection.
  std::map<std::pair<uint32_t, uint64_t>, CmId> by_remote_;
  // Passive connections by (peer's QPN, peer's CA GUID) until they leave timewait: stale REQ detection.
  std::map<std::pair<uint32_t, uint64_t>, CmId> by_remote_qpn_;
  // Passive SIDR queries by (Request ID, peer GID): duplicates are dropped while the consumer decides.
  std::map<std::pair<uint32_t, Gid>, CmId> by_sidr_remote_;
  std::multimap<uint64_t, Listener> listeners_;  // by service ID
  std::set<std::pair<uint64_t, CmId>> timers_;   // (deadline, id)
  std::deque<HeldReq> held_;                     // in arrival order, so by deadline
  bool redispatching_ = false;                   // on_mad of a held REQ: no second hold

  std::deque<OutMad> outbox_;
  std::deque<Event> events_;
  CmStats stats_;
};

}  // namespace uroce::cm
