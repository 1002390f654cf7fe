// The MAC of a host NIC: link-level flow control between the transport and its port, a PacketIo on a
// PacketIo. Received MAC control and credit frames end here (the transport never sees them).
//
// PFC: a PFC frame pauses the priorities it enables for its quanta at the line rate, an 802.3x PAUSE pauses
// them all, quanta 0 resumes. A frame of a paused priority waits in the NIC, in the same eight-priority
// queue the switch model uses (fabric/port_queue.h, as the simulator's host uplinks do), until its priority
// resumes or the pause time runs out; frames of other priorities keep going.
//
// Credits (InfiniBand-style, fabric.h's CreditFrame): the MAC counts the blocks it transmits and receives
// per VL from its creation (FCTBS and ABR). Credit flow control begins with the link's first credit update:
// from then on a frame of a VL it names leaves only while the peer's limit covers it (FCCL - FCTBS, less
// what waits already dequeued), and waits in the queue otherwise. Each update sets what the MAC has
// received to the peer's FCTBS. The MAC grants credit too: the host drains its receive buffer at once (as in
// the simulator), so its limit is blocks received plus kHostCreditBytes; it sends an update after every
// receive burst with data on those VLs and in answer to each update, so a lost one is made good.
// While nothing is paused, held or credit-limited, tx_burst goes straight to the port.
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

struct HostMacCounters {
  uint64_t pfc_rx = 0;            // PFC frames received (XOFF, refresh and XON)
  uint64_t pause_rx = 0;          // 802.3x PAUSE frames received
  uint64_t mac_control_rx = 0;    // other MAC control frames (dropped)
  uint64_t credit_rx = 0;         // credit updates received
  uint64_t credit_tx = 0;         // credit updates sent
  uint64_t credit_ignored = 0;    // credit updates on a port that does not take them (dropped)
  uint64_t credit_malformed = 0;  // credit frames too short to hold an update (dropped)
  uint64_t tx_held = 0;           // frames that had to wait for a pause or for credit
  uint64_t tx_refused = 0;        // frames tx_burst refused because the hold queue was full
};

// The receive buffer per VL a host MAC grants its link peer under credit flow control.
constexpr uint32_t kHostCreditBytes = 128 * 1024;

class HostMac final : public PacketIo {
 public:
  // credit_link: the port is a link whose peer may run credit flow control (uroced's memif ports), so the
  // MAC counts what it sends and receives; on any other port it counts nothing, and credit updates are
  // dropped and counted (credit_ignored), so nobody on a segment can stall it.
  HostMac(PacketIo* inner, const Clock* clock, uint64_t rate_bps, uint64_t mac, bool credit_link = true,
          uint32_t hold_limit = 1024);
  ~HostMac() override;
  HostMac(const HostMac&) = delete;
  HostMac& operator=(const HostMac&) = delete;

  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override { return inner_->alloc_burst(bufs, n); }
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override { inner_->free_burst(bufs, n); }
  uint16_t max_frame() const override { return inner_->max_frame(); }

  // Hands the port what pauses and credits allow now, and a credit update the port refused before. Returns
  // the frames it sent.
  uint32_t flush();
  // When flush() has something to do next: the end of a pause that holds frames, soon when the port
  // refused frames or frames wait for credit (credit comes with a received frame), kNever otherwise.
  uint64_t next_deadline() const;

  size_t held_frames() const { return q_.frames() + staged_n_; }
  bool paused(uint8_t prio) const { return q_.paused(prio, clock_->now_ns()); }
  bool credits_on() const { return credit_mask_ != 0; }
  uint32_t credits(uint8_t vl) const { return q_.credits(vl); }
  const HostMacCounters& counters() const { return c_; }
  // pause_rx (frames that paused or resumed), paused_ns (time a priority was paused with frames waiting),
  // credit_stall.
  const QueueStats& queue_stats() const { return q_.stats(); }

 private:
  bool idle() const { return paused_mask_ == 0 && credit_mask_ == 0 && staged_n_ == 0 && q_.frames() == 0; }
  uint32_t flush(uint64_t now);
  // Hands frames to the port, counting what it took in FCTBS; returns how many it took.
  uint16_t transmit(PktBuf** bufs, uint16_t n);
  void update_credits();
  void take_control(const PktBuf* b, uint64_t now);
  void take_credit(const uint8_t* frame, uint16_t len);
  void send_credit();
  void end_pauses(uint64_t now);

  PacketIo* inner_;
  const Clock* clock_;
  uint64_t mac_;
  bool credit_link_;
  uint32_t hold_limit_;
  PortQueue q_;
  // Taken from the queue but refused by the port: sent first next time.
  PktBuf* staged_[kBurst] = {};
  uint16_t staged_n_ = 0;
  uint8_t paused_mask_ = 0;  // priorities whose pause has not been seen to end
  // Credits: blocks sent and received per VL since creation (mod 2^32), the VLs under credit, the peer's
  // last limit per VL, and an update to send (received data, or the port refused one).
  uint32_t fctbs_[kPriorities] = {};
  uint32_t abr_[kPriorities] = {};
  uint8_t credit_mask_ = 0;
  uint32_t peer_fccl_[kPriorities] = {};
  bool credit_due_ = false;
  HostMacCounters c_;
};

}  // namespace uroce::fabric
