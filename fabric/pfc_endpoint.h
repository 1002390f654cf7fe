// The MAC of a host NIC that obeys 802.1Qbb priority flow control: a PacketIo between the transport and
// its port. Received MAC control frames end here (the transport never sees them): a PFC frame pauses the
// priorities it enables for its quanta at the line rate, an 802.3x PAUSE pauses them all, quanta 0 resumes.
// A frame of a paused priority waits in the NIC, in the same eight-priority queue the switch model uses
// (fabric/port_queue.h, as the simulator's host uplinks do), until its priority resumes or the pause time
// runs out; frames of other priorities keep going. While nothing is paused or held, tx_burst goes straight
// to the port.
//
// Time: the clock given at construction. Nobody is woken when a pause ends: the owner calls flush() on its
// next pass and sleeps no longer than next_deadline(). The queue holds at most `hold_limit` frames; beyond
// that tx_burst refuses, as a full NIC tx ring does, and the transport keeps them.
//
// Ownership as in transport/packet_io.h: held frames belong to this object until they are handed to the
// port; the destructor gives back any still held. One thread at a time (the device's lock).
#pragma once

#include <cstdint>

#include "fabric/port_queue.h"
#include "transport/clock.h"
#include "transport/packet_io.h"

namespace uroce::fabric {

struct PfcEndpointCounters {
  uint64_t pfc_rx = 0;          // PFC frames received (XOFF, refresh and XON)
  uint64_t pause_rx = 0;        // 802.3x PAUSE frames received
  uint64_t mac_control_rx = 0;  // other MAC control frames (dropped)
  uint64_t tx_held = 0;         // frames that had to wait for a paused priority
  uint64_t tx_refused = 0;      // frames tx_burst refused because the hold queue was full
};

class PfcEndpoint final : public PacketIo {
 public:
  PfcEndpoint(PacketIo* inner, const Clock* clock, uint64_t rate_bps, uint32_t hold_limit = 1024);
  ~PfcEndpoint() override;
  PfcEndpoint(const PfcEndpoint&) = delete;
  PfcEndpoint& operator=(const PfcEndpoint&) = delete;

  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override { return inner_->alloc_burst(bufs, n); }
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override { inner_->free_burst(bufs, n); }
  uint16_t max_frame() const override { return inner_->max_frame(); }

  // Hands the port what the pauses allow now. Returns the frames it sent.
  uint32_t flush();
  // When flush() has something to do next: the end of a pause that holds frames, soon when the port
  // refused frames, kNever when nothing is held.
  uint64_t next_deadline() const;

  size_t held_frames() const { return q_.frames() + staged_n_; }
  bool paused(uint8_t prio) const { return q_.paused(prio, clock_->now_ns()); }
  const PfcEndpointCounters& counters() const { return c_; }
  // pause_rx (frames that paused or resumed) and paused_ns (time a priority was paused with frames waiting).
  const QueueStats& queue_stats() const { return q_.stats(); }

 private:
  uint32_t flush(uint64_t now);
  bool take_control(const PktBuf* b, uint64_t now);
  void end_pauses(uint64_t now);

  PacketIo* inner_;
  const Clock* clock_;
  uint32_t hold_limit_;
  PortQueue q_;
  // Taken from the queue but refused by the port: sent first next time.
  PktBuf* staged_[kBurst] = {};
  uint16_t staged_n_ = 0;
  uint8_t paused_mask_ = 0;  // priorities whose pause has not been seen to end
  PfcEndpointCounters c_;
};

}  // namespace uroce::fabric
