// The engine behind one uroce device in this process: a transport Device on a packet port, the lock that
// serialises it, and the progress thread that serves it when the application is not calling in. Every
// ibv_context opened on the device shares it, as contexts share one RNIC: QP numbers are unique device-wide,
// and a QP may talk to another context's QP (or its own device) through the device's internal loopback.
//
// Progress is adaptive (DESIGN.md). The datapath verbs (poll_cq, post_send, post_recv, the ibv_cq_ex and
// ibv_wr_* calls) stamp when an application thread enters and leaves them; poll_cq and post_send run a
// progress pass inline (poll_cq only if the lock is free), so a polling application drives its own traffic
// with no thread hand-off. The progress thread reads the stamps and is in one of two modes (see run()):
//   polling  application threads came back within a short gap every time since the thread last looked (not
//            counting the time the thread itself kept them off their CPU), and none armed a CQ to block
//            (app_polling in progress_policy.h): they drive; the thread stays off the CPU, looking again
//            after a nap that grows with how long they have polled (10 us to 1 ms; from 200 us on a memif
//            port with the bell, which it arms for one-sided requests only: one that comes after the
//            application went on to spin on memory wakes it at once, so there the gap is 100 us, not 3);
//   serving  otherwise (a one-sided target that never calls, ib_write_lat's side spinning on memory for the
//            peer's WRITE, an application gone to sleep): the thread runs the passes, spins 20 us
//            (UROCE_ENGINE_SPIN_US) after the last work or the last application call, then naps from 20 us
//            doubling to 1 ms (20 ms after a second of idleness). It does not spin on the CPU the
//            application last called from (progress_policy.h): there it sleeps at once and leaves the
//            CPU to the application. req_notify_cq rings it at once: the application is about to block.
// An application that polls a completion and then spins on memory for the peer's WRITE has its polls linger
// for that WRITE instead, once the pattern is seen (Linger in progress_policy.h); the thread then stays off.
// So a busy process runs one spinning thread, not two, except while an application spins on memory.
// Sleeping is one io_uring wait (sleeper.h) on a doorbell eventfd (wake()), the port's rx interrupt (tap's,
// or on memif the bell the peer rings when it transmits to a sleeper, pmd_glue/memif_bell.h), and the next
// deadline. The naps stay on memif, for a peer without a bell. An idle context costs ~0%.
// The thread, and DPDK's interrupt thread on a memif port, ask for a short EEVDF slice so that they preempt
// spinning pollers when they wake (UROCE_ENGINE_SCHED, pmd_glue/thread_sched.h, docs/latency.md).
#pragma once

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fabric/host_mac.h"
#include "pmd_glue/thread_sched.h"
#include "provider/control.h"
#include "provider/device_lock.h"
#include "provider/fast_clock.h"
#include "provider/progress_policy.h"
#include "transport/device.h"

namespace uroce::glue {
class DpdkPort;
class Port;
}  // namespace uroce::glue

