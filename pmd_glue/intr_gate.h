// Keeps DPDK's interrupt thread out of the rings while memif ports burst.
//
// DPDK 22.11's memif PMD runs its control channel on EAL's interrupt thread. When the peer disconnects
// (closes its port, or its process dies), that thread unmaps the shared regions at once, while another
// thread may be inside rx_burst or tx_burst reading the rings in them: the process crashes instead of
// seeing its link go down. The PMD holds no lock there and raises no event before it unmaps (the same
// holds for the PMD's later releases).
//
// The gate parks the interrupt thread in a callback of its own, registered on an eventfd that stays
// readable, so the thread enters the callback on every pass of its epoll loop; the callback lets it out
// again after a period, for one pass, in which it runs whatever memif (or alarm) callbacks are pending.
// While the thread is out, bursts on gated ports do not run: try_enter() fails and the port behaves as a
// busy ring for that moment (rx returns nothing, tx takes nothing). Before letting the thread out, the
// gate waits for the bursts already running to finish, briefly: the thread may have woken on the CPU of a
// datapath thread it preempted inside a burst, which cannot finish until the gate's thread sleeps again, so
// after kBurstWait it reopens the ports, sleeps kRetry and tries again. (Waiting on with yields left the
// ports blind for a time slice: ~0.3 ms on average and up to 2.5 ms every 20 ms, in ib_send_bw with each
// process pinned to one CPU.) Datapath threads never block on the gate.
//
// The period is kPeriod while some member's link is down (a connect handshake may be under way, and each
// of its messages waits for a pass) and kSettledPeriod once every link is up, when the only control
// traffic left is a disconnect. A link that stays down longer than kHandshakeWindow (a server whose client
// has not come) goes back to kSettledPeriod too: a pass every 2 ms was most of an idle server's CPU
// (~1-2% of a core on a 2-CPU VM), and a client that comes later then waits up to kSettledPeriod per
// handshake message on the server's side (a handful of them) instead of 2 ms. Each pass is a moment in which
// the ports are blind, and on a loaded host the thread can be preempted in it and leave them blind until it
// runs again: fewer passes, fewer such moments. The thread stays parked while the gate has members, busy or
// idle (an idle process wakes it kSettledPeriod apart, which costs nothing measurable): a thread left to
// sleep in epoll would have to be woken and scheduled before the next burst could run, and on two cores busy
// with spinning pollers that took from milliseconds to most of a second, during which the QPs' ACK timers ran
// out.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "pmd_glue/thread_sched.h"

namespace uroce::glue {

class IntrGate {
 public:
  static constexpr std::chrono::milliseconds kPeriod{2};
  static constexpr std::chrono::milliseconds kSettledPeriod{20};
  static constexpr std::chrono::seconds kHandshakeWindow{2};
  // The period between passes: every link up (settled), or some link down, or a member new, for `unsettled`.
  static constexpr std::chrono::milliseconds period(bool settled, std::chrono::nanoseconds unsettled) {
    return settled || unsettled >= kHandshakeWindow ? kSettledPeriod : kPeriod;
  }
  // How long the thread, let out, waits for the bursts under way to end before it gives them its CPU (they
  // may be on it, preempted) and tries again after kRetry.
  static constexpr std::chrono::microseconds kBurstWait{50}, kRetry{50};

  // The bursts and control calls of a port now running, counted per thread: a thread's own slot has one
  // writer, so leaving a burst is a plain store. (Any locked instruction there would wait until the
  // ring's stores, on cache lines the peer is polling, have left this core: a full fence after every
  // burst.) Threads beyond the first kSlots - 1 share the last slot, with atomic adds.
  static constexpr unsigned kSlots = 16;
  struct alignas(64) Slot {
    std::atomic<uint32_t> n{0};
  };
  struct Member {
    Slot slots[kSlots];
    bool gated = false;  // false if the gate could not be installed: nothing is held back
    int port = -1;       // the ethdev, once created (under the gate's lock: set_port)
    bool busy() const {
      for (const Slot& s : slots)
        if (s.n.load(std::memory_order_seq_cst) != 0) return true;
      return false;
    }
  };

  // Before the port's device is created. False (and m->gated false) if the gate could not be set up.
  static bool join(Member* m);
  // After the port's device is created (its link then sets the period), and -1 before it is closed.
  static void set_port(Member* m, int port);
  // After the port's device is closed: no burst of it runs or starts again.
  static void leave(Member* m);

  // Datapath: true if a burst may run now; then exit(m) when it is done.
  static bool try_enter(Member* m) {
    if (!m->gated) return true;
    // Our count up, then a full fence, then the flag: the gate, which sets the flag and then reads the
    // counts, either sees this burst or is seen by it.
    const unsigned i = thread_slot();
    std::atomic<uint32_t>& n = m->slots[i].n;
    if (i + 1 < kSlots) {
      n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
    } else {
      n.fetch_add(1, std::memory_order_seq_cst);
    }
    if (!thread_out_.load(std::memory_order_seq_cst)) return true;
    // A pass is under way (or the thread has not parked since join()): busy for a moment.
    leave_slot(m);
    return false;
  }
  // Control calls into the PMD (stop, close) from the port's owner: waits for the interrupt thread to be
  // parked. Never hold it across a wait for the interrupt thread (an alarm, a link coming up).
  static void enter_blocking(Member* m);
  static void exit(Member* m) {
    if (m->gated) leave_slot(m);
  }

  // Times the interrupt thread was let out, times it was let go to sleep in epoll (the gate had no member
  // left), and times it went back because a burst did not end within kBurstWait, for tests.
  static uint64_t passes();
  static uint64_t releases();
  static uint64_t backoffs();
  // The period the thread was last parked for (period()), for tests.
  static std::chrono::milliseconds last_period();

  // The scheduling the interrupt thread asks for on its next pass (thread_sched.h). While it is out, no
  // burst of a gated port runs, so it must get a core as soon as its wait ends: on two cores busy with
  // spinning pollers it otherwise waits for their time slices, and the datapath stalls with it.
  static void set_thread_sched(ThreadSched s) { sched_want_.store(s, std::memory_order_relaxed); }

 private:
  friend struct IntrGateState;
  // This thread's slot in every member (the same index in each), given on its first burst.
  static unsigned thread_slot() {
    thread_local const unsigned slot = next_slot();
    return slot;
  }
  static unsigned next_slot();
  static void leave_slot(Member* m) {
    const unsigned i = thread_slot();
    std::atomic<uint32_t>& n = m->slots[i].n;
    if (i + 1 < kSlots)
      n.store(n.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    else
      n.fetch_sub(1, std::memory_order_release);
  }
  static void on_gate(void* arg);
  // True while the interrupt thread is outside the gate's callback (and so may run memif's).
  static std::atomic<bool> thread_out_;
  static std::atomic<ThreadSched> sched_want_;
};

// Holds a member for a scope (try_enter semantics): `if (!g) return 0;`.
class IntrGateBurst {
 public:
  explicit IntrGateBurst(IntrGate::Member* m) : m_(m), ok_(IntrGate::try_enter(m)) {}
  ~IntrGateBurst() {
    if (ok_) IntrGate::exit(m_);
  }
  IntrGateBurst(const IntrGateBurst&) = delete;
  IntrGateBurst& operator=(const IntrGateBurst&) = delete;
  explicit operator bool() const { return ok_; }

 private:
  IntrGate::Member* m_;
  bool ok_;
};

}  // namespace uroce::glue
