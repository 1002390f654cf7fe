// A DPDK ethdev (memif, af_packet, tap or an in-process ring pair) behind the transport's PacketIo burst
// interface. One rx queue and one tx queue.
//
// Buffers: every PktBuf lives in the private area of its rte_mbuf (the pool is created with
// priv_size = sizeof(PktBuf)), so handing a frame to the transport or back costs a few stores and no
// allocation. PktBuf::impl is the rte_mbuf*, data = rte_pktmbuf_mtod, cap = room from data to the end of
// the (single-segment) buffer. On tx, data_off/data_len/pkt_len are taken from data and len. A buffer may
// be transmitted on another DpdkPort than the one it came from (an mbuf always returns to its own pool),
// but never on a non-DPDK PacketIo, and never after its port is destroyed.
//
// Threads: rx_burst and tx_burst each belong to one thread at a time (DPDK queues are not thread-safe);
// they may be two different threads. alloc_burst/free_burst are safe from any thread (the pool is a
// lock-free multi-producer/multi-consumer ring). All buffers must be back in the port (freed or
// transmitted) before the port is destroyed.
//
// Link: memif is up only while both ends are connected. While the link is down tx_burst accepts nothing
// (returns 0, the caller keeps the buffers: backpressure, not loss); af_packet and tap accept frames and
// the kernel drops them if the interface is down; a ring port always accepts while the ring has room.
// memif is also backpressure when up: the server transmits into buffers the client hands over when it
// polls rx, so a server's tx_burst returns 0 until the client's first rx_burst and whenever the client's
// ring is full, and for a moment every ~2 ms while the interrupt thread serves memif's control channel
// (intr_gate.h). A frame a PMD refuses for good (longer than max_frame()) is refused on every retry:
// never offer one.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pmd_glue/dpdk_spec.h"
#include "pmd_glue/intr_gate.h"
#include "pmd_glue/memif_bell.h"
#include "pmd_glue/port.h"
#include "transport/packet_io.h"
#include "transport/wire/headers.h"

struct rte_mempool;
struct rte_ring;

namespace uroce::glue {

// The largest frame a uroce port carries: Ethernet through ICRC of a 4096-byte-MTU RoCEv2 packet.
constexpr uint16_t kMaxFrame = 4224;
// Data room of every mbuf (after the 128-byte headroom). Larger than kMaxFrame for af_packet, which wants
// (ring slot size - 32) <= this while a frame starts 66 bytes into its slot: a slot that carries 4224-byte
// frames is at least 4304 bytes. memif's buffers (bsize) are this size too.
constexpr uint16_t kFrameRoom = 4352;
// af_xdp: an mbuf (header, private area, headroom and this) is one UMEM chunk, at most a 4 KiB page. Frames
// up to 3072 bytes: IB MTU 2048 at most on an af_xdp port.
constexpr uint16_t kAfXdpFrameRoom = 3072;

class DpdkPort final : public Port {
 public:
  // Starts EAL if needed, creates the device for `spec` (syntax in dpdk_spec.h), its pool and queues,
  // starts it and waits up to the spec's wait= for the link. A link still down afterwards is not an error
  // (see link_up()). Returns nullptr with *err set on any failure.
  static std::unique_ptr<DpdkPort> open(const std::string& spec, std::string* err);
  ~DpdkPort() override;
  DpdkPort(const DpdkPort&) = delete;
  DpdkPort& operator=(const DpdkPort&) = delete;

  // PacketIo. Ownership as documented in transport/packet_io.h.
  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;  // see "Link" above for what a down link does
  // Frames longer than max_frame() and chained frames that cannot be linearised are dropped and counted.
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t max_frame() const override { return max_frame_; }

  bool link_up() const override;
  bool wait_link_up(std::chrono::milliseconds timeout) const;

  // Rx interrupts and the memif bell: port.h.
  int rx_event_fd() const override { return rx_event_fd_; }
  bool rx_interrupt_is_hint() const override { return bell_ != nullptr; }
  bool peer_rings() const override { return bell_ != nullptr && bell_->peer_joined(); }
  bool rx_interrupt_needs_lock() const override { return bell_ == nullptr; }
  bool enable_rx_interrupt(bool requests_only = false) override;
  void disable_rx_interrupt() override;

