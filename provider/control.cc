#include "provider/control.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "runtime/peer_cred.h"
#include "runtime/runtime_dir.h"
#include "transport/wire/address.h"

namespace uroce::provider {

using json = nlohmann::ordered_json;

namespace {

constexpr uint64_t kRingBytes = 16u << 20;  // capture ring: ~4000 full-size frames, ~4 ms at line rate
constexpr uint32_t kMinSlots = 256, kMaxSlots = 65536;
constexpr uint32_t kDefaultSnaplen = 65535;
constexpr int kDrainMs = 1;
constexpr size_t kMaxClients = 16;
constexpr size_t kMaxLine = 64 * 1024;
constexpr size_t kMaxPassedFds = 4;

const char* qp_type_name(QpType t) { return t == QpType::kRc ? "RC" : t == QpType::kUc ? "UC" : "UD"; }

struct QpSnapshot {
  uint32_t qpn = 0, dest_qpn = 0, sq_psn = 0, rq_psn = 0;
  QpType type = QpType::kRc;
  QpState state = QpState::kReset;
  QpCounters cnt;
  uint64_t cc_rate_bps = 0, cc_window_bytes = 0, cnp_handled = 0, cc_rate_changes = 0;
  std::string detail;
};

struct Snapshot {
  Counters dev;
  wire::RxDropCounters drops;
  std::vector<std::pair<std::string, uint64_t>> port;
  std::vector<std::pair<std::string, uint64_t>> cm;
  std::vector<QpSnapshot> qps;
  std::string gid;
};

// Copies what stats reports while holding the engine lock; the JSON is built after it is released.
// `detail`: each QP's debug_state() too (a string built under the lock; the rates request leaves it out).
Snapshot take_snapshot(const ControlSource& src, bool detail = true) {
  Snapshot s;
  std::lock_guard lock(*src.mu);
  s.dev = src.dev->counters();
  s.drops = src.dev->rx_drops();
  s.gid = wire::gid_text(src.dev->config().gid);
  if (src.port_stats) s.port = src.port_stats();
  if (src.cm_stats) s.cm = src.cm_stats();
  std::vector<uint32_t> qpns = src.qpns ? src.qpns() : std::vector<uint32_t>{};
  std::sort(qpns.begin(), qpns.end());
  for (uint32_t qpn : qpns) {
    const Qp* qp = src.dev->find_qp(qpn);
    if (!qp) continue;
    QpSnapshot q;
    q.qpn = qpn;
    q.dest_qpn = qp->attr().dest_qp_num;
    q.sq_psn = qp->attr().sq_psn;
    q.rq_psn = qp->attr().rq_psn;
    q.type = qp->type();
    q.state = qp->state();
    q.cnt = qp->counters();
    if (const cc::Algorithm* a = qp->cc()) {
      q.cc_rate_bps = a->rate_bps;
      q.cc_window_bytes = a->window_bytes;
      q.cnp_handled = a->cnp_handled;
      q.cc_rate_changes = a->rate_changes;
    }
    if (detail) q.detail = qp->debug_state();
    s.qps.push_back(std::move(q));
  }
  return s;
}

json qp_json(const QpSnapshot& q) {
  const QpCounters& c = q.cnt;
  return json{{"qpn", q.qpn},
              {"type", qp_type_name(q.type)},
              {"state", qp_state_name(q.state)},
              {"dest_qpn", q.dest_qpn},
              {"tx_packets", c.tx_packets},
              {"tx_bytes", c.tx_bytes},
              {"rx_packets", c.rx_packets},
              {"rx_bytes", c.rx_bytes},
              {"retransmitted_packets", c.retransmits},
              {"local_ack_timeouts", c.timeouts},
              {"rnr_nak_sent", c.rnr_naks_sent},
              {"rnr_nak_received", c.rnr_naks_rcvd},
              {"seq_err_nak_sent", c.seq_naks_sent},
              {"seq_err_nak_received", c.seq_naks_rcvd},
              {"duplicate_request", c.duplicates},
              {"out_of_sequence", c.out_of_sequence},
              {"cnp_handled", q.cnp_handled},
              {"cc_rate_bps", q.cc_rate_bps},
              {"cc_window_bytes", q.cc_window_bytes},
              {"cc_rate_changes", q.cc_rate_changes},
              {"detail", q.detail}};
}

// The device's counters under their mlx5/rxe hw_counters and IB PMA names (transport/counters.h), as
// two objects "hw_counters" and "counters" (the sysfs directory names) added to `out`.
void add_std_counters(const Counters& c, json& out) {
  // Built apart: a reference into an ordered_json does not survive the insertion of a sibling.
  json hw = json::object(), pma = json::object();
  for (const StdCounter& s : kStdCounters)
    (s.kind == StdCounterKind::kHw ? hw : pma)[s.name] = std_counter_value(s, c);
  out["hw_counters"] = std::move(hw);
  out["counters"] = std::move(pma);
}

json stats_object(const ControlSource& src) {
  const Snapshot s = take_snapshot(src);
  json out{{"ok", true},
           {"version", 1},
           {"pid", getpid()},
           {"dev", src.ibdev},
           {"gid", s.gid},
           {"port", src.port},
           {"time_ns", capture_now_ns()}};
  json& dev = out["device"] = json::object();
  for (size_t i = 0; i < static_cast<size_t>(Counter::kCount); ++i)
    dev[counter_name(static_cast<Counter>(i))] = s.dev.n[i];
  add_std_counters(s.dev, out);
  json& drops = out["rx_drops"] = json::object();
  for (size_t i = 1; i < static_cast<size_t>(wire::RxDrop::kCount); ++i)
    drops[wire::rx_drop_name(static_cast<wire::RxDrop>(i))] = s.drops.n[i];
  json& port = out["port_stats"] = json::object();
  for (const auto& [name, v] : s.port) port[name] = v;
  json& cm = out["cm"] = json::object();
  for (const auto& [name, v] : s.cm) cm[name] = v;
  json& qps = out["qps"] = json::array();
  for (const auto& q : s.qps) qps.push_back(qp_json(q));
  return out;
}

}  // namespace

struct ControlEndpoint::Impl {
  ControlSource src;
  std::string path;
  pid_t owner = getpid();
  int listen_fd = -1;
  int stop_fd = -1;
  std::thread thread;
  std::once_flag shut;

