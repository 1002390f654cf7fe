// The RDMA CM backend of the shim's ucma emulation: see cm_service.h.
#include "provider/cm_service.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "provider/engine.h"
#include "provider/shim/ucma_backend.h"
#include "runtime/host_addr.h"
#include "runtime/uroced_request.h"
#include "transport/cm/cm.h"
#include "transport/params.h"

namespace uroce::provider {
namespace {

constexpr uint32_t kRecvBufs = 64;
constexpr uint32_t kSendBufs = 64;
constexpr uint32_t kGrhLen = 40;  // a UD receive buffer starts with the GRH (IPv4: its header at 20..39)
constexpr uint32_t kRecvLen = kGrhLen + cm::kMadLen;
constexpr uint64_t kSendTag = 1ull << 32;  // wr_id of a send: kSendTag | slot
constexpr uint32_t kUdpQkey = 0x01234567;  // RDMA_UDP_QKEY: the Q_Key of PS_UDP / PS_IB ids
constexpr uint8_t kRejNoListener = 8;
constexpr uint64_t kHeldRecheckNs = 1'000'000;
// A direct memif pair with connections looks at its link this often (a link that goes down wakes nobody).
constexpr uint64_t kLinkCheckNs = 100'000'000;
constexpr int kLookupGraceMs = 200, kLookupRetries = 40;
// At exit, how long the process waits for the DREPs of the DREQs it sends (see the exit handler).
constexpr uint64_t kExitDrepWaitNs = 1'000'000'000;
// librdmacm's event numbers (cm::EventType uses the same).
constexpr uint32_t kEvConnectRequest = static_cast<uint32_t>(cm::EventType::kConnectRequest);
constexpr uint32_t kEvUnreachable = static_cast<uint32_t>(cm::EventType::kUnreachable);
constexpr uint32_t kEvRejected = static_cast<uint32_t>(cm::EventType::kRejected);

// The shim's functions a backend calls, found once.
struct ShimApi {
  decltype(&uroce_ucma_push_event) push_event = nullptr;
  decltype(&uroce_ucma_create_conn_id) create_conn_id = nullptr;
  decltype(&uroce_ucma_set_conn) set_conn = nullptr;
};
ShimApi g_shim;

// A GID from the IPv4 or IPv6 address in sin6 space.
Gid gid_of(const sockaddr_in6& a) {
  if (a.sin6_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    return wire::ipv4_mapped(ntohl(v4.sin_addr.s_addr));
  }
  Gid g;
  std::memcpy(g.data(), &a.sin6_addr, 16);
  return g;
}

uint16_t port_of(const sockaddr_in6& a) {
  return ntohs(a.sin6_family == AF_INET ? reinterpret_cast<const sockaddr_in&>(a).sin_port : a.sin6_port);
}

bool is_v4_mapped(const Gid& g) {
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  return std::memcmp(g.data(), kPrefix, 12) == 0;
}

// A sockaddr (in sin6 space) for a GID and port: sockaddr_in for an IPv4-mapped GID.
sockaddr_in6 sockaddr_of(const Gid& g, uint16_t port) {
  sockaddr_in6 out{};
  if (is_v4_mapped(g)) {
    auto& v4 = reinterpret_cast<sockaddr_in&>(out);
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    v4.sin_addr.s_addr = htonl(wire::ipv4_of_mapped(g));
  } else {
    out.sin6_family = AF_INET6;
    out.sin6_port = htons(port);
    std::memcpy(&out.sin6_addr, g.data(), 16);
  }
  return out;
}

std::string ipv4_text(const sockaddr_in6& a) {
  char buf[INET_ADDRSTRLEN] = "0.0.0.0";
  if (a.sin6_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  return buf;
}

// 127.0.0.0/8 or an interface address of this host: both name the host itself.
bool is_loopback_v4(const sockaddr_in6& a) {
  return a.sin6_family == AF_INET &&
         runtime::is_host_ipv4(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr);
}

// The host switch: UROCE_PORT is the memif port of a uroced lease (runtime/uroced_client.h: the memif sockets
// of the leases live in <runtime dir>/uroced-ports/).
bool through_uroced() {
  const char* port = std::getenv("UROCE_PORT");
  return port != nullptr && std::strstr(port, "/uroced-ports/") != nullptr;
}

// One uroced request: 0, or the errno of its "error errno=N" reply (EHOSTUNREACH when no daemon answers).
int uroced(const std::string& line, std::string* reply) {
  std::string err;
  if (!runtime::uroced_request(line, reply, &err)) return EHOSTUNREACH;
  if (reply->rfind("ok", 0) == 0) return 0;
  const size_t at = reply->find("errno=");
  const int e = at == std::string::npos ? EINVAL : std::atoi(reply->c_str() + at + 6);
  return e > 0 ? e : EINVAL;
}

std::string space_text(uint16_t ps) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", ps);
  return buf;
}

class CmService final : public PassHook {
 public:
  // The service, created (with the engine) on first use; nullptr with *err when the device cannot open.
  static CmService* get(std::string* err);

