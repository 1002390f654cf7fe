// RDMA netlink (NETLINK_RDMA, the kernel's nldev interface) while a uroce tree is active.
//
// rdma-core's own users - libibverbs 44 listing devices (RDMA_NLDEV_CMD_GET, GET_CHARDEV) and librdmacm
// reading the ucma ABI - open their sockets through libnl-3. For them the socket fails with EPROTONOSUPPORT,
// exactly as on a kernel without RDMA, so they read $SYSFS_PATH (the uroce tree) instead of the kernel's
// devices on a host with ib_core loaded.
//
// Every other caller (iproute2's `rdma`, through libmnl) gets an emulated socket that answers the nldev
// requests these tools need from the uroce tree and the live counters of the running processes:
//   RDMA_NLDEV_CMD_GET       (dump or one DEV_INDEX): index, name, port count, node type, firmware, GUIDs
//   RDMA_NLDEV_CMD_PORT_GET  (dump or DEV_INDEX + PORT_INDEX): state, physical state, cap mask, netdev
//   RDMA_NLDEV_CMD_STAT_GET  (DEV_INDEX + PORT_INDEX): the port's hw counters (mlx5/rxe names, summed
//                             over the processes that have the device open, live_counters.h)
//   RDMA_NLDEV_CMD_RES_QP_GET (dump): the QPs of those processes (number, type, state, peer QPN, PSNs, pid)
//   RDMA_NLDEV_CMD_RES_GET   (dump or one device): the resource summary, only "qp" (their number)
// Anything else is answered with NLMSG_ERROR -EOPNOTSUPP. Replies follow the kernel's nldev.c: a dump is
// NLM_F_MULTI messages and NLMSG_DONE; a single request gets its message and, with NLM_F_ACK, an ACK.
//
// The socket is one end of an AF_UNIX datagram pair; a request sent on it is answered at once by writing
// the replies into the other end, so recv/recvmsg/poll work as on a netlink socket (the address they return
// is rewritten to the kernel's sockaddr_nl). bind, getsockname and SOL_NETLINK options are accepted. Up to
// 10 datagrams of at most 4 KiB (several messages each) queue at once: enough for a few devices.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "provider/shim/live_counters.h"
#include "provider/shim/netlink.h"
#include "provider/shim/next.h"
#include "provider/shim/sysfs_env.h"

namespace uroce::shim {
namespace {

constinit NextSym s_socket{"socket"}, s_bind{"bind"}, s_getsockname{"getsockname"},
    s_setsockopt{"setsockopt"}, s_send{"send"}, s_sendto{"sendto"}, s_sendmsg{"sendmsg"},
    s_recvfrom{"recvfrom"}, s_recvmsg{"recvmsg"}, s_close{"close"};

// Resolved before main(), as in sysfs_redirect.cc: no interposer should call dlsym while, say, a malloc
// implementation initialises itself.
__attribute__((constructor)) void resolve_all() {
  for (NextSym* sym : {&s_socket, &s_bind, &s_getsockname, &s_setsockopt, &s_send, &s_sendto, &s_sendmsg,
                       &s_recvfrom, &s_recvmsg, &s_close})
    next<void>(*sym);
}

constexpr int kMaxFd = 4096;
constexpr size_t kDgram = 4096;  // one reply datagram; iproute2 reads MNL_SOCKET_BUFFER_SIZE (a page)
constexpr int kMaxDevs = 16;

// fd -> its peer's fd + 1 (0: not an emulated socket). g_open counts emulated sockets, so the interposers
// cost one relaxed load in a process that has none.
constinit std::atomic<int> g_peer[kMaxFd] = {};
constinit std::atomic<int> g_open{0};

int peer_of(int fd) {
  if (g_open.load(std::memory_order_relaxed) == 0 || fd < 0 || fd >= kMaxFd) return -1;
  return g_peer[fd].load(std::memory_order_acquire) - 1;
}

bool from_libnl(void* caller) {
  Dl_info info{};
  if (dladdr(caller, &info) == 0 || info.dli_fname == nullptr) return false;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base != nullptr ? base + 1 : info.dli_fname;
  return std::strncmp(base, "libnl-", 6) == 0;
}

// ---- the uroce tree: devices and their attributes

struct Dev {
  char name[64];
  uint32_t ports;
};

// Reads <root>/class/infiniband/<dev>/<rel> into buf (trailing newline removed); false if unreadable.
bool read_attr(const char* dev, const char* rel, char* buf, size_t size) {
  size_t root_len = 0;
  const char* root = sysfs_root(&root_len);
  char path[PATH_MAX];
  if (root == nullptr ||
      snprintf(path, sizeof path, "%.*s/class/infiniband/%s/%s", static_cast<int>(root_len), root, dev,
               rel) >= static_cast<int>(sizeof path))
    return false;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0) return false;
  size_t len = static_cast<size_t>(n);
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) --len;
  buf[len] = '\0';
  return true;
}

