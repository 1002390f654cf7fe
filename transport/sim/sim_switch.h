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
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transport/sim/buffer_pool.h"
#include "transport/sim/counters.h"
#include "transport/sim/egress_queue.h"
#include "transport/sim/link.h"

namespace uroce::sim {

struct SwitchConfig {
  uint32_t buffer_frames = 4096;
  uint16_t max_frame = 4224;
  bool learn = true;
  QueueFactory egress_queue;  // null: FifoQueue with each egress link's queue_limit_bytes
};

class SimSwitch {
 public:
  SimSwitch(const SwitchConfig& cfg, uint32_t id);
  SimSwitch(const SimSwitch&) = delete;
  SimSwitch& operator=(const SimSwitch&) = delete;

  uint32_t id() const { return id_; }
  size_t port_count() const { return egress_.size(); }
  // The link from switch port `port` to the attached device.
  Link& egress(uint32_t port) { return *egress_[port]; }
  const BufferPool& pool() const { return pool_; }
  const SwitchCounters& counters() const { return counters_; }
  const SwitchConfig& config() const { return cfg_; }

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

  SwitchConfig cfg_;
  uint32_t id_;
  BufferPool pool_;
  std::vector<std::unique_ptr<Ingress>> ingress_;  // stable addresses: links point at them
  std::vector<Link*> egress_;                      // owned by SimNetwork
  std::unordered_map<uint64_t, uint32_t> table_;   // MAC -> port; grows only when a new MAC appears
  SwitchCounters counters_;
};

// The 48-bit MAC at p[0..6), p[0] in bits 47..40.
inline uint64_t read_mac(const uint8_t* p) {
  uint64_t m = 0;
  for (int i = 0; i < 6; ++i) m = (m << 8) | p[i];
  return m;
}

inline void write_mac(uint8_t* p, uint64_t mac) {
  for (int i = 5; i >= 0; --i, mac >>= 8) p[i] = static_cast<uint8_t>(mac);
}

}  // namespace uroce::sim
