#include "provider/engine.h"

#include <fcntl.h>
#include <poll.h>
#include <rdma/ib_user_verbs.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

#include "pmd_glue/dpdk_eal.h"
#include "pmd_glue/dpdk_port.h"
#include "pmd_glue/intr_gate.h"
#include "pmd_glue/loopback.h"
#include "pmd_glue/open_port.h"
#include "provider/gid_text.h"
#include "provider/netdev_link.h"
#include "provider/progress_policy.h"
#include "provider/sleeper.h"
#include "runtime/env_vars.h"
#include "runtime/yield_backoff.h"
#include "transport/wire/address.h"

namespace uroce::provider {

std::string load_engine_config(const std::string& ibdev, EngineConfig* cfg) {
  const char* sysfs = std::getenv("SYSFS_PATH");
  if (!sysfs)
    return "SYSFS_PATH is not set: start the program with 'uroce run -- PROGRAM' (or eval \"$(uroce env)\")";
  // Every variable the provider, its DPDK layer and the shim read (runtime/env_vars.h): a bad value fails the
  // open here, naming it, instead of silently meaning a default somewhere later.
  for (const runtime::EnvVar& v : runtime::env_vars()) {
    if (v.reader.find("provider") == std::string_view::npos &&
        v.reader.find("pmd_glue") == std::string_view::npos &&
        v.reader.find("shim") == std::string_view::npos)
      continue;
    if (const char* value = std::getenv(std::string(v.name).c_str()))
      if (std::string e = runtime::check_env_value(v, value); !e.empty()) return e;
  }
  const std::string gid_file = std::string(sysfs) + "/class/infiniband/" + ibdev + "/ports/1/gids/0";
  std::ifstream in(gid_file);
  std::string text;
  if (!in || !std::getline(in, text) || !parse_gid(text, &cfg->device.gid))
    return "cannot read GID 0 of " + ibdev + " from " + gid_file;
  cfg->device.name = ibdev;
  cfg->device.mac = mac_for_gid(cfg->device.gid);
  // Random QPNs and memory keys in every real process: a peer or anyone on the segment must not be able to
  // predict them.
  std::random_device rd;
  cfg->device.id_seed = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;

  if (const char* mtu = std::getenv("UROCE_MTU")) {
    const std::string v = mtu;
    const Mtu table[] = {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048, Mtu::k4096};
    bool ok = false;
    for (Mtu m : table)
      if (v == std::to_string(mtu_bytes(m))) {
        cfg->device.port_mtu = m;
        ok = true;
      }
    if (!ok) return "UROCE_MTU=" + v + ": must be 256, 512, 1024, 2048 or 4096";
  }
  if (const char* cc = std::getenv("UROCE_CC")) cfg->device.cc = cc;
  cfg->device.selective_repeat = runtime::env_flag("UROCE_SELECTIVE_REPEAT");
  cfg->device.ack_hold_ns = 3'000;
  const char* params = std::getenv("UROCE_CC_PARAMS");
  if (params) {
    try {
      cfg->device.cc_params = cc::parse_params(params);
    } catch (const std::invalid_argument& e) {
      return std::string("UROCE_CC_PARAMS=") + params + ": " + e.what();
    }
  }
  // A bad algorithm or parameter fails the open here, before any port is set up.
  if (std::string e = Device::check_config(cfg->device); !e.empty())
    return "UROCE_CC=" + cfg->device.cc + (params ? std::string(" UROCE_CC_PARAMS=") + params : "") + ": " +
           e;
  if (const char* port = std::getenv("UROCE_PORT")) cfg->port = port;
  if (const char* netdev = std::getenv("UROCE_NETDEV")) cfg->netdev = netdev;
  cfg->sysfs_port_dir = std::string(sysfs) + "/class/infiniband/" + ibdev + "/ports/1";
  cfg->sched = glue::thread_sched_from_env();
  uint64_t us = cfg->device.ack_hold_ns / 1000;
  std::string err;
  if (!runtime::env_uint("UROCE_ACK_HOLD_US", &us, &err)) return err;
  cfg->device.ack_hold_ns = us * 1000;
  us = cfg->spin_ns / 1000;
  if (!runtime::env_uint("UROCE_ENGINE_SPIN_US", &us, &err)) return err;
  cfg->spin_ns = us * 1000;
  us = cfg->min_nap_ns / 1000;
  if (!runtime::env_uint("UROCE_ENGINE_NAP_US", &us, &err)) return err;
  cfg->min_nap_ns = us * 1000;
  cfg->tx_coalesce = runtime::env_flag("UROCE_TX_COALESCE", true);
  cfg->linger = runtime::env_flag("UROCE_LINGER", true);
  cfg->poll_yield = runtime::env_flag("UROCE_POLL_YIELD", false);
  return "";
}

Engine::Engine(const EngineConfig& cfg)
    : coalescer_(cfg.tx_coalesce),
      linger_(cfg.linger, cfg.poll_yield),
      poll_yield_(cfg.poll_yield),
      sched_want_(cfg.sched),
      spin_ns_(cfg.spin_ns),
      min_nap_ns_(cfg.min_nap_ns) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error("out of file descriptors");
  if (cfg.port == "loopback") {
    port_ = std::make_unique<glue::LoopbackPort>(glue::LoopbackHub::instance(), cfg.device.mac,
                                                 [this] { wake(); });
  } else {
    std::string err;
    auto p = glue::open_port(cfg.port, &err);
    if (!p) throw std::runtime_error("UROCE_PORT=" + cfg.port + ": " + err);
    // A program may exit right after its last message: the ACK that frees its peer must still reach the peer
    // (or the host switch) before the memif link goes down with it. The port waits for the peer to confirm it
    // has read everything, for up to a second when the peer is slow to run.
    p->set_close_linger_ms(1000);
    link_ = p.get();
    dpdk_ = dynamic_cast<glue::DpdkPort*>(p.get());
    port_ = std::move(p);
  }
  tap_ = std::make_unique<CaptureTap>(port_.get());
  DeviceConfig dc = cfg.device;
  if (!cfg.netdev.empty()) {
    netdev_ = std::make_unique<NetdevLink>(cfg.netdev, cfg.sysfs_port_dir);
    netdev_->configure(&dc);
  }
  // Pause times count at the line rate uroced counts them at (memif has no rate of its own).
  // Link credits are a uroce link protocol: only a memif port (uroced's) may put the MAC under them.
  mac_ = std::make_unique<fabric::HostMac>(tap_.get(), &clock_, fabric::kRealTimeLineRateBps,
                                           wire::mac_to_u64(dc.mac), cfg.port.rfind("memif", 0) == 0);
  dev_ = std::make_unique<Device>(dc, mac_.get(), &clock_);  // throws on a bad CC setting
  if (netdev_) netdev_->attach(dev_.get(), &mu_);
  dev_->on_async_event = [this] { deliver_async_events(); };
  start_control(cfg);
  thread_ = std::thread([this] { run(); });
}