uint64_t attr_number(const char* dev, const char* rel, int base) {
  char buf[64];
  return read_attr(dev, rel, buf, sizeof buf) ? strtoull(buf, nullptr, base) : 0;
}

// "fe80:0000:..." GUID text -> the 64-bit number (as the kernel reports it, be64_to_cpu of the GUID).
uint64_t attr_guid(const char* dev, const char* rel) {
  char buf[64];
  if (!read_attr(dev, rel, buf, sizeof buf)) return 0;
  uint64_t v = 0;
  for (const char* p = buf; *p; ++p) {
    const char c = *p;
    if (c >= '0' && c <= '9')
      v = v << 4 | static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v << 4 | static_cast<uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v = v << 4 | static_cast<uint64_t>(c - 'A' + 10);
  }
  return v;
}

// The devices of the tree, sorted by name; device index = position + 1.
int list_devs(Dev* out) {
  size_t root_len = 0;
  const char* root = sysfs_root(&root_len);
  char path[PATH_MAX];
  if (root == nullptr || snprintf(path, sizeof path, "%.*s/class/infiniband", static_cast<int>(root_len),
                                  root) >= static_cast<int>(sizeof path))
    return 0;
  DIR* d = opendir(path);
  if (d == nullptr) return 0;
  int n = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || n == kMaxDevs || std::strlen(e->d_name) >= sizeof out[0].name) continue;
    Dev dev{};
    std::strcpy(dev.name, e->d_name);
    int at = n++;
    while (at > 0 && std::strcmp(out[at - 1].name, dev.name) > 0) {
      out[at] = out[at - 1];
      --at;
    }
    out[at] = dev;
  }
  closedir(d);
  for (int i = 0; i < n; ++i) {
    // Ports are the numbered directories under ports/ (uroce has one).
    char rel[96];
    uint32_t p = 0;
    for (uint32_t k = 1; k <= 8; ++k) {
      char buf[16];
      snprintf(rel, sizeof rel, "ports/%u/state", k);
      if (read_attr(out[i].name, rel, buf, sizeof buf)) p = k;
    }
    out[i].ports = p;
  }
  return n;
}

// ---- building replies

// Netlink messages packed into datagrams of at most kDgram bytes, written to the peer as they fill.
class Replies {
 public:
  Replies(int peer, uint32_t portid) : peer_(peer), portid_(portid) {}

