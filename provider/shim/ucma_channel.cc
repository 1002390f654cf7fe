// RDMA CM event channels: what librdmacm's open("/dev/infiniband/rdma_cm") returns, and the write()
// commands on it (ucma.c ucma_write semantics: len < 8 or hdr.in + 8 > len -> EINVAL, unknown command ->
// EINVAL, success returns len, failure -1 with errno).
//
// A channel fd is an eventfd whose counter is non-zero iff the channel's event queue is non-empty, so
// poll/epoll/select and O_NONBLOCK behave as on the kernel's file (ucma_poll). Interposed for those fds
// only: write (the commands), close, dup2/dup3 onto them, and fstat (open_cdev requires S_ISCHR). A fixed
// bitmap says which fds are channels; every other fd costs one relaxed atomic load and goes to libc. A
// dup() of a channel fd is an ordinary eventfd to the shim; close_range() over a channel fd is not seen
// (its fd number then still counts as a channel until closed again). A write() that libc refuses with
// EBADF is looked at once more: a GET_EVENT on a channel fd this process has just closed waits (see
// wait_on_closed_channel).
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "provider/shim/netlink.h"
#include "provider/shim/next.h"
#include "provider/shim/sysfs_env.h"
#include "provider/shim/ucma.h"

namespace uroce::shim::ucma {
namespace {

constexpr char kCdevPath[] = "/dev/infiniband/rdma_cm";
constexpr int kMaxFd = 1 << 16;                      // channel fds above this are refused (EMFILE)
constexpr int kRdmaCmMajor = 10, kRdmaCmMinor = 58;  // a misc device number; librdmacm does not compare it

constinit std::atomic<uint64_t> g_fd_bits[kMaxFd / 64];
// Fds whose channel this process closed and that have not been a channel since.
constinit std::atomic<uint64_t> g_closed_bits[kMaxFd / 64];
constinit pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
constinit Channel* g_channels = nullptr;

constinit NextSym s_write{"write"}, s_close{"close"}, s_fstat{"fstat"}, s_fstat64{"fstat64"},
    s_fxstat{"__fxstat"}, s_fxstat64{"__fxstat64"}, s_dup2{"dup2"}, s_dup3{"dup3"};

bool is_channel_fd(int fd) {
  if (fd < 0 || fd >= kMaxFd) return false;
  return (g_fd_bits[fd / 64].load(std::memory_order_relaxed) >> (fd % 64) & 1) != 0;
}

void set_bit(std::atomic<uint64_t>* bits, int fd, bool on) {
  const uint64_t bit = uint64_t{1} << (fd % 64);
  if (on) {
    bits[fd / 64].fetch_or(bit, std::memory_order_release);
  } else {
    bits[fd / 64].fetch_and(~bit, std::memory_order_release);
  }
}

void set_fd_bit(int fd, bool on) { set_bit(g_fd_bits, fd, on); }

bool was_closed_channel(int fd) {
  if (fd < 0 || fd >= kMaxFd) return false;
  return (g_closed_bits[fd / 64].load(std::memory_order_relaxed) >> (fd % 64) & 1) != 0;
}

// A GET_EVENT written to the fd of a channel this process has just closed, the fd not reused since. The
// kernel's file would keep a thread that entered GET_EVENT before the close waiting until the process
// exits; one that comes a moment later gets EBADF. Which of the two a thread sees is scheduling luck: an
// event loop that acks its last event and loops back while another thread tears the channel down (rping's
// cm thread) would fail on a busy machine and pass on an idle one. Such a late thread waits here as the
// early one does on the kernel's file.
[[noreturn]] void wait_on_closed_channel() {
  for (;;) pause();  // a cancellation point; signal handlers run and the wait resumes
}

bool is_get_event(const void* buf, size_t len) {
  rdma_ucm_cmd_hdr hdr;
  if (buf == nullptr || len < sizeof hdr) return false;
  std::memcpy(&hdr, buf, sizeof hdr);
  return hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT;
}

int real_close(int fd) {
  auto* fn = next<decltype(close)>(s_close);
  return fn != nullptr ? fn(fd) : -1;
}

void eventfd_signal(Channel* ch) {
  const uint64_t one = 1;
  auto* fn = next<decltype(write)>(s_write);
  if (fn != nullptr) (void)!fn(ch->fd, &one, sizeof one);
}

void eventfd_drain(Channel* ch) {
  uint64_t v;
  (void)!read(ch->fd, &v, sizeof v);  // only called while the counter is non-zero: never blocks
}

void free_channel(Channel* ch) {
  while (Event* ev = ch->head) {
    ch->head = ev->next;
    std::free(ev);
  }
  if (ch->fd_owned) real_close(ch->fd);
  std::free(ch);
}

// The channel of fd with one more user (nullptr if fd is not a live channel); release() ends the use.
// A closed channel lives, fd open, until its last user leaves: as the kernel's file stays while a
// syscall holds it, a thread blocked in GET_EVENT keeps waiting on it.
Channel* acquire(int fd) {
  lock();
  Channel* ch = channel_of_fd(fd);
  if (ch != nullptr) ++ch->users;
  unlock();
  return ch;
}

void release(Channel* ch) {
  lock();
  const bool last = --ch->users == 0 && ch->closed;
  unlock();
  if (last) free_channel(ch);
}

// GET_EVENT: the oldest event, blocking in poll() (without the lock) while there is none.
int get_event(Channel* ch, const rdma_ucm_get_event& cmd, size_t out_len) {
  if (out_len < offsetof(rdma_ucm_event_resp, ece)) return -ENOSPC;
  if (cmd.response == 0) return -EFAULT;
  lock();
  for (;;) {
    if (Event* ev = ch->head) {
      ch->head = ev->next;
      if (ch->head == nullptr) {
        ch->tail = nullptr;
        eventfd_drain(ch);
      }
      if (Id* owner = find_id(ev->owner)) ++owner->events_reported;
      if (ev->mc != 0) count_group_event(ev->mc);
      if (ev->resp.event == kEvConnectRequest) {
        // The new id is the application's from now on, on the channel that reported it (the kernel
        // creates it here, on the reading file: the listener may have migrated since the request came).
        if (Id* child = find_id(ev->resp.id)) {
          child->listener = kNoId;
          child->channel = ch;
        }
      }
      unlock();
      const size_t n = out_len < sizeof ev->resp ? out_len : sizeof ev->resp;
      std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(cmd.response)), &ev->resp, n);
      std::free(ev);
      return 0;
    }
    const int fl = fcntl(ch->fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK) != 0) {
      unlock();
      return -EAGAIN;
    }
    unlock();
    pollfd p{ch->fd, POLLIN, 0};
    // A signal restarts the wait (as the kernel's ERESTARTSYS does under SA_RESTART). A closed channel
    // never becomes readable: its waiters block until the process exits, as on the kernel's file.
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    lock();
  }
}

