// The burst interface through which the transport sends and receives frames. A DPDK port (pmd_glue/), the
// in-process loopback and the virtual-time simulator (sim/) implement it; the transport never
// knows which.
#pragma once

#include <cstdint>

#include "cc/cc.h"

namespace uroce {

// One frame buffer. `data` points at the first byte of the Ethernet header; `cap` bytes are writable there.
// `impl` belongs to the port (an rte_mbuf*, a simulator slot) and is never touched by the transport.
struct PktBuf {
  uint8_t* data = nullptr;
  uint16_t len = 0;
  uint16_t cap = 0;
  void* impl = nullptr;
  // In-band telemetry side band. Ports that model INT (the simulator) point it at per-buffer storage:
  // on rx it holds what the switches stamped; on a buffer from alloc_burst it is empty (hops = 0) and the
  // transport may fill it (an ACK echoing its data packet's stack). Real ports leave it null: no INT.
  cc::IntStack* telemetry = nullptr;
};

constexpr uint16_t kBurst = 32;

class PacketIo {
 public:
  virtual ~PacketIo() = default;

  // Hands the caller up to `n` empty buffers (len 0, cap >= max_frame()). The caller owns them until it
  // passes them to tx_burst or free_burst. Returns how many it got (0 when the pool is empty).
  virtual uint16_t alloc_burst(PktBuf** bufs, uint16_t n) = 0;

  // Queues bufs[0..n) for transmission in order. Ownership of the first k (the return value) passes to the
  // port; bufs[k..n) stay with the caller, who retries or frees them.
  virtual uint16_t tx_burst(PktBuf** bufs, uint16_t n) = 0;

  // Fills bufs with up to `n` received frames, in arrival order. The caller owns them and must give each
  // back through free_burst.
  virtual uint16_t rx_burst(PktBuf** bufs, uint16_t n) = 0;

  // Returns buffers the caller owns to the port.
  virtual void free_burst(PktBuf** bufs, uint16_t n) = 0;

  // The largest frame (Ethernet header through ICRC) a buffer holds.
  virtual uint16_t max_frame() const = 0;
};

}  // namespace uroce
