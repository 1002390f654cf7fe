// DpdkPort lifecycle: device creation per kind, queue setup, start, teardown. The datapath is in
// dpdk_port.cc.
#include <linux/if_packet.h>
#include <net/if.h>
#include <rte_alarm.h>
#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "pmd_glue/dpdk_eal.h"
#include "pmd_glue/dpdk_log.h"
#include "pmd_glue/dpdk_port.h"
#include "pmd_glue/dpdk_ring_pair.h"
#include "pmd_glue/intr_gate.h"
#include "runtime/env_vars.h"

namespace uroce::glue {

namespace {

constexpr unsigned kPoolCache = 128;  // per-lcore cache; only EAL/registered threads use one
constexpr uint16_t kRxDesc = 1024;
constexpr uint16_t kTxDesc = 1024;
constexpr auto kStartRetryInterval = std::chrono::milliseconds(20);

// memif server sockets (always filesystem sockets) opened by this process: memif serves several ids on one
// socket, so a path we already listen on is not stale.
std::mutex g_sockets_mu;
std::multiset<std::string> g_server_sockets;

constexpr int kEthHeader = 14;

// The MTU of kernel interface `iface` in this thread's network namespace, or -1.
int kernel_mtu(const std::string& iface) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, iface.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFMTU, &ifr);
  close(fd);
  return rc == 0 ? ifr.ifr_mtu : -1;
}

bool fail(std::string* err, const std::string& what, size_t log_mark) {
  if (err) {
    *err = what;
    const std::string said = dpdk_log::since(log_mark, 4);
    if (!said.empty()) *err += "\nDPDK said:\n" + said;
  }
  return false;
}

std::string errstr(int negative_errno) { return rte_strerror(-negative_errno); }

// A filesystem socket left by a dead server makes memif's bind() fail with EADDRINUSE. Remove it if
// nobody accepts on it; refuse if somebody does.
bool clear_stale_socket(const std::string& path, std::string* err) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return true;
  if (!S_ISSOCK(st.st_mode)) {
    if (err) *err = "memif socket path " + path + " exists and is not a socket";
    return false;
  }
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
  const bool live = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  close(fd);
  if (live) {
    if (err) *err = "memif socket " + path + " already has a live server";
    return false;
  }
  unlink(path.c_str());
  return true;
}

// Waits until the EAL interrupt thread has finished whatever was pending when this was called. memif
// handles its control channel (connect, disconnect, peer gone) on that thread, and tearing a device down
// while the thread still works on it - e.g. the disconnect of an in-process peer closed a moment ago -
// corrupts DPDK's heap. Alarms run on the same thread; the second alarm can only fire after the batch of
// events that held the first one has been handled completely.
std::atomic<uint64_t> g_alarms_fired{0};  // not on a stack: a late alarm must have somewhere to write

void count_alarm(void*) { g_alarms_fired.fetch_add(1, std::memory_order_release); }

void settle_interrupt_thread() {
  for (int round = 0; round < 2; ++round) {
    const uint64_t before = g_alarms_fired.load(std::memory_order_acquire);
    if (rte_eal_alarm_set(1, count_alarm, nullptr) != 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (g_alarms_fired.load(std::memory_order_acquire) == before) {
      if (std::chrono::steady_clock::now() >= deadline) return;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

// The descriptors open in this process, from /proc/self/fd (sorted).
std::vector<int> open_fds() {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    const std::string name = e.path().filename().string();
    const auto [end, rc] = std::from_chars(name.data(), name.data() + name.size(), fd);
    if (rc == std::errc() && end == name.data() + name.size()) fds.push_back(fd);
  }
  std::sort(fds.begin(), fds.end());
  return fds;
}

}  // namespace

// DPDK 22.11's af_packet PMD keeps its packet socket private and reports no imissed, yet the kernel counts
// every frame it drops for want of a free rx ring slot (PACKET_STATISTICS tp_drops). The PMD opens one
// socket per queue pair while rte_vdev_init runs. Among the descriptors that appeared during that call,
// it is the AF_PACKET socket bound to our interface whose fanout group is the PMD's
// ((pid ^ ifindex) & 0xffff); with qpairs=1 there is exactly one. Anything less certain leaves the
// counter unread rather than reading someone else's socket.
void DpdkPort::find_af_packet_socket(const std::vector<int>& fds_before) {
  const unsigned ifindex = if_nametoindex(spec_.iface.c_str());
  if (ifindex == 0) return;
  const unsigned group = (static_cast<unsigned>(getpid()) ^ ifindex) & 0xffff;
  int found = -1, matches = 0;
  for (int fd : open_fds()) {
    if (std::binary_search(fds_before.begin(), fds_before.end(), fd)) continue;
    int domain = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET) continue;
    sockaddr_ll sll{};
    len = sizeof sll;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&sll), &len) != 0 ||
        static_cast<unsigned>(sll.sll_ifindex) != ifindex)
      continue;
    int fanout = 0;
    len = sizeof fanout;
    if (getsockopt(fd, SOL_PACKET, PACKET_FANOUT, &fanout, &len) != 0 ||
        (static_cast<unsigned>(fanout) & 0xffff) != group)
      continue;
    found = fd;
    ++matches;
  }
  if (matches == 1) afp_socket_ = found;
}