// MIGRATE_ID, written on the new channel: the id and its queued events (in order) move here.
int migrate_id(Channel* to, const rdma_ucm_migrate_id& cmd, size_t out_len) {
  if (out_len < sizeof(rdma_ucm_migrate_resp)) return -ENOSPC;
  if (cmd.response == 0) return -EFAULT;
  lock();
  Channel* from = channel_of_fd(static_cast<int>(cmd.fd));
  Id* id = find_id(cmd.id);
  if (from == nullptr || from->closed) {
    unlock();
    return -EBADF;
  }
  if (id == nullptr || id->channel != from) {
    unlock();
    return -EINVAL;
  }
  if (from != to) {
    id->channel = to;
    const bool had = from->head != nullptr;
    Event** link = &from->head;
    Event* last = nullptr;
    while (Event* ev = *link) {
      if (ev->owner == id->handle) {
        *link = ev->next;
        queue_event(to, ev);
      } else {
        last = ev;
        link = &ev->next;
      }
    }
    from->tail = last;
    if (had && from->head == nullptr) eventfd_drain(from);  // readable iff non-empty
  }
  rdma_ucm_migrate_resp resp{id->events_reported};
  unlock();
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(cmd.response)), &resp, sizeof resp);
  return 0;
}

constexpr const char* kCmdNames[] = {
    "CREATE_ID",  "DESTROY_ID", "BIND_IP",    "RESOLVE_IP",   "RESOLVE_ROUTE", "QUERY_ROUTE",
    "CONNECT",    "LISTEN",     "ACCEPT",     "REJECT",       "DISCONNECT",    "INIT_QP_ATTR",
    "GET_EVENT",  "GET_OPTION", "SET_OPTION", "NOTIFY",       "JOIN_IP_MCAST", "LEAVE_MCAST",
    "MIGRATE_ID", "QUERY",      "BIND",       "RESOLVE_ADDR", "JOIN_MCAST"};