namespace uroce::provider {

class NetdevLink;
class Sleeper;

// A second client of the engine's progress pass (the connection manager, cm_service.h): run under mu()
// right after the device's own pass, from the progress thread and from application threads alike.
class PassHook {
 public:
  virtual ~PassHook() = default;
  // Returns the work done (0 when idle), as Device::progress.
  virtual uint32_t pass() = 0;
  // When pass() next has something to do without new packets (kNever: nothing).
  virtual uint64_t next_deadline() const = 0;
  // Its counters ("name", value), for `uroce stats` (its "cm" object).
  virtual std::vector<std::pair<std::string, uint64_t>> counters() const { return {}; }
};

struct EngineConfig {
  DeviceConfig device;
  // UROCE_PORT: "loopback" (in-process only) or a DPDK port spec (pmd_glue/dpdk_spec.h), e.g.
  // memif:socket=/run/x.sock,role=client
  std::string port = "loopback";
  // UROCE_NETDEV: the kernel interface the device is bound to (netdev_link.h), and the device's sysfs port
  // directory, whose GID table follows the interface's addresses.
  std::string netdev;
  std::string sysfs_port_dir;
  // UROCE_ENGINE_SCHED: how the kernel schedules the progress thread (pmd_glue/thread_sched.h).
  glue::ThreadSched sched = glue::ThreadSched::kSlice;
  // UROCE_ENGINE_SPIN_US: how long the progress thread busy-polls after the last work, ns.
  uint64_t spin_ns = 20'000;
  // UROCE_ENGINE_NAP_US: its first nap after that (the naps double up to 1 ms), ns.
  uint64_t min_nap_ns = 20'000;
  // UROCE_TX_COALESCE: a burst of post_send calls sends its frames at its end (progress_policy.h).
  bool tx_coalesce = true;
  // UROCE_LINGER: a poll lingers for a one-sided request while the application's pattern asks for it
  // (progress_policy.h's Linger).
  bool linger = true;
  // UROCE_POLL_YIELD: a waiting poller yields its core after a while (`uroce run` through uroced sets it:
  // the switch shares the cores with the applications).
  bool poll_yield = false;
};

// Reads UROCE_* settings and the device's GID from the fake sysfs tree of `ibdev`. Returns "" or an error
// message naming the bad setting.
std::string load_engine_config(const std::string& ibdev, EngineConfig* cfg);

class Engine {
 public:
  explicit Engine(const EngineConfig& cfg);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The lock every verb holds while it touches the device.
  DeviceLock& mu() { return mu_; }
  Device& dev() { return *dev_; }
  // One progress pass; the caller holds mu(). Wakes the progress thread if work is left for it. `now_hint`:
  // the caller's AppCall entry time, which a pass receiving nothing uses instead of reading the clock
  // (Device::progress). Returns when the pass ended, read after its work (0: it did nothing; AppCall::saw).
  uint64_t progress_locked(uint64_t now_hint = 0);
  // post_send, under mu(), after it queued its work requests (entered: its AppCall's entry time): sends
  // them in a pass now, unless they may wait for the end of the caller's burst of posts (PostCoalescer).
  // Returns the time the pass's frames had left at (0: they wait, no time read).
  uint64_t posted_locked(uint64_t entered);
  // A pass if posted frames wait (ibv_req_notify_cq: the caller is about to block); under mu().
  void flush_posted_locked() {
    if (coalescer_.waiting()) progress_locked();
  }
  // Whether frames can leave: the DPDK port's link is up (a memif link comes up some milliseconds after the
  // engine starts); always for the in-process loopback port.
  bool link_up() const;
  // Installs (or, with nullptr, removes) the hook of the progress pass; the caller holds mu().
  void set_pass_hook(PassHook* hook) { hook_ = hook; }
  // Writes the device counters, drop reasons and port statistics on one line (UROCE_STATS_ON_EXIT=1).
  void print_stats(FILE* out);
  // At the exit of a process that did not close the device: sends what waits, lets the port's peer read it
  // (DpdkPort::linger), reports the stats when asked to.
  void at_exit();

  // A datapath verb entered at `entered`, under mu(), before its own pass: the first after a poll that
  // returned completions tells Linger (progress_policy.h) what the application did in between.
  void verb_entered_locked(uint64_t entered) {
    if (polled_count_ == kNoLinger) return;
    linger_.returned(entered > polled_ns_ && entered - polled_ns_ > kAppGapNs,
                     dev_->one_sided_requests() != polled_count_);
    polled_count_ = kNoLinger;
    linger_window_.store(linger_.window_ns(), std::memory_order_relaxed);
  }
  // A poll that returns completions, under mu(), after its pass (before: dev().one_sided_requests() read
  // before that pass; now: when the pass ended, or the poll's entry): `before` for linger(), or kNoLinger
  // when polls do not linger now. A request its own pass placed counts as caught (the peer's WRITE came
  // with the ACK the completion waited for).
  static constexpr uint64_t kNoLinger = ~uint64_t{0};
  uint64_t polled_completions_locked(uint64_t before, uint64_t now) {
    polled_count_ = dev_->one_sided_requests();
    polled_ns_ = now;
    return linger_window_.load(std::memory_order_relaxed) ? before : kNoLinger;
  }
  // Then, without mu(): runs passes until one placed a one-sided request or the window is over. Returns
  // when it stopped (0: it did not linger), the calling verb's leaving time.
  uint64_t linger(uint64_t from);
  // Whether a poller that waits gives up its core after a while (EngineConfig::poll_yield).
  bool poll_yield() const { return poll_yield_; }

