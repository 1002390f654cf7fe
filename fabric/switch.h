// The switch model (docs/fabric.md), one piece of code for the simulator (sim/sim_switch.h, virtual time)
// and for uroced (tools/uroced/switch_core.h, real time between processes). It decides; its driver moves
// bytes and keeps time.
//
// Per frame, in the order a driver calls it:
//   ingress()   counts the arrival; a PFC frame goes back to the driver to pause this port's own egress queue
//               (PortQueue::apply_pfc) and ends there; else the
//               frame is classified (priority, ECN capability, RoCE request, ECMP hash), its source MAC
//               learned (when learning is on) and its destination looked up: a route (ECMP group, chosen
//               by the flow hash), else the MAC table (static entries and learned ones), else the default
//               port; group destinations flood when flooding is on. Unknown or back-to-ingress frames are
//               dropped and counted.
//   admit()     the shared buffer, then for a lossless priority its ingress port's PFC headroom or credits,
//               for a lossy one the egress queue's dynamic threshold and port limit; a refusal is counted at
//               the egress port and gives the frame's credits back.
//   enqueue()   the driver has a buffer for it: shared buffer and ingress accounting, XOFF when the ingress
//               port's bytes of that priority reach pfc_xoff (a real 802.1Qbb frame, refreshed at half its
//               pause time while XOFF holds), ECN marking when the port marks at enqueue, then the port's
//               egress queue (port_queue.h).
//   departed()  the driver popped the frame to transmit: ECN marking on the depth it leaves behind (the
//               default, as shared-buffer switch ASICs and ns-3 HPCC mark), the buffer released, XON below
//               pfc_xon, and with credit flow control the credits returned to whoever feeds that port.
//
// The driver (SwitchDriver) owns the egress queues and the frame buffers, transmits control frames, carries
// credits back and calls on_refresh() when asked to. Threads: one thread calls everything.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fabric/counters.h"
#include "fabric/fabric.h"
#include "fabric/port_queue.h"
#include "fabric/rng.h"

namespace uroce::fabric {

// Per switch port. Drops are counted at the egress port the frame was headed for.
#define UROCE_FABRIC_PORT_COUNTERS(X)                                                  \
  X(rx_frames)      /* arrived on this port (PFC frames included) */                   \
  X(ecn_marked)     /* CE set on a frame queued here */                                \
  X(drop_buffer)    /* shared buffer full */                                           \
  X(drop_threshold) /* lossy queue above its dynamic threshold or port limit */        \
  X(drop_headroom)  /* lossless frame beyond XOFF + headroom of its ingress */         \
  X(drop_credit)    /* arrived without credit: a sender overran (never, if correct) */ \
  X(pfc_xoff_sent)  /* PFC frames pausing the device on this port (refreshes incl.) */ \
  X(pfc_xon_sent)                                                                      \
  X(pfc_rx)      /* PFC frames received on this port */                                \
  X(pfc_storms)  /* the PFC watchdog found a priority paused without a break */        \
  X(pfc_ignored) /* PFC frames the watchdog ignored during a storm */
UROCE_COUNTER_SET(SwitchPortCounters, UROCE_FABRIC_PORT_COUNTERS);

#define UROCE_FABRIC_SWITCH_COUNTERS(X)                                    \
  X(forwarded)   /* unicast frames sent to one egress */                   \
  X(flooded)     /* broadcast/multicast frames sent to every other port */ \
  X(unknown_dst) /* unicast to a MAC not in the table: dropped */          \
  X(filtered)    /* destination is the ingress port: dropped */            \
  X(no_buffer)   /* switch buffer exhausted: dropped */                    \
  X(runt)        /* shorter than an Ethernet header: dropped */
UROCE_COUNTER_SET(SwitchCounters, UROCE_FABRIC_SWITCH_COUNTERS);

// What selecting a frame for ECN did, beyond the marks counted in SwitchPortCounters::ecn_marked: frames
// selected that could not be marked (marking at enqueue selects every frame; at departure only ECT ones).
struct EcnTally {
  uint64_t not_ect = 0;
  uint64_t already_ce = 0;
};

enum class EcnAt : uint8_t {
  kDeparture,  // on the depth the frame leaves behind (the default)
  kEnqueue,    // on the depth the frame finds when it is queued (classic RED)
};

// Knobs a port may set apart from the switch-wide FabricConfig (add_port() copies them from it). The PFC
// thresholds and the lossless priorities are those of frames arriving on the port.
struct PortParams {
  EcnConfig ecn;
  EcnAt ecn_at = EcnAt::kDeparture;
  uint64_t limit_bytes = 0;  // lossy queue limit of this port (0: FabricConfig::port_limit_bytes)
  uint8_t lossless_mask = 0;
  uint32_t pfc_xoff_bytes = 0;
  uint32_t pfc_xon_bytes = 0;
  uint32_t pfc_headroom_bytes = 0;
};

class SwitchDriver {
 public:
  // The egress queue of `port`.
  virtual PortQueue& queue(uint32_t port) = 0;
  // Sends a MAC control frame the switch built out of `port`, ahead of all data: the driver copies it into a
  // buffer of its own and queues it with PortQueue::push_control. false: no buffer (nothing sent; a
  // refresh of XOFF retries).
  virtual bool send_control(uint32_t port, const uint8_t* frame, uint16_t len, uint64_t now) = 0;
  // `blocks` credits of VL `prio` go back to the sender that feeds `port` (they arrive after the link delay).
  virtual void return_credits(uint32_t port, uint8_t prio, uint32_t blocks, uint64_t now) = 0;
  // Asks for on_refresh(port, prio, at) at time `at`.
  virtual void wake(uint64_t at, uint32_t port, uint8_t prio) = 0;