  struct Client {
    int fd;
    std::string in;
    std::vector<int> fds;  // descriptors passed with the request being read (SCM_RIGHTS)
  };
  std::vector<Client> clients;
  uint64_t refused = 0;  // connections from other users, closed unserved

  struct Capture {
    std::unique_ptr<CaptureRing> ring;
    PcapWriter writer;
    std::string path;
    int owner_fd = -1;
  };
  std::unique_ptr<Capture> cap;
  json last;  // the result of the last finished capture (null: none yet)

  ~Impl() {
    if (listen_fd >= 0) close(listen_fd);
    if (stop_fd >= 0) close(stop_fd);
  }

  void shutdown();
  void run();
  void accept_client();
  bool serve(Client& c);
  void drop_client(int fd);
  json handle(const std::string& line, Client& c);
  json capture_start(const json& req, Client& c);
  json capture_status();
  json capture_stop();
  void drain();
  void finish_capture();
};

namespace {

// Endpoints of this process. Programs often exit with the device still open: an exit handler then completes
// a running capture and removes the sockets. Never destroyed, so the handler may run after other statics
// are gone.
std::mutex& registry_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::set<ControlEndpoint::Impl*>& registry() {
  static auto* endpoints = new std::set<ControlEndpoint::Impl*>;
  return *endpoints;
}

json error_reply(const std::string& msg) { return json{{"ok", false}, {"error", msg}}; }

bool send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string control_dir(std::string* err) {
  runtime::RuntimeDir base;
  if (!runtime::runtime_dir(true, &base, err)) return "";
  const std::string dir = base.path + "/ctl";
  if (!runtime::private_subdir(dir, err)) return "";
  return dir;
}

std::string stats_json(const ControlSource& src) { return stats_object(src).dump(); }

// Stops the thread (which completes a running capture) and removes the socket; once, and only in the process
// that made them (a forked child leaves its parent's alone).
void ControlEndpoint::Impl::shutdown() {
  std::call_once(shut, [this] {
    if (getpid() != owner) {
      new std::thread(std::move(thread));  // not ours to join; a joinable std::thread must not be destroyed
      return;
    }
    const uint64_t one = 1;
    (void)!write(stop_fd, &one, sizeof(one));
    thread.join();
    unlink(path.c_str());
  });
}

void ControlEndpoint::Impl::run() {
  // Signals are the application's business: keep them on its own threads.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::vector<pollfd> pfds;
  for (;;) {
    pfds.assign({{stop_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}});
    for (const Client& c : clients) pfds.push_back({c.fd, POLLIN, 0});
    const int r = poll(pfds.data(), pfds.size(), cap ? kDrainMs : -1);
    if (pfds[0].revents) break;
    if (cap) {
      drain();
      if (cap->ring->limit_reached()) finish_capture();
    }
    if (r <= 0) continue;
    if (pfds[1].revents & POLLIN) accept_client();
    for (size_t i = 2; i < pfds.size(); ++i) {
      if (!pfds[i].revents) continue;
      auto it =
          std::find_if(clients.begin(), clients.end(), [&](const Client& c) { return c.fd == pfds[i].fd; });
      if (it != clients.end() && !serve(*it)) drop_client(pfds[i].fd);
    }
  }
  if (cap) finish_capture();
  for (const Client& c : clients) {
    close(c.fd);
    for (int f : c.fds) close(f);
  }
  clients.clear();
}

void ControlEndpoint::Impl::accept_client() {
  const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  // The directory keeps other users out; this is the second lock. Counters and captures are served to the
  // process's own user and to root only, whatever the socket's permissions became.
  if (std::string refusal; !runtime::peer_allowed(fd, "this process", &refusal)) {
    ++refused;
    const std::string line = error_reply(refusal).dump() + "\n";
    (void)!send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
    return;
  }
  if (clients.size() >= kMaxClients) {
    close(fd);
    return;
  }
  // Replies are written blocking; a client that stops reading is dropped after a second.
  const timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  clients.push_back({fd, {}, {}});
}

// Reads what the client sent and answers every complete line. False: drop the client.
bool ControlEndpoint::Impl::serve(Client& c) {
  char buf[4096];
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof(ctrl);
  const ssize_t n = recvmsg(c.fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h; h = CMSG_NXTHDR(&msg, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
      c.fds.push_back(f);
    }
  }
  if (n == 0 || c.fds.size() > kMaxPassedFds) return false;  // a request comes with one file at most
  c.in.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = c.in.find('\n')) != std::string::npos;) {
    const std::string line = c.in.substr(0, nl);
    c.in.erase(0, nl + 1);
    const json reply = handle(line, c);
    for (int f : c.fds) close(f);  // a descriptor belongs to the request it came with
    c.fds.clear();
    if (!send_all(c.fd, reply.dump() + "\n")) return false;
  }
  return c.in.size() <= kMaxLine;
}