Engine::~Engine() {
  control_.reset();
  netdev_.reset();
  stop_ = true;
  wake();
  thread_.join();
  if (runtime::env_flag("UROCE_STATS_ON_EXIT")) print_stats(stderr);
  dev_.reset();
  mac_.reset();
  port_.reset();
  close(wake_fd_);
}

void Engine::print_stats(FILE* out) {
  std::lock_guard lock(mu_);
  std::fprintf(out, "uroce %s stats:", dev_->config().name.c_str());
  for (size_t i = 0; i < static_cast<size_t>(Counter::kCount); ++i)
    if (uint64_t v = dev_->counters().n[i])
      std::fprintf(out, " %s=%lu", counter_name(static_cast<Counter>(i)), v);
  for (size_t i = 1; i < static_cast<size_t>(wire::RxDrop::kCount); ++i)
    if (uint64_t v = dev_->rx_drops().n[i])
      std::fprintf(out, " rx_drop_%s=%lu", wire::rx_drop_name(static_cast<wire::RxDrop>(i)), v);
  if (link_) {
    const auto st = link_->stats();
    std::fprintf(out, " port_rx=%lu port_tx=%lu port_tx_errors=%lu port_rx_missed=%lu link=%s port_driver=%s",
                 st.rx_frames, st.tx_frames, st.tx_errors, st.rx_missed, link_->link_up() ? "up" : "down",
                 dpdk_ ? "dpdk" : "uroce");
    if (const auto& f = mac_->counters(); f.pfc_rx || f.pause_rx || f.credit_rx)
      std::fprintf(out, " pfc_rx=%lu pause_rx=%lu credit_rx=%lu credit_tx=%lu pfc_tx_held=%lu", f.pfc_rx,
                   f.pause_rx, f.credit_rx, f.credit_tx, f.tx_held);
  }
  if (mu_.spun() || mu_.slept()) std::fprintf(out, " lock_spun=%lu lock_slept=%lu", mu_.spun(), mu_.slept());
  std::fprintf(out, "\n");
}

