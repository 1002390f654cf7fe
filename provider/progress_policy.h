// Decisions of the progress thread (engine.h) that depend on nothing but what it measured, kept apart so
// that they can be tested without a device.
#pragma once

#include <algorithm>
#include <cstdint>

namespace uroce::provider {

// Whether the progress thread, idle after a pass, keeps spinning rather than going to sleep. It spins for
// spin_ns after its last work and after the application's last verb call (data for an application that
// spins on memory comes within microseconds of its last post), unless the application thread last entered
// a verb on the CPU this thread runs on: that thread then most likely waits for this one to leave the CPU
// (both pinned to it, or more runnable threads than cores), and whatever it does next, poll its CQ or read
// the memory a WRITE just filled, it needs the CPU for. The thread sleeps at once then, woken by the next
// frame as after any spin. app_cpu < 0: not known yet.
inline bool keep_spinning(uint64_t since_work_ns, uint64_t since_app_ns, uint64_t spin_ns, int app_cpu,
                          int this_cpu) {
  if (since_work_ns >= spin_ns && since_app_ns >= spin_ns) return false;
  return app_cpu < 0 || app_cpu != this_cpu;
}

// How long the progress thread naps while application threads poll (engine.h), polled_ns after their last
// gap: a quarter of that, up to kPollingMaxNapNs, so that a long-running poller is checked on rarely. A
// look is how the thread notices that the application went on to spin on memory and left a one-sided
// request aimed at it to the thread. Without a bell to wake the thread for those, one that just started
// polling (ib_write_lat between its memory waits) is looked at after kPollingMinNapNs; with the memif bell
// armed for them (bell_for_requests), not before kPollingBellMinNapNs: on a 2-CPU VM each look is a
// wake-up that takes a CPU from a spinning application for 10-30 us, and builds the debt that later keeps
// the thread waiting for a tick (docs/latency.md).
constexpr uint64_t kPollingMinNapNs = 10'000, kPollingBellMinNapNs = 200'000, kPollingMaxNapNs = 1'000'000;
inline uint64_t polling_nap_ns(uint64_t polled_ns, bool bell_for_requests) {
  return std::clamp(polled_ns / 4, bell_for_requests ? kPollingBellMinNapNs : kPollingMinNapNs,
                    kPollingMaxNapNs);
}

// Whether application threads drive the engine: the progress thread's polling mode (engine.h). They do
// while they came back to a datapath verb within a short gap every time since the thread last looked
// (gap_at_ns: when an entry last followed a longer one; looked_ns: the thread's previous look), are inside
// one now or left it less than that gap ago (quiet_ns). Without the bell the gap is kAppGapNs: an
// application that spins on memory between its verbs (ib_write_lat) leaves the one-sided requests aimed at
// it to the thread, which must then serve. With the memif bell armed for those requests (bell), such a
// request wakes the thread whatever the application does, and the gap that matters is the application
// going away for good: kAppAwayNs, past the preemptions and interrupts of a busy 2-CPU VM (20-60 us each).
// Counted as absences at 3 us, those had the thread look every 200-300 us in ib_send_lat, each look a
// wake-up that preempted one of the two spinning applications (p99 26-35 us; with kAppAwayNs 8-17 us).
// An application that armed a CQ (armed_at_ns, 0: never) and called at most briefly after (kArmGraceNs:
// the poll after arming that closes the race) is about to block on the completion channel: not polling,
// so that the thread serves it and watches for every frame, not only for one-sided requests.
constexpr uint64_t kAppGapNs = 3'000, kAppAwayNs = 100'000, kArmGraceNs = 20'000;
struct AppSeen {
  bool inside = false;       // an application thread is inside a datapath verb
  uint64_t quiet_ns = 0;     // since one last entered or left one (app_quiet_ns)
  uint64_t gap_at_ns = 0;    // when an entry last followed a gap of more than kAppGapNs
  uint64_t away_at_ns = 0;   // when an entry last followed a gap of more than kAppAwayNs
  uint64_t last_ns = 0;      // when one last entered or left a datapath verb
  uint64_t armed_at_ns = 0;  // when one last armed a CQ (0: never)
};
// When the last gap that counts (with the bell or without) ended: how long the application has polled.
inline uint64_t counted_gap_at(const AppSeen& a, bool bell) { return bell ? a.away_at_ns : a.gap_at_ns; }
inline bool app_polling(const AppSeen& a, uint64_t looked_ns, bool bell) {
  if (a.armed_at_ns && a.last_ns < a.armed_at_ns + kArmGraceNs) return false;
  return (a.inside || a.quiet_ns < (bell ? kAppAwayNs : kAppGapNs)) && counted_gap_at(a, bell) < looked_ns;
}

// Of the time from an application thread's last verb call (last_ns) to its next (now_ns), the part it was
// away by its own doing: less the progress thread's turn on its CPU [held_from_ns, held_until_ns +
// switch_back_ns) where the two overlap. A thread that polls without pause but shares its CPU with the
// progress thread (both pinned there) is kept off it while the progress thread runs, and that is no sign
// that it stopped polling. held_until_ns is when the thread went to sleep; the CPU comes back to the
// application only once the kernel has switched to it, switch_back_ns later (kSwitchBackNs).
// held_until_ns < held_from_ns: the turn has not ended (as far as the caller has seen).
inline uint64_t away_ns(uint64_t last_ns, uint64_t now_ns, uint64_t held_from_ns, uint64_t held_until_ns,
                        uint64_t switch_back_ns) {
  if (held_until_ns < held_from_ns)
    held_until_ns = now_ns;
  else
    held_until_ns += switch_back_ns;
  const uint64_t from = held_from_ns > last_ns ? held_from_ns : last_ns;
  const uint64_t until = held_until_ns < now_ns ? held_until_ns : now_ns;
  return now_ns - last_ns - (until > from ? until - from : 0);
}

// What a progress thread's turn on the application's CPU costs it after the thread went to sleep: the
// thread's way into the kernel's wait, and the switch back. Measured on a 2-CPU VM (a paravirtualised
// kernel, where a context switch is dear) in ib_send_bw with each process pinned to one CPU: 5-10 us
// from the thread's last stamp to the application's next call after nearly every turn. Counted as the
// application's absence, those read as gaps in its polling (about 1,500 a second), each of which sent the
// thread back to short naps and more turns on that CPU: 3,600-6,000 a second, each preempting the
// application.
constexpr uint64_t kSwitchBackNs = 20'000;

// How long the application had not called a verb (its last call at app_ns) as the progress thread judges
// it at now_ns. On the application's CPU (holding) it is judged at the start of the thread's turn there: the
// time since then is the thread's own, and a polling application calls again as soon as it runs.
inline uint64_t app_quiet_ns(uint64_t now_ns, uint64_t app_ns, bool holding, uint64_t turn_start_ns) {
  const uint64_t at = holding ? turn_start_ns : now_ns;
  return at > app_ns ? at - app_ns : 0;
}

// Doorbell coalescing for post_send (engine.h). A NIC takes a doorbell per post; here a post's frames leave
// in a pass of the engine, and a pass per post costs a burst into the port's ring, with the fences and
// locked operations after it waiting for the stores into lines the peer polls: in ib_send_bw 64 B over
// memif, most of the sender's time. While an application posts in a burst (each post_send entering less
// than kBurstNs after the previous one returned), the posts after the first leave their frames waiting for
// the burst's end: its next verb call that runs a pass (ibv_poll_cq, ibv_req_notify_cq, any post_send after
// kMaxWaiting waiting ones). An application that leaves waiting frames to the progress thread instead (it
// went on to spin on memory, or to block without arming a CQ) has waited up to the thread's next look; when
// the thread finds that kStrikes times in a row, with no burst ended by the application in between, it
// switches coalescing off for kOffNs, twice as long each further time, up to kOffMaxNs. (Once is no proof:
// an application preempted inside its burst also leaves its frames to the thread.)
// Under the device lock.
class PostCoalescer {
 public:
  static constexpr uint64_t kBurstNs = 2'000;
  static constexpr uint32_t kMaxWaiting = 32;
  static constexpr uint64_t kLeftNs = 20'000;  // waiting this long when the thread finds them: left to it
  static constexpr uint32_t kStrikes = 3;
  static constexpr uint64_t kOffNs = 100'000'000, kOffMaxNs = 12'800'000'000;