void ControlEndpoint::Impl::drop_client(int fd) {
  if (cap && cap->owner_fd == fd) finish_capture();
  close(fd);
  for (const Client& c : clients)
    if (c.fd == fd)
      for (int f : c.fds) close(f);
  std::erase_if(clients, [fd](const Client& c) { return c.fd == fd; });
}

json ControlEndpoint::Impl::handle(const std::string& line, Client& c) {
  const json req = json::parse(line, nullptr, false);
  if (req.is_discarded() || !req.is_object())
    return error_reply("bad request: expected one JSON object per line");
  const auto cmd = req.find("cmd");
  if (cmd == req.end() || !cmd->is_string()) return error_reply("bad request: missing \"cmd\"");
  const std::string name = *cmd;
  if (name == "stats") {
    json out = stats_object(src);
    out["capture"] = capture_status();
    out["capture"].erase("ok");
    out["control_refused"] = refused;
    return out;
  }
  if (name == "rates") {
    // What a sampler polling every millisecond needs (uroce exp --realtime): per-QP byte counters and CC
    // rates and the device counters, without the strings and tables of stats.
    const Snapshot snap = take_snapshot(src, false);
    json out{{"ok", true}, {"pid", getpid()}, {"dev", src.ibdev}, {"time_ns", capture_now_ns()}};
    json& dev = out["device"] = json::object();
    for (size_t i = 0; i < static_cast<size_t>(Counter::kCount); ++i)
      dev[counter_name(static_cast<Counter>(i))] = snap.dev.n[i];
    json& qps = out["qps"] = json::array();
    for (const QpSnapshot& q : snap.qps)
      qps.push_back({{"qpn", q.qpn},
                     {"dest_qpn", q.dest_qpn},
                     {"tx_bytes", q.cnt.tx_bytes},
                     {"rx_bytes", q.cnt.rx_bytes},
                     {"cc_rate_bps", q.cc_rate_bps}});
    return out;
  }
  if (name == "hw_counters") {
    Counters cnt;
    {
      std::lock_guard lock(*src.mu);
      cnt = src.dev->counters();
    }
    json out{{"ok", true}, {"dev", src.ibdev}, {"port", 1}};
    add_std_counters(cnt, out);
    return out;
  }
  if (name == "qps") {
    // What RDMA netlink's RES_QP_GET reports, by number (IB QP type and state values).
    const Snapshot snap = take_snapshot(src);
    json out{{"ok", true}, {"dev", src.ibdev}, {"qps", json::array()}};
    for (const QpSnapshot& q : snap.qps)
      out["qps"].push_back({{"qpn", q.qpn},
                            {"qp_type", static_cast<unsigned>(q.type)},
                            {"qp_state", static_cast<unsigned>(q.state)},
                            {"dest_qpn", q.dest_qpn},
                            {"sq_psn", q.sq_psn},
                            {"rq_psn", q.rq_psn}});
    return out;
  }
  if (name == "capture_start") return capture_start(req, c);
  if (name == "capture_status") return capture_status();
  if (name == "capture_stop") return capture_stop();
  return error_reply("unknown cmd '" + name +
                     "' (stats, rates, hw_counters, qps, capture_start, capture_status, capture_stop)");
}

