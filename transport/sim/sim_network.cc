#include "transport/sim/sim_network.h"

#include <algorithm>

namespace uroce::sim {

const char* run_status_name(RunStatus s) {
  switch (s) {
    case RunStatus::kDone:
      return "done";
    case RunStatus::kTimeLimit:
      return "time_limit";
    case RunStatus::kIdle:
      return "idle";
    case RunStatus::kLivelock:
      return "livelock";
  }
  return "?";
}

// Stream 0 feeds rng(); link i draws from stream i + 1.
SimNetwork::SimNetwork(uint64_t seed) : seed_(seed), rng_(splitmix64(seed)) {}

SimNetwork::~SimNetwork() {
  events_.clear();
  links_.clear();
}

SimPort& SimNetwork::add_port(const PortConfig& cfg) {
  ports_.push_back(std::make_unique<SimPort>(*this, cfg, static_cast<uint32_t>(ports_.size())));
  return *ports_.back();
}

SimSwitch& SimNetwork::add_switch(const SwitchConfig& cfg) {
  switches_.push_back(std::make_unique<SimSwitch>(cfg, static_cast<uint32_t>(switches_.size())));
  return *switches_.back();
}

Link& SimNetwork::add_link(const LinkConfig& cfg, FrameSink& sink, std::unique_ptr<EgressQueue> q) {
  const uint64_t stream = links_.size() + 1;
  links_.push_back(
      std::make_unique<Link>(events_, cfg, sink, splitmix64(seed_ ^ splitmix64(stream)), std::move(q)));
  return *links_.back();
}

Link& SimNetwork::connect(SimPort& a, SimPort& b, const LinkConfig& cfg) {
  Link& ab = add_link(cfg, b, nullptr);
  Link& ba = add_link(cfg, a, nullptr);
  a.set_uplink(&ab);
  b.set_uplink(&ba);
  return ab;
}

uint32_t SimNetwork::attach(SimPort& p, SimSwitch& sw, const LinkConfig& up, const LinkConfig& down) {
  const uint32_t port = sw.add_port(p.mac());
  p.set_uplink(&add_link(up, sw.ingress(port), nullptr));
  std::unique_ptr<EgressQueue> q = sw.config().egress_queue ? sw.config().egress_queue(down) : nullptr;
  sw.set_egress(port, &add_link(down, p, std::move(q)));
  return port;
}

void SimNetwork::add_node(SimNode& node, std::initializer_list<SimPort*> ports) {
  nodes_.push_back(NodeRec{&node, std::vector<SimPort*>(ports), false});
}

void SimNetwork::wake(SimNode& node) {
  for (NodeRec& n : nodes_)
    if (n.node == &node) n.woken = true;
}

void SimNetwork::process_due() {
  Event ev;
  while (events_.pop_due(clock_.now_ns(), &ev)) ev.target->on_event(ev);
}

bool SimNetwork::ready(const NodeRec& n, uint64_t* deadline) const {
  *deadline = n.node->next_deadline_ns();
  if (n.woken || *deadline <= clock_.now_ns()) return true;
  return std::any_of(n.ports.begin(), n.ports.end(),
                     [](const SimPort* p) { return p->rx_pending() > 0 || p->tx_unblocked(); });
}

uint64_t SimNetwork::round() {
  ++rounds_;
  process_due();
  uint64_t deadline;
  for (NodeRec& n : nodes_) {
    if (!ready(n, &deadline)) continue;
    n.woken = false;
    for (SimPort* p : n.ports) p->clear_tx_blocked();  // a refused tx_burst sets it again
    ++polls_;
    n.node->poll();
  }
  return next_time();
}

uint64_t SimNetwork::next_time() const {
  const uint64_t now = clock_.now_ns();
  uint64_t next = events_.next_time();
  uint64_t deadline;
  for (const NodeRec& n : nodes_) {
    if (ready(n, &deadline)) return now;
    next = std::min(next, deadline);
  }
  return std::max(next, now);  // an event left due at now (zero-time link) also means "now"
}

bool SimNetwork::step() {
  const uint64_t next = round();
  if (next == kNever) return false;
  clock_.set(next);
  return true;
}

RunStatus SimNetwork::run_until(const std::function<bool()>& done, uint64_t max_virtual_ns) {
  if (done && done()) return RunStatus::kDone;
  uint32_t spins = 0;
  for (;;) {
    uint64_t next = round();
    if (done) {
      if (done()) return RunStatus::kDone;
      next = next_time();  // done() may have given the nodes work (posted a WR, woken a node)
    }
    if (next == kNever) return RunStatus::kIdle;
    if (next > max_virtual_ns) {
      clock_.set(std::max(clock_.now_ns(), max_virtual_ns));
      return RunStatus::kTimeLimit;
    }
    if (next > clock_.now_ns()) {
      clock_.set(next);
      spins = 0;
    } else if (++spins >= spin_limit_) {
      return RunStatus::kLivelock;
    }
  }
}

}  // namespace uroce::sim