  explicit PostCoalescer(bool enabled) : enabled_(enabled) {}

  // A post_send that entered at now_ns has queued its work requests: true if their frames may wait (the
  // post then returns at once); else the caller sends them in a pass and calls sent() when it returns.
  bool may_wait(uint64_t now_ns) {
    const uint64_t prev = last_post_ns_;
    last_post_ns_ = now_ns;
    if (off_at(now_ns) || waiting_ >= kMaxWaiting || now_ns < prev || now_ns - prev >= kBurstNs) return false;
    if (!waiting_) waiting_since_ns_ = now_ns;
    ++waiting_;
    return true;
  }
  // A pass is about to run and sends whatever waits. by_thread: the progress thread's, at now_ns. Returns
  // true if the application had left frames waiting to the thread.
  bool pass(bool by_thread, uint64_t now_ns) {
    if (!waiting_) return false;
    waiting_ = 0;
    if (!by_thread || now_ns < waiting_since_ns_ || now_ns - waiting_since_ns_ < kLeftNs) {
      if (!by_thread) strikes_ = 0;
      return false;
    }
    if (++strikes_ == kStrikes) {
      strikes_ = 0;
      off_until_ns_ = now_ns + off_ns_;
      off_ns_ = std::min(off_ns_ * 2, kOffMaxNs);
    }
    return true;
  }
  void sent(uint64_t now_ns) { last_post_ns_ = now_ns; }
  uint32_t waiting() const { return waiting_; }
  bool off_at(uint64_t now_ns) const { return !enabled_ || now_ns < off_until_ns_; }

