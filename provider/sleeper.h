// How the progress thread sleeps: one io_uring wait (liburing) on a doorbell eventfd, the port's rx interrupt
// fd when it has one, and a timeout. Where io_uring is unavailable (old kernels, container seccomp profiles
// that block io_uring_setup) it falls back to ppoll on the same fds, with the same results.
//
// Threading: one thread (the progress thread) calls wait(); the doorbell may be written from any thread.
#pragma once

#include <liburing.h>

#include <cstdint>

namespace uroce::provider {

class Sleeper {
 public:
  // `doorbell_fd` is a non-blocking eventfd the Sleeper drains when it fires; it stays owned by the caller.
  explicit Sleeper(int doorbell_fd);
  ~Sleeper();
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;

  enum : unsigned { kDoorbell = 1, kRx = 2 };
  static constexpr uint64_t kForever = ~0ull;

  // Sleeps until the doorbell rings, `rx_fd` (when >= 0) becomes readable, or `timeout_ns` passes
  // (kForever: no timeout). Returns the kDoorbell/kRx bits of what fired; 0 means the timeout (or a signal).
  // rx_fd is only polled, never read (for tap it is the queue's own data fd).
  unsigned wait(uint64_t timeout_ns, int rx_fd);

  bool uses_io_uring() const { return ring_ok_; }

 private:
  unsigned wait_ppoll(uint64_t timeout_ns, int rx_fd);
  void drain_doorbell();
  void arm(int fd, uint64_t tag);

  int doorbell_fd_;
  io_uring ring_{};
  bool ring_ok_ = false;
  bool doorbell_armed_ = false;  // a poll on the doorbell is pending in the ring
  int rx_armed_fd_ = -1;         // the rx fd a pending poll watches (-1: none)
};

}  // namespace uroce::provider
