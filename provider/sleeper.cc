#include "provider/sleeper.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

namespace uroce::provider {

namespace {

constexpr uint64_t kTagDoorbell = 1, kTagRx = 2;

timespec to_timespec(uint64_t ns) {
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace

Sleeper::Sleeper(int doorbell_fd) : doorbell_fd_(doorbell_fd) {
  // Four entries: the doorbell poll, the rx poll, and room for a re-arm of each before the old one is reaped.
  // Not under Valgrind: it keeps its single-thread lock across io_uring_enter's wait, so a thread asleep
  // there stops every other thread, including the one that would ring the doorbell. ppoll it is, there.
  ring_ok_ = !RUNNING_ON_VALGRIND && io_uring_queue_init(4, &ring_, 0) == 0;
}

Sleeper::~Sleeper() {
  if (ring_ok_) io_uring_queue_exit(&ring_);  // cancels the pending polls
}

void Sleeper::drain_doorbell() {
  uint64_t v;
  (void)!read(doorbell_fd_, &v, sizeof(v));  // non-blocking: EAGAIN when another wake already drained it
}

void Sleeper::arm(int fd, uint64_t tag) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (!sqe) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  io_uring_prep_poll_add(sqe, fd, POLLIN);
  io_uring_sqe_set_data64(sqe, tag);
}

unsigned Sleeper::wait(uint64_t timeout_ns, int rx_fd) {
  if (!ring_ok_) return wait_ppoll(timeout_ns, rx_fd);
  // Polls stay pending across waits: the doorbell's is re-armed only after it fired, the rx fd's only when
  // none is pending (a stale rx completion later just causes one extra progress pass).
  if (!doorbell_armed_) {
    arm(doorbell_fd_, kTagDoorbell);
    doorbell_armed_ = true;
  }
  if (rx_fd >= 0 && rx_armed_fd_ < 0) {
    arm(rx_fd, kTagRx);
    rx_armed_fd_ = rx_fd;
  }
  io_uring_cqe* cqe = nullptr;
  int rc;
  if (timeout_ns == kForever) {
    rc = io_uring_submit_and_wait(&ring_, 1);
  } else {
    __kernel_timespec ts{};
    const timespec t = to_timespec(timeout_ns);
    ts.tv_sec = t.tv_sec;
    ts.tv_nsec = t.tv_nsec;
    rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
  }
  (void)rc;  // -ETIME on timeout, -EINTR on a signal: both mean "look again"
  unsigned fired = 0;
  unsigned head;
  unsigned seen = 0;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    ++seen;
    const uint64_t tag = io_uring_cqe_get_data64(cqe);
    if (tag == kTagDoorbell) {
      doorbell_armed_ = false;
      fired |= kDoorbell;
    } else if (tag == kTagRx) {
      rx_armed_fd_ = -1;
      fired |= kRx;
    }
  }
  io_uring_cq_advance(&ring_, seen);
  if (fired & kDoorbell) drain_doorbell();
  return fired;
}

unsigned Sleeper::wait_ppoll(uint64_t timeout_ns, int rx_fd) {
  pollfd pfd[2] = {{doorbell_fd_, POLLIN, 0}, {rx_fd, POLLIN, 0}};
  timespec ts = to_timespec(timeout_ns == kForever ? 0 : timeout_ns);
  if (ppoll(pfd, rx_fd >= 0 ? 2 : 1, timeout_ns == kForever ? nullptr : &ts, nullptr) <= 0) return 0;
  unsigned fired = 0;
  if (pfd[0].revents) {
    drain_doorbell();
    fired |= kDoorbell;
  }
  if (rx_fd >= 0 && pfd[1].revents) fired |= kRx;
  return fired;
}

}  // namespace uroce::provider