 private:
  const bool enabled_;
  uint64_t last_post_ns_ = 0;      // when the last post_send returned
  uint32_t waiting_ = 0;           // posts whose frames wait for the burst's end
  uint32_t strikes_ = 0;           // bursts in a row left to the progress thread
  uint64_t waiting_since_ns_ = 0;  // the first of them entered then
  uint64_t off_until_ns_ = 0;
  uint64_t off_ns_ = kOffNs;
};

// Polls that linger for a one-sided request (engine.h), as a NIC would place it without the application.
// An application that polls its CQ and then spins on memory for the peer's WRITE (ib_write_lat: post,
// poll for the completion, spin) calls no verb until that WRITE has been placed, so the progress thread
// places it: woken by memif's bell, at the cost of a wake-up and a context switch (10-30 us on a 2-CPU VM,
// and the scheduler's eligibility waits at the tail). The pattern shows at the application's next verb
// after a poll that returned completions: it was away (more than a short gap), and a one-sided request
// aimed at the device was placed meanwhile. After kHits such returns in a row, a poll that returns
// completions lingers: before returning, the calling thread, which would only spin on memory next, runs
// passes for up to kWindowNs and returns as soon as one placed a request. A return after an absence with
// no request placed breaks the row (the application computed or slept); a quick return is neither (it
// polls). A linger that catches nothing stops it (the application's pattern changed; it paid one window),
// and so do requests the progress thread keeps placing with no linger catching one between them (the
// application no longer polls between them). While it is on, the progress thread leaves the bell unarmed
// and naps kLingeringNapNs. A polling application never starts it, nor a passive target (ib_write_bw's
// server: no polls). Through uroced (UROCE_POLL_YIELD=1) the peer's WRITE crosses a switch that shares the
// cores with both ends, and a quarter to a half of the lingers missed it at kWindowNs: there a poll lingers
// for kSharedWindowNs and yields its core while it waits (Engine::linger), so that the switch runs. Under
// the device lock.
constexpr uint64_t kLingeringNapNs = 5'000'000;
class Linger {
 public:
  static constexpr uint64_t kWindowNs = 30'000, kSharedWindowNs = 200'000;
  static constexpr uint32_t kHits = 4;

  // `shared`: the frames go through a switch on the same cores (UROCE_POLL_YIELD=1).
  explicit Linger(bool enabled, bool shared = false)
      : enabled_(enabled), window_ns_(shared ? kSharedWindowNs : kWindowNs) {}
  // The application's first verb after a poll that returned completions: whether it had been away, and
  // whether a one-sided request was placed since that poll.
  void returned(bool away, bool request_placed) {
    if (on_ || !away) return;
    if (!request_placed) {
      hits_ = 0;
      return;
    }
    if (++hits_ >= kHits && enabled_) {
      on_ = true;
      caught_since_ = 1;
    }
  }
  // The progress thread placed a one-sided request while no application thread was inside a verb.
  void thread_placed() {
    if (!on_) return;
    // It looked just as a request waited: chance, if polls have caught requests since its last such find.
    if (caught_since_ == 0) off();
    caught_since_ = 0;
  }
  // A linger ended, with a request placed during it or not.
  void lingered(bool caught) {
    if (caught)
      ++caught_since_;
    else
      off();
  }
  // How long a poll that returns completions lingers now (0: it returns at once).
  uint64_t window_ns() const { return on_ ? window_ns_ : 0; }

 private:
  void off() {
    on_ = false;
    hits_ = 0;
  }
  const bool enabled_;
  const uint64_t window_ns_;
  bool on_ = false;
  uint32_t hits_ = 0;
  uint32_t caught_since_ = 0;  // lingers that caught one since the thread last found a request waiting
};

}  // namespace uroce::provider