  // Starts a message (attributes follow; end() completes it).
  void begin(uint16_t type, uint16_t flags, uint32_t seq) {
    msg_ = len_;
    auto* h = reinterpret_cast<nlmsghdr*>(buf_ + len_);
    *h = nlmsghdr{0, type, flags, seq, portid_};
    len_ += NLMSG_HDRLEN;
  }
  void put(uint16_t type, const void* data, size_t n) {
    const size_t total = NLA_ALIGN(NLA_HDRLEN + n);
    if (len_ + total > sizeof buf_) {
      overflow_ = true;
      return;
    }
    auto* a = reinterpret_cast<nlattr*>(buf_ + len_);
    a->nla_len = static_cast<uint16_t>(NLA_HDRLEN + n);
    a->nla_type = type;
    std::memcpy(buf_ + len_ + NLA_HDRLEN, data, n);
    std::memset(buf_ + len_ + NLA_HDRLEN + n, 0, total - NLA_HDRLEN - n);
    len_ += total;
  }
  void u8(uint16_t t, uint8_t v) { put(t, &v, 1); }
  void u32(uint16_t t, uint32_t v) { put(t, &v, 4); }
  void u64(uint16_t t, uint64_t v) { put(t, &v, 8); }
  void str(uint16_t t, const char* s) { put(t, s, std::strlen(s) + 1); }
  size_t nest_begin(uint16_t t) {
    const size_t at = len_;
    put(t, nullptr, 0);
    return at;
  }
  void nest_end(size_t at) {
    if (!overflow_) reinterpret_cast<nlattr*>(buf_ + at)->nla_len = static_cast<uint16_t>(len_ - at);
  }
  // Ends the message: moves it into the next datagram when the current one cannot hold it.
  void end() {
    const size_t n = len_ - msg_;
    reinterpret_cast<nlmsghdr*>(buf_ + msg_)->nlmsg_len = static_cast<uint32_t>(n);
    if (overflow_) {  // too large for any datagram: drop it (never for the messages built here)
      len_ = msg_;
      overflow_ = false;
      return;
    }
    if (len_ > kDgram) {
      flush_upto(msg_);
      std::memmove(buf_, buf_ + msg_, n);
      len_ = n;
    }
  }
  void error(const nlmsghdr& req, int err) {
    begin(NLMSG_ERROR, NLM_F_CAPPED, req.nlmsg_seq);
    nlmsgerr e{};
    e.error = err;
    e.msg = req;
    e.msg.nlmsg_len = NLMSG_HDRLEN;
    std::memcpy(buf_ + len_, &e, sizeof e);
    len_ += NLMSG_ALIGN(sizeof e);
    end();
  }
  void done(uint32_t seq) {
    begin(NLMSG_DONE, NLM_F_MULTI, seq);
    const int zero = 0;
    std::memcpy(buf_ + len_, &zero, sizeof zero);
    len_ += sizeof zero;
    end();
  }
  void flush() { flush_upto(len_), len_ = 0; }

 private:
  void flush_upto(size_t n) {
    if (n == 0) return;
    auto* real = next<decltype(::send)>(s_send);
    if (real != nullptr) (void)real(peer_, buf_, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  int peer_;
  uint32_t portid_;
  size_t len_ = 0, msg_ = 0;
  bool overflow_ = false;
  unsigned char buf_[2 * kDgram];
};

void dev_attrs(Replies& r, const Dev& d, uint32_t idx) {
  r.u32(RDMA_NLDEV_ATTR_DEV_INDEX, idx);
  r.str(RDMA_NLDEV_ATTR_DEV_NAME, d.name);
}

void put_dev(Replies& r, const Dev& d, uint32_t idx) {
  dev_attrs(r, d, idx);
  r.u32(RDMA_NLDEV_ATTR_PORT_INDEX, d.ports);
  r.u64(RDMA_NLDEV_ATTR_CAP_FLAGS, 0);
  char fw[64];
  if (read_attr(d.name, "fw_ver", fw, sizeof fw)) r.str(RDMA_NLDEV_ATTR_FW_VERSION, fw);
  r.u64(RDMA_NLDEV_ATTR_NODE_GUID, attr_guid(d.name, "node_guid"));
  r.u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, attr_guid(d.name, "sys_image_guid"));
  r.u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, static_cast<uint8_t>(attr_number(d.name, "node_type", 10)));
  r.str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce");
}

