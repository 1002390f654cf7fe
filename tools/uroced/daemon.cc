#include "tools/uroced/daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <thread>

#include "pmd_glue/dpdk_eal.h"
#include "runtime/env_vars.h"
#include "runtime/host_addr.h"
#include "runtime/peer_cred.h"
#include "runtime/runtime_dir.h"
#include "runtime/uroced_client.h"
#include "runtime/yield_backoff.h"
#include "transport/wire/address.h"

namespace uroce::uroced {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMinNapNs = 20'000, kBusyMaxNapNs = 1'000'000, kIdleMaxNapNs = 20'000'000;
constexpr uint64_t kIdleAfterNs = 1'000'000'000;
constexpr uint64_t kControlEveryNs = 1'000'000;
constexpr uint64_t kConnTimeoutNs = 2'000'000'000;
constexpr uint64_t kStallNs = 50'000'000;
constexpr uint32_t kPortMbufs = 2048;

volatile sig_atomic_t g_signalled = 0;
void on_signal(int) { g_signalled = 1; }

bool yield_in_spin() {
  static const bool v = [] {
    const char* e = std::getenv("UROCED_YIELD");
    return !(e && std::string(e) == "0");
  }();
  return v;
}

uint64_t spin_ns() {
  static const uint64_t v = [] {
    uint64_t us = 50;  // main() refused a bad value before the daemon started
    runtime::env_uint("UROCED_SPIN_US", &us, nullptr);
    return us * 1000;
  }();
  return v;
}

std::string ip_text(uint32_t ip) {
  in_addr a{htonl(ip)};
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &a, buf, sizeof buf);
}

}  // namespace

std::string pmd_counters(const glue::DpdkPort& p) {
  const auto s = p.stats();
  return " pmd_rx=" + std::to_string(s.rx_frames) + " pmd_tx=" + std::to_string(s.tx_frames) +
         " pmd_rx_missed=" + std::to_string(s.rx_missed) + " pmd_rx_nombuf=" + std::to_string(s.rx_nombuf) +
         " pmd_tx_errors=" + std::to_string(s.tx_errors) + " bell_rings=" + std::to_string(s.bell_rings) +
         " pool_free=" + std::to_string(p.pool_available()) + "/" + std::to_string(p.pool_size());
}

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

// The kernel's ephemeral port range (net.ipv4.ip_local_port_range), which rdma_cm uses too.
std::pair<uint16_t, uint16_t> local_port_range() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned lo = 0, hi = 0;
  if (f >> lo >> hi && lo > 0 && lo <= hi && hi <= 65535)
    return {static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
  return {32768, 60999};
}

// The parent of `pid` from /proc/PID/stat (0 if unknown). The command name in parentheses may hold spaces
// and parentheses: the fields after it start after the last ')'.
pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

}  // namespace

Daemon::Daemon(DaemonConfig cfg, fs::path base)
    : cfg_(std::move(cfg)),
      base_(std::move(base)),
      sw_(cfg_.seed, cfg_.credit_bytes, cfg_.pfc_watchdog_us * 1000),
      cm_ports_(local_port_range().first, local_port_range().second, std::random_device{}(),
                [this](uint32_t ip) {
                  for (const auto& l : leases_)
                    if (l->ip == ip) return true;
                  return false;
                }),
      cm_track_(static_cast<uint32_t>(std::random_device{}())) {
  sw_.set_gsi_tap([this](const uint8_t* f, uint16_t len) { cm_track_.observe(f, len, now_ns()); });
}

Daemon::~Daemon() {
  while (!leases_.empty()) release(leases_.size() - 1, "daemon exit", false);
  if (uplink_id_ >= 0) sw_.remove_port(uplink_id_);
  uplink_.reset();
  for (auto& c : conns_) close(c.fd);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(runtime::control_socket_path(base_).c_str());
  }
  if (lock_fd_ >= 0) close(lock_fd_);  // releases the lock: a new daemon may start now
}