// UROCE_UCMA_TRACE=1: one stderr line per command and its result (read once).
bool trace_on() {
  static std::atomic<int> on{-1};  // no function-local static initialiser: that would need libstdc++
  int v = on.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("UROCE_UCMA_TRACE");
    v = e != nullptr && e[0] == '1' ? 1 : 0;
    on.store(v, std::memory_order_relaxed);
  }
  return v != 0;
}

void trace(uint32_t cmd, int fd, int ret) {
  char line[128];
  const char* name = cmd < sizeof kCmdNames / sizeof kCmdNames[0] ? kCmdNames[cmd] : "unknown";
  const int n = std::snprintf(line, sizeof line, "uroce ucma: fd %d %s (%u) -> %s%s\n", fd, name, cmd,
                              ret == 0 ? "ok" : "-", ret == 0 ? "" : strerrorname_np(-ret));
  if (n > 0) {
    auto* fn = next<decltype(write)>(s_write);
    if (fn != nullptr)
      (void)!fn(STDERR_FILENO, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
  }
}

template <typename T>
void copy_payload(T* dst, const uint8_t* payload, size_t in_len) {
  std::memset(dst, 0, sizeof *dst);
  std::memcpy(dst, payload, in_len < sizeof *dst ? in_len : sizeof *dst);
}

ssize_t channel_write(int fd, const void* buf, size_t len) {
  rdma_ucm_cmd_hdr hdr;
  if (len < sizeof hdr || buf == nullptr) {
    errno = EINVAL;
    return -1;
  }
  std::memcpy(&hdr, buf, sizeof hdr);
  if (hdr.in + sizeof hdr > len) {
    errno = EINVAL;
    return -1;
  }
  Channel* ch = acquire(fd);
  if (ch == nullptr) {
    // Closed by another thread between write()'s look at the fd and here: a late GET_EVENT (see
    // wait_on_closed_channel), unless the fd was never a channel.
    if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT && was_closed_channel(fd)) {
      if (trace_on()) trace(RDMA_USER_CM_CMD_GET_EVENT, fd, -EBADF);
      wait_on_closed_channel();
    }
    errno = EBADF;
    return -1;
  }
  const auto* payload = static_cast<const uint8_t*>(buf) + sizeof hdr;
  int ret;
  if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT) {
    rdma_ucm_get_event cmd;
    copy_payload(&cmd, payload, hdr.in);
    ret = get_event(ch, cmd, hdr.out);
  } else if (hdr.cmd == RDMA_USER_CM_CMD_MIGRATE_ID) {
    rdma_ucm_migrate_id cmd;
    copy_payload(&cmd, payload, hdr.in);
    ret = migrate_id(ch, cmd, hdr.out);
  } else {
    ret = handle_command(ch, hdr.cmd, payload, hdr.in, hdr.out);
  }
  release(ch);
  if (trace_on()) trace(hdr.cmd, fd, ret);
  if (ret < 0) {
    errno = -ret;
    return -1;
  }
  return static_cast<ssize_t>(len);
}

