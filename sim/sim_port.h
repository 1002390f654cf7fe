// A simulated NIC: the PacketIo the transport drives in a simulation.
//
// Buffers: one fixed pool per port, allocated at construction, serves alloc_burst and the rx ring (like
// a DPDK mempool shared by a port's tx and rx queues). tx_burst hands buffers to the uplink Link, which
// holds them until the far end has copied them, so the pool must cover the frames queued and in flight
// (about rate * delay / frame size) plus what the transport holds. A frame arriving while the pool is
// empty is dropped (rx_no_buffer), as a NIC with no free rx descriptor drops it.
//
// Time: every burst call first lets the network deliver the events due at the clock's current time, so
// rx_burst returns exactly the frames whose arrival time is <= now, in arrival order.
#pragma once

#include <cstdint>
#include <functional>

#include "fabric/ring.h"
#include "sim/buffer_pool.h"
#include "sim/counters.h"
#include "sim/link.h"
#include "transport/packet_io.h"

namespace uroce::sim {

class SimNetwork;

struct PortConfig {
  uint64_t mac = 0;  // 48 bits; the first octet on the wire is bits 47..40
  uint32_t pool_frames = 1024;
  uint16_t max_frame = 4224;  // 4096-byte MTU payload plus headers and ICRC, with room to spare
  // tx_burst accepts frames only while fewer than this many wait in the uplink queue (a NIC tx ring);
  // 0: no limit (the pool and the link's queue_limit_bytes still bound it).
  uint32_t tx_ring_frames = 0;
};

class SimPort final : public PacketIo, public FrameSink {
 public:
  SimPort(SimNetwork& net, const PortConfig& cfg, uint32_t id);

  // PacketIo; ownership exactly as documented in packet_io.h.
  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t max_frame() const override { return pool_.frame_cap(); }

  // FrameSink: the link from the switch or peer delivers here.
  void receive(const SimFrame& f, uint64_t now) override;

  uint32_t id() const { return id_; }
  uint64_t mac() const { return cfg_.mac; }
  const BufferPool& pool() const { return pool_; }
  const PortCounters& counters() const { return counters_; }
  size_t rx_pending() const { return rx_.size(); }
  // The link this port transmits on; nullptr until connected.
  Link* uplink() const { return uplink_; }
  // A tx_burst was refused for lack of ring space and there is space now: the owner node is due a poll.
  bool tx_unblocked() const;
  // Called for every frame that lands in the rx ring (experiments count per-flow bytes with it).
  void set_rx_tap(std::function<void(const PktBuf&, uint64_t now)> tap) { rx_tap_ = std::move(tap); }
  // Called for every frame on this port's wire: each one it transmits and each one that reaches it, MAC
  // control frames and frames it then drops included (a capture point).
  void set_wire_tap(std::function<void(const PktBuf&, uint64_t now)> tap) { wire_tap_ = std::move(tap); }

 private:
  friend class SimNetwork;
  void set_uplink(Link* l) { uplink_ = l; }
  void clear_tx_blocked() { tx_blocked_ = false; }
  // Fabric model with credit flow control: frames of the lossless VLs give their credits back to the
  // queue of `feeder` (the switch's egress toward this port) as they land.
  void set_credit_return(Link* feeder, uint8_t mask) {
    credit_feeder_ = feeder;
    credit_mask_ = mask;
  }

  SimNetwork& net_;
  PortConfig cfg_;
  uint32_t id_;
  BufferPool pool_;
  fabric::Ring<PktBuf*> rx_;  // arrived frames not yet taken by rx_burst; each holds one reference
  Link* uplink_ = nullptr;
  bool tx_blocked_ = false;
  PortCounters counters_;
  std::function<void(const PktBuf&, uint64_t)> rx_tap_;
  std::function<void(const PktBuf&, uint64_t)> wire_tap_;
  Link* credit_feeder_ = nullptr;
  uint8_t credit_mask_ = 0;
};

}  // namespace uroce::sim