std::unique_ptr<DpdkPort> DpdkPort::open(const std::string& text, std::string* err) {
  std::unique_ptr<DpdkPort> p(new DpdkPort);
  if (!parse_port_spec(text, &p->spec_, err)) return nullptr;
  if (p->spec_.own_driver) {
    *err = text + ": driver=uroce is uroce's own memif client, not a DPDK port (glue::open_port opens it)";
    return nullptr;
  }
  if (!Eal::ensure(err)) return nullptr;
  p->owner_pid_ = getpid();
  if (!p->setup(err)) return nullptr;  // the destructor releases whatever setup() created
  return p;
}

bool DpdkPort::setup(std::string* err) {
  const size_t mark = dpdk_log::mark();
  // priv_size must be a multiple of RTE_MBUF_PRIV_ALIGN; the PktBuf lives there (see dpdk_port.h).
  const uint16_t priv = RTE_ALIGN(sizeof(PktBuf), RTE_MBUF_PRIV_ALIGN);
  // An AF_XDP socket uses the pool's memory as its UMEM, whose chunks (one mbuf each) cannot exceed a page.
  const uint16_t room = spec_.kind == PortKind::kAfXdp ? kAfXdpFrameRoom : kFrameRoom;
  pool_ = rte_pktmbuf_pool_create(Eal::unique_name("uroce_mp").c_str(), spec_.mbufs, kPoolCache, priv,
                                  RTE_PKTMBUF_HEADROOM + room, SOCKET_ID_ANY);
  if (pool_ == nullptr)
    return fail(err,
                spec_.text + ": cannot create a pool of " + std::to_string(spec_.mbufs) +
                    " mbufs: " + rte_strerror(rte_errno) + " (more memory: UROCE_DPDK_MEM_MB)",
                mark);
  return create_device(err) && configure_and_start(err);
}

bool DpdkPort::create_device(std::string* err) {
  const size_t mark = dpdk_log::mark();
  if (spec_.kind == PortKind::kRing) {
    if (!ring_pair::attach(spec_.ring, &ring_rx_, &ring_tx_, err)) return false;
    dev_name_ = Eal::unique_name("uroce_ring");
    const int id = rte_eth_from_rings(dev_name_.c_str(), &ring_rx_, 1, &ring_tx_, 1, SOCKET_ID_ANY);
    if (id < 0) {
      ring_pair::detach(spec_.ring, ring_tx_);
      ring_rx_ = ring_tx_ = nullptr;
      return fail(err, spec_.text + ": rte_eth_from_rings failed: " + rte_strerror(rte_errno), mark);
    }
    port_id_ = static_cast<uint16_t>(id);
    have_port_ = true;
    return true;
  }

  if (spec_.kind == PortKind::kMemif && spec_.server) {
    std::lock_guard lock(g_sockets_mu);
    const auto dir = std::filesystem::path(spec_.socket).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      return fail(err, spec_.text + ": directory " + dir.string() + " does not exist", mark);
    if (!g_server_sockets.count(spec_.socket) && !clear_stale_socket(spec_.socket, err)) return false;
    g_server_sockets.insert(spec_.socket);
    server_socket_registered_ = true;
  }
  // memif's control channel runs on the interrupt thread, which must not unmap the rings under a burst.
  is_memif_ = spec_.kind == PortKind::kMemif;
  if (is_memif_) IntrGate::join(&gate_);
  // DPDK 22.11's af_packet PMD fails every probe with EPERM, whatever the cause; a missing interface is the
  // common one and is named here.
  if ((spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kAfXdp) &&
      if_nametoindex(spec_.iface.c_str()) == 0)
    return fail(err,
                spec_.text + ": no network interface '" + spec_.iface + "' here (" + std::strerror(errno) +
                    "; 'ip link' lists them)",
                mark);
  // The vdev bus picks the driver by name prefix: "net_memif_u3" is probed by net_memif.
  dev_name_ = Eal::unique_name((std::string(vdev_driver(spec_.kind)) + "_u").c_str());
  const std::string args =
      vdev_args(spec_, kFrameRoom, spec_.kind == PortKind::kAfPacket ? kernel_mtu(spec_.iface) : -1);
  const std::vector<int> fds_before = spec_.kind == PortKind::kAfPacket ? open_fds() : std::vector<int>{};
  const int rc = rte_vdev_init(dev_name_.c_str(), args.c_str());
  if (rc == 0 && spec_.kind == PortKind::kAfPacket) find_af_packet_socket(fds_before);
  if (rc != 0)
    return fail(err,
                spec_.text + ": cannot create " + kind_name(spec_.kind) + " device (" + args +
                    "): " + errstr(rc < 0 ? rc : -EINVAL),
                mark);
  if (rte_eth_dev_get_port_by_name(dev_name_.c_str(), &port_id_) != 0) {
    rte_vdev_uninit(dev_name_.c_str());
    return fail(err, spec_.text + ": device " + dev_name_ + " created but has no ethdev port", mark);
  }
  have_port_ = true;
  if (is_memif_) IntrGate::set_port(&gate_, port_id_);  // its link now sets how often the gate lets out
  return true;
}