// The control endpoint reads the device under mu_; QPs are listed from qp_events (every QP a verb created).
void Engine::start_control(const EngineConfig& cfg) {
  auto qpns = [this] {
    std::vector<uint32_t> v;
    for (const auto& [qpn, sink] : qp_events) v.push_back(qpn);
    return v;
  };
  auto port_stats = [this]() -> std::vector<std::pair<std::string, uint64_t>> {
    if (!link_) return {};
    const auto s = link_->stats();
    const auto& f = mac_->counters();
    return {{"rx_frames", s.rx_frames},
            {"rx_bytes", s.rx_bytes},
            {"tx_frames", s.tx_frames},
            {"tx_bytes", s.tx_bytes},
            {"rx_missed", s.rx_missed},
            {"rx_kernel_drops", s.rx_kernel_drops},
            {"rx_errors", s.rx_errors},
            {"tx_errors", s.tx_errors},
            {"rx_nombuf", s.rx_nombuf},
            {"rx_oversize", s.rx_oversize},
            {"rx_chain_drop", s.rx_chain_drop},
            {"bell_rings", s.bell_rings},  // memif: the peer was asleep on its bell and we woke it
            {"engine_pool_cache", thread_cached_.load(std::memory_order_relaxed) ? 1u : 0u},
            // The device lock: contended acquisitions that waited spinning, and those that slept.
            {"lock_spun", mu_.spun()},
            {"lock_slept", mu_.slept()},
            {"link_up", link_->link_up() ? 1u : 0u},
            // The MAC's flow control: pause frames received, frames a pause or missing credit held, time
            // paused with frames waiting, link credit updates.
            {"pfc_rx", f.pfc_rx},
            {"pause_rx", f.pause_rx},
            {"mac_control_rx", f.mac_control_rx},
            {"pfc_tx_held", f.tx_held},
            {"pfc_tx_refused", f.tx_refused},
            {"pfc_paused_ns", mac_->queue_stats().paused_ns},
            {"credit_rx", f.credit_rx},
            {"credit_tx", f.credit_tx},
            {"credit_ignored", f.credit_ignored},
            {"credit_malformed", f.credit_malformed},
            {"credit_stall", mac_->queue_stats().credit_stall}};
  };
  auto hook_counters = [this]() -> std::vector<std::pair<std::string, uint64_t>> {
    return hook_ ? hook_->counters() : std::vector<std::pair<std::string, uint64_t>>{};
  };
  std::string err;
  control_ = ControlEndpoint::start(
      {cfg.device.name, cfg.port, &mu_, dev_.get(), tap_.get(), qpns, port_stats, hook_counters}, &err);
  if (!control_ && !err.empty())
    std::fprintf(stderr, "uroce %s: no control socket, uroce stats/capture will not see it: %s\n",
                 cfg.device.name.c_str(), err.c_str());
}

bool Engine::link_up() const { return !link_ || link_->link_up(); }

void Engine::wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