void Daemon::log(const char* fmt, ...) const {
  char when[32];
  const time_t t = time(nullptr);
  tm tmv{};
  strftime(when, sizeof when, "%F %T", localtime_r(&t, &tmv));
  std::fprintf(stderr, "%s uroced[%d]: ", when, getpid());
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

bool Daemon::start(std::string* err, bool* already_running) {
  *already_running = false;
  // The memif sockets of the leases live here: a private directory inside the private runtime directory
  // (memif itself checks no credentials, see pmd_glue/dpdk_spec.h).
  if (!runtime::private_subdir(runtime::ports_dir(base_).string(), err)) return false;
  lock_fd_ = open(runtime::lock_path(base_).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    *err = "cannot open " + runtime::lock_path(base_).string() + ": " + std::strerror(errno);
    return false;
  }
  // One daemon per user: the lock is held for the daemon's life. A holder that does not answer is on its
  // way out (idle exit); wait for it.
  for (int i = 0;; ++i) {
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) break;
    std::string reply, why;
    if (runtime::request("ping", &reply, &why)) {
      *already_running = true;
      *err = "another uroced is running (" + reply + ")";
      return false;
    }
    if (i == 100) {
      *err = "another uroced holds " + runtime::lock_path(base_).string() + " but does not answer";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // Memory for the ports' pools (~9 MB each, touched only as pools are created); --no-huge memory is
  // reserved virtually.
  setenv("UROCE_DPDK_MEM_MB", "2048", 0);
  if (!glue::Eal::ensure(err)) return false;
  glue::Eal::register_thread();

  if (!cfg_.uplink.empty()) {
    PortConfig pc;
    if (!port_config_for(cfg_, "uplink", &pc, err)) return false;
    uplink_ = glue::DpdkPort::open(cfg_.uplink, err);
    if (!uplink_) {
      *err = "uplink: " + *err;
      return false;
    }
    uplink_id_ = sw_.add_port(uplink_.get(), "uplink", pc, now_ns());
    sw_.set_no_credit_peer(uplink_id_);  // a NIC or another switch does not speak uroce's credit frames
    sw_.set_default_port(uplink_id_);
  }

  const fs::path sock = runtime::control_socket_path(base_);
  unlink(sock.c_str());  // we hold the lock: whatever is there is stale
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, sock.c_str(), sizeof(sa.sun_path) - 1);
  if (listen_fd_ < 0 || sock.string().size() >= sizeof(sa.sun_path) ||
      bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(listen_fd_, 64) != 0) {
    *err = "cannot listen on " + sock.string() + ": " + std::strerror(errno);
    return false;
  }
  chmod(sock.c_str(), 0600);
  last_client_ns_ = now_ns();
  log("listening on %s; uplink %s; subnet %s/%u; idle exit %us", sock.c_str(),
      cfg_.uplink.empty() ? "none" : cfg_.uplink.c_str(), ip_text(cfg_.subnet).c_str(), cfg_.prefix,
      cfg_.idle_exit_s);
  return true;
}

int Daemon::run() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);                    // the daemon outlives the terminal it was started from
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // naps of tens of microseconds mean what they say

  uint64_t last_work = now_ns(), last_control = last_work, nap = kMinNapNs;
  runtime::YieldBackoff backoff;
  while (!stop_ && !g_signalled) {
    const uint64_t now = now_ns();
    const bool work = sw_.poll(now) != 0;
    note_pass(now, now_ns());
    if (work) {
      last_work = now;
      nap = kMinNapNs;
    }
    if (now - last_work < spin_ns()) {
      if (now - last_control >= kControlEveryNs) {
        auto fds = control_fds();
        if (poll(fds.data(), fds.size(), 0) > 0) serve_control(fds);
        last_control = now;
      }
      // Spinning for the next frame, but not holding the core from a process that has work (on a host with
      // more busy pollers than cores, that process is often the one the next frame must come from).
      if (!work && yield_in_spin()) backoff.yield(now);
      continue;
    }
    if (leases_.empty() && cfg_.idle_exit_s &&
        now - last_client_ns_ >= uint64_t{cfg_.idle_exit_s} * 1'000'000'000) {
      log("no clients for %us: exiting", cfg_.idle_exit_s);
      break;
    }
    uint64_t sleep = nap;
    const uint64_t ready = sw_.next_ready_ns();
    if (ready != UINT64_MAX) sleep = std::min(sleep, ready > now ? ready - now : 0);
    // uroced rings the processes' memif bells but does not sleep on its own (docs/latency.md): when it did,
    // ib_write_lat through it had medians of 86-93 us in two runs of five (12-30 us otherwise), likely a
    // process's post_send waking uroced onto the process's own core, where uroced's spin held it off.
    auto fds = control_fds();
    timespec ts{static_cast<time_t>(sleep / 1'000'000'000), static_cast<long>(sleep % 1'000'000'000)};
    const int n = ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n > 0) serve_control(fds);
    last_control = now_ns();
    check_links(last_control);
    nap = std::min(nap * 2, now - last_work < kIdleAfterNs ? kBusyMaxNapNs : kIdleMaxNapNs);
  }
  if (g_signalled) log("signalled: exiting");
  return 0;
}