json ControlEndpoint::Impl::capture_start(const json& req, Client& client) {
  if (!src.tap) return error_reply("this device has no capture tap");
  if (cap) return error_reply("a capture is already running (writing " + cap->path + ")");
  const auto path = req.find("path");
  if (path == req.end() || !path->is_string() || path->get<std::string>().empty() ||
      path->get<std::string>()[0] != '/')
    return error_reply("capture_start: \"path\" must be an absolute file name");
  uint64_t snaplen = kDefaultSnaplen, count = 0;
  if (auto it = req.find("snaplen"); it != req.end()) {
    if (!it->is_number_unsigned() || *it == 0 || *it > 262144)
      return error_reply("capture_start: \"snaplen\" must be 1 .. 262144");
    snaplen = *it;
  }
  if (auto it = req.find("count"); it != req.end()) {
    if (!it->is_number_unsigned()) return error_reply("capture_start: \"count\" must be a number >= 0");
    count = *it;
  }
  uint32_t max_frame;
  {
    std::lock_guard lock(*src.mu);
    max_frame = src.tap->max_frame();
  }
  const uint32_t slot = static_cast<uint32_t>(std::min<uint64_t>(snaplen, max_frame));
  auto c = std::make_unique<Capture>();
  c->path = *path;
  c->owner_fd = client.fd;
  // `uroce capture` creates the file with its user's rights and passes the descriptor; without one the
  // engine creates the file itself, never replacing or following anything already there.
  std::string err;
  if (client.fds.empty()) {
    err = c->writer.open(c->path, slot);
  } else {
    const int f = client.fds.front();
    client.fds.erase(client.fds.begin());
    struct stat st {};
    const int mode = fcntl(f, F_GETFL);
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode) || mode < 0 || (mode & O_ACCMODE) == O_RDONLY) {
      close(f);
      return error_reply("capture_start: the descriptor passed for " + c->path +
                         " is not a regular file open for writing");
    }
    err = c->writer.adopt(f, c->path, slot);
  }
  if (!err.empty()) return error_reply(err);
  const uint64_t slots = std::clamp<uint64_t>(kRingBytes / (slot + 16), kMinSlots, kMaxSlots);
  c->ring = std::make_unique<CaptureRing>(static_cast<uint32_t>(slots), slot, count);
  {
    std::lock_guard lock(*src.mu);
    src.tap->attach_locked(c->ring.get());
  }
  cap = std::move(c);
  last = nullptr;
  return json{{"ok", true}, {"path", cap->path}, {"snaplen", slot}};
}

