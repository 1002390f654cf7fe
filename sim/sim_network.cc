#include "sim/sim_network.h"

#include <algorithm>

namespace uroce::sim {

using fabric::splitmix64;

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
  const auto id = static_cast<uint32_t>(switches_.size());
  // Switch i marks from its own stream, independent of the links' streams (which count up from 1).
  switches_.push_back(std::make_unique<SimSwitch>(cfg, id, splitmix64(seed_ ^ splitmix64(~uint64_t{id}))));
  switches_.back()->events_ = &events_;
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
  if (sw.fabric()) {
    // The host's NIC obeys PFC and link credits too: its uplink is a FabricQueue without an owner.
    const fabric::FabricConfig& fc = sw.config().fabric;
    const bool credit = fc.flow_control == fabric::FlowControl::kCredit;
    Link& uplink = add_link(
        up, sw.ingress(port),
        std::make_unique<FabricQueue>(nullptr, 0, false, credit ? fc.credit_bytes : 0, fc.lossless_mask));
    p.set_uplink(&uplink);
    sw.set_feeder(port, &uplink);
    Link& down_link = add_link(down, p, sw.make_fabric_queue(port));
    sw.set_egress(port, &down_link);
    if (credit) p.set_credit_return(&down_link, fc.lossless_mask);
    hosts_.push_back(HostRec{p.mac(), &sw, port});
    return port;
  }
  p.set_uplink(&add_link(up, sw.ingress(port), nullptr));
  std::unique_ptr<EgressQueue> q = sw.config().egress_queue ? sw.config().egress_queue(down) : nullptr;
  sw.set_egress(port, &add_link(down, p, std::move(q)));
  return port;
}

std::pair<uint32_t, uint32_t> SimNetwork::connect(SimSwitch& a, SimSwitch& b, const LinkConfig& cfg) {
  const uint32_t pa = a.add_port(0), pb = b.add_port(0);
  Link& ab = add_link(cfg, b.ingress(pb), a.make_fabric_queue(pa));
  Link& ba = add_link(cfg, a.ingress(pa), b.make_fabric_queue(pb));
  a.set_egress(pa, &ab);
  b.set_feeder(pb, &ab);
  b.set_egress(pb, &ba);
  a.set_feeder(pa, &ba);
  trunks_.push_back(TrunkRec{&a, pa, &b, pb});
  return {pa, pb};
}

void SimNetwork::compute_routes() {
  const size_t n = switches_.size();
  auto index = [this](const SimSwitch* s) { return s->id(); };
  for (const auto& dst : switches_) {
    // Hop distance of every switch to dst (BFS over trunks).
    std::vector<uint32_t> dist(n, UINT32_MAX);
    std::vector<uint32_t> frontier{dst->id()};
    dist[dst->id()] = 0;
    while (!frontier.empty()) {
      std::vector<uint32_t> next;
      for (uint32_t s : frontier)
        for (const TrunkRec& t : trunks_) {
          const uint32_t ia = index(t.a), ib = index(t.b);
          const uint32_t other = ia == s ? ib : ib == s ? ia : UINT32_MAX;
          if (other == UINT32_MAX || dist[other] != UINT32_MAX) continue;
          dist[other] = dist[s] + 1;
          next.push_back(other);
        }
      frontier.swap(next);
    }
    for (const HostRec& h : hosts_) {
      if (h.sw != dst.get()) continue;
      dst->set_route(h.mac, {h.port});
      for (const auto& s : switches_) {
        const uint32_t i = s->id();
        if (i == dst->id() || dist[i] == UINT32_MAX) continue;
        std::vector<uint32_t> ports;
        for (const TrunkRec& t : trunks_) {
          if (index(t.a) == i && dist[index(t.b)] + 1 == dist[i]) ports.push_back(t.pa);
          if (index(t.b) == i && dist[index(t.a)] + 1 == dist[i]) ports.push_back(t.pb);
        }
        s->set_route(h.mac, std::move(ports));
      }
    }
  }
}

void SimNetwork::add_node(SimNode& node, std::initializer_list<SimPort*> ports) {
  node_index_.emplace(&node, nodes_.size());
  nodes_.push_back(NodeRec{&node, std::vector<SimPort*>(ports), false});
}

void SimNetwork::wake(SimNode& node) {
  auto it = node_index_.find(&node);
  if (it == node_index_.end()) return;
  NodeRec& n = nodes_[it->second];
  n.woken = true;
  n.asked = false;
}

void SimNetwork::process_due() {
  Event ev;
  while (events_.pop_due(clock_.now_ns(), &ev)) ev.target->on_event(ev);
}

bool SimNetwork::ready(NodeRec& n, uint64_t* deadline) {
  if (!cached_deadlines_ || !n.asked) {
    n.deadline = n.node->next_deadline_ns();
    n.asked = true;
  }
  *deadline = n.deadline;
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
    n.asked = false;
  }
  return next_time();
}

uint64_t SimNetwork::next_time() {
  const uint64_t now = clock_.now_ns();
  uint64_t next = events_.next_time();
  uint64_t deadline;
  for (NodeRec& n : nodes_) {
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
