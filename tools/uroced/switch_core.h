// uroced's forwarding core: the switch model of fabric/switch.h (the one the simulator runs in virtual time)
// driven in real time over PacketIo ports, with no DPDK in sight (unit tests give it in-memory ports and
// virtual time; uroced gives it DpdkPorts).
//
// Forwarding: by destination MAC. Static entries (a lease's MAC, installed when its port is added) and
// entries learned from source MACs (aged out after kLearnAgeNs, never overriding a static one). Broadcast
// and multicast destinations are flooded to every other port (copies into buffers of the ingress port).
// Unknown unicast goes to the default port (the uplink) when there is one, else it is dropped and
// counted on the ingress port; so is a frame addressed back to its own port.
//
// Egress: every port has the model's eight-priority queue (fabric/port_queue.h). Random loss drops a frame
// before admission; a lossy frame is tail-dropped beyond the port's buffer_bytes; RED/ECN marks on the
// queue depth, at enqueue by default (ecn_at); the token bucket paces dequeue. A port's PacketIo may
// refuse frames (memif backpressure): up to a burst of them waits, already dequeued, at the head of its
// port (counted in its queue) until the port takes it.
//
// Lossless ports (pause_bytes > 0): every priority of the frames a port sends is lossless. When they hold
// pause_bytes / 2 of the switch's queues the model goes XOFF for that port (XON below pause_bytes / 4); with
// PortConfig::pfc_frames (the default) it sends the port real 802.1Qbb PFC frames, refreshed at half their
// pause time, which a uroce process obeys. A port is not read while its frames hold pause_bytes (counted as
// `pauses`), so nothing is dropped even when a peer ignores PFC. PFC frames a process sends pause that port's
// egress.
//
// Credits (Switch(seed, credit_bytes) with credit_bytes > 0): InfiniBand-style link flow control instead of
// PFC, per VL (= priority). Every port but one marked otherwise (the uplink) is a credit peer. Both ends
// speak fabric.h's CreditFrame with absolute counts, which a uroce process's MAC (fabric/host_mac.h) speaks
// too: the switch counts per VL what it transmitted to the port (FCTBS), what it received from it (ABR, set
// to the process's FCTBS by each update from it) and what of that it still holds; it grants the process
// FCCL = ABR + credit_bytes - held, and its egress to the port sends only within the process's FCCL. It
// sends an update when the port is added, every kCreditHelloNs until the process answers (a memif link that
// is not up yet loses them), after each pass that freed some of the port's blocks, and at least every
// kCreditRefreshNs (a lost update is made good). A process sends without credit until it has the first
// update; anything beyond the grant then is dropped and counted (drop_credit) and RC resends it.
//
// Buffers: a queued frame is owned by the switch and remembers its ingress port (Queued::tag); remove_port()
// frees every frame that came from the port being removed (wherever it is queued) and every frame queued
// to it, so the port's buffers are all home before its PacketIo is destroyed.
//
// Threads: one thread calls everything (uroced's main loop). No allocation per frame except when a new
// MAC is learned or a queue grows to a new high-water mark.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/switch.h"
#include "tools/uroced/egress.h"
#include "transport/packet_io.h"