void put_port(Replies& r, const Dev& d, uint32_t idx, uint32_t port) {
  dev_attrs(r, d, idx);
  r.u32(RDMA_NLDEV_ATTR_PORT_INDEX, port);
  char rel[96];
  snprintf(rel, sizeof rel, "ports/%u/cap_mask", port);
  r.u64(RDMA_NLDEV_ATTR_CAP_FLAGS, attr_number(d.name, rel, 16));
  // "4: ACTIVE", "5: LinkUp": the number is the IB state the kernel reports. Ethernet link layer: no LIDs.
  snprintf(rel, sizeof rel, "ports/%u/state", port);
  r.u8(RDMA_NLDEV_ATTR_PORT_STATE, static_cast<uint8_t>(attr_number(d.name, rel, 10)));
  snprintf(rel, sizeof rel, "ports/%u/phys_state", port);
  r.u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, static_cast<uint8_t>(attr_number(d.name, rel, 10)));
  char ndev[IF_NAMESIZE + 1];
  snprintf(rel, sizeof rel, "ports/%u/gid_attrs/ndevs/0", port);
  if (read_attr(d.name, rel, ndev, sizeof ndev) && ndev[0] != '\0') {
    if (const unsigned ifindex = if_nametoindex(ndev); ifindex != 0) {
      r.u32(RDMA_NLDEV_ATTR_NDEV_INDEX, ifindex);
      r.str(RDMA_NLDEV_ATTR_NDEV_NAME, ndev);
    }
  }
}

void put_stats(Replies& r, const Dev& d, uint32_t idx, uint32_t port) {
  dev_attrs(r, d, idx);
  r.u32(RDMA_NLDEV_ATTR_PORT_INDEX, port);
  uint64_t v[kStdCounterCount];
  live_counters(d.name, v);
  const size_t table = r.nest_begin(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  for (size_t i = 0; i < kStdCounterCount; ++i) {
    if (kStdCounters[i].kind != StdCounterKind::kHw) continue;
    const size_t entry = r.nest_begin(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
    r.str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, kStdCounters[i].name);
    r.u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, v[i]);
    r.nest_end(entry);
  }
  r.nest_end(table);
}

// The QPs of the device's processes (RES_QP_GET dump): messages of at most kQpsPerMsg entries, each entry as
// the kernel's fill_res_qp_entry gives it (no PD: uroce does not report one).
constexpr int kMaxQps = 256, kQpsPerMsg = 32;

void put_qps(Replies& r, uint16_t type, uint32_t seq, const Dev& d, uint32_t idx) {
  LiveQp qps[kMaxQps];
  const int n = live_qps(d.name, qps, kMaxQps);
  for (int first = 0; first < n || first == 0; first += kQpsPerMsg) {
    r.begin(type, NLM_F_MULTI, seq);
    dev_attrs(r, d, idx);
    const size_t table = r.nest_begin(RDMA_NLDEV_ATTR_RES_QP);
    for (int i = first; i < n && i < first + kQpsPerMsg; ++i) {
      const LiveQp& q = qps[i];
      const size_t entry = r.nest_begin(RDMA_NLDEV_ATTR_RES_QP_ENTRY);
      if (q.state != 0) r.u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);  // a QP has a port from INIT on
      r.u32(RDMA_NLDEV_ATTR_RES_LQPN, q.qpn);
      if (q.type != 4 && q.state >= 2) {  // connected (RC, UC) from RTR on
        r.u32(RDMA_NLDEV_ATTR_RES_RQPN, q.dest_qpn);
        r.u32(RDMA_NLDEV_ATTR_RES_RQ_PSN, q.rq_psn);
      }
      r.u32(RDMA_NLDEV_ATTR_RES_SQ_PSN, q.sq_psn);
      r.u8(RDMA_NLDEV_ATTR_RES_TYPE, static_cast<uint8_t>(q.type));
      r.u8(RDMA_NLDEV_ATTR_RES_STATE, static_cast<uint8_t>(q.state));
      r.u32(RDMA_NLDEV_ATTR_RES_PID, q.pid);
      r.nest_end(entry);
    }
    r.nest_end(table);
    r.end();
    if (n == 0) break;
  }
}

// The resource summary (RES_GET): only the QP count is known outside the processes' engines.
void put_res_summary(Replies& r, const Dev& d, uint32_t idx) {
  LiveQp qps[kMaxQps];
  const int n = live_qps(d.name, qps, kMaxQps);
  dev_attrs(r, d, idx);
  const size_t table = r.nest_begin(RDMA_NLDEV_ATTR_RES_SUMMARY);
  const size_t entry = r.nest_begin(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY);
  r.str(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, "qp");
  r.u64(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, static_cast<uint64_t>(n));
  r.nest_end(entry);
  r.nest_end(table);
}

