// An ideal output-queued Ethernet switch: no forwarding delay, store-and-forward (a frame is forwarded
// once it has fully arrived), one egress Link per port whose queue is the switch's output queue.
//
// Forwarding: by destination MAC. The table is seeded with each attached port's configured MAC and, with
// `learn`, learns source MACs from ingress frames (a MAC seen on another port moves there). Broadcast and
// multicast (group bit set) flood to every port but the ingress; unknown unicast is dropped and counted
// (no flooding: the transport resolves MACs itself, so an unknown destination is a test bug to surface).
// The switch has no FCS: a frame corrupted upstream is forwarded (possibly misrouted if the flip hit the
// destination MAC) and the end host's ICRC check catches it.
//
// Buffers: arriving frames are copied into the switch's own pool (its packet memory); flooded copies share
// that buffer by reference. An arrival with the pool empty is dropped (no_buffer).
//
// With SwitchConfig::fabric.enabled the switch is the fabric model of docs/fabric.md instead: the switch
// model of fabric/switch.h (the same code uroced runs in real time) driven in virtual time
// (switch_fabric.cc): routes with ECMP groups, a shared buffer with per-queue thresholds, RED ECN marking,
// PFC or credit-based flow control, INT stamping, and per-port counters. Multi-switch fabrics must be
// loop-free for flooded frames (the transport sends none: it resolves MACs itself).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "fabric/fabric.h"
#include "fabric/switch.h"
#include "sim/buffer_pool.h"
#include "sim/counters.h"
#include "sim/egress_queue.h"
#include "sim/event_queue.h"
#include "sim/fabric_queue.h"
#include "sim/link.h"
#include "transport/wire/address.h"

namespace uroce::sim {

struct SwitchConfig {
  uint32_t buffer_frames = 4096;
  uint16_t max_frame = 4224;
  bool learn = true;
  QueueFactory egress_queue;    // null: FifoQueue with each egress link's queue_limit_bytes
  fabric::FabricConfig fabric;  // enabled: the fabric model (egress_queue is then ignored)
};

// Per switch port, fabric model only (fabric/switch.h).
using fabric::SwitchPortCounters;

class SimSwitch final : public QueueOwner, public EventTarget, private fabric::SwitchDriver {
 public:
  SimSwitch(const SwitchConfig& cfg, uint32_t id, uint64_t seed = 0);
  SimSwitch(const SimSwitch&) = delete;
  SimSwitch& operator=(const SimSwitch&) = delete;

  uint32_t id() const { return id_; }
  size_t port_count() const { return egress_.size(); }
  // The link from switch port `port` to the attached device.
  Link& egress(uint32_t port) { return *egress_[port]; }
  const BufferPool& pool() const { return pool_; }
  const SwitchCounters& counters() const { return cfg_.fabric.enabled ? core_.counters() : counters_; }
  const SwitchConfig& config() const { return cfg_; }

  // Fabric model.
  bool fabric() const { return cfg_.fabric.enabled; }
  // The egress queue of `port` (fabric model only).
  FabricQueue& fabric_queue(uint32_t port) { return static_cast<FabricQueue&>(egress_[port]->queue()); }
  const SwitchPortCounters& port_counters(uint32_t port) const { return core_.port_counters(port); }
  // Frames to `mac` leave by one of `ports`, chosen by the flow hash (ECMP); replaces any earlier route.
  void set_route(uint64_t mac, std::vector<uint32_t> ports) { core_.set_route(mac, std::move(ports)); }
  const std::vector<uint32_t>* route(uint64_t mac) const { return core_.route(mac); }
  uint64_t buffer_used() const { return core_.buffer_used(); }
  uint64_t ingress_bytes(uint32_t port, uint8_t prio) const { return core_.ingress_bytes(port, prio); }
  bool xoff(uint32_t port, uint8_t prio) const { return core_.xoff(port, prio); }
  uint64_t port_mac(uint32_t port) const { return core_.port_mac(port); }

  void on_leave(uint32_t port, fabric::Queued* q, uint64_t now) override;
  void on_event(const Event& ev) override;

 private:
  friend class SimNetwork;

  // The sink that the attached device's uplink delivers to.
  struct Ingress final : FrameSink {
    SimSwitch* sw;
    uint32_t port;
    Ingress(SimSwitch* s, uint32_t p) : sw(s), port(p) {}
    void receive(const SimFrame& f, uint64_t now) override { sw->forward(port, f, now); }
  };

  // Adds a port for a device with `mac` (0: none known yet); SimNetwork then wires set_egress().
  uint32_t add_port(uint64_t mac);
  FrameSink& ingress(uint32_t port) { return *ingress_[port]; }
  void set_egress(uint32_t port, Link* l) { egress_[port] = l; }

  void forward(uint32_t in, const SimFrame& f, uint64_t now);
  void forward_fabric(uint32_t in, const SimFrame& f, uint64_t now);  // switch_fabric.cc
  // fabric::SwitchDriver: the model's egress queues, PFC frames, credits and refresh timers in virtual time.
  fabric::PortQueue& queue(uint32_t port) override { return fabric_queue(port).core(); }
  bool send_control(uint32_t port, const uint8_t* frame, uint16_t len, uint64_t now) override;
  void return_credits(uint32_t port, uint8_t prio, uint32_t blocks, uint64_t now) override;
  void wake(uint64_t at, uint32_t port, uint8_t prio) override;
  // The fabric model's queue for a new egress link, and the link that delivers into `port`.
  std::unique_ptr<EgressQueue> make_fabric_queue(uint32_t port);
  void set_feeder(uint32_t port, Link* l) { feeder_[port] = l; }

  SwitchConfig cfg_;
  uint32_t id_;
  BufferPool pool_;
  std::vector<std::unique_ptr<Ingress>> ingress_;  // stable addresses: links point at them
  std::vector<Link*> egress_;                      // owned by SimNetwork
  std::unordered_map<uint64_t, uint32_t> table_;   // MAC -> port; grows only when a new MAC appears
  SwitchCounters counters_;
  // Fabric model.
  EventQueue* events_ = nullptr;
  fabric::Switch core_;
  std::vector<Link*> feeder_;  // per port: the link delivering into it (credit return goes to its queue)
};

}  // namespace uroce::sim