bool DpdkPort::configure_and_start(std::string* err) {
  const size_t mark = dpdk_log::mark();
  const std::string& s = spec_.text;
  rte_eth_conf conf{};
  // Of the PMDs here only tap implements rx queue interrupts in DPDK 22.11.
  const bool want_rx_intr = spec_.kind == PortKind::kTap;
  conf.intr_conf.rxq = want_rx_intr ? 1 : 0;
  int rc = rte_eth_dev_configure(port_id_, 1, 1, &conf);
  if (rc != 0) return fail(err, s + ": rte_eth_dev_configure: " + errstr(rc), mark);

  uint16_t nrx = kRxDesc, ntx = kTxDesc;
  rte_eth_dev_adjust_nb_rx_tx_desc(port_id_, &nrx, &ntx);
  const int socket = rte_eth_dev_socket_id(port_id_);
  rc = rte_eth_rx_queue_setup(port_id_, 0, nrx, socket, nullptr, pool_);
  if (rc != 0) return fail(err, s + ": rx queue setup: " + errstr(rc), mark);
  rc = rte_eth_tx_queue_setup(port_id_, 0, ntx, socket, nullptr);
  if (rc != 0) return fail(err, s + ": tx queue setup: " + errstr(rc), mark);

  if (spec_.kind == PortKind::kTap || spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kAfXdp) {
    // The kernel interface's MTU bounds what passes (ethdev's own MTU for these PMDs is a default of
    // 1500 that says nothing about the interface). A tap interface is ours to size; an af_packet
    // interface belongs to whoever configured it.
    // tap's tx also refuses frames longer than its ethdev MTU + 22, and rte_eth_dev_set_mtu (which would
    // set both) refuses anything above 1500: DPDK 22.11's tap reports a 1522-byte max frame.
    int mtu = kernel_mtu(spec_.iface);
    if (spec_.kind == PortKind::kTap) {
      uint16_t eth_mtu = 0;
      rte_eth_dev_info info{};
      if (rte_eth_dev_info_get(port_id_, &info) == 0 && info.max_rx_pktlen >= kMaxFrame + 4u &&
          info.max_mtu >= kMaxFrame - kEthHeader)
        rte_eth_dev_set_mtu(port_id_, kMaxFrame - kEthHeader);
      mtu = kernel_mtu(spec_.iface);
      if (rte_eth_dev_get_mtu(port_id_, &eth_mtu) == 0) mtu = std::min<int>(mtu, eth_mtu);
    }
    if (mtu > 0 && mtu + kEthHeader < kMaxFrame) max_frame_ = static_cast<uint16_t>(mtu + kEthHeader);
    if (spec_.kind == PortKind::kAfXdp) max_frame_ = std::min<uint16_t>(max_frame_, kAfXdpFrameRoom);
    if (spec_.kind == PortKind::kTap || (spec_.kind == PortKind::kAfPacket && spec_.promisc))
      rte_eth_promiscuous_enable(port_id_);
  }

  if (is_memif_ && spec_.server) open_bell();
  if (!start_with_retry(err)) return false;

  if (want_rx_intr) {
    const int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(port_id_, 0);
    rx_event_fd_ = fd >= 0 ? fd : -1;
  }
  if (is_memif_ && !spec_.server) open_bell();  // the server's files exist once it accepts clients
  wait_link_up(std::chrono::milliseconds(spec_.effective_wait_ms()));
  return true;
}