// The channel of fd ends (its fd is closed, or dup2 replaces it): as the kernel's ucma_close, every id
// of it goes and the backend is told. close_fd: close() (the fd closes with the channel's last user);
// otherwise dup2 is about to replace the fd and the channel must leave it alone. False when fd is not
// a live channel.
bool channel_close(int fd, bool close_fd) {
  Channel* ch = acquire(fd);
  if (ch == nullptr) return false;
  lock();
  set_fd_bit(fd, false);
  if (close_fd) set_bit(g_closed_bits, fd, true);
  for (Channel** link = &g_channels; *link != nullptr; link = &(*link)->next) {
    if (*link == ch) {
      *link = ch->next;
      break;
    }
  }
  ch->closed = true;
  ch->fd_owned = close_fd;
  unlock();
  destroy_ids_of(ch);
  release(ch);
  return true;
}

// fork() while another thread holds the lock would leave it locked forever in the child (whose close()
// of a channel fd, say before exec, takes it): hold it across fork. Nothing blocks while holding it.
__attribute__((constructor)) void install_fork_handlers() {
  pthread_atfork([] { pthread_mutex_lock(&g_mu); }, [] { pthread_mutex_unlock(&g_mu); },
                 [] { pthread_mutex_unlock(&g_mu); });
}

}  // namespace

void lock() { pthread_mutex_lock(&g_mu); }
void unlock() { pthread_mutex_unlock(&g_mu); }

Channel* channel_of_fd(int fd) {
  for (Channel* ch = g_channels; ch != nullptr; ch = ch->next) {
    if (ch->fd == fd) return ch;
  }
  return nullptr;
}

void queue_event(Channel* ch, Event* ev) {
  ev->next = nullptr;
  if (ch->tail != nullptr) {
    ch->tail->next = ev;
  } else {
    ch->head = ev;
    eventfd_signal(ch);
  }
  ch->tail = ev;
}

namespace {

// Frees every unreported event `gone` picks, on every channel; a queue left empty stops being readable.
template <typename Pred>
void drop_events_if(Pred gone) {
  for (Channel* ch = g_channels; ch != nullptr; ch = ch->next) {
    Event** link = &ch->head;
    Event* last = nullptr;
    while (Event* ev = *link) {
      if (gone(*ev)) {
        *link = ev->next;
        std::free(ev);
      } else {
        last = ev;
        link = &ev->next;
      }
    }
    const bool had = ch->tail != nullptr;
    ch->tail = last;
    if (had && ch->head == nullptr) eventfd_drain(ch);
  }
}

}  // namespace

void drop_events_of(uint32_t handle) {
  drop_events_if([handle](const Event& ev) { return ev.owner == handle || ev.resp.id == handle; });
}

void drop_group_events(uint32_t mc) {
  drop_events_if([mc](const Event& ev) { return ev.mc == mc; });
}

bool open_cdev(const char* path, int flags, int* result) {
  size_t root_len = 0;
  if (path == nullptr || std::strcmp(path, kCdevPath) != 0 || sysfs_root(&root_len) == nullptr) return false;
  int efd_flags = 0;
  if ((flags & O_CLOEXEC) != 0) efd_flags |= EFD_CLOEXEC;
  if ((flags & O_NONBLOCK) != 0) efd_flags |= EFD_NONBLOCK;
  const int fd = eventfd(0, efd_flags);
  if (fd < 0) {
    *result = -1;
    return true;
  }
  auto* ch = static_cast<Channel*>(std::calloc(1, sizeof(Channel)));
  if (fd >= kMaxFd || ch == nullptr) {
    const int err = fd >= kMaxFd ? EMFILE : ENOMEM;
    real_close(fd);
    std::free(ch);
    errno = err;
    *result = -1;
    return true;
  }
  ch->fd = fd;
  ch->fd_owned = true;
  lock();
  ch->next = g_channels;
  g_channels = ch;
  set_fd_bit(fd, true);
  set_bit(g_closed_bits, fd, false);
  unlock();
  *result = fd;
  return true;
}

}  // namespace uroce::shim::ucma