 protected:
  ~SwitchDriver() = default;
};

class Switch {
 public:
  Switch(const FabricConfig& cfg, SwitchDriver& driver, uint64_t seed);
  Switch(const Switch&) = delete;
  Switch& operator=(const Switch&) = delete;

  const FabricConfig& config() const { return cfg_; }
  // Adds a port (its MAC for PFC frames, 0: derived from the switch id) and returns its number.
  uint32_t add_port(uint64_t mac = 0);
  // Forgets a port's MAC table entries and its ingress accounting (its frames must already be gone).
  void reset_port(uint32_t port);
  size_t port_count() const { return ports_.size(); }
  void set_port_params(uint32_t port, const PortParams& p) { ports_[port].params = p; }
  const PortParams& port_params(uint32_t port) const { return ports_[port].params; }
  uint64_t port_mac(uint32_t port) const;

  // Forwarding tables.
  void add_static_mac(uint64_t mac, uint32_t port);
  // Frames to `mac` leave by one of `ports`, chosen by the flow hash (ECMP); replaces any earlier route.
  void set_route(uint64_t mac, std::vector<uint32_t> ports) { routes_[mac] = std::move(ports); }
  const std::vector<uint32_t>* route(uint64_t mac) const;
  // Learn source MACs (entries not refreshed for age_ns are forgotten; 0: never) and flood group frames.
  void set_learning(bool learn, uint64_t age_ns) {
    learn_ = learn;
    age_ns_ = age_ns;
  }
  void set_flooding(bool flood) { flood_ = flood; }
  // Unicast to an unknown MAC goes here (an uplink) instead of being dropped; -1: none.
  void set_default_port(int port) { default_port_ = port; }
  size_t mac_entries() const { return macs_.size(); }
  // Forgets learned entries older than the age (call now and then).
  void age(uint64_t now);