namespace uroce::uroced {

using Mac = std::array<uint8_t, 6>;

constexpr uint64_t kLearnAgeNs = 300'000'000'000;  // 300 s, the 802.1D default
constexpr uint64_t kCreditRefreshNs = 1'000'000;   // the longest between two credit updates to a port
constexpr uint64_t kCreditHelloNs = 10'000;  // ... until the process has answered (its link may be coming up)

struct PortConfig {
  uint64_t rate_bps = 0;     // 0: unlimited
  uint64_t burst_bytes = 0;  // 0: max(2 max frames, 100 us at the rate)
  uint64_t buffer_bytes = 1 << 20;
  // Lossless ingress (see above): PFC XOFF at half of this many bytes held, reading stops at all of it.
  // 0: lossy, so congestion shows as tail drops at the egress buffer.
  uint64_t pause_bytes = 512 << 10;
  RedParams red;
  fabric::EcnAt ecn_at = fabric::EcnAt::kEnqueue;
  // Send the model's 802.1Qbb PFC frames to the port (a uroce process obeys them: fabric/host_mac.h).
  // Off: ingress backpressure alone keeps the port lossless.
  bool pfc_frames = true;
  double loss = 0;  // probability that a frame offered to this port's egress is dropped (drop_loss)
};

struct PortCounters {
  uint64_t rx_frames = 0, rx_bytes = 0;  // received from the port's process
  uint64_t tx_frames = 0, tx_bytes = 0;  // handed to the port
  uint64_t drop_unknown = 0;             // ingress: unicast to a MAC nobody has
  uint64_t drop_filtered = 0;            // ingress: addressed to the port it came from, or a runt
  uint64_t drop_queue_full = 0;          // egress: buffer_bytes exceeded (tail drop)
  uint64_t drop_loss = 0;                // egress: dropped at random by the loss knob
  uint64_t drop_flood_nobuf = 0;         // ingress: no buffer for a flood copy
  uint64_t flooded = 0;                  // ingress: broadcast/multicast frames
  uint64_t unknown_to_uplink = 0;        // ingress: unicast to an unknown MAC, sent to the default port
  uint64_t ecn_marked = 0;               // egress: ECT frames RED turned CE
  uint64_t ecn_not_ect = 0;              // egress: frames RED selected that were Not-ECT (passed unmarked)
  uint64_t ecn_already_ce = 0;
  uint64_t queue_bytes = 0, queue_frames = 0;    // now
  uint64_t queue_max_bytes = 0;                  // high-water mark
  uint64_t held_bytes = 0;                       // ingress: bytes of this port's frames queued anywhere
  uint64_t pauses = 0;                           // ingress: times reading stopped at pause_bytes
  uint64_t pfc_xoff_sent = 0, pfc_xon_sent = 0;  // PFC frames sent to the port's process
  uint64_t pfc_rx = 0;                           // PFC frames the port's process sent (pausing its egress)
  uint64_t credit_tx = 0, credit_rx = 0;         // credit updates sent to / received from the port's process
  uint64_t credit_stall = 0;                     // egress: dequeue attempts that found no credit
  uint64_t drop_credit = 0;                  // ingress: a frame beyond the credit granted (never, if obeyed)
  uint64_t pfc_storms = 0, pfc_ignored = 0;  // the PFC watchdog: storms found, XOFFs ignored in them
};

class Switch final : private fabric::SwitchDriver {
 public:
  // credit_bytes > 0: credit flow control with this much buffer granted per port and VL (see above); 0: PFC.
  // pfc_watchdog_ns > 0: the model's PFC watchdog (fabric.h): a port's process that keeps a priority paused
  // that long without a break is no longer obeyed while it goes on.
  explicit Switch(uint64_t seed = 1, uint32_t credit_bytes = 0, uint64_t pfc_watchdog_ns = 0);
  ~Switch();
  Switch(const Switch&) = delete;
  Switch& operator=(const Switch&) = delete;

  // Adds a port (not owned; it must outlive its membership). Returns its id (the lowest free slot).
  int add_port(PacketIo* io, std::string name, const PortConfig& cfg, uint64_t now_ns);
  // Frees every frame queued to or received from the port and forgets its MACs. The PacketIo may be
  // destroyed afterwards.
  void remove_port(int id);
  void configure_port(int id, const PortConfig& cfg, uint64_t now_ns);
  // With credit flow control: the port's peer does not speak credits (an uplink), so its frames are lossy
  // and its egress is not credit-limited. Call right after add_port.
  void set_no_credit_peer(int id);
  uint32_t credit_bytes() const { return credit_bytes_; }
  void add_static_mac(const Mac& mac, int id);
  // Unknown unicast goes to this port (the uplink) instead of being dropped; -1: none.
  void set_default_port(int id) { core_.set_default_port(id); }
  // Called with every received frame that is_gsi_frame() (cm_track.h) takes for a datagram to QP1, before
  // it is forwarded; the frame stays the switch's. Unset: no test at all.
  void set_gsi_tap(std::function<void(const uint8_t*, uint16_t)> tap) { gsi_tap_ = std::move(tap); }
  // Sends a frame the daemon made (copied into a buffer of the egress port) to the port its destination
  // MAC is at, else to the default port. False when there is no such port or it has no free buffer.
  bool inject(const uint8_t* frame, uint16_t len);