// memif's bell (memif_bell.h), unless UROCE_MEMIF_BELL=0. Without one the port works as before: a sleeping
// progress thread finds frames at the end of its nap.
void DpdkPort::open_bell() {
  if (!runtime::env_flag("UROCE_MEMIF_BELL", true)) return;
  std::string why;
  bell_ = MemifBell::open(spec_.socket, spec_.id, spec_.server, &why);
  if (bell_) {
    rx_event_fd_ = bell_->fd();
  } else if (spec_.server || errno != ENOENT) {  // a client of a server without a bell is not news
    std::fprintf(stderr, "uroce: %s: %s; this end is not woken by frames, it looks for them after naps\n",
                 spec_.text.c_str(), why.c_str());
  }
}

// A memif client's start connects to the server's socket and fails while there is none; retry for the
// spec's wait= so that client and server may start in either order.
bool DpdkPort::start_with_retry(std::string* err) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(spec_.effective_wait_ms());
  for (;;) {
    const size_t mark = dpdk_log::mark();
    const int rc = rte_eth_dev_start(port_id_);
    if (rc == 0) {
      started_ = true;
      return true;
    }
    const bool retry = spec_.kind == PortKind::kMemif && !spec_.server;
    if (!retry || std::chrono::steady_clock::now() >= deadline) {
      std::string hint;
      if (retry) hint = " (no memif server at " + spec_.socket + "? wait= gives it time)";
      return fail(err, spec_.text + ": rte_eth_dev_start: " + errstr(rc) + hint, mark);
    }
    std::this_thread::sleep_for(kStartRetryInterval);
  }
}

DpdkPort::~DpdkPort() { teardown(); }

void DpdkPort::linger() {
  if (owner_pid_ != getpid() || !started_ || !is_memif_ || !close_linger_ms_ || !last_tx_cycles_) return;
  drain_peer();
  last_tx_cycles_ = 0;
}

void DpdkPort::teardown() {
  // After fork() only the parent may touch the device: stopping a memif port here would disconnect
  // the parent's link (see dpdk_eal.h).
  if (owner_pid_ != getpid()) return;
  if (afp_socket_ >= 0) (void)stats();  // the last kernel drops, before the PMD closes its socket
  afp_socket_ = -1;
  // memif: frames in our transmit ring are the peer's to read when it next runs, and once we disconnect its
  // PMD frees the shared region with whatever it has not read yet. A program that exits right after its last
  // message would lose the frames of that moment (its last ACK: the peer then retries into a QP that is gone
  // and fails), and on a loaded host the peer may not run for tens of milliseconds. So a port that has
  // transmitted asks the peer to confirm it has read everything (drain_peer).
  linger();
  // Stop and close with the interrupt thread parked, so it is not in this device's callbacks meanwhile;
  // but not across settle_interrupt_thread(), which needs it.
  IntrGate::set_port(&gate_, -1);
  if (started_) {
    IntrGate::enter_blocking(&gate_);
    rte_eth_dev_stop(port_id_);
    IntrGate::exit(&gate_);
  }
  started_ = false;
  if (spec_.kind == PortKind::kMemif) settle_interrupt_thread();
  if (have_port_) {
    if (spec_.kind == PortKind::kRing) {
      rte_eth_dev_close(port_id_);
      ring_pair::detach(spec_.ring, ring_tx_);
    } else {
      IntrGate::enter_blocking(&gate_);
      rte_vdev_uninit(dev_name_.c_str());  // closes the ethdev; a memif server unlinks its socket
      IntrGate::exit(&gate_);
    }
    have_port_ = false;
  }
  IntrGate::leave(&gate_);
  if (bell_ && spec_.server) bell_->remove_files();
  bell_.reset();
  if (is_memif_) rx_event_fd_ = -1;
  if (server_socket_registered_) {
    std::lock_guard lock(g_sockets_mu);
    g_server_sockets.erase(g_server_sockets.find(spec_.socket));
    server_socket_registered_ = false;
  }
  if (pool_ != nullptr) rte_mempool_free(pool_);
  pool_ = nullptr;
}

}  // namespace uroce::glue