json ControlEndpoint::Impl::capture_status() {
  if (!cap) {
    json out = last.is_null() ? json{{"ok", true}} : last;
    out["active"] = false;
    return out;
  }
  drain();
  return json{{"ok", true},
              {"active", true},
              {"path", cap->path},
              {"frames", cap->writer.records()},
              {"dropped", cap->ring->dropped()},
              {"limit_reached", cap->ring->limit_reached()}};
}

json ControlEndpoint::Impl::capture_stop() {
  if (cap) finish_capture();
  if (last.is_null()) return error_reply("no capture is running");
  return last;
}

void ControlEndpoint::Impl::drain() {
  cap->ring->drain([this](uint64_t ts, const uint8_t* data, uint32_t cap_len, uint32_t orig_len) {
    cap->writer.write(ts, data, cap_len, orig_len);
  });
}

void ControlEndpoint::Impl::finish_capture() {
  {
    std::lock_guard lock(*src.mu);
    src.tap->attach_locked(nullptr);
  }
  drain();  // the datapath no longer touches the ring: this takes the last frames
  const std::string err = cap->writer.close();
  last = json{{"ok", err.empty()},
              {"path", cap->path},
              {"frames", cap->writer.records()},
              {"dropped", cap->ring->dropped()},
              {"limit_reached", cap->ring->limit_reached()}};
  if (!err.empty()) last["error"] = err;
  cap.reset();
}

ControlEndpoint::ControlEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)), path_(impl_->path) {}

std::unique_ptr<ControlEndpoint> ControlEndpoint::start(ControlSource src, std::string* err,
                                                        std::string dir) {
  err->clear();
  if (const char* v = std::getenv("UROCE_CONTROL"); v && std::string(v) == "0") return nullptr;
  if (dir.empty() && (dir = control_dir(err)).empty()) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->src = std::move(src);
  impl->path = dir + "/" + std::to_string(getpid()) + "-" + impl->src.ibdev + ".sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (impl->path.size() >= sizeof(addr.sun_path)) {
    *err = "socket path too long: " + impl->path;
    return nullptr;
  }
  std::memcpy(addr.sun_path, impl->path.c_str(), impl->path.size() + 1);
  impl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  impl->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (impl->listen_fd < 0 || impl->stop_fd < 0) {
    *err = std::string("cannot create a socket: ") + std::strerror(errno);
    return nullptr;
  }
  // A file of this name is left from an earlier process that had our pid: this process opens each device's
  // engine once at a time.
  unlink(impl->path.c_str());
  if (bind(impl->listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(impl->listen_fd, 8) != 0) {
    *err = "cannot listen on " + impl->path + ": " + std::strerror(errno);
    unlink(impl->path.c_str());
    return nullptr;
  }
  Impl* p = impl.get();
  p->thread = std::thread([p] { p->run(); });
  std::lock_guard lock(registry_mu());
  static bool once = [] {
    std::atexit([] {
      std::lock_guard lock(registry_mu());
      for (Impl* e : registry()) e->shutdown();
    });
    return true;
  }();
  (void)once;
  registry().insert(p);
  return std::unique_ptr<ControlEndpoint>(new ControlEndpoint(std::move(impl)));
}

ControlEndpoint::~ControlEndpoint() {
  {
    std::lock_guard lock(registry_mu());
    registry().erase(impl_.get());
  }
  impl_->shutdown();
}

}  // namespace uroce::provider