  int listen(const uroce_cm_id_info& id);
  int connect(const uroce_cm_id_info& id, const rdma_ucm_conn_param& p);
  int accept(const uroce_cm_id_info& id, const rdma_ucm_conn_param* p);
  int reject(const uroce_cm_id_info& id, uint8_t reason, const uint8_t* pd, uint8_t len);
  int disconnect(const uroce_cm_id_info& id);
  void destroy(uint32_t id);

  uint32_t pass() override;
  uint64_t next_deadline() const override {
    uint64_t d = agent_->next_deadline_ns();
    if (held_) d = std::min(d, clock_.now_ns() + kHeldRecheckNs);
    if (direct_ && link_was_up_ && has_connections()) d = std::min(d, clock_.now_ns() + kLinkCheckNs);
    return d;
  }
  std::vector<std::pair<std::string, uint64_t>> counters() const override;

 private:
  // What the service keeps per ucma id.
  struct IdState {
    cm::CmId cm = 0;
    bool listener = false;
    bool ud = false;
    uint16_t ps = 0;
    uint32_t own_psn = 0;  // this side's StartingPSN
    uint8_t path_mtu = 0;  // active side: what the REQ offered (a REP carries neither MTU nor retry count)
    uint8_t retry_count = 7;
    Gid peer{};  // the peer's GID
    bool uroced_bound = false;
    std::string bound_addr;
    uint16_t bound_port = 0;
  };

  explicit CmService(std::shared_ptr<Engine> engine) : engine_(std::move(engine)) {}
  int start_locked();
  void repost(uint32_t slot);
  uint32_t flush_locked();
  uint32_t deliver_events_locked();
  void deliver(const cm::Event& ev);
  void on_request(const cm::Event& ev, uint32_t listener);
  uint32_t psn() { return rng_() & 0xFFFFFF; }
  bool has_connections() const {
    return std::any_of(ids_.begin(), ids_.end(), [](const auto& e) { return !e.second.listener; });
  }
  uroce_cm_conn conn_of(const cm::Event& ev, uint32_t own_psn) const;
  ib_user_path_rec path_of(const cm::Event& ev) const;