// The request's u32 attribute `type`, or `dflt`.
uint32_t req_u32(const nlmsghdr* h, uint16_t type, uint32_t dflt, bool* present = nullptr) {
  const auto* p = reinterpret_cast<const unsigned char*>(h) + NLMSG_HDRLEN;
  const auto* end = reinterpret_cast<const unsigned char*>(h) + h->nlmsg_len;
  while (p + NLA_HDRLEN <= end) {
    nlattr a;
    std::memcpy(&a, p, sizeof a);
    if (a.nla_len < NLA_HDRLEN || p + a.nla_len > end) break;
    if ((a.nla_type & NLA_TYPE_MASK) == type && a.nla_len >= NLA_HDRLEN + 4) {
      uint32_t v;
      std::memcpy(&v, p + NLA_HDRLEN, 4);
      if (present != nullptr) *present = true;
      return v;
    }
    p += NLA_ALIGN(a.nla_len);
  }
  return dflt;
}

void answer(Replies& r, const nlmsghdr* h) {
  if (h->nlmsg_type < NLMSG_MIN_TYPE || (h->nlmsg_flags & NLM_F_REQUEST) == 0) return;
  const uint32_t seq = h->nlmsg_seq;
  if (RDMA_NL_GET_CLIENT(h->nlmsg_type) != RDMA_NL_NLDEV) return r.error(*h, -EOPNOTSUPP);
  const uint32_t op = RDMA_NL_GET_OP(h->nlmsg_type);
  const bool dump = (h->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  Dev devs[kMaxDevs];
  const int n = list_devs(devs);
  bool has_dev = false, has_port = false, has_res = false;
  const uint32_t want_dev = req_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, 0, &has_dev);
  const uint32_t want_port = req_u32(h, RDMA_NLDEV_ATTR_PORT_INDEX, 0, &has_port);
  req_u32(h, RDMA_NLDEV_ATTR_STAT_RES, 0, &has_res);
  const bool dev_ok = has_dev && want_dev >= 1 && want_dev <= static_cast<uint32_t>(n);
  const Dev* d = dev_ok ? &devs[want_dev - 1] : nullptr;
  const bool port_ok = d != nullptr && has_port && want_port >= 1 && want_port <= d->ports;
  const uint16_t type = h->nlmsg_type;
  // A request about devices: every device for a dump (done), else the one DEV_INDEX names. False when
  // the reply is complete (a dump, or an error).
  const auto per_device = [&](void (*put)(Replies&, const Dev&, uint32_t)) {
    if (dump) {
      for (int i = 0; i < n; ++i) {
        r.begin(type, NLM_F_MULTI, seq);
        put(r, devs[i], static_cast<uint32_t>(i + 1));
        r.end();
      }
      r.done(seq);
      return false;
    }
    if (d == nullptr) {
      r.error(*h, has_dev ? -ENODEV : -EINVAL);
      return false;
    }
    r.begin(type, 0, seq);
    put(r, *d, want_dev);
    r.end();
    return true;
  };
  switch (op) {
    case RDMA_NLDEV_CMD_GET:
      if (!per_device(put_dev)) return;
      break;
    case RDMA_NLDEV_CMD_PORT_GET:
      if (dump) {
        for (int i = 0; i < n; ++i) {
          if (has_dev && want_dev != static_cast<uint32_t>(i + 1)) continue;
          for (uint32_t p = 1; p <= devs[i].ports; ++p) {
            r.begin(type, NLM_F_MULTI, seq);
            put_port(r, devs[i], static_cast<uint32_t>(i + 1), p);
            r.end();
          }
        }
        return r.done(seq);
      }
      if (!port_ok) return r.error(*h, d == nullptr ? -ENODEV : -EINVAL);
      r.begin(type, 0, seq);
      put_port(r, *d, want_dev, want_port);
      r.end();
      break;
    case RDMA_NLDEV_CMD_STAT_GET:
      // The default counters of one port; per-QP counters (STAT_RES, and the dump that needs it) are not
      // emulated.
      if (dump || has_res) return r.error(*h, -EOPNOTSUPP);
      if (!port_ok) return r.error(*h, d == nullptr ? -ENODEV : -EINVAL);
      r.begin(type, 0, seq);
      put_stats(r, *d, want_dev, want_port);
      r.end();
      break;
    case RDMA_NLDEV_CMD_RES_GET:
      if (!per_device(put_res_summary)) return;
      break;
    case RDMA_NLDEV_CMD_RES_QP_GET:
      if (!dump) return r.error(*h, -EOPNOTSUPP);  // one QP by its number: not emulated
      for (int i = 0; i < n; ++i)
        if (!has_dev || want_dev == static_cast<uint32_t>(i + 1))
          put_qps(r, type, seq, devs[i], static_cast<uint32_t>(i + 1));
      return r.done(seq);
    default:
      return r.error(*h, -EOPNOTSUPP);
  }
  if ((h->nlmsg_flags & NLM_F_ACK) != 0) r.error(*h, 0);
}