void Daemon::note_pass(uint64_t start_ns, uint64_t end_ns) {
  const uint64_t took = end_ns - start_ns;
  longest_pass_ns_ = std::max(longest_pass_ns_, took);
  if (took < kStallNs) return;
  ++stalls_;
  log("a switching pass took %lu ms: the daemon was not scheduled (more busy threads than cores?); "
      "peers' ACK timers kept running (stalls so far: %lu)",
      took / 1'000'000, stalls_);
}

std::vector<pollfd> Daemon::control_fds() const {
  std::vector<pollfd> fds;
  fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& c : conns_) fds.push_back({c.fd, POLLIN, 0});
  for (const auto& l : leases_) fds.push_back({l->pidfd, POLLIN, 0});
  return fds;
}

void Daemon::serve_control(const std::vector<pollfd>& fds) {
  const size_t nconn = conns_.size();
  // Leases whose process exited, newest first so indices stay valid.
  for (size_t i = leases_.size(); i-- > 0;)
    if (1 + nconn + i < fds.size() && fds[1 + nconn + i].revents) release(i, "process exited", true);
  const uint64_t now = now_ns();
  std::vector<Conn> keep;
  for (size_t i = 0; i < nconn; ++i) {
    Conn& c = conns_[i];
    bool done = false;
    if (fds[1 + i].revents) {
      char buf[512];
      const ssize_t r = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (r > 0) c.in.append(buf, static_cast<size_t>(r));
      if (c.in.find('\n') != std::string::npos) {
        handle_request(c);
        done = true;
      } else if (r == 0 || (r < 0 && errno != EAGAIN) || c.in.size() > 4096) {
        done = true;
      }
    }
    if (!done && now - c.since_ns > kConnTimeoutNs) done = true;
    if (done) {
      close(c.fd);
    } else {
      keep.push_back(std::move(c));
    }
  }
  conns_ = std::move(keep);
  if (fds[0].revents) accept_conns();
}

void Daemon::accept_conns() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    // The runtime directory (0700) keeps other users out; this is the second lock. Only the daemon's own
    // user and root are served, whatever the socket's permissions became.
    if (std::string refusal; !runtime::peer_allowed(fd, "this uroced", &refusal)) {
      ++refused_peers_;
      const std::string line = "error " + refusal + "\n";
      (void)!send(fd, line.data(), line.size(), MSG_NOSIGNAL);
      close(fd);
      log("%s; refused so far: %lu", refusal.c_str(), refused_peers_);
      continue;
    }
    // A client sends its request right after connecting: answer it in this pass when it is already here,
    // rather than at the next look at the control fds (up to kControlEveryNs later while traffic flows).
    Conn c{fd, "", now_ns()};
    char buf[512];
    const ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r > 0) c.in.append(buf, static_cast<size_t>(r));
    if (c.in.find('\n') != std::string::npos) {
      handle_request(c);
      close(fd);
    } else {
      conns_.push_back(std::move(c));
    }
  }
}

void Daemon::handle_request(Conn& c) {
  std::string line = c.in.substr(0, c.in.find('\n'));
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::string reply, err;
  const std::string cmd = words.empty() ? "" : words[0];
  if (cmd == "ping") {
    reply = "ok pid=" + std::to_string(getpid());
  } else if (cmd == "lease" && words.size() <= 2) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
      reply = "error cannot identify the requesting process";
    } else {
      reply = do_lease(cred.pid, words.size() == 2 ? words[1] : "", &err);
      if (reply.empty()) reply = "error " + err;
    }
  } else if (cmd == "cm") {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
      reply = "error cannot identify the requesting process";
    } else {
      reply = do_cm(cred.pid, words);
    }
  } else if (cmd == "stats" && words.size() == 1) {
    reply = do_stats();
  } else if (cmd == "set") {
    words.erase(words.begin());
    reply = do_set(words, &err) ? "ok" : "error " + err;
  } else if (cmd == "stop" && words.size() == 1) {
    reply = "ok";
    stop_ = true;
    log("stop requested");
  } else {
    reply = "error unknown request '" + line +
            "' (ping, lease [ADDR], cm bind|listen|unbind|lookup ..., stats, set [PORT] k=v..., stop)";
  }
  reply += "\n";
  (void)!send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL);
}