// Called by the device (lock held) as it raises events. Each becomes the record ibv_get_async_event reads
// from the async fd of the context that owns the object.
void Engine::deliver_async_events() {
  AsyncEvent ev;
  while (dev_->get_async_event(&ev)) {
    const auto& map = ev.type == EventType::kCqErr                                                ? cq_events
                      : (ev.type == EventType::kSrqErr || ev.type == EventType::kSrqLimitReached) ? srq_events
                                                                                                  : qp_events;
    auto it = map.find(ev.element);
    if (it == map.end()) continue;  // its object is already destroyed
    ib_uverbs_async_event_desc desc{};
    desc.element = reinterpret_cast<uintptr_t>(it->second.element);
    desc.event_type = static_cast<uint32_t>(ev.type);
    (void)!write(it->second.fd, &desc, sizeof(desc));  // non-blocking: a full pipe drops the event
  }
}

std::shared_ptr<Engine> Engine::acquire(const std::string& ibdev, std::string* err) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::weak_ptr<Engine>> engines;
  std::lock_guard lock(mu);
  if (auto e = engines[ibdev].lock()) return e;
  static bool once = [] {
    // Programs often exit without closing the device (librdmacm keeps its contexts open), and then their
    // engines are never destroyed: see to it at exit what a close would (at_exit).
    std::atexit([] {
      for (auto& [name, weak] : engines)
        if (auto e = weak.lock()) e->at_exit();
    });
    return true;
  }();
  (void)once;
  EngineConfig cfg;
  *err = load_engine_config(ibdev, &cfg);
  if (!err->empty()) return nullptr;
  try {
    auto e = std::make_shared<Engine>(cfg);
    engines[ibdev] = e;
    return e;
  } catch (const std::exception& ex) {
    *err = ex.what();
    return nullptr;
  }
}