  // Makes the progress thread look again (frames arrived, work was posted for a one-sided target).
  void wake();
  // Wakes the progress thread if it sleeps at all: the application is about to block (req_notify_cq) and
  // will not drive the engine until its completion arrives.
  void wake_if_sleeping() {
    if (sleeping_.load(std::memory_order_relaxed)) wake();
  }
  // An application thread entered a datapath verb: it drives the engine, so the progress thread backs off.
  // A gap longer than kAppGapNs since the previous entry (the application spun on memory, computed, slept)
  // is stamped too: the progress thread counts an application as polling only while it sees no gaps.
  uint64_t app_enter() {
    const uint64_t now = clock_.now_ns_unordered();
    const uint64_t last = app_last_ns_.load(std::memory_order_relaxed);  // may be a little ahead of `now`
    const int cpu = sched_getcpu();
    if (now > last && now - last > kAppGapNs) {
      // The progress thread's own turn on this CPU, if the thread was here before it, is no gap
      // (progress_policy.h).
      const uint64_t away = cpu != app_cpu_.load(std::memory_order_relaxed)
                                ? now - last
                                : away_ns(last, now, held_from_.load(std::memory_order_relaxed),
                                          held_until_.load(std::memory_order_relaxed), kSwitchBackNs);
      if (away > kAppGapNs) app_gap_ns_.store(now, std::memory_order_relaxed);
      if (away > kAppAwayNs) app_away_ns_.store(now, std::memory_order_relaxed);
    }
    app_last_ns_.store(now, std::memory_order_relaxed);
    app_cpu_.store(cpu, std::memory_order_relaxed);
    app_inside_.fetch_add(1, std::memory_order_relaxed);
    return now;
  }
  // The thread leaves the verb: the gap to its next entry starts then, not at its entry (a post_send of a
  // large message may keep it inside for tens of microseconds, a preemption anywhere in a call for a time
  // slice, and neither is the application's absence).
  void app_leave(uint64_t left_ns) {
    app_inside_.fetch_sub(1, std::memory_order_relaxed);
    app_last_ns_.store(left_ns, std::memory_order_relaxed);
  }
  // An application thread armed a CQ (ibv_req_notify_cq): it is about to block on the completion channel.
  void app_arming() { app_armed_ns_.store(clock_.now_ns_unordered(), std::memory_order_relaxed); }
  // Scope of one datapath verb call. It reads the clock when it leaves, unless the call read it after its
  // work already (saw(): a pass that worked, a post_send that sent its frames); what follows that (copying
  // completions out, unlocking) is short.
  class AppCall {
   public:
    explicit AppCall(Engine& e) : e_(e), entered_(e_.app_enter()) {}
    ~AppCall() { e_.app_leave(left_ ? left_ : e_.clock_.now_ns_unordered()); }
    AppCall(const AppCall&) = delete;
    AppCall& operator=(const AppCall&) = delete;
    uint64_t entered() const { return entered_; }
    // The call read the clock at `t` after its work (0: it did not).
    void saw(uint64_t t) { left_ = t; }
    // The call neither waited (its lock was free) nor did work worth timing (its frames wait for the burst's
    // end, its pass found nothing): it left a few dozen nanoseconds after it entered, far below the gaps
    // the leaving time is for, and takes its entry time as its leaving time. Reading the TSC costs about
    // forty cycles on some CPUs, a tenth of a small post.
    void quick() { left_ = entered_; }