  struct Verdict {
    enum class Kind : uint8_t { kForward, kFlood, kPfc, kDropped };
    Kind kind = Kind::kDropped;
    uint32_t out = 0;
    bool to_default = false;  // kForward to the default port: the destination is unknown here
    bool unknown = false;     // kDropped: unicast to an unknown MAC (else a runt or back to its port)
    FrameMeta meta;
    PfcFrame pfc;  // kPfc: the frame pauses or resumes this port's own egress queue (the driver applies it)
  };
  Verdict ingress(uint32_t in, const uint8_t* frame, uint16_t len, uint64_t now);
  bool admit(uint32_t in, uint32_t out, const FrameMeta& m, uint32_t len, uint64_t now);
  // Admitted but the driver had no buffer for it: counted, credits given back.
  void no_buffer(uint32_t in, uint32_t out, const FrameMeta& m, uint32_t len, uint64_t now);
  // Frames the driver copies for a flood are counted once here.
  void count_flood() { ++counters_.flooded; }
  // Accounts a frame the driver is about to queue at `out` (it then pushes q into that egress queue).
  // `flood_copy`: one of the copies of a flooded frame (counted by count_flood, not as forwarded).
  void enqueue(uint32_t out, Queued* q, uint64_t now, bool flood_copy = false);
  // departing() + left(), for a driver whose frame leaves the buffer as it is dequeued.
  void departed(uint32_t port, Queued* q, uint64_t now);
  // The frame is dequeued for transmission on `port`: ECN marking at departure (it must not be on the wire
  // yet).
  void departing(uint32_t port, Queued* q);
  // The frame has left the switch's buffer at `now` (transmitted): released, XON, credits returned.
  void left(const Queued& q, uint64_t now) { release(q, now, true); }
  // A queued frame the driver discards without sending (its port went away): released like a departure,
  // without marking or credits.
  void discarded(const Queued& q, uint64_t now) { release(q, now, false); }
  // What ingress() would conclude about the frame's class had it arrived on `in`.
  FrameMeta meta_of(uint32_t in, const uint8_t* frame, uint16_t len) const;
  // Where a frame to `mac` would go (routes, the MAC table, the default port); -1: nowhere.
  int lookup(uint64_t mac, uint64_t flow_hash = 0) const;
  void on_refresh(uint32_t port, uint8_t prio, uint64_t now);

  const SwitchCounters& counters() const { return counters_; }
  const SwitchPortCounters& port_counters(uint32_t port) const { return ports_[port].c; }
  const EcnTally& ecn_tally(uint32_t port) const { return ports_[port].tally; }
  uint64_t buffer_used() const { return used_; }
  uint64_t ingress_bytes(uint32_t port, uint8_t prio) const { return ports_[port].bytes[prio]; }
  uint64_t ingress_bytes(uint32_t port) const;
  bool xoff(uint32_t port, uint8_t prio) const { return ports_[port].xoff[prio]; }
  void set_id(uint32_t id) { id_ = id; }

 private:
  static constexpr uint64_t kNeverPaused = UINT64_MAX;
  struct Port {
    Port() { std::fill(std::begin(paused_from), std::end(paused_from), kNeverPaused); }
    uint64_t mac = 0;
    PortParams params;
    uint64_t bytes[kPriorities] = {};  // lossless bytes this port's frames hold, per priority
    bool xoff[kPriorities] = {};
    bool refresh_pending[kPriorities] = {};
    // The PFC watchdog, per priority of this port's egress: since when the device has paused it without a
    // break (kNeverPaused: not paused), until when the last XOFF holds, the last XOFF, and a storm found.
    uint64_t paused_from[kPriorities];
    uint64_t pause_end[kPriorities] = {};
    uint64_t last_xoff[kPriorities] = {};
    bool storm[kPriorities] = {};
    SwitchPortCounters c;
    EcnTally tally;
  };
  struct MacEntry {
    uint32_t port;
    bool is_static;
    uint64_t seen_ns;
  };

  void learn(uint64_t src, uint32_t in, uint64_t now);
  FrameMeta meta_of(uint32_t in, const FrameClass& cls) const;
  int find_port(uint64_t mac, uint64_t flow_hash, bool* by_default) const;
  void give_back_credits(uint32_t in, const FrameMeta& m, uint32_t len, uint64_t now);
  void mark(uint32_t port, Queued* q, uint64_t depth);
  void release(const Queued& q, uint64_t now, bool credits);
  void send_pfc(uint32_t port, uint8_t prio, bool xoff, uint64_t now);
  void watchdog(uint32_t in, PfcFrame* pfc, uint64_t now);

  FabricConfig cfg_;
  SwitchDriver& driver_;
  Rng rng_;
  uint32_t id_ = 0;
  std::vector<Port> ports_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> routes_;
  std::unordered_map<uint64_t, MacEntry> macs_;
  bool learn_ = false;
  bool flood_ = false;
  uint64_t age_ns_ = 0;
  int default_port_ = -1;
  SwitchCounters counters_;
  uint64_t used_ = 0;  // shared buffer bytes held
};

}  // namespace uroce::fabric