  using Stats = PortStats;
  Stats stats() const override;

  PortKind kind() const { return spec_.kind; }
  // memif: on close, a port that has transmitted waits up to `ms` for the peer to have read everything it
  // sent (a disconnect frees the shared region with whatever the peer has not read yet). It asks with a
  // link drain query, which the peer's DpdkPort answers from its rx_burst once it has taken every frame
  // before it (see "Link drain" in dpdk_port.cc); the wait ends with the answer, a link that went down, or
  // the time. 0 (the default): close at once. An endpoint that may exit right after its last frame (the
  // provider) sets it; a switch, whose ports close because the peer is gone, does not.
  void set_close_linger_ms(uint32_t ms) override { close_linger_ms_ = ms; }
  // The close's wait, now: for a process that exits without closing its device (its ports are never
  // destroyed), from an exit handler, by the thread that may burst on the port. Once is enough: a close
  // after it does not wait again unless more frames went out.
  void linger() override;
  // Link drain queries this port answered.
  uint64_t drain_answers_sent() const { return drain_answers_sent_.load(std::memory_order_relaxed); }
  const PortSpec& spec() const { return spec_; }
  uint16_t port_id() const { return port_id_; }
  const std::string& device_name() const { return dev_name_; }
  wire::MacAddr mac() const;

  // Pool occupancy, for leak checks: available() == size() when every buffer is home.
  unsigned pool_size() const;
  unsigned pool_available() const;

 private:
  DpdkPort() = default;
  bool setup(std::string* err);
  bool create_device(std::string* err);
  bool configure_and_start(std::string* err);
  bool start_with_retry(std::string* err);
  void teardown();
  uint16_t deliver_chain(struct rte_mbuf* m, PktBuf** out);
  bool take_link_frame(struct rte_mbuf* m);
  bool send_link_frame(uint16_t subtype, uint32_t token, bool in_burst = false);  // in_burst: from rx_burst
  void drain_peer();
  void open_bell();
  void find_af_packet_socket(const std::vector<int>& fds_before);

  PortSpec spec_;
  std::string dev_name_;  // ethdev name; for vdevs also the rte_vdev name
  uint16_t port_id_ = 0;
  bool have_port_ = false;
  bool started_ = false;
  uint64_t last_tx_cycles_ = 0;  // rte_get_timer_cycles() when tx_burst last handed the PMD a frame
  uint32_t close_linger_ms_ = 0;
  bool is_memif_ = false;
  // memif: tx_burst and a drain answer sent from rx_burst may be on two threads; this orders them.
  std::atomic<bool> tx_busy_{false};
  uint32_t drain_token_ = 0;  // of the drain query this port waits on (0: none)
  bool drain_answered_ = false;
  std::atomic<uint64_t> drain_answers_sent_{0};
  bool server_socket_registered_ = false;  // memif server on a filesystem socket
  rte_mempool* pool_ = nullptr;
  rte_ring* ring_rx_ = nullptr;  // ring kind only; owned by the ring registry
  rte_ring* ring_tx_ = nullptr;
  pid_t owner_pid_ = 0;  // a forked child must not tear down the parent's device
  uint16_t max_frame_ = kMaxFrame;
  int rx_event_fd_ = -1;
  std::unique_ptr<MemifBell> bell_;  // memif, when its files could be opened
  // af_packet: the PMD's own packet socket (found by find_af_packet_socket), read for PACKET_STATISTICS
  // only, and only while the device exists; -1 when not found.
  int afp_socket_ = -1;
  mutable std::atomic<uint64_t> kernel_drops_{0};
  IntrGate::Member gate_;  // memif only (others never join: their bursts pass it untouched)
  std::atomic<uint64_t> rx_oversize_{0}, rx_linearised_{0}, rx_chain_drop_{0};  // rare paths only
};

}  // namespace uroce::glue