// A request buffer sent on the emulated socket `fd`: every complete message in it is answered.
ssize_t handle_send(int fd, int peer, const void* buf, size_t len) {
  Replies r(peer, static_cast<uint32_t>(getpid()));
  const auto* p = static_cast<const unsigned char*>(buf);
  size_t left = len;
  while (left >= NLMSG_HDRLEN) {
    nlmsghdr h;
    std::memcpy(&h, p, sizeof h);
    if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > left) break;
    alignas(nlmsghdr) unsigned char copy[kDgram];
    if (h.nlmsg_len <= sizeof copy) {
      std::memcpy(copy, p, h.nlmsg_len);
      answer(r, reinterpret_cast<const nlmsghdr*>(copy));
    } else {
      r.error(h, -EMSGSIZE);
    }
    const size_t step = NLMSG_ALIGN(h.nlmsg_len);
    if (step >= left) break;
    p += step;
    left -= step;
  }
  r.flush();
  (void)fd;
  return static_cast<ssize_t>(len);
}

// The sender's address of a reply, as the kernel gives it: sockaddr_nl of port 0, truncated to the `room`
// the caller gave, with the full length stored.
void set_nl_addr(void* name, socklen_t room, socklen_t* len) {
  if (name == nullptr) return;
  sockaddr_nl nl{};
  nl.nl_family = AF_NETLINK;
  std::memcpy(name, &nl, room < sizeof nl ? room : sizeof nl);
  *len = sizeof nl;
}

}  // namespace

void netlink_forget(int fd) {
  const int peer = peer_of(fd);
  if (peer < 0) return;
  g_peer[fd].store(0, std::memory_order_release);
  g_open.fetch_sub(1, std::memory_order_relaxed);
  if (auto* real = next<decltype(::close)>(s_close)) real(peer);
}

}  // namespace uroce::shim

namespace s = uroce::shim;
using uroce::shim::next;

#define UROCE_NEXT_OR_ENOSYS(sym, fn)   \
  auto* real = next<decltype(fn)>(sym); \
  if (real == nullptr) {                \
    errno = ENOSYS;                     \
    return -1;                          \
  }

extern "C" {

UROCE_EXPORT int socket(int domain, int type, int protocol) noexcept {
  size_t len = 0;
  if (domain == AF_NETLINK && protocol == NETLINK_RDMA && s::sysfs_root(&len) != nullptr) {
    if (s::from_libnl(__builtin_return_address(0))) {
      errno = EPROTONOSUPPORT;
      return -1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | (type & (SOCK_CLOEXEC | SOCK_NONBLOCK)), 0, sv) != 0) return -1;
    fcntl(sv[1], F_SETFD, FD_CLOEXEC);
    if (sv[0] >= s::kMaxFd) {
      close(sv[0]);
      close(sv[1]);
      errno = EMFILE;
      return -1;
    }
    s::g_peer[sv[0]].store(sv[1] + 1, std::memory_order_release);
    s::g_open.fetch_add(1, std::memory_order_relaxed);
    return sv[0];
  }
  UROCE_NEXT_OR_ENOSYS(s::s_socket, socket);
  return real(domain, type, protocol);
}

