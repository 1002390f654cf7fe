// A memif client of our own (memif_wire.h has the protocol), without DPDK: frames are built and read where
// they lie in the shared region, so neither direction copies a frame on this side of the link. The server
// on the other end is any memif server; DPDK's PMD in copy mode (uroce's role=server ports) copies each
// frame once on its side, as it would between two DPDK ports.
//
// Memory. The client creates one region (a memfd sealed against shrinking, so that the server's mapping
// cannot fault): the C2S ring, the S2C ring, then `buffers` frame buffers of `buffer_size` bytes. A buffer
// is always in exactly one place: the free list, the caller's hands (from alloc_burst or rx_burst until it
// comes back through tx_burst or free_burst), a C2S slot (sent, until the server's tail passes it) or an S2C
// slot (handed to the server to fill). Which buffer sits in which slot is kept here, privately: the
// offset in a descriptor the server can write is never read back.
//
// Trust. The server can write the shared region at any moment. Lengths it writes are checked against the
// buffer size; a chained frame (this client's buffers hold any frame, so an honest server never chains)
// is dropped and counted; a tail that claims slots it was never given takes the link down. The caller
// must treat a received frame's bytes as the server's to change until it has copied what it parses. When
// the link goes down every ring buffer comes home at once, while a server's datapath thread may still be
// finishing a copy into one; the free list's order (first in first out) puts thousands of frames between
// that and the buffer's next use.
//
// Threads: one. Everything here, service() included, runs on the thread that owns the port.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pmd_glue/memif_bell.h"
#include "pmd_glue/memif_wire.h"
#include "pmd_glue/port.h"

namespace uroce::glue {

struct MemifClientConfig {
  std::string socket;  // the server's socket path
  uint32_t id = 0;     // the server interface's id on that socket
  unsigned log2_ring = 10;
  uint16_t buffer_size = 4224;  // the largest frame (Ethernet header through ICRC)
  // Both rings full and a few bursts in the caller's hands. Not more: every buffer cycles through the caches
  // and TLBs of both cores (first in first out, below), and with twice as many ib_write_bw ran at half
  // the speed.
  uint32_t buffers = 2 * 1024 + 4 * kBurst;
  bool bell = true;  // join the link's bell (memif_bell.h) when the server has one
};

class MemifClient final : public Port {
 public:
  // Creates the region and the rings; connects on the first service(). nullptr with *err set when the
  // configuration is unusable or memory cannot be had.
  static std::unique_ptr<MemifClient> create(const MemifClientConfig& cfg, std::string* err);
  ~MemifClient() override;
  MemifClient(const MemifClient&) = delete;
  MemifClient& operator=(const MemifClient&) = delete;

  // Serves the control channel without blocking: connects while down (again after a link went down, at
  // most every kRetry; to the same socket file as before only after kSameServerRetry), reads what the
  // server sent, answers. Returns link_up().
  bool service();
  // service() until the link is up or `timeout` passed.
  bool wait_link_up(std::chrono::milliseconds timeout);
  bool link_up() const override { return state_ == State::kUp; }
  // The control socket while connected (readable: service() has something to read), else -1.
  int control_fd() const { return sock_; }

  // PacketIo. Down, tx_burst takes nothing (backpressure, as DpdkPort) and rx_burst finds nothing but
  // serves the control channel (also once a millisecond while up: a server's DISCONNECT). Link drain
  // frames (link_drain.h) are answered or taken here, never delivered. A buffer given back that is not
  // this client's, or a frame that does not end inside its buffer, is a caller bug: the process aborts.
  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t max_frame() const override { return cfg_.buffer_size; }

  // Port (port.h): the bell when the server has one; the close's linger asks the server's end with a link
  // drain query, as DpdkPort does.
  int rx_event_fd() const override { return bell_ ? bell_->fd() : -1; }
  bool rx_interrupt_is_hint() const override { return bell_ != nullptr; }
  bool peer_rings() const override { return bell_ && bell_->peer_joined(); }
  bool rx_interrupt_needs_lock() const override { return false; }
  bool enable_rx_interrupt(bool requests_only = false) override;
  void disable_rx_interrupt() override {
    if (bell_) bell_->disarm();
  }
  void set_close_linger_ms(uint32_t ms) override { close_linger_ms_ = ms; }
  void linger() override;
  PortStats stats() const override;

