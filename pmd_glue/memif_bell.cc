#include "pmd_glue/memif_bell.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace uroce::glue {

namespace {

constexpr size_t kPageBytes = 4096;
// Each end's flag on its own cache line, apart from the other's; each end's "joined" mark on a line of
// its own, read only when its peer goes to sleep.
constexpr size_t kSlotOffset[2] = {64, 128};
constexpr size_t kJoinedOffset[2] = {192, 256};

std::string sys_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Opens `path` as a FIFO, creating it if there is none and `create`; refuses anything else at that path.
int open_fifo(const std::string& path, bool create, std::string* err) {
  if (create && mkfifo(path.c_str(), 0600) != 0 && errno != EEXIST) {
    *err = sys_error("cannot create memif bell", path);
    return -1;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *err = sys_error("cannot open memif bell", path);
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    *err = "memif bell " + path + " exists and is not a FIFO";
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string MemifBell::page_path(const std::string& socket, uint32_t id) {
  return socket + ".bell" + std::to_string(id);
}

std::string MemifBell::fifo_path(const std::string& socket, uint32_t id, bool server) {
  return page_path(socket, id) + (server ? "s" : "c");
}

std::unique_ptr<MemifBell> MemifBell::open(const std::string& socket, uint32_t id, bool server,
                                           std::string* err) {
  // The server makes the files (before it listens); a client only joins them, so that a client of a
  // memif server without a bell leaves nothing beside its socket.
  const bool create = server;
  std::unique_ptr<MemifBell> b(new MemifBell);
  b->socket_ = socket;
  b->id_ = id;
  b->server_ = server;
  const std::string page = page_path(socket, id);
  const int fd = ::open(page.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
  if (fd < 0) {
    *err = sys_error("cannot open memif bell", page);
    return nullptr;
  }
  struct stat st {};
  // A page left by a server that died is reused: grown to a page if short, never shrunk.
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_size < static_cast<off_t>(kPageBytes) && ftruncate(fd, kPageBytes) != 0)) {
    *err = "memif bell " + page + " is not a regular file of a page";
    ::close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    *err = sys_error("cannot map memif bell", page);
    return nullptr;
  }
  b->page_ = p;
  for (int i = 0; i < 2; ++i) {
    b->slot_[i] = reinterpret_cast<std::atomic<uint32_t>*>(static_cast<char*>(p) + kSlotOffset[i]);
    b->joined_[i] = reinterpret_cast<std::atomic<uint32_t>*>(static_cast<char*>(p) + kJoinedOffset[i]);
  }
  b->mine().store(0, std::memory_order_relaxed);  // a flag left by an end that died asleep
  if (server) b->theirs_joined().store(0, std::memory_order_relaxed);  // no client has joined this server yet
  b->own_fd_ = open_fifo(fifo_path(socket, id, server), create, err);
  if (b->own_fd_ < 0) return nullptr;
  b->peer_fd_ = open_fifo(fifo_path(socket, id, !server), create, err);
  if (b->peer_fd_ < 0) return nullptr;
  b->mine_joined().store(1, std::memory_order_release);
  return b;
}

MemifBell::~MemifBell() {
  if (own_fd_ >= 0 && peer_fd_ >= 0) mine_joined().store(0, std::memory_order_release);
  if (page_ != nullptr) munmap(page_, kPageBytes);
  if (own_fd_ >= 0) ::close(own_fd_);
  if (peer_fd_ >= 0) ::close(peer_fd_);
}

void MemifBell::arm(uint32_t mode) { mine().store(mode, std::memory_order_seq_cst); }

void MemifBell::disarm() {
  mine().store(0, std::memory_order_relaxed);
  char buf[64];
  while (::read(own_fd_, buf, sizeof buf) > 0) {
  }
}

bool MemifBell::ring_slow() {
  if (theirs().exchange(0, std::memory_order_acq_rel) == 0) return false;  // another ring took it
  const char one = 1;
  // A full FIFO already wakes the peer: EAGAIN loses nothing.
  if (::write(peer_fd_, &one, 1) != 1 && errno != EAGAIN) return false;
  rings_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void MemifBell::remove_files() {
  unlink(page_path(socket_, id_).c_str());
  unlink(fifo_path(socket_, id_, true).c_str());
  unlink(fifo_path(socket_, id_, false).c_str());
}

}  // namespace uroce::glue