uint32_t Daemon::pick_ip() const {
  const uint32_t hosts = (uint32_t{1} << (32 - cfg_.prefix)) - 2;
  for (uint32_t h = 1; h <= hosts; ++h) {
    const uint32_t ip = cfg_.subnet + h;
    bool used = false;
    for (const auto& l : leases_) used = used || l->ip == ip;
    if (!used) return ip;
  }
  return 0;
}

std::string Daemon::do_lease(pid_t pid, const std::string& want, std::string* err) {
  if (leases_.size() >= cfg_.max_clients) {
    *err = "all " + std::to_string(cfg_.max_clients) + " client ports are in use (max_clients)";
    return "";
  }
  for (const auto& l : leases_)
    if (l->pid == pid) {
      *err = "process " + std::to_string(pid) + " already holds lease " + l->ip_text;
      return "";
    }
  auto l = std::make_unique<Lease>();
  l->pid = pid;
  if (want.empty()) {
    l->ip = pick_ip();
    if (!l->ip) {
      *err = "no free address left in the subnet";
      return "";
    }
  } else {
    in_addr a{};
    if (inet_pton(AF_INET, want.c_str(), &a) != 1) {
      *err = "lease: '" + want + "' is not an IPv4 address";
      return "";
    }
    l->ip = ntohl(a.s_addr);
    for (const auto& o : leases_)
      if (o->ip == l->ip) {
        *err = "address " + want + " is leased to process " + std::to_string(o->pid);
        return "";
      }
  }
  l->ip_text = ip_text(l->ip);
  PortConfig pc;
  if (!port_config_for(cfg_, l->ip_text, &pc, err)) return "";
  l->pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (l->pidfd < 0) {
    *err = "pidfd_open(" + std::to_string(pid) + "): " + std::strerror(errno);
    return "";
  }
  l->socket = (runtime::ports_dir(base_) / (l->ip_text + ".sock")).string();
  const std::string spec = "memif:socket=" + l->socket + ",role=server,mbufs=" + std::to_string(kPortMbufs);
  l->port = glue::DpdkPort::open(spec, err);
  if (!l->port) {
    close(l->pidfd);
    return "";
  }
  l->switch_id = sw_.add_port(l->port.get(), l->ip_text, pc, now_ns());
  sw_.add_static_mac(wire::mac_for_ipv4(l->ip), l->switch_id);
  log("lease %s to pid %d (port %d, %s)", l->ip_text.c_str(), pid, l->switch_id, l->socket.c_str());
  const std::string reply = "ok ip=" + l->ip_text + " port=memif:socket=" + l->socket + ",role=client";
  leases_.push_back(std::move(l));
  leases_total_++;
  return reply;
}