// The progress thread (modes in engine.h). Each turn it reads when application threads last entered a
// datapath verb and decides whether to run a pass and how long to sleep. Naps exist because a DPDK port
// without rx interrupts (memif, af_packet in DPDK 22.11) does not say when frames arrive; with an rx
// interrupt (tap) or the in-process hub (which rings the doorbell) the thread sleeps until the next deadline.
void Engine::run() {
  // Polling: naps as polling_nap_ns says (progress_policy.h), on the memif bell armed for one-sided
  // requests where the port has one. The longest is also the longest an application that stops calling
  // (blocks in read(), say) waits before the thread takes over. Where the thread shares the application's
  // CPU, each look takes that CPU from the application, and a look that comes late or runs long must not
  // read as the application's absence (app_quiet_ns, away_ns).
  // Otherwise: the thread spins spin_ns_ (UROCE_ENGINE_SPIN_US) after the last work or the application's last
  // call (data for a memory poller comes within microseconds of its last post), then naps from kMinNapNs
  // doubling to 1 ms while the device was busy within the last second, then to 20 ms: a long-idle process
  // costs well under 1% of a core, at the price of up to 20 ms before it notices the first new frame.
  const uint64_t kMinNapNs = min_nap_ns_;
  constexpr uint64_t kBusyMaxNapNs = 1'000'000, kIdleMaxNapNs = 20'000'000;
  constexpr uint64_t kIdleAfterNs = 1'000'000'000;
  // Naps of microseconds must not be stretched by the default 50 us timer slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  prctl(PR_SET_NAME, "uroce-engine", 0UL, 0UL, 0UL);  // for top -H, perf and tests
  // The io_uring is set up and torn down here, on the only thread that uses it. The kernel links a ring to
  // the thread that creates it, and when the ring is closed it queues work for that thread that interrupts
  // whatever blocking call the thread is in: an application thread that opened the device would see its
  // epoll_wait fail with EINTR, no signal sent (libfabric's fi_eq_sread returned -4 that way).
  sleeper_ = std::make_unique<Sleeper>(wake_fd_);
  // Scheduling for the threads a frame waits for: this one and, on a gated (memif) port, DPDK's interrupt
  // thread (pmd_glue/thread_sched.h, docs/latency.md).
  if (glue::apply_thread_sched(sched_want_) == glue::ThreadSched::kSlice &&
      sched_want_ == glue::ThreadSched::kBoost)
    std::fprintf(stderr,
                 "uroce: UROCE_ENGINE_SCHED=boost: nice %d refused (it needs CAP_SYS_NICE or an RLIMIT_NICE "
                 "that allows it); the progress thread has the short slice only\n",
                 glue::kBoostNice);
  if (dpdk_) glue::IntrGate::set_thread_sched(sched_want_);
  // An lcore id for this thread, so that the buffers its bursts allocate and free come from a per-thread
  // cache of the port's pool rather than the pool's shared ring (a locked ring operation per burst, ~8% of
  // a receiving engine's time). The thread that started DPDK has one already.
  const bool lcore = dpdk_ && glue::Eal::register_thread();
  thread_cached_.store(lcore, std::memory_order_relaxed);
  uint64_t last_work = clock_.now_ns();
  // The first nap after work: short where frames may come without waking us, the longest busy one where
  // the peer rings its bell when we arm it (the nap then only bounds what a stale mark could cost).
  const auto first_nap = [&] { return link_ && link_->peer_rings() ? kBusyMaxNapNs : kMinNapNs; };
  uint64_t nap = first_nap();
  const int rx_fd = link_ ? link_->rx_event_fd() : -1;
  // Frames may arrive without waking us (no rx interrupt, or memif's bell, which a peer that has none does
  // not ring): look again after a nap.
  const bool blind = link_ && (rx_fd < 0 || link_->rx_interrupt_is_hint());
  const auto until = [](uint64_t deadline, uint64_t now) { return deadline > now ? deadline - now : 0; };
  uint64_t looked = 0;      // when this thread last checked on the application
  bool holding = false;     // this turn runs on the CPU the application last called from
  uint64_t turn_start = 0;  // and began then (held_from_)
  while (!stop_.load(std::memory_order_relaxed)) {
    uint64_t now = clock_.now_ns();
    const uint64_t app = app_last_ns_.load(std::memory_order_relaxed);
    const uint64_t since_app = app_quiet_ns(now, app, holding, turn_start);
    // The peer rings memif's bell when this thread arms it for one-sided requests (below).
    const bool bell = link_ && link_->peer_rings();
    AppSeen seen;
    seen.inside = app_inside_.load(std::memory_order_relaxed) != 0;
    seen.quiet_ns = since_app;
    seen.gap_at_ns = app_gap_ns_.load(std::memory_order_relaxed);
    seen.away_at_ns = app_away_ns_.load(std::memory_order_relaxed);
    seen.last_ns = app;
    seen.armed_at_ns = app_armed_ns_.load(std::memory_order_relaxed);
    const bool polling = app_polling(seen, looked, bell);
    const uint64_t gap = counted_gap_at(seen, bell);
    looked = now;
    uint64_t sleep_ns;
    bool backoff = false;  // a back-off nap: only a doorbell or an rx interrupt resets it
    bool armed = false;
    bool lingering = false;
    std::unique_lock lock(mu_, std::defer_lock);
    if (polling && bell) {
      // Application threads drive the engine, but one that goes on to spin on memory (ib_write_lat
      // between its posts) leaves the WRITE, READ or ATOMIC aimed at it to this thread. The bell, armed
      // for those only, brings them at once, while the traffic the application handles itself (SENDs,
      // ACKs, READ responses) rings nothing. So the naps need not be short to catch the switch: each look
      // is a wake-up that takes a CPU from a spinning application (docs/latency.md). The bell needs no
      // lock; with the lock free, one pass after arming takes a request published before the flag, which
      // rang nobody (an application inside a verb passes itself).
      // While polls linger, they place the requests themselves, and a bell would only wake this thread to
      // take a CPU from one of the spinning applications: it stays unarmed, and the naps long (a poll that
      // lingers in vain rings the doorbell).
      lingering = linger_window_.load(std::memory_order_relaxed) != 0;
      if (!lingering) armed = link_->enable_rx_interrupt(/*requests_only=*/true);
      uint64_t deadline = kNever;
      if (lock.try_lock()) {
        // Posts waiting for the end of the application's burst go with this pass, as with one of its
        // own: a polling application has left nothing to this thread (PostCoalescer counts only those).
        thread_pass_locked();
        now = clock_.now_ns();
        deadline = next_deadline_locked();
        lock.unlock();
      }
      sleep_ns =
          std::min(lingering ? kLingeringNapNs : polling_nap_ns(now - gap, true), until(deadline, now));
    } else if (polling) {
      // Application threads drive the engine. Stay off the lock and the CPU; nobody rings us.
      sleep_ns = polling_nap_ns(now - gap, false);
    } else if (!lock.try_lock()) {
      sleep_ns = kPollingMinNapNs;  // an application thread is inside a verb, running the pass
    } else {
      if (coalescer_.pass(true, now)) dev_->count(Counter::kCoalescingLeft);
      const uint32_t work = thread_pass_locked();
      const uint64_t deadline = next_deadline_locked();
      now = clock_.now_ns();
      if (work || deadline <= now) {
        last_work = now;
        nap = first_nap();
        continue;
      }
      if (keep_spinning(now - last_work, since_app, spin_ns_, app_cpu_.load(std::memory_order_relaxed),
                        sched_getcpu()))
        continue;
      if (blind && now + nap < deadline) {
        sleep_ns = nap;
        nap = std::min(nap * 2, now - last_work < kIdleAfterNs ? kBusyMaxNapNs : kIdleMaxNapNs);
        backoff = true;
      } else {
        sleep_ns = deadline == kNever ? Sleeper::kForever : deadline - now;
      }
      if (rx_fd >= 0) armed = link_->enable_rx_interrupt();
      // A frame that came after the pass and before arming woke nobody: one more pass finds it.
      if (armed && thread_pass_locked()) {
        link_->disable_rx_interrupt();
        last_work = clock_.now_ns();
        nap = first_nap();
        continue;
      }
      // Published under the lock: a verb that leaves earlier work behind sees it and rings the doorbell.
      sleeping_until_.store(sleep_ns == Sleeper::kForever ? kNever : now + sleep_ns,
                            std::memory_order_relaxed);
      lock.unlock();
    }
    sleeping_.store(true, std::memory_order_relaxed);
    const uint64_t slept = clock_.now_ns();
    if (holding) held_until_.store(slept, std::memory_order_relaxed);
    const unsigned fired = sleeper_->wait(sleep_ns, armed ? rx_fd : -1);
    sleeping_.store(false, std::memory_order_relaxed);
    // A turn on the application's CPU starts: from the nap's end when it ran out (the thread was runnable
    // from then on and, with its short slice, most likely took the CPU at once).
    holding = sched_getcpu() == app_cpu_.load(std::memory_order_relaxed);
    if (holding) {
      const uint64_t woke = clock_.now_ns();
      const uint64_t due = sleep_ns == Sleeper::kForever ? woke : slept + sleep_ns;
      turn_start = fired ? woke : std::min(due, woke);
      held_from_.store(turn_start, std::memory_order_relaxed);
    }
    // Awake: no lock for what needs none. Taking it here, after a wake-up on the CPU of an application
    // thread that holds it (preempted inside a verb), put this thread to sleep on the lock at once, and
    // its wake-up when the verb returned came right after this one: the kernel then often held it off the
    // CPU until the next tick (docs/latency.md). A verb that still reads the old sleeping_until_ rings the
    // doorbell for nothing; one that reads 0 leaves its deadline to this thread's next pass.
    sleeping_until_.store(0, std::memory_order_relaxed);
    if (armed && !link_->rx_interrupt_needs_lock()) {
      link_->disable_rx_interrupt();
    } else if (armed) {
      std::lock_guard relock(mu_);
      link_->disable_rx_interrupt();
    }
    if (polling) continue;
    if (backoff && !fired) continue;  // nothing woke us: keep backing off
    last_work = clock_.now_ns();
  }
  sleeper_.reset();  // on this thread too (above)
  if (lcore) glue::Eal::unregister_thread();
}