  std::shared_ptr<Engine> engine_;
  const pid_t owner_pid_ = getpid();  // a forked child's exit must leave the parent's connections alone
  Gid gid_{};
  std::mt19937 rng_{std::random_device{}()};
  const FastClock& clock_ = fast_clock();  // the engine's: its pass compares our deadlines with its time
  std::unique_ptr<cm::CmAgent> agent_;
  Pd* pd_ = nullptr;
  Cq* cq_ = nullptr;
  Qp* qp_ = nullptr;
  Mr* mr_ = nullptr;
  std::unique_ptr<uint8_t[]> mem_;
  std::vector<uint32_t> free_send_;
  bool held_ = false;                          // MADs wait for the link to come up
  std::deque<cm::OutMad> backlog_;             // MADs waiting for a free send buffer
  std::unordered_map<uint32_t, IdState> ids_;  // by ucma id
  std::unordered_map<cm::CmId, uint32_t> by_cm_;
  std::vector<cm::CmId> closing_;  // destroyed by the application while their DREQ waits for its DREP
  uint64_t short_mads_ = 0;
  bool uroced_ = through_uroced();
  bool in_process_ = [] {
    const char* port = std::getenv("UROCE_PORT");
    return port == nullptr || std::strcmp(port, "loopback") == 0;
  }();
  // A port of its own to one peer process (a direct memif pair): neither uroced nor the in-process port.
  bool direct_ = !uroced_ && !in_process_;
  bool link_was_up_ = false;
};

CmService* g_service = nullptr;
std::mutex g_service_mu;

uint64_t read_node_guid() {
  const char* sysfs = std::getenv("SYSFS_PATH");
  const char* dev = std::getenv("UROCE_DEV");
  if (!sysfs) return 0;
  const std::string path =
      std::string(sysfs) + "/class/infiniband/" + (dev && *dev ? dev : "uroce0") + "/node_guid";
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return 0;
  unsigned a = 0, b = 0, c = 0, d = 0;
  const int n = std::fscanf(f, "%4x:%4x:%4x:%4x", &a, &b, &c, &d);
  std::fclose(f);
  if (n != 4) return 0;
  return static_cast<uint64_t>(a) << 48 | static_cast<uint64_t>(b) << 32 | static_cast<uint64_t>(c) << 16 | d;
}

CmService* CmService::get(std::string* err) {
  std::lock_guard guard(g_service_mu);
  if (g_service) return g_service;
  const char* dev = std::getenv("UROCE_DEV");
  auto engine = Engine::acquire(dev && *dev ? dev : "uroce0", err);
  if (!engine) return nullptr;
  auto* s = new CmService(engine);
  int rc;
  {
    std::lock_guard lock(engine->mu());
    rc = s->start_locked();
  }
  if (rc != 0) {
    *err = "cannot create QP1: " + std::string(std::strerror(rc));
    delete s;  // what start_locked made stays with the device
    return nullptr;
  }
  g_service = s;
  // At exit the engine goes as it would without the CM: the hook leaves the pass, the reference is dropped
  // (registered after Engine::acquire's own statics, so it runs before they are destroyed).
  std::atexit([] {
    std::lock_guard g(g_service_mu);
    // A child forked after the service started inherits this handler with the parent's ids, whose port and
    // progress thread stay the parent's: it sends nothing and drops no reference (the engine's own exit
    // handler refuses likewise).
    if (!g_service || getpid() != g_service->owner_pid_) return;
    CmService& sv = *g_service;
    std::vector<IdState> bound;
    {
      std::lock_guard lock(sv.engine_->mu());
      // As a kernel does when a process's rdma_cm file closes at exit: each connection still open ends on
      // the wire (DREQ once established, REJ while being set up, DREP for a DREQ received), so the peer sees
      // DISCONNECTED or REJECTED now rather than after its DREQ or REQ retries run out. No more events go
      // to the application (its ids are forgotten first).
      std::vector<cm::CmId> dreqs = std::move(sv.closing_);
      sv.closing_.clear();
      for (auto& [id, st] : sv.ids_) {
        if (st.uroced_bound) bound.push_back(st);
        if (st.listener) continue;
        if (sv.agent_->state(st.cm) == cm::CmState::kEstablished && sv.agent_->disconnect(st.cm) == 0)
          dreqs.push_back(st.cm);
        else
          sv.agent_->destroy(st.cm);
      }
      sv.ids_.clear();
      sv.by_cm_.clear();
      sv.flush_locked();
      // Frames still in the memif ring when the port closes are lost, and the peer (uroced, or the other
      // process) may not run for a while on a loaded host: so the process waits for each DREQ's DREP, which
      // proves that everything it sent before reached the peer (an RTU sent just before exit, too), for up
      // to kExitDrepWaitNs. REJs and DREPs have no answer: the port's close linger covers them, and through
      // uroced the switch sends what it did not see (tools/uroced/cm_track.h).
      const uint64_t until = sv.clock_.now_ns() + kExitDrepWaitNs;
      auto waiting = [&] {
        return std::any_of(dreqs.begin(), dreqs.end(),
                           [&](cm::CmId c) { return sv.agent_->state(c) == cm::CmState::kDreqSent; });
      };
      for (int i = 0; i < 4 || (waiting() && sv.clock_.now_ns() < until); ++i) {
        sv.engine_->progress_locked();
        if (i >= 4) {
          sv.engine_->mu().unlock();
          usleep(200);
          sv.engine_->mu().lock();
        }
      }
      for (cm::CmId c : dreqs) sv.agent_->destroy(c);
      sv.flush_locked();
      sv.engine_->progress_locked();
      sv.engine_->set_pass_hook(nullptr);
    }
    // What this process bound in the host's port table (a forked child's bindings would otherwise stay
    // until its leaseholding parent exits).
    for (const IdState& st : bound) {
      std::string reply;
      uroced("cm unbind " + space_text(st.ps) + " " + st.bound_addr + " " + std::to_string(st.bound_port),
             &reply);
    }
    g_service->engine_.reset();
    g_service = nullptr;  // the service itself is left: a late backend call finds no service
  });
  return s;
}

int CmService::start_locked() {
  Device& dev = engine_->dev();
  gid_ = dev.config().gid;
  cm::AgentConfig cfg;
  cfg.local_guid = read_node_guid();
  cfg.id_index = rng_() & 0x3FF;
  agent_ = std::make_unique<cm::CmAgent>(cfg, clock_, [this] { return static_cast<uint32_t>(rng_()); });
  const size_t bytes = size_t{kRecvBufs} * kRecvLen + size_t{kSendBufs} * cm::kMadLen;
  mem_ = std::make_unique<uint8_t[]>(bytes);
  if (int e = dev.alloc_pd(&pd_)) return e;
  if (int e = dev.create_cq(kRecvBufs + kSendBufs, &cq_)) return e;
  if (int e = dev.reg_mr(pd_, mem_.get(), bytes, kAccessLocalWrite, &mr_)) return e;
  QpInitAttr init;
  init.type = QpType::kUd;
  init.send_cq = init.recv_cq = cq_;
  init.cap = QpCap{kSendBufs, kRecvBufs, 1, 1, 0};
  if (int e = dev.create_gsi_qp(pd_, init, &qp_)) return e;
  QpAttr at;
  at.qp_state = QpState::kInit;
  at.port_num = 1;
  at.qkey = params::kGsiQkey;
  if (int e = qp_->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpQkey)) return e;
  at.qp_state = QpState::kRtr;
  if (int e = qp_->modify(at, kQpState)) return e;
  at.qp_state = QpState::kRts;
  at.sq_psn = 0;
  if (int e = qp_->modify(at, kQpState | kQpSqPsn)) return e;
  for (uint32_t i = 0; i < kRecvBufs; ++i) repost(i);
  for (uint32_t i = 0; i < kSendBufs; ++i) free_send_.push_back(i);
  engine_->set_pass_hook(this);
  return 0;
}

void CmService::repost(uint32_t slot) {
  const Sge s{reinterpret_cast<uint64_t>(mem_.get() + size_t{slot} * kRecvLen), kRecvLen, mr_->lkey};
  qp_->post_recv(RecvWr{slot, &s, 1});
}

// MADs the agent queued go out on QP1 as far as send buffers last.
uint32_t CmService::flush_locked() {
  uint32_t n = 0;
  cm::OutMad m;
  // A MAD sent before the port's link is up is lost, and the CM would resend it only after seconds (a REQ
  // after 6 s): hold it until the link is up. The pass looks again (next_deadline).
  held_ = (!backlog_.empty() || agent_->pending_mads() > 0) && !engine_->link_up();
  if (held_) return 0;
  for (;;) {
    if (free_send_.empty()) break;
    if (!backlog_.empty()) {
      m = std::move(backlog_.front());
      backlog_.pop_front();
    } else if (!agent_->pop_mad(&m)) {
      break;
    }
    const uint32_t slot = free_send_.back();
    uint8_t* buf = mem_.get() + size_t{kRecvBufs} * kRecvLen + size_t{slot} * cm::kMadLen;
    std::memcpy(buf, m.mad.data(), cm::kMadLen);
    const Sge s{reinterpret_cast<uint64_t>(buf), static_cast<uint32_t>(cm::kMadLen), mr_->lkey};
    AddressVector av;
    av.dgid = m.to.gid;
    SendWr wr;
    wr.wr_id = kSendTag | slot;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.send_flags = kSendSignaled;
    wr.ah = &av;
    wr.remote_qpn = m.to.qpn;
    wr.remote_qkey = params::kUdQkeyPrivilegedBit;  // the QP's own Q_Key, 0x80010000
    if (qp_->post_send(wr) != 0) {
      backlog_.push_front(std::move(m));
      break;
    }
    free_send_.pop_back();
    ++n;
  }
  // Whatever found no buffer waits for the next send completion.
  while (free_send_.empty() && agent_->pop_mad(&m)) backlog_.push_back(std::move(m));
  return n;
}

uint32_t CmService::pass() {
  uint32_t work = 0;
  Wc wc[16];
  int n;
  while ((n = cq_->poll(16, wc)) > 0) {
    work += static_cast<uint32_t>(n);
    for (int i = 0; i < n; ++i) {
      if (wc[i].wr_id & kSendTag) {
        free_send_.push_back(static_cast<uint32_t>(wc[i].wr_id & 0xFFFFFFFF));
        continue;
      }
      const auto slot = static_cast<uint32_t>(wc[i].wr_id);
      const uint8_t* buf = mem_.get() + size_t{slot} * kRecvLen;
      if (wc[i].status == WcStatus::kSuccess && wc[i].byte_len >= kRecvLen) {
        cm::Address from;
        from.qpn = wc[i].src_qp;
        if ((wc[i].sl & 0x7) == 2) {
          // IPv4: the header fills the last 20 bytes of the GRH area; its source address is at 12.
          uint32_t src;
          std::memcpy(&src, buf + 20 + 12, 4);
          from.gid = wire::ipv4_mapped(ntohl(src));
        } else {
          std::memcpy(from.gid.data(), buf + 8, 16);  // the GRH's source GID
        }
        agent_->on_mad(from, std::span<const uint8_t>(buf + kGrhLen, cm::kMadLen));
      } else if (wc[i].status == WcStatus::kSuccess) {
        ++short_mads_;  // a datagram to QP1 shorter than a MAD: nothing a CM could read
      }
      repost(slot);
    }
  }
  if (direct_) {
    // The other end of a direct memif pair closed its port: that process is gone, and it was the only peer
    // this CM could reach. Nobody else will send its DREQ (through uroced the switch does, cm_track.h), so
    // every connection ends here, as its QP's retries or the CM's timers would end it much later.
    const bool up = engine_->link_up();
    if (link_was_up_ && !up) {
      work += static_cast<uint32_t>(agent_->link_lost(-ENETUNREACH));
      backlog_.clear();
    }
    link_was_up_ = up;
  }
  if (agent_->next_deadline_ns() <= clock_.now_ns()) agent_->poll();
  for (size_t i = 0; i < closing_.size();) {
    if (agent_->state(closing_[i]) == cm::CmState::kDreqSent) {
      ++i;
      continue;
    }
    agent_->destroy(closing_[i]);  // DREP received or DREQ timed out: timewait in the agent
    closing_[i] = closing_.back();
    closing_.pop_back();
  }
  work += flush_locked();
  work += deliver_events_locked();
  return work;
}

uint32_t CmService::deliver_events_locked() {
  uint32_t n = 0;
  cm::Event ev;
  while (agent_->pop_event(&ev)) {
    deliver(ev);
    ++n;
  }
  return n;
}

ib_user_path_rec CmService::path_of(const cm::Event& ev) const {
  ib_user_path_rec p{};
  std::memcpy(p.dgid, ev.peer.gid.data(), 16);
  std::memcpy(p.sgid, gid_.data(), 16);
  p.pkey = htons(0xFFFF);
  p.reversible = 1;
  p.numb_path = 1;
  p.flow_label = htonl(ev.path.flow_label);
  p.hop_limit = ev.path.hop_limit;
  p.traffic_class = ev.path.traffic_class;
  p.sl = ev.path.sl;
  p.mtu = ev.path_mtu;
  p.mtu_selector = 2;
  p.rate_selector = 2;
  p.packet_life_time_selector = 2;
  p.packet_life_time = ev.path.packet_life_time;
  return p;
}

uroce_cm_conn CmService::conn_of(const cm::Event& ev, uint32_t own_psn) const {
  uroce_cm_conn c{};
  c.remote_qpn = ev.peer_qpn;
  c.rq_psn = own_psn;
  c.sq_psn = ev.peer_starting_psn;
  c.path_mtu = ev.path_mtu;
  c.responder_resources = ev.responder_resources;
  c.initiator_depth = ev.initiator_depth;
  c.retry_count = ev.retry_count;
  c.rnr_retry_count = ev.rnr_retry_count;
  c.local_ack_timeout = ev.qp_timeout;
  c.min_rnr_timer = 0;
  std::memcpy(c.dgid, ev.peer.gid.data(), 16);
  return c;
}

// What became of every MAD received (rx_*, one per cm::RxResult), why the malformed ones were refused
// (malformed_*, one per cm::MadError), what was sent, and datagrams on QP1 too short to hold a MAD.
std::vector<std::pair<std::string, uint64_t>> CmService::counters() const {
  const cm::CmStats& s = agent_->stats();
  std::vector<std::pair<std::string, uint64_t>> out;
  out.emplace_back("rx_total", s.rx_total() + short_mads_);
  for (size_t i = 0; i < s.rx.size(); ++i)
    out.emplace_back(std::string("rx_") + cm::rx_result_name(static_cast<cm::RxResult>(i)), s.rx[i]);
  out.emplace_back("rx_short", short_mads_);
  for (size_t i = 1; i < s.malformed.size(); ++i)
    out.emplace_back(std::string("malformed_") + cm::mad_error_name(static_cast<cm::MadError>(i)),
                     s.malformed[i]);
  out.emplace_back("tx", s.tx);
  out.emplace_back("retransmits", s.retransmits);
  out.emplace_back("timeouts", s.timeouts);
  out.emplace_back("connections", agent_->connections());
  return out;
}

// A REQ or SIDR_REQ for one of our listeners: a new ucma id, its connection data, CONNECT_REQUEST.
void CmService::on_request(const cm::Event& ev, uint32_t listener) {
  uroce_cm_id_info addr{};
  // The kernel's new id: local address = the CMA header's destination, port the listener's (the service
  // ID's low 16 bits); remote = the header's source address and port.
  const uint16_t port = static_cast<uint16_t>(ev.service_id & 0xFFFF);
  const Gid local = ev.has_cma ? ev.cma.dst_ip : gid_;
  const Gid remote = ev.has_cma ? ev.cma.src_ip : ev.peer.gid;
  addr.src = sockaddr_of(local, port);
  addr.dst = sockaddr_of(remote, ev.has_cma ? ev.cma.src_port : 0);
  std::memcpy(addr.sgid, gid_.data(), 16);
  std::memcpy(addr.dgid, ev.peer.gid.data(), 16);
  addr.sgid_index = 0;
  addr.path = path_of(ev);
  uint32_t child = 0;
  if (g_shim.create_conn_id(listener, &addr, &child) != 0) {
    agent_->reject(ev.id, cm::kRejNoResources);
    return;
  }
  IdState st;
  st.cm = ev.id;
  st.ud = ev.ud;
  st.own_psn = psn();
  st.peer = ev.peer.gid;
  if (auto it = ids_.find(listener); it != ids_.end()) st.ps = it->second.ps;
  ids_[child] = st;
  by_cm_[ev.id] = child;
  if (ev.ud) {
    rdma_ucm_ud_param ud{};
    const size_t len = std::min(ev.private_data.size(), sizeof ud.private_data);
    std::memcpy(ud.private_data, ev.private_data.data(), len);
    ud.private_data_len = static_cast<uint8_t>(len);
    g_shim.push_event(child, kEvConnectRequest, 0, &ud, sizeof ud, nullptr);
    return;
  }
  const uroce_cm_conn c = conn_of(ev, st.own_psn);
  g_shim.set_conn(child, &c);
  rdma_ucm_conn_param p{};
  p.qp_num = ev.peer_qpn;
  const size_t len = std::min(ev.private_data.size(), sizeof p.private_data);
  std::memcpy(p.private_data, ev.private_data.data(), len);
  p.private_data_len = static_cast<uint8_t>(len);
  p.srq = ev.srq;
  p.responder_resources = ev.responder_resources;
  p.initiator_depth = ev.initiator_depth;
  p.flow_control = ev.flow_control;
  p.retry_count = ev.retry_count;
  p.rnr_retry_count = ev.rnr_retry_count;
  g_shim.push_event(child, kEvConnectRequest, 0, &p, sizeof p, nullptr);
}

void CmService::deliver(const cm::Event& ev) {
  if (ev.type == cm::EventType::kConnectRequest) {
    auto it = by_cm_.find(ev.listen_id);
    if (it == by_cm_.end()) {
      agent_->reject(ev.id, cm::kRejInvalidServiceId);
      return;
    }
    on_request(ev, it->second);
    return;
  }
  auto it = by_cm_.find(ev.id);
  if (it == by_cm_.end()) return;  // its ucma id is gone
  const uint32_t id = it->second;
  IdState& st = ids_[id];
  const auto type = static_cast<uint32_t>(ev.type);
  rdma_ucm_conn_param p{};
  auto with_private = [&](size_t max) {
    const size_t len = std::min({ev.private_data.size(), max, sizeof p.private_data});
    std::memcpy(p.private_data, ev.private_data.data(), len);
    p.private_data_len = static_cast<uint8_t>(len);
  };
  switch (ev.type) {
    case cm::EventType::kConnectResponse: {
      uroce_cm_conn c = conn_of(ev, st.own_psn);
      c.path_mtu = st.path_mtu;
      c.retry_count = st.retry_count;
      g_shim.set_conn(id, &c);
      p.qp_num = ev.peer_qpn;
      p.srq = ev.srq;
      p.responder_resources = ev.responder_resources;
      p.initiator_depth = ev.initiator_depth;
      p.flow_control = ev.flow_control;
      p.retry_count = st.retry_count;
      p.rnr_retry_count = ev.rnr_retry_count;
      with_private(cm::kRepPrivateLen);
      g_shim.push_event(id, type, 0, &p, sizeof p, nullptr);
      return;
    }
    case cm::EventType::kEstablished:
      if (ev.ud) {
        rdma_ucm_ud_param ud{};
        ud.qp_num = ev.peer_qpn;
        ud.qkey = ev.qkey;
        std::memcpy(ud.ah_attr.grh.dgid, st.peer.data(), 16);
        ud.ah_attr.grh.hop_limit = ev.path.hop_limit ? ev.path.hop_limit : 64;
        ud.ah_attr.grh.traffic_class = ev.path.traffic_class;
        ud.ah_attr.grh.flow_label = ev.path.flow_label;
        ud.ah_attr.is_global = 1;
        ud.ah_attr.port_num = 1;
        const size_t len = std::min(ev.private_data.size(), sizeof ud.private_data);
        std::memcpy(ud.private_data, ev.private_data.data(), len);
        ud.private_data_len = static_cast<uint8_t>(len);
        g_shim.push_event(id, type, 0, &ud, sizeof ud, nullptr);
        return;
      }
      g_shim.push_event(id, type, 0, &p, sizeof p, nullptr);
      return;
    case cm::EventType::kRejected:
      with_private(cm::kRejPrivateLen);
      g_shim.push_event(id, type, ev.status, &p, sizeof p, nullptr);
      return;
    case cm::EventType::kDisconnected:
      // The peer's DREQ is answered now, before the application hears of it. The kernel answers when the
      // application calls rdma_disconnect or destroys the id, or when the process dies (its rdma_cm file
      // closes); a process of ours that dies takes its CM with it, and with no uroced to answer for it
      // (a direct memif pair, af_packet) the peer would wait out its DREQ's retries. A DREP sent through
      // the rdma_cm carries no private data, so nothing is lost by sending it early; the application's
      // own rdma_disconnect then finds nothing to send. The device's pass puts it on the wire at once: an
      // application that crashes right after the event (Debian's qperf 0.4.11 server does) must not take
      // it along unsent.
      if (agent_->state(ev.id) == cm::CmState::kDreqRcvd && agent_->disconnect(ev.id) == 0) {
        flush_locked();
        engine_->dev().progress();
      }
      g_shim.push_event(id, type, ev.status, nullptr, 0, nullptr);
      return;
    default:  // UNREACHABLE, TIMEWAIT_EXIT
      g_shim.push_event(id, type, ev.status, nullptr, 0, nullptr);
      return;
  }
}

int CmService::listen(const uroce_cm_id_info& id) {
  IdState st;
  st.listener = true;
  st.ps = id.ps;
  st.ud = id.qp_type == 4 /* IB_UVERBS_QPT_UD */;
  const uint16_t port = port_of(id.src);
  std::string what, reply;
  if (uroced_) {
    if (id.src.sin6_family != AF_INET) return -EAFNOSUPPORT;  // uroced keeps IPv4 port spaces only
    st.bound_addr = ipv4_text(id.src);
    st.bound_port = port;
    what = space_text(id.ps) + " " + st.bound_addr + " " + std::to_string(port);
    if (int e = uroced("cm bind " + what, &reply)) return -e;  // EADDRINUSE: another process has it
  }
  cm::ListenParams lp;
  lp.service_id = (static_cast<uint64_t>(id.ps) << 16) + port;
  // A listener on any loopback address takes every loopback destination (as 127/8 is one host address);
  // the wildcard (all zero) does that too.
  const bool any = is_loopback_v4(id.src) || gid_of(id.src) == Gid{} ||
                   (id.src.sin6_family == AF_INET && gid_of(id.src) == wire::ipv4_mapped(0));
  if (!any) lp.ip = gid_of(id.src);
  cm::CmId cmid = 0;
  int rc;
  {
    std::lock_guard lock(engine_->mu());
    rc = agent_->listen(lp, &cmid);
    if (rc == 0) {
      st.cm = cmid;
      st.uroced_bound = uroced_;
      ids_[id.id] = st;
      by_cm_[cmid] = id.id;
    }
  }
  // Only now may uroced send clients here: a REQ that arrived before the agent listened would be REJ 8.
  if (rc == 0 && uroced_) {
    if (int e = uroced("cm listen " + what, &reply)) {
      std::lock_guard lock(engine_->mu());
      agent_->destroy(cmid);
      ids_.erase(id.id);
      by_cm_.erase(cmid);
      rc = -e;
    }
  }
  if (rc != 0) {
    if (uroced_) uroced("cm unbind " + what, &reply);
    return rc;
  }
  return 0;
}

int CmService::connect(const uroce_cm_id_info& id, const rdma_ucm_conn_param& p) {
  const bool ud = id.qp_type == 4 /* IB_UVERBS_QPT_UD */;
  const uint16_t dport = port_of(id.dst);
  Gid peer = gid_of(id.dst);
  if (uroced_) {
    std::string reply;
    int e = EAFNOSUPPORT;
    if (id.dst.sin6_family == AF_INET) {
      const std::string line =
          "cm lookup " + space_text(id.ps) + " " + ipv4_text(id.dst) + " " + std::to_string(dport);
      // A REQ to another host takes a round trip before its REJ comes back, and programs count on that
      // time: perftest closes its control connection's listener and listens again for the data QPs
      // while its client is already connecting. A listener that appears within kLookupGraceMs is taken.
      for (int i = 0; (e = uroced(line, &reply)) == ECONNREFUSED && i < kLookupRetries; ++i)
        usleep(kLookupGraceMs * 1000 / kLookupRetries);
    }
    if (e == ECONNREFUSED) {
      // Nothing listens: what the kernel reports when the peer CM answers REJ 8 (invalid service ID).
      if (ud) return g_shim.push_event(id.id, kEvUnreachable, 1 /* SIDR unsupported */, nullptr, 0, nullptr);
      rdma_ucm_conn_param rej{};
      rej.private_data_len = static_cast<uint8_t>(cm::kRejPrivateLen);
      return g_shim.push_event(id.id, kEvRejected, kRejNoListener, &rej, sizeof rej, nullptr);
    }
    if (e != 0) return g_shim.push_event(id.id, kEvUnreachable, -e, nullptr, 0, nullptr);
    const size_t at = reply.find("ip=");
    in_addr a{};
    if (at == std::string::npos ||
        inet_pton(AF_INET, reply.substr(at + 3, reply.find(' ', at) - at - 3).c_str(), &a) != 1)
      return g_shim.push_event(id.id, kEvUnreachable, -EHOSTUNREACH, nullptr, 0, nullptr);
    peer = wire::ipv4_mapped(ntohl(a.s_addr));
  } else if (in_process_ && is_loopback_v4(id.dst)) {
    peer = gid_;  // the in-process port reaches this process only: 127/8 is this device
  }
  cm::ConnectParams cp;
  cp.ud = ud;
  cp.service_id = (static_cast<uint64_t>(id.ps) << 16) + dport;
  cp.path.sgid = gid_;
  cp.path.dgid = peer;
  cp.path.flow_label = ntohl(id.path.flow_label);
  cp.path.hop_limit = id.path.hop_limit ? id.path.hop_limit : 64;
  cp.path.traffic_class = id.path.traffic_class;
  cp.path.sl = id.path.sl;
  if (id.path.packet_life_time) cp.path.packet_life_time = id.path.packet_life_time;
  cp.cma_hdr.ip_version = id.dst.sin6_family == AF_INET6 ? 6 : 4;
  cp.cma_hdr.src_port = port_of(id.src);
  cp.cma_hdr.src_ip = gid_of(id.src);
  cp.cma_hdr.dst_ip = gid_of(id.dst);
  const size_t max_private = (ud ? cm::kSidrReqPrivateLen : cm::kReqPrivateLen) - cm::kCmaHdrLen;
  const size_t len = std::min<size_t>(p.private_data_len, max_private);
  cp.private_data.assign(p.private_data, p.private_data + len);
  cp.qpn = p.qp_num;
  cp.responder_resources = p.responder_resources;
  cp.initiator_depth = p.initiator_depth;
  cp.retry_count = std::min<uint8_t>(p.retry_count, 7);
  cp.rnr_retry_count = std::min<uint8_t>(p.rnr_retry_count, 7);
  if (id.path.mtu) cp.path_mtu = static_cast<uint8_t>(id.path.mtu);
  cp.srq = p.srq;
  cp.flow_control = p.flow_control;
  std::lock_guard lock(engine_->mu());
  IdState st;
  st.ud = ud;
  st.ps = id.ps;
  st.peer = peer;
  st.own_psn = psn();
  cp.starting_psn = st.own_psn;
  st.path_mtu = cp.path_mtu;
  st.retry_count = cp.retry_count;
  cm::CmId cmid = 0;
  if (int rc = agent_->connect(cp, &cmid)) return rc;
  st.cm = cmid;
  ids_[id.id] = st;
  by_cm_[cmid] = id.id;
  flush_locked();
  engine_->wake();
  return 0;
}

int CmService::accept(const uroce_cm_id_info& id, const rdma_ucm_conn_param* p) {
  std::lock_guard lock(engine_->mu());
  auto it = ids_.find(id.id);
  if (it == ids_.end()) return -EINVAL;
  IdState& st = it->second;
  cm::AcceptParams ap;
  if (p != nullptr) {
    ap.qpn = p->qp_num;
    ap.starting_psn = st.own_psn;
    ap.responder_resources = p->responder_resources;
    ap.initiator_depth = p->initiator_depth;
    ap.rnr_retry_count = p->rnr_retry_count;
    ap.srq = p->srq;
    ap.flow_control = p->flow_control;
    ap.qkey = kUdpQkey;
    const size_t max = st.ud ? cm::kSidrRepPrivateLen : cm::kRepPrivateLen;
    ap.private_data.assign(p->private_data, p->private_data + std::min<size_t>(p->private_data_len, max));
  }
  const int rc = agent_->accept(st.cm, ap);
  if (rc == 0 && st.ud) {
    // A SIDR_REP ends the exchange; the id stays for destroy.
  }
  flush_locked();
  deliver_events_locked();
  engine_->wake();
  return rc;
}

int CmService::reject(const uroce_cm_id_info& id, uint8_t reason, const uint8_t* pd, uint8_t len) {
  std::lock_guard lock(engine_->mu());
  auto it = ids_.find(id.id);
  if (it == ids_.end()) return -EINVAL;
  const int rc = agent_->reject(it->second.cm, reason, std::span<const uint8_t>(pd, len));
  flush_locked();
  engine_->wake();
  return rc;
}

int CmService::disconnect(const uroce_cm_id_info& id) {
  std::lock_guard lock(engine_->mu());
  auto it = ids_.find(id.id);
  if (it != ids_.end()) {
    // As cma.c rdma_disconnect: a DREQ, else a DREP; nothing to send is no error.
    agent_->disconnect(it->second.cm);
    flush_locked();
    deliver_events_locked();
    engine_->wake();
  }
  return 0;
}

void CmService::destroy(uint32_t id) {
  IdState st;
  {
    std::lock_guard lock(engine_->mu());
    auto it = ids_.find(id);
    if (it == ids_.end()) return;
    st = it->second;
    by_cm_.erase(st.cm);
    ids_.erase(it);
    // rdma_disconnect then rdma_destroy_id, as programs end: the DREQ's exchange is left to finish (its
    // events go nowhere now), so that the exit handler can wait for its DREP too.
    if (agent_->state(st.cm) == cm::CmState::kDreqSent)
      closing_.push_back(st.cm);
    else
      agent_->destroy(st.cm);
    flush_locked();
    engine_->wake();
  }
  if (st.uroced_bound) {
    std::string reply;
    uroced("cm unbind " + space_text(st.ps) + " " + st.bound_addr + " " + std::to_string(st.bound_port),
           &reply);
  }
}

// The backend table's entry points.
CmService* service() {
  std::string err;
  CmService* s = CmService::get(&err);
  if (!s) std::fprintf(stderr, "uroce: the RDMA CM cannot open its device: %s\n", err.c_str());
  return s;
}

CmService* existing() {
  std::lock_guard g(g_service_mu);
  return g_service;
}

int be_listen(void*, const uroce_cm_id_info* id, int) {
  CmService* s = service();
  return s ? s->listen(*id) : -ENODEV;
}

int be_connect(void*, const uroce_cm_id_info* id, const rdma_ucm_conn_param* p, const rdma_ucm_ece*) {
  CmService* s = service();
  return s ? s->connect(*id, *p) : -ENODEV;
}

int be_accept(void*, const uroce_cm_id_info* id, const rdma_ucm_conn_param* p, const rdma_ucm_ece*) {
  CmService* s = existing();
  return s ? s->accept(*id, p) : -EINVAL;
}

int be_reject(void*, const uroce_cm_id_info* id, uint8_t reason, const uint8_t* pd, uint8_t len) {
  CmService* s = existing();
  return s ? s->reject(*id, reason, pd, len) : -EINVAL;
}

int be_disconnect(void*, const uroce_cm_id_info* id) {
  CmService* s = existing();
  return s ? s->disconnect(*id) : 0;
}

void be_destroy(void*, uint32_t id) {
  if (CmService* s = existing()) s->destroy(id);
}

}  // namespace

void register_cm_backend() {
  auto set = reinterpret_cast<uroce_ucma_set_backend_fn>(dlsym(RTLD_DEFAULT, UROCE_UCMA_SET_BACKEND_SYMBOL));
  if (!set) return;  // no shim in this process: librdmacm is not served by uroce
  g_shim.push_event =
      reinterpret_cast<decltype(g_shim.push_event)>(dlsym(RTLD_DEFAULT, "uroce_ucma_push_event"));
  g_shim.create_conn_id =
      reinterpret_cast<decltype(g_shim.create_conn_id)>(dlsym(RTLD_DEFAULT, "uroce_ucma_create_conn_id"));
  g_shim.set_conn = reinterpret_cast<decltype(g_shim.set_conn)>(dlsym(RTLD_DEFAULT, "uroce_ucma_set_conn"));
  if (!g_shim.push_event || !g_shim.create_conn_id || !g_shim.set_conn) return;
  static const uroce_cm_backend b = {nullptr,   be_listen,     be_connect, be_accept,
                                     be_reject, be_disconnect, be_destroy};
  set(&b);
}

}  // namespace uroce::provider