// cm bind SPACE ADDR PORT [reuse] -> "ok port=N"     cm listen|unbind SPACE ADDR PORT -> "ok"
// cm lookup SPACE ADDR PORT -> "ok ip=LEASE pid=N"     errors: "error errno=N MESSAGE"
// SPACE is the rdma_port_space number in hex or decimal (0x106 TCP, 0x111 UDP, 0x13f IB, 0x2 IPoIB), ADDR
// an IPv4 address (0.0.0.0 the wildcard). bind, listen and unbind need a lease: what they hold is the
// leaseholder's and goes with its lease.
std::string Daemon::do_cm(pid_t pid, const std::vector<std::string>& w) {
  auto fail = [](int e, const std::string& what) {
    return "error errno=" + std::to_string(e) + " " + what + ": " + std::strerror(e);
  };
  if (w.size() < 5 || w.size() > 6)
    return "error usage: cm bind|listen|unbind|lookup SPACE ADDR PORT [reuse]";
  char* end = nullptr;
  const unsigned long space = std::strtoul(w[2].c_str(), &end, 0);
  in_addr a{};
  const unsigned long port = std::strtoul(w[4].c_str(), nullptr, 10);
  if (*end || space > 0xFFFF || inet_pton(AF_INET, w[3].c_str(), &a) != 1 || port > 65535)
    return fail(EINVAL, "cm: bad space, address or port in '" + w[2] + " " + w[3] + " " + w[4] + "'");
  // An interface address of this host names the host, as 127.0.0.1 does: every process here is reached
  // through it (binding one and 127.0.0.1 to the same port therefore conflicts, unlike in a kernel).
  uint32_t ip = ntohl(a.s_addr);
  if ((ip >> 24) != 127 && runtime::is_host_ipv4(a.s_addr)) ip = INADDR_LOOPBACK;
  const auto sp = static_cast<uint16_t>(space);
  const auto pt = static_cast<uint16_t>(port);
  if (w[1] == "lookup") {
    CmPorts::Listener l;
    if (!cm_ports_.lookup(sp, ip, pt, &l)) return fail(ECONNREFUSED, "no listener on " + w[3] + ":" + w[4]);
    return "ok ip=" + ip_text(l.own_ip) + " pid=" + std::to_string(l.pid);
  }
  // The lease of the process or of its nearest ancestor that holds one: a server that forks a child per
  // client (qperf) binds and listens from the child, which uses the address its parent leased.
  const Lease* mine = nullptr;
  for (pid_t p = pid; p > 1 && !mine;) {
    for (const auto& l : leases_)
      if (l->pid == p) mine = l.get();
    if (!mine) p = parent_of(p);
  }
  if (!mine) return fail(EPERM, "process " + std::to_string(pid) + " and its parents hold no lease");
  int rc = EINVAL;
  uint16_t bound = pt;
  if (w[1] == "bind") {
    rc = cm_ports_.bind(pid, mine->ip, sp, ip, pt, w.size() == 6 && w[5] == "reuse", &bound);
  } else if (w[1] == "listen" && w.size() == 5) {
    rc = cm_ports_.listen(pid, sp, ip, pt);
  } else if (w[1] == "unbind" && w.size() == 5) {
    rc = cm_ports_.unbind(pid, sp, ip, pt);
  } else {
    return "error usage: cm bind|listen|unbind|lookup SPACE ADDR PORT [reuse]";
  }
  if (rc) return fail(rc, "cm " + w[1] + " " + w[3] + ":" + w[4]);
  return w[1] == "bind" ? "ok port=" + std::to_string(bound) : "ok";
}

// A lease's memif link that goes down while the lease lives: the process that had the device open is gone
// (a forked child that opened it and crashed, while the parent holding the lease lives on) or closed it.
// What it left open on the wire is ended for it, as when a lease ends; a process that closed its device
// normally ended its connections itself first, so nothing is left to send then.
void Daemon::check_links(uint64_t now) {
  constexpr uint64_t kEveryNs = 50'000'000;
  if (now - links_checked_ns_ < kEveryNs) return;
  links_checked_ns_ = now;
  for (auto& l : leases_) {
    const bool up = l->port->link_up();
    if (l->link_was_up && !up) end_cm_of(*l, "its port's link went down");
    l->link_was_up = up;
  }
}

void Daemon::end_cm_of(const Lease& l, const char* why) {
  const auto ends = cm_track_.end_all(wire::ipv4_mapped(l.ip));
  size_t sent = 0;
  for (const auto& f : ends) sent += sw_.inject(f.data(), static_cast<uint16_t>(f.size())) ? 1 : 0;
  if (!ends.empty())
    log("%s (pid %d) left %zu RDMA CM connections open (%s): sent %zu DREQ/DREP/REJ for it",
        l.ip_text.c_str(), l.pid, ends.size(), why, sent);
}

void Daemon::release(size_t idx, const char* why, bool exited) {
  Lease& l = *leases_[idx];
  cm_ports_.release(l.pid);
  // What the process's kernel would send for its connections when its rdma_cm file closes. A process that
  // exited normally sent its own DREQs and REJs at exit: those the switch saw have already ended their
  // entries, so only what it could not send (SIGKILL, a crash, frames lost as its port closed) goes now.
  auto ends = cm_track_.end_all(wire::ipv4_mapped(l.ip));
  if (!exited) ends.clear();
  const std::string counters =
      format_counters(sw_.counters(l.switch_id), sw_.config(l.switch_id)) + pmd_counters(*l.port);
  sw_.remove_port(l.switch_id);
  l.port.reset();  // tears the memif server down and removes its socket
  close(l.pidfd);
  size_t sent = 0;
  for (const auto& f : ends) sent += sw_.inject(f.data(), static_cast<uint16_t>(f.size())) ? 1 : 0;
  if (!ends.empty())
    log("pid %d left %zu RDMA CM connections open: sent %zu DREQ/REJ for it", l.pid, ends.size(), sent);
  log("release %s of pid %d (%s): %s", l.ip_text.c_str(), l.pid, why, counters.c_str());
  leases_.erase(leases_.begin() + static_cast<std::ptrdiff_t>(idx));
  if (leases_.empty()) last_client_ns_ = now_ns();
}

