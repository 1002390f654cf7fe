// IntrGate: see intr_gate.h for why and how.
#define ALLOW_EXPERIMENTAL_API  // rte_intr_instance_alloc and its accessors are experimental in 22.11
#include "pmd_glue/intr_gate.h"

#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_log.h>
#include <rte_pause.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace uroce::glue {

std::atomic<bool> IntrGate::thread_out_{true};
std::atomic<ThreadSched> IntrGate::sched_want_{ThreadSched::kNone};

// One per process, never destroyed: the interrupt thread may be inside on_gate when static destructors
// run at exit.
struct IntrGateState {
  std::mutex mu;
  std::condition_variable cv;  // never notified: on_gate only times out on it
  std::vector<IntrGate::Member*> members;
  bool installed = false;
  bool failed = false;
  bool armed = false;  // the eventfd holds a count, so the interrupt thread keeps coming back
  ThreadSched sched = ThreadSched::kNone;  // what the interrupt thread asked for last (under mu)
  int efd = -1;
  rte_intr_handle* handle = nullptr;
  std::atomic<uint64_t> passes{0};
  std::atomic<uint64_t> releases{0};
  std::atomic<uint64_t> backoffs{0};
  // When some link went down or a member joined, with no pass since that found every link up (under mu).
  std::chrono::steady_clock::time_point unsettled_since = std::chrono::steady_clock::now();
  bool settled = false;
  std::atomic<int64_t> last_period_ms{0};

  bool install() {
    if (installed) return true;
    if (failed) return false;
    efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd >= 0) handle = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
    if (handle != nullptr && rte_intr_fd_set(handle, efd) == 0 &&
        rte_intr_type_set(handle, RTE_INTR_HANDLE_EXT) == 0 &&
        rte_intr_callback_register(handle, &IntrGate::on_gate, this) == 0) {
      installed = true;
      return true;
    }
    RTE_LOG(ERR, USER1, "uroce: cannot park the interrupt thread; memif ports run ungated\n");
    if (handle != nullptr) rte_intr_instance_free(handle);
    if (efd >= 0) close(efd);
    handle = nullptr;
    efd = -1;
    failed = true;
    return false;
  }

  void arm() {
    if (armed) return;
    const uint64_t one = 1;
    armed = write(efd, &one, sizeof one) == sizeof one;
  }
  // Whether every member's bursts ended within `limit` (polled: a burst lasts microseconds).
  bool bursts_end_within(std::chrono::nanoseconds limit) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (const IntrGate::Member* m : members)
      while (m->busy()) {
        if (std::chrono::steady_clock::now() > until) return false;
        for (int i = 0; i < 32; ++i) rte_pause();
      }
    return true;
  }
  void disarm() {
    uint64_t v;
    while (read(efd, &v, sizeof v) == sizeof v) {
    }
    armed = false;
  }
};

namespace {
IntrGateState& state() {
  static auto* s = new IntrGateState;
  return *s;
}
}  // namespace

bool IntrGate::join(Member* m) {
  IntrGateState& s = state();
  std::lock_guard lock(s.mu);
  m->gated = s.install();
  if (!m->gated) return false;
  s.members.push_back(m);
  s.unsettled_since = std::chrono::steady_clock::now();  // its handshake starts now
  s.settled = false;
  s.arm();
  return true;
}

void IntrGate::set_port(Member* m, int port) {
  if (!m->gated) return;
  std::lock_guard lock(state().mu);
  m->port = port;
}

void IntrGate::leave(Member* m) {
  if (!m->gated) return;
  IntrGateState& s = state();
  std::lock_guard lock(s.mu);
  s.members.erase(std::remove(s.members.begin(), s.members.end(), m), s.members.end());
  m->gated = false;
}

void IntrGate::enter_blocking(Member* m) {
  while (!try_enter(m)) std::this_thread::sleep_for(std::chrono::microseconds(50));
}

unsigned IntrGate::next_slot() {
  static std::atomic<unsigned> next{0};
  return std::min(next.fetch_add(1, std::memory_order_relaxed), kSlots - 1);
}

uint64_t IntrGate::passes() { return state().passes.load(std::memory_order_relaxed); }
uint64_t IntrGate::releases() { return state().releases.load(std::memory_order_relaxed); }
uint64_t IntrGate::backoffs() { return state().backoffs.load(std::memory_order_relaxed); }
std::chrono::milliseconds IntrGate::last_period() {
  return std::chrono::milliseconds(state().last_period_ms.load(std::memory_order_relaxed));
}

// On the interrupt thread, once per pass of its epoll loop while the eventfd is armed.
void IntrGate::on_gate(void* arg) {
  auto& s = *static_cast<IntrGateState*>(arg);
  std::unique_lock lock(s.mu);
  if (const ThreadSched want = sched_want_.load(std::memory_order_relaxed); want != s.sched) {
    apply_thread_sched(want);
    s.sched = want;
  }
  if (s.members.empty()) {
    s.disarm();  // nothing to guard: leave the thread to epoll until join() arms the eventfd again
    s.releases.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Parked: bursts may run. A member without a device yet, or whose link is down, may be in a handshake.
  bool settled = true;
  for (const Member* m : s.members) {
    rte_eth_link link{};
    if (m->port < 0 || rte_eth_link_get_nowait(static_cast<uint16_t>(m->port), &link) != 0 ||
        link.link_status != RTE_ETH_LINK_UP)
      settled = false;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!settled && s.settled) s.unsettled_since = now;
  s.settled = settled;
  const std::chrono::milliseconds p = period(settled, now - s.unsettled_since);
  s.last_period_ms.store(p.count(), std::memory_order_relaxed);
  thread_out_.store(false, std::memory_order_seq_cst);
  s.cv.wait_for(lock, p);
  // Out again: no burst starts from here on; wait for those under way. A member that enters now sees
  // thread_out_ and backs off, so each wait is at most one burst long, unless this thread woke on the CPU
  // of a datapath thread that it preempted inside a burst: that burst cannot end until this thread sleeps.
  // So a burst that has not ended within kBurstWait puts the thread back on its perch for kRetry, with the
  // ports open meanwhile, and it tries again.
  for (;;) {
    thread_out_.store(true, std::memory_order_seq_cst);
    if (s.bursts_end_within(kBurstWait)) break;
    thread_out_.store(false, std::memory_order_seq_cst);
    s.backoffs.fetch_add(1, std::memory_order_relaxed);
    s.cv.wait_for(lock, kRetry);
  }
  s.passes.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace uroce::glue