void Engine::at_exit() {
  if (getpid() != owner_pid_) return;  // a forked child's exit: the ports are the parent's
  {
    std::lock_guard lock(mu_);
    // Posts that wait for the end of a burst go out (mckey's sender posts its datagrams and exits without
    // polling), and the port waits for its peer to have read what it sent, as its close would: a memif
    // peer's PMD frees the shared ring with whatever it has not read when the link goes.
    flush_posted_locked();
    progress_locked();
    if (link_) link_->linger();
  }
  if (runtime::env_flag("UROCE_STATS_ON_EXIT")) print_stats(stderr);
}

uint64_t Engine::posted_locked(uint64_t entered) {
  if (coalescer_.may_wait(entered)) {
    dev_->count(Counter::kPostsCoalesced);
    return 0;
  }
  // The burst is timed from the post's return, after its pass (which may have sent a large message, and
  // read the clock after it).
  uint64_t now = progress_locked(entered);
  if (!now) now = clock_.now_ns_unordered();
  coalescer_.sent(now);
  return now;
}

uint32_t Engine::thread_pass_locked() {
  const uint64_t before = dev_->one_sided_requests();
  const uint32_t work = pass_locked();
  if (dev_->one_sided_requests() != before && !app_inside_.load(std::memory_order_relaxed)) {
    linger_.thread_placed();
    linger_window_.store(linger_.window_ns(), std::memory_order_relaxed);
  }
  return work;
}

