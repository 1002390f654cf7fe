// The simulated fabric and its driver loop: one virtual clock, one seed, ports, switches, links, nodes.
// Single-threaded and deterministic: the same seed, topology and node behaviour give the same run.
//
// Driving: nodes (endpoints running a transport engine) register as SimNode. Each round delivers every
// event due at the current time, polls each ready node once in registration order, then moves the clock
// to the earliest next event or node deadline. A node is ready when its next_deadline_ns() <= now, one of
// its ports has received frames or has tx ring space again after a refused tx_burst, or wake() was called.
// Cost per round is O(nodes): fine for the hundreds of endpoints of an incast experiment.
//
// Ownership: the network owns ports, switches and links (stable addresses for its lifetime) and the clock;
// nodes are the caller's and must outlive the network's use of them. Teardown drops in-flight frames first.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/event_queue.h"
#include "sim/link.h"
#include "fabric/rng.h"
#include "sim/sim_port.h"
#include "sim/sim_switch.h"
#include "transport/clock.h"

namespace uroce::sim {

class SimNode {
 public:
  virtual ~SimNode() = default;
  // Runs the engine once at the current virtual time: rx_burst, process, tx_burst, timers.
  virtual void poll() = 0;
  // When the node next wants poll() without any frame arriving; kNever for no timer. A node with work it
  // could do now returns a time <= now (but one that stays <= now without progress is a livelock).
  virtual uint64_t next_deadline_ns() const = 0;
};

enum class RunStatus {
  kDone,       // done() returned true
  kTimeLimit,  // the next event lies beyond max_virtual_ns; the clock is left at max_virtual_ns
  kIdle,       // no event, no deadline, no ready node: nothing can ever happen again
  kLivelock,   // spin_limit rounds in a row without the clock moving
};
const char* run_status_name(RunStatus s);

class SimNetwork {
 public:
  static constexpr uint32_t kDefaultSpinLimit = 100'000;

  explicit SimNetwork(uint64_t seed);
  ~SimNetwork();
  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  uint64_t seed() const { return seed_; }
  ManualClock& clock() { return clock_; }
  uint64_t now_ns() const { return clock_.now_ns(); }
  // A stream for nodes and tests, independent of the links' streams.
  fabric::Rng& rng() { return rng_; }
  EventQueue& events() { return events_; }

  SimPort& add_port(const PortConfig& cfg = {});
  SimSwitch& add_switch(const SwitchConfig& cfg = {});
  // A duplex point-to-point wire; each direction is its own Link with `cfg`. Returns the a->b link.
  Link& connect(SimPort& a, SimPort& b, const LinkConfig& cfg);
  // A duplex wire from `p` to a new port of `sw`: `up` is p->switch (the NIC's tx side), `down` is
  // switch->p (the switch's egress queue for p). Returns the switch port number.
  uint32_t attach(SimPort& p, SimSwitch& sw, const LinkConfig& up, const LinkConfig& down);
  uint32_t attach(SimPort& p, SimSwitch& sw, const LinkConfig& cfg) { return attach(p, sw, cfg, cfg); }
  // A duplex wire between two switches (fabric model: both must have it enabled). Returns the port numbers
  // on a and on b.
  std::pair<uint32_t, uint32_t> connect(SimSwitch& a, SimSwitch& b, const LinkConfig& cfg);
  // Fabric model: routes every attached port's MAC on every switch along all shortest paths (ECMP groups).
  // Call once the topology is complete; SimSwitch::set_route can override single entries afterwards.
  void compute_routes();

  // Registers a node that drives `ports` (their arrivals make it ready). Not owned.
  void add_node(SimNode& node, std::initializer_list<SimPort*> ports = {});
  // Makes `node` ready for the next round (e.g. a test posted work to it from outside).
  void wake(SimNode& node);
  void set_spin_limit(uint32_t rounds) { spin_limit_ = rounds; }
  // With cached deadlines a node's next_deadline_ns() is asked once after each poll or wake() and kept,
  // instead of on every round: for drivers that wake() every node they change from outside (a node whose
  // deadline only ever moves later by itself, such as a sampler, needs nothing). Large topologies spend
  // most of their time asking otherwise. Off by default: tests post to devices without waking them.
  void set_cached_deadlines(bool on) { cached_deadlines_ = on; }

  // Delivers every event due at the current time. Burst calls on ports do this themselves.
  void process_due();
  // One round, then advances the clock to the next event or deadline. false: nothing left to happen.
  bool step();
  // Runs rounds until done() (checked before the first and after every round; may be empty), until the
  // next thing to happen lies beyond the absolute virtual time max_virtual_ns, or until nothing is left.
  RunStatus run_until(const std::function<bool()>& done, uint64_t max_virtual_ns = kNever);

  const std::vector<std::unique_ptr<SimPort>>& ports() const { return ports_; }
  const std::vector<std::unique_ptr<SimSwitch>>& switches() const { return switches_; }
  const std::vector<std::unique_ptr<Link>>& links() const { return links_; }
  uint64_t rounds() const { return rounds_; }
  uint64_t polls() const { return polls_; }

 private:
  struct HostRec {
    uint64_t mac;
    SimSwitch* sw;
    uint32_t port;
  };
  struct TrunkRec {
    SimSwitch* a;
    uint32_t pa;
    SimSwitch* b;
    uint32_t pb;
  };
  struct NodeRec {
    SimNode* node;
    std::vector<SimPort*> ports;
    bool woken;
    uint64_t deadline = 0;  // cached deadlines: the node's answer since it was last polled or woken
    bool asked = false;     // deadline holds that answer
  };

  uint64_t round();      // deliver, poll ready nodes; returns the next time something happens (now if ready)
  uint64_t next_time();  // the next time something happens, as things stand
  bool ready(NodeRec& n, uint64_t* deadline);
  Link& add_link(const LinkConfig& cfg, FrameSink& sink, std::unique_ptr<EgressQueue> q);

  uint64_t seed_;
  ManualClock clock_;
  fabric::Rng rng_;
  uint32_t spin_limit_ = kDefaultSpinLimit;
  bool cached_deadlines_ = false;
  uint64_t rounds_ = 0;
  uint64_t polls_ = 0;
  // Destruction runs bottom-up: events, then links (their queues), release references into the pools of
  // switches and ports, which therefore are declared first.
  std::vector<std::unique_ptr<SimPort>> ports_;
  std::vector<std::unique_ptr<SimSwitch>> switches_;
  std::vector<std::unique_ptr<Link>> links_;
  EventQueue events_;
  std::vector<NodeRec> nodes_;
  std::unordered_map<const SimNode*, size_t> node_index_;  // wake() by node
  std::vector<HostRec> hosts_;
  std::vector<TrunkRec> trunks_;
};

}  // namespace uroce::sim