namespace u = uroce::shim::ucma;
using uroce::shim::next;

extern "C" {
int __fxstat(int ver, int fd, struct stat* buf);
int __fxstat64(int ver, int fd, struct stat64* buf);

UROCE_EXPORT ssize_t write(int fd, const void* buf, size_t len) {
  if (u::is_channel_fd(fd)) return u::channel_write(fd, buf, len);
  auto* real = next<decltype(write)>(u::s_write);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const ssize_t n = real(fd, buf, len);
  if (n < 0 && errno == EBADF && u::was_closed_channel(fd) && u::is_get_event(buf, len)) {
    if (u::trace_on()) u::trace(RDMA_USER_CM_CMD_GET_EVENT, fd, -EBADF);
    u::wait_on_closed_channel();
  }
  return n;
}

UROCE_EXPORT int close(int fd) {
  uroce::shim::netlink_forget(fd);
  if (u::is_channel_fd(fd) && u::channel_close(fd, true)) return 0;
  auto* real = next<decltype(close)>(u::s_close);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(fd);
}

// dup2/dup3 onto a channel fd close that channel first, as they close the file there.
UROCE_EXPORT int dup2(int oldfd, int newfd) noexcept {
  if (oldfd != newfd) uroce::shim::netlink_forget(newfd);
  if (oldfd != newfd && u::is_channel_fd(newfd) && fcntl(oldfd, F_GETFD) >= 0) u::channel_close(newfd, false);
  auto* real = next<decltype(dup2)>(u::s_dup2);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(oldfd, newfd);
}

UROCE_EXPORT int dup3(int oldfd, int newfd, int flags) noexcept {
  if (oldfd != newfd) uroce::shim::netlink_forget(newfd);
  if (oldfd != newfd && u::is_channel_fd(newfd) && fcntl(oldfd, F_GETFD) >= 0) u::channel_close(newfd, false);
  auto* real = next<decltype(dup3)>(u::s_dup3);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(oldfd, newfd, flags);
}

// The stat of the eventfd itself, presented as the character device librdmacm expects.
#define UROCE_UCMA_FSTAT(sym, fn, ...)                        \
  auto* real = next<decltype(fn)>(sym);                       \
  if (real == nullptr) {                                      \
    errno = ENOSYS;                                           \
    return -1;                                                \
  }                                                           \
  const int ret = real(__VA_ARGS__);                          \
  if (ret == 0 && u::is_channel_fd(fd)) {                     \
    buf->st_mode = S_IFCHR | 0666;                            \
    buf->st_rdev = makedev(u::kRdmaCmMajor, u::kRdmaCmMinor); \
  }                                                           \
  return ret

UROCE_EXPORT int fstat(int fd, struct stat* buf) noexcept { UROCE_UCMA_FSTAT(u::s_fstat, fstat, fd, buf); }
UROCE_EXPORT int fstat64(int fd, struct stat64* buf) noexcept {
  UROCE_UCMA_FSTAT(u::s_fstat64, fstat64, fd, buf);
}
UROCE_EXPORT int __fxstat(int ver, int fd, struct stat* buf) {
  UROCE_UCMA_FSTAT(u::s_fxstat, __fxstat, ver, fd, buf);
}
UROCE_EXPORT int __fxstat64(int ver, int fd, struct stat64* buf) {
  UROCE_UCMA_FSTAT(u::s_fxstat64, __fxstat64, ver, fd, buf);
}

}  // extern "C"