uint64_t Engine::linger(uint64_t from) {
  if (from == kNoLinger) return 0;
  const uint64_t start = clock_.now_ns_unordered();
  const uint64_t until = start + linger_window_.load(std::memory_order_relaxed);
  uint64_t now = start;
  bool caught = false;
  for (;;) {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (lock.owns_lock()) {
      progress_locked();
      caught = dev_->one_sided_requests() != from;
      now = clock_.now_ns_unordered();
    } else if ((now = clock_.now_ns_unordered()) >= until) {
      lock.lock();  // the progress thread's pass, about to end: it may have placed one
      caught = dev_->one_sided_requests() != from;
    }
    if (caught || now >= until) {
      dev_->count(caught ? Counter::kLingersCaught : Counter::kLingersMissed);
      linger_.lingered(caught);
      // What the application does next is told from here: the request just caught is not one placed while
      // it was away.
      polled_count_ = dev_->one_sided_requests();
      polled_ns_ = now;
      const uint64_t window = linger_.window_ns();
      linger_window_.store(window, std::memory_order_relaxed);
      lock.unlock();
      // The progress thread left the bell unarmed while polls lingered: it must watch again now.
      if (!window) wake();
      return now;
    }
    if (lock.owns_lock()) lock.unlock();
    // Through uroced, the switch may need this core to bring the WRITE.
    if (poll_yield_ && now - start > runtime::YieldBackoff::kSpinFirstNs)
      runtime::YieldBackoff::this_thread().yield(now);
    else
      __builtin_ia32_pause();
  }
}

uint32_t Engine::pass_locked(uint64_t now_hint) {
  coalescer_.pass(false, 0);
  uint32_t work = mac_->flush();  // frames a pause held that may go now
  work += dev_->progress(now_hint);
  if (hook_) work += hook_->pass();
  return work;
}

uint64_t Engine::next_deadline_locked() const {
  const uint64_t d = std::min(dev_->next_deadline(), mac_->next_deadline());
  return hook_ ? std::min(d, hook_->next_deadline()) : d;
}

uint64_t Engine::progress_locked(uint64_t now_hint) {
  pass_locked(now_hint);
  // The progress thread sleeps until sleeping_until_ (0: it is awake). If this pass left work due earlier
  // (a frame for a one-sided target, a new timer), it must look again now.
  const uint64_t asleep = sleeping_until_.load(std::memory_order_relaxed);
  if (asleep && next_deadline_locked() < asleep) wake();
  return dev_->last_pass_ns();
}

}  // namespace uroce::provider