  // One pass: rx a burst from every port, forward, then transmit what the queues and buckets allow.
  // Returns frames moved (received + transmitted); 0 means idle.
  uint32_t poll(uint64_t now_ns);
  // The earliest time a queued frame that waits for tokens may leave or a PFC refresh is due (UINT64_MAX if
  // none; frames refused by backpressure count as work for the next poll, not as a deadline).
  uint64_t next_ready_ns() const { return next_ready_ns_; }
  bool has_queued() const;

  bool valid(int id) const { return id >= 0 && static_cast<size_t>(id) < ports_.size() && ports_[id].io; }
  const std::string& name(int id) const { return ports_[id].name; }
  const PortCounters& counters(int id) const;
  const PortConfig& config(int id) const { return ports_[id].cfg; }
  size_t port_slots() const { return ports_.size(); }
  size_t learned_macs() const { return core_.mac_entries(); }
  // The switch model itself (its per-port counters, PFC state, buffer accounting).
  const fabric::Switch& model() const { return core_; }

 private:
  struct Port {
    PacketIo* io = nullptr;
    std::string name;
    PortConfig cfg;
    TokenBucket bucket;
    Loss loss;
    mutable PortCounters c;  // the driver's own counts; counters() fills in the model's
    std::unique_ptr<fabric::PortQueue> q;
    // Dequeued (ECN marked) but refused by the PacketIo so far: sent first, still held in the buffer.
    fabric::Queued staged[kBurst];
    uint16_t staged_n = 0;
    bool paused = false;
    // Credit flow control with the port's process, per VL in 64-byte blocks (mod 2^32): transmitted to it,
    // received from it, of those still in the switch; an update to send, and when the last one went.
    bool credits = false;
    uint32_t fctbs[fabric::kPriorities] = {};
    uint32_t abr[fabric::kPriorities] = {};
    uint32_t held[fabric::kPriorities] = {};
    bool credit_due = false;
    bool credit_heard = false;  // an update came from the process (until then ours may have been lost)
    uint64_t credit_sent_ns = 0;
    uint64_t credit_stalls = 0;  // drains that found frames but no credit for them
  };
  struct Wake {
    uint64_t at;
    uint32_t port;
    uint8_t prio;
  };

  // fabric::SwitchDriver.
  fabric::PortQueue& queue(uint32_t port) override { return *ports_[port].q; }
  bool send_control(uint32_t port, const uint8_t* frame, uint16_t len, uint64_t now) override;
  void return_credits(uint32_t port, uint8_t prio, uint32_t blocks, uint64_t now) override;
  void wake(uint64_t at, uint32_t port, uint8_t prio) override { wakes_.push_back({at, port, prio}); }

  void forward(PktBuf* b, int in, uint64_t now_ns);
  void flood(PktBuf* b, int in, const fabric::FrameMeta& m, uint64_t now_ns);
  void enqueue(int out, PktBuf* b, const fabric::FrameMeta& m, uint64_t now_ns, bool flood_copy = false);
  uint32_t drain(int id, uint64_t now_ns);
  void note_token_wait(const Port& p, uint64_t now_ns);
  void free_to_origin(const fabric::Queued& q);
  void run_wakes(uint64_t now_ns);
  void apply_params(int id);
  bool take_credit(Port& p, const PktBuf* b);
  void send_credit(uint32_t id, uint64_t now_ns);

  fabric::Switch core_;
  std::vector<Port> ports_;
  std::vector<Wake> wakes_;
  uint64_t seed_;
  uint32_t credit_bytes_;
  uint64_t next_ready_ns_ = UINT64_MAX;
  uint64_t next_age_ns_ = 0;
  uint64_t last_now_ns_ = 0;
  std::function<void(const uint8_t*, uint16_t)> gsi_tap_;
};

// "key=value ..." for one port's counters and knobs (what `uroced --stats` prints per port).
std::string format_counters(const PortCounters& c, const PortConfig& cfg);

}  // namespace uroce::uroced