UROCE_EXPORT int bind(int fd, const sockaddr* addr, socklen_t len) noexcept {
  if (s::peer_of(fd) >= 0) return 0;
  UROCE_NEXT_OR_ENOSYS(s::s_bind, bind);
  return real(fd, addr, len);
}

UROCE_EXPORT int getsockname(int fd, sockaddr* addr, socklen_t* len) noexcept {
  if (s::peer_of(fd) >= 0) {
    if (addr == nullptr || len == nullptr) {
      errno = EFAULT;
      return -1;
    }
    sockaddr_nl nl{};
    nl.nl_family = AF_NETLINK;
    nl.nl_pid = static_cast<uint32_t>(getpid());
    std::memcpy(addr, &nl, *len < sizeof nl ? *len : sizeof nl);
    *len = sizeof nl;
    return 0;
  }
  UROCE_NEXT_OR_ENOSYS(s::s_getsockname, getsockname);
  return real(fd, addr, len);
}

UROCE_EXPORT int setsockopt(int fd, int level, int name, const void* val, socklen_t len) noexcept {
  if (level == SOL_NETLINK && s::peer_of(fd) >= 0) return 0;
  UROCE_NEXT_OR_ENOSYS(s::s_setsockopt, setsockopt);
  return real(fd, level, name, val, len);
}

UROCE_EXPORT ssize_t send(int fd, const void* buf, size_t len, int flags) {
  if (const int peer = s::peer_of(fd); peer >= 0) return s::handle_send(fd, peer, buf, len);
  UROCE_NEXT_OR_ENOSYS(s::s_send, send);
  return real(fd, buf, len, flags);
}

UROCE_EXPORT ssize_t sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* to,
                            socklen_t tolen) {
  if (const int peer = s::peer_of(fd); peer >= 0) return s::handle_send(fd, peer, buf, len);
  UROCE_NEXT_OR_ENOSYS(s::s_sendto, sendto);
  return real(fd, buf, len, flags, to, tolen);
}

UROCE_EXPORT ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
  if (const int peer = s::peer_of(fd); peer >= 0) {
    // Requests are small: gather the iovecs into one buffer.
    unsigned char buf[s::kDgram];
    size_t len = 0;
    for (size_t i = 0; i < msg->msg_iovlen; ++i) {
      const size_t n = msg->msg_iov[i].iov_len;
      if (len + n > sizeof buf) {
        errno = EMSGSIZE;
        return -1;
      }
      std::memcpy(buf + len, msg->msg_iov[i].iov_base, n);
      len += n;
    }
    return s::handle_send(fd, peer, buf, len);
  }
  UROCE_NEXT_OR_ENOSYS(s::s_sendmsg, sendmsg);
  return real(fd, msg, flags);
}

UROCE_EXPORT ssize_t recvfrom(int fd, void* buf, size_t len, int flags, sockaddr* from, socklen_t* fromlen) {
  UROCE_NEXT_OR_ENOSYS(s::s_recvfrom, recvfrom);
  const socklen_t room = fromlen != nullptr ? *fromlen : 0;
  const ssize_t n = real(fd, buf, len, flags, from, fromlen);
  if (n >= 0 && fromlen != nullptr && s::peer_of(fd) >= 0) s::set_nl_addr(from, room, fromlen);
  return n;
}

UROCE_EXPORT ssize_t recvmsg(int fd, msghdr* msg, int flags) {
  UROCE_NEXT_OR_ENOSYS(s::s_recvmsg, recvmsg);
  const socklen_t room = msg->msg_namelen;
  const ssize_t n = real(fd, msg, flags);
  if (n >= 0 && s::peer_of(fd) >= 0) s::set_nl_addr(msg->msg_name, room, &msg->msg_namelen);
  return n;
}

}  // extern "C"