  struct Stats {
    uint64_t rx_frames = 0, tx_frames = 0, rx_bytes = 0, tx_bytes = 0;
    uint64_t tx_ring_full = 0;  // tx_burst calls that found the C2S ring without room for all
    uint64_t rx_bad = 0;        // dropped: a length over the buffer size, zero, or a chain
    uint64_t interrupts = 0;    // eventfd writes to a server that asked for them
    uint64_t connects = 0, disconnects = 0;
    uint64_t drain_answers = 0;  // link drain queries answered
  };
  const Stats& client_stats() const { return stats_; }
  // Why the link last went down ("" if it never did): the server's DISCONNECT reason or ours.
  const std::string& last_disconnect() const { return last_disconnect_; }
  // Buffers on the free list, and in all (a test sees every buffer come home).
  uint32_t free_buffers() const { return free_.size(); }
  uint32_t buffers() const { return cfg_.buffers; }

 private:
  enum class State { kDown, kHello, kHandshake, kConnected, kUp };
  static constexpr auto kRetry = std::chrono::milliseconds(20);
  static constexpr auto kHandshakeTimeout = std::chrono::seconds(2);
  static constexpr auto kSameServerRetry = std::chrono::seconds(1);
  static constexpr unsigned kServiceEvery = 64;
  static constexpr auto kServiceInterval = std::chrono::milliseconds(1);
  static constexpr int kMessagesPerService = 16;

  explicit MemifClient(const MemifClientConfig& cfg) : cfg_(cfg) {}
  bool setup(std::string* err);
  void try_connect();
  bool read_messages();  // false: the link went down
  bool on_message(const memif::Msg& m);
  bool send(const memif::Msg& m, int fd = -1);
  bool send_next_handshake();
  void link_down(const std::string& why, bool tell_server);
  void reclaim_tx();
  void refill_rx();
  uint32_t index_of(const PktBuf* b) const;  // aborts on a buffer that is not this client's
  bool take_link_frame(const PktBuf& b);     // true: a drain frame, handled
  bool send_link_frame(uint16_t subtype, uint32_t token);

  uint8_t* buffer(uint32_t i) const { return base_ + buffers_off_ + size_t{i} * cfg_.buffer_size; }
  memif::Ring* c2s() const { return reinterpret_cast<memif::Ring*>(base_); }
  memif::Ring* s2c() const { return reinterpret_cast<memif::Ring*>(base_ + memif::ring_bytes(log2_)); }

  MemifClientConfig cfg_;
  unsigned log2_ = 10;
  uint16_t mask_ = 0;
  int mem_fd_ = -1, c2s_event_ = -1, s2c_event_ = -1, sock_ = -1;
  uint8_t* base_ = nullptr;
  size_t region_size_ = 0, buffers_off_ = 0;

  State state_ = State::kDown;
  int handshake_step_ = 0;
  std::chrono::steady_clock::time_point next_try_{}, handshake_since_{}, last_down_{}, last_service_{};
  bool linked_ = false;  // the socket file of the server last connected to (try_connect)
  dev_t linked_dev_ = 0;
  ino_t linked_ino_ = 0;

  std::vector<PktBuf> pkt_;  // one per buffer; impl holds nothing, the index is pkt - pkt_.data()
  // Free buffers, first in first out: a buffer the server has just read (still in its core's cache) is
  // written again only after every other free one. Reused at once (last in first out) its lines had to be
  // taken back from the other core on every frame: ib_write_bw ran at ~0.6x (2112 buffers, three runs each
  // way on an AMD EPYC).
  class Fifo {
   public:
    void init(uint32_t capacity) {
      uint32_t c = 1;
      while (c < capacity) c <<= 1;
      v_.assign(c, 0);
      head_ = tail_ = 0;
    }
    void push(uint32_t i) { v_[tail_++ & (v_.size() - 1)] = i; }
    uint32_t pop() { return v_[head_++ & (v_.size() - 1)]; }
    uint32_t size() const { return tail_ - head_; }
    bool empty() const { return head_ == tail_; }

   private:
    std::vector<uint32_t> v_;
    uint32_t head_ = 0, tail_ = 0;
  };
  Fifo free_;                             // buffer indices
  std::vector<uint32_t> c2s_buf_;         // per C2S slot: the buffer in it
  std::vector<uint32_t> s2c_buf_;         // per S2C slot
  uint16_t c2s_head_ = 0, c2s_done_ = 0;  // published head; slots before c2s_done_ are back on the free list
  uint16_t s2c_head_ = 0, s2c_next_ = 0;  // published head; the next slot to read
  bool in_chain_ = false;                 // the previous S2C slot said kDescNext: this one is its rest

  std::unique_ptr<MemifBell> bell_;
  pid_t owner_pid_ = 0;
  unsigned rx_calls_ = 0;
  uint32_t close_linger_ms_ = 0;
  bool sent_since_linger_ = false;
  uint32_t drain_token_ = 0;     // of the drain query this client waits on (0: none)
  uint32_t pending_answer_ = 0;  // a drain query's token, answered at the end of rx_burst
  bool drain_answered_ = false;

  Stats stats_;
  std::string last_disconnect_;
};

}  // namespace uroce::glue