   private:
    Engine& e_;
    const uint64_t entered_;
    uint64_t left_ = 0;
  };

  // The engine of `ibdev` in this process, created on first use; the last release destroys it.
  static std::shared_ptr<Engine> acquire(const std::string& ibdev, std::string* err);

  // Where an object's async events go: the ibv_* object libibverbs reports, and the write end of its
  // context's async pipe. Events are written as libibverbs reads them (struct ib_uverbs_async_event_desc).
  struct EventSink {
    void* element;
    int fd;
  };
  std::unordered_map<uint32_t, EventSink> qp_events, srq_events, cq_events;

 private:
  void run();
  uint32_t pass_locked(uint64_t now_hint = 0);  // the device's pass, then the hook's
  uint32_t thread_pass_locked();                // pass_locked() by the progress thread; linger_ learns
  uint64_t next_deadline_locked() const;
  void deliver_async_events();
  void start_control(const EngineConfig& cfg);

  DeviceLock mu_;
  std::unique_ptr<PacketIo> port_;
  glue::Port* link_ = nullptr;             // port_ when it is a link port (DPDK's or uroce's memif client)
  glue::DpdkPort* dpdk_ = nullptr;         // port_ when it is a DPDK port (EAL threads, the interrupt gate)
  const FastClock& clock_ = fast_clock();  // one per process: the CM service's deadlines are compared with it
  std::unique_ptr<Device> dev_;
  std::unique_ptr<NetdevLink> netdev_;  // UROCE_NETDEV only; stopped before dev_ goes
  PassHook* hook_ = nullptr;            // under mu_
  PostCoalescer coalescer_;             // under mu_
  Linger linger_;                       // under mu_
  const bool poll_yield_;               // EngineConfig::poll_yield
  uint64_t polled_count_ = kNoLinger;   // under mu_: verb_entered_locked()
  uint64_t polled_ns_ = 0;
  std::atomic<uint64_t> linger_window_{0};  // linger_.window_ns(), for a poll to read without mu_
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sleeping_until_{0};  // written under mu_: when the progress thread will look again
  std::atomic<bool> sleeping_{false};        // the progress thread is in its io_uring wait
  std::atomic<bool> thread_cached_{false};   // the progress thread has a DPDK lcore id (its pool cache)
  std::atomic<uint64_t> app_last_ns_{0};   // when an application thread last entered or left a datapath verb
  std::atomic<uint32_t> app_inside_{0};    // application threads inside a datapath verb now
  std::atomic<int> app_cpu_{-1};           // the CPU an application thread last entered a verb on
  std::atomic<uint64_t> app_gap_ns_{0};    // when an entry last followed a gap of more than kAppGapNs
  std::atomic<uint64_t> app_away_ns_{0};   // and one of more than kAppAwayNs
  std::atomic<uint64_t> app_armed_ns_{0};  // when an application thread last armed a CQ (0: never)
  // The progress thread's last turn on the CPU an application thread last called from: from when it became
  // runnable (its nap's end, or when something woke it) to when it went back to sleep (progress_policy.h's
  // away_ns).
  std::atomic<uint64_t> held_from_{0}, held_until_{0};
  std::unique_ptr<Sleeper> sleeper_;  // the progress thread's io_uring wait (sleeper.h)
  const glue::ThreadSched sched_want_;
  const uint64_t spin_ns_, min_nap_ns_;
  const pid_t owner_pid_ = getpid();  // a child forked from it must not touch its port (dpdk_eal.h)
  std::thread thread_;
  std::unique_ptr<CaptureTap> tap_;  // on port_: `uroce capture` sees what goes on the wire (capture.h)
  // Between dev_ and tap_: the NIC's MAC obeys PFC and PAUSE frames (fabric/host_mac.h).
  std::unique_ptr<fabric::HostMac> mac_;
  std::unique_ptr<ControlEndpoint> control_;  // `uroce stats` / `uroce capture` socket (control.h)
};

}  // namespace uroce::provider