std::string Daemon::do_stats() const {
  std::string out =
      "uroced pid=" + std::to_string(getpid()) + " leases=" + std::to_string(leases_.size()) +
      " leases_total=" + std::to_string(leases_total_) + " stalls=" + std::to_string(stalls_) +
      " refused_peers=" + std::to_string(refused_peers_) +
      " longest_pass_us=" + std::to_string(longest_pass_ns_ / 1000) +
      " macs=" + std::to_string(sw_.learned_macs()) +
      " uplink=" + (cfg_.uplink.empty() ? "none" : cfg_.uplink) +
      " credit=" + (cfg_.credit_bytes ? std::to_string(cfg_.credit_bytes) : "off") +
      " idle_exit=" + std::to_string(cfg_.idle_exit_s) + " cm_binds=" + std::to_string(cm_ports_.size()) +
      " cm_conns=" + std::to_string(cm_track_.size()) + " cm_mads=" + std::to_string(cm_track_.stats().mads) +
      " cm_malformed=" + std::to_string(cm_track_.stats().malformed) +
      " cm_dreq_sent=" + std::to_string(cm_track_.stats().dreq_sent) +
      " cm_rej_sent=" + std::to_string(cm_track_.stats().rej_sent) +
      " cm_drep_sent=" + std::to_string(cm_track_.stats().drep_sent) + "\n";
  auto line = [&](int id, const std::string& extra, const glue::DpdkPort* p) {
    out += "port=" + sw_.name(id) + extra + " link=" + (p->link_up() ? "up" : "down") + " " +
           format_counters(sw_.counters(id), sw_.config(id));
    out += pmd_counters(*p) + "\n";
  };
  if (uplink_id_ >= 0) line(uplink_id_, "", uplink_.get());
  for (const auto& l : leases_) line(l->switch_id, " pid=" + std::to_string(l->pid), l->port.get());
  return out;
}

bool Daemon::do_set(const std::vector<std::string>& words, std::string* err) {
  if (words.empty()) {
    *err = "set [PORT] key=value...";
    return false;
  }
  size_t first = 0;
  std::vector<int> targets;
  const bool all = words[0].find('=') != std::string::npos;
  if (!all) {
    first = 1;
    if (words[0] == "uplink" && uplink_id_ >= 0) targets.push_back(uplink_id_);
    for (const auto& l : leases_)
      if (l->ip_text == words[0]) targets.push_back(l->switch_id);
    if (targets.empty()) {
      *err = "no port '" + words[0] + "' (a lease address or uplink)";
      return false;
    }
  } else {
    if (uplink_id_ >= 0) targets.push_back(uplink_id_);
    for (const auto& l : leases_) targets.push_back(l->switch_id);
  }
  if (first == words.size()) {
    *err = "set: no key=value given";
    return false;
  }
  // Check everything before changing anything.
  auto apply = [&](PortConfig* pc) {
    for (size_t i = first; i < words.size(); ++i) {
      const size_t eq = words[i].find('=');
      if (eq == std::string::npos) {
        *err = "set: expected key=value, got '" + words[i] + "'";
        return false;
      }
      if (!apply_egress_key(words[i].substr(0, eq), words[i].substr(eq + 1), pc, err)) return false;
    }
    if (pc->rate_bps == 0) pc->burst_bytes = 0;
    return check_port_config(*pc, err);
  };
  std::vector<PortConfig> next;
  for (int id : targets) {
    next.push_back(sw_.config(id));
    if (!apply(&next.back())) return false;
  }
  PortConfig defaults = cfg_.defaults;
  if (all && !apply(&defaults)) return false;
  for (size_t i = 0; i < targets.size(); ++i) sw_.configure_port(targets[i], next[i], now_ns());
  if (all) cfg_.defaults = defaults;
  log("set %s", words[0].c_str());
  return true;
}

}  // namespace uroce::uroced
