// DpdkPort datapath: PktBuf <-> rte_mbuf in bursts, no allocation beyond the pool, no locks, no syscalls
// of our own (a PMD may make some: af_packet and tap kick the kernel, memif may write an eventfd). memif
// bursts pass the interrupt-thread gate (intr_gate.h): two atomic operations, never a wait.
#include <linux/if_packet.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_random.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "pmd_glue/dpdk_port.h"
#include "pmd_glue/intr_gate.h"
#include "pmd_glue/link_drain.h"
#include "transport/wire/packet.h"

namespace uroce::glue {

namespace {

inline rte_mbuf* mbuf_of(PktBuf* b) { return static_cast<rte_mbuf*>(b->impl); }

// The PktBuf in m's private area, pointed at m's data. Valid until m goes back to a pool or a PMD.
inline PktBuf* attach(rte_mbuf* m, uint16_t len) {
  auto* b = static_cast<PktBuf*>(rte_mbuf_to_priv(m));
  b->data = rte_pktmbuf_mtod(m, uint8_t*);
  b->len = len;
  b->cap = static_cast<uint16_t>(m->buf_len - m->data_off);
  b->impl = m;
  return b;
}

using link_drain::kAnswer;
using link_drain::kQuery;

// Spins on a flag that is only ever held for one rte_eth_tx_burst.
class TxHold {
 public:
  explicit TxHold(std::atomic<bool>* f) : f_(f) {
    while (f_->exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~TxHold() { f_->store(false, std::memory_order_release); }
  TxHold(const TxHold&) = delete;
  TxHold& operator=(const TxHold&) = delete;

 private:
  std::atomic<bool>* f_;
};

}  // namespace

bool DpdkPort::send_link_frame(uint16_t subtype, uint32_t token, bool in_burst) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) return false;
  const wire::MacAddr src = mac();
  link_drain::build(rte_pktmbuf_mtod(m, uint8_t*), src.data(), subtype, token);
  m->data_len = m->pkt_len = link_drain::kFrameLen;
  uint16_t k = 0;
  {
    // From rx_burst the burst's own hold on the gate keeps the interrupt thread out of the PMD. Entering
    // again is not free: while the gate is being opened (it waits for bursts to end) a second try_enter
    // fails, and an answer lost that way left the querier waiting for its whole linger.
    std::optional<IntrGateBurst> gate;
    if (!in_burst) gate.emplace(&gate_);
    const TxHold hold(&tx_busy_);
    if (in_burst || *gate) k = rte_eth_tx_burst(port_id_, 0, &m, 1);
    if (k && bell_) bell_->ring_if_armed();
  }
  if (k == 0) rte_pktmbuf_free(m);  // ring full or link down: the querier asks again
  return k == 1;
}

// A link drain frame (memif only): a query is answered, the answer to our own query noted. True when `m`
// was one (and is freed).
bool DpdkPort::take_link_frame(rte_mbuf* m) {
  uint16_t subtype = 0;
  uint32_t token = 0;
  if (!link_drain::parse(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, &subtype, &token)) return false;
  rte_pktmbuf_free(m);
  if (subtype == kQuery) {
    if (send_link_frame(kAnswer, token, /*in_burst=*/true))
      drain_answers_sent_.fetch_add(1, std::memory_order_relaxed);
  } else if (token == drain_token_ && token != 0) {
    drain_answered_ = true;
  }
  return true;
}

void DpdkPort::drain_peer() {
  drain_token_ = static_cast<uint32_t>(rte_rand()) | 1;
  drain_answered_ = false;
  link_drain::await_answer(*this, close_linger_ms_, drain_answered_,
                           [&] { return send_link_frame(kQuery, drain_token_); });
  drain_token_ = 0;
}

uint16_t DpdkPort::alloc_burst(PktBuf** bufs, uint16_t n) {
  rte_mbuf* ms[kBurst];
  uint16_t got = 0;
  while (got < n) {
    const uint16_t want = std::min<uint16_t>(n - got, kBurst);
    if (unlikely(rte_pktmbuf_alloc_bulk(pool_, ms, want) != 0)) {
      // Bulk allocation is all or nothing; near exhaustion take what is left one by one.
      rte_mbuf* m;
      while (got < n && (m = rte_pktmbuf_alloc(pool_)) != nullptr) bufs[got++] = attach(m, 0);
      break;
    }
    for (uint16_t i = 0; i < want; ++i) bufs[got + i] = attach(ms[i], 0);
    got += want;
  }
  return got;
}

uint16_t DpdkPort::tx_burst(PktBuf** bufs, uint16_t n) {
  const IntrGateBurst gate(&gate_);
  if (unlikely(!gate)) return 0;  // memif's control channel is being served: a busy ring for a moment
  rte_mbuf* ms[kBurst];
  uint16_t sent = 0;
  std::optional<TxHold> hold;
  if (is_memif_) hold.emplace(&tx_busy_);
  while (sent < n) {
    const uint16_t chunk = std::min<uint16_t>(n - sent, kBurst);
    for (uint16_t i = 0; i < chunk; ++i) {
      PktBuf* b = bufs[sent + i];
      rte_mbuf* m = mbuf_of(b);
      // The transport may have moved data within the buffer; the mbuf follows it.
      m->data_off = static_cast<uint16_t>(b->data - static_cast<uint8_t*>(m->buf_addr));
      m->data_len = b->len;
      m->pkt_len = b->len;
      ms[i] = m;
    }
    const uint16_t k = rte_eth_tx_burst(port_id_, 0, ms, chunk);
    if (k) last_tx_cycles_ = rte_get_timer_cycles();
    sent += k;
    if (k < chunk) break;  // ring full or link down: the rest stay with the caller
  }
  if (sent && bell_)  // a peer asleep on its bell wakes for these frames
    bell_->ring_if_armed([&] {
      for (uint16_t i = 0; i < sent; ++i)
        if (wire::frame_is_one_sided_request(bufs[i]->data, bufs[i]->len)) return true;
      return false;
    });
  return sent;
}

// A frame that arrived in several segments (a PMD whose buffers are smaller than ours): copy it into its
// first segment when it fits, else drop it. Returns 1 if *out got the frame.
uint16_t DpdkPort::deliver_chain(rte_mbuf* m, PktBuf** out) {
  if (m->pkt_len > max_frame_ || rte_pktmbuf_linearize(m) != 0) {
    rx_chain_drop_.fetch_add(1, std::memory_order_relaxed);
    rte_pktmbuf_free(m);
    return 0;
  }
  rx_linearised_.fetch_add(1, std::memory_order_relaxed);
  *out = attach(m, m->data_len);
  return 1;
}

uint16_t DpdkPort::rx_burst(PktBuf** bufs, uint16_t n) {
  const IntrGateBurst gate(&gate_);
  if (unlikely(!gate)) return 0;
  rte_mbuf* ms[kBurst];
  uint16_t got = 0;
  while (got < n) {
    const uint16_t chunk = std::min<uint16_t>(n - got, kBurst);
    const uint16_t k = rte_eth_rx_burst(port_id_, 0, ms, chunk);
    for (uint16_t i = 0; i < k; ++i) {
      rte_mbuf* m = ms[i];
      if (unlikely(m->nb_segs != 1)) {
        got += deliver_chain(m, &bufs[got]);
      } else if (is_memif_ && unlikely(take_link_frame(m))) {
        continue;
      } else if (unlikely(m->data_len > max_frame_)) {
        rx_oversize_.fetch_add(1, std::memory_order_relaxed);
        rte_pktmbuf_free(m);
      } else {
        bufs[got++] = attach(m, m->data_len);
      }
    }
    if (k < chunk) break;
  }
  return got;
}

void DpdkPort::free_burst(PktBuf** bufs, uint16_t n) {
  rte_mbuf* ms[kBurst];
  for (uint16_t done = 0; done < n;) {
    const uint16_t chunk = std::min<uint16_t>(n - done, kBurst);
    for (uint16_t i = 0; i < chunk; ++i) ms[i] = mbuf_of(bufs[done + i]);
    rte_pktmbuf_free_bulk(ms, chunk);
    done += chunk;
  }
}

bool DpdkPort::link_up() const {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

bool DpdkPort::wait_link_up(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (link_up()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool DpdkPort::enable_rx_interrupt(bool requests_only) {
  if (bell_) {
    bell_->arm(requests_only ? MemifBell::kArmRequests : MemifBell::kArmAll);
    return true;
  }
  if (rx_event_fd_ < 0) return false;
  const int rc = rte_eth_dev_rx_intr_enable(port_id_, 0);
  return rc == 0 || rc == -ENOTSUP;  // tap: the fd is the queue's own fd, always "armed"
}

void DpdkPort::disable_rx_interrupt() {
  if (bell_)
    bell_->disarm();
  else if (rx_event_fd_ >= 0)
    rte_eth_dev_rx_intr_disable(port_id_, 0);
}

DpdkPort::Stats DpdkPort::stats() const {
  Stats s;
  rte_eth_stats e{};
  if (rte_eth_stats_get(port_id_, &e) == 0) {
    s.rx_frames = e.ipackets;
    s.rx_bytes = e.ibytes;
    s.tx_frames = e.opackets;
    s.tx_bytes = e.obytes;
    s.rx_missed = e.imissed;
    s.rx_errors = e.ierrors;
    s.tx_errors = e.oerrors;
    s.rx_nombuf = e.rx_nombuf;
  }
  if (afp_socket_ >= 0) {
    // The kernel's count of frames that found no free slot in the rx ring. Reading it resets it (the PMD of
    // DPDK 22.11 never reads it): each reading is added to the running total.
    tpacket_stats ks{};
    socklen_t len = sizeof ks;
    if (getsockopt(afp_socket_, SOL_PACKET, PACKET_STATISTICS, &ks, &len) == 0)
      kernel_drops_.fetch_add(ks.tp_drops, std::memory_order_relaxed);
    s.rx_kernel_drops = kernel_drops_.load(std::memory_order_relaxed);
    s.rx_missed += s.rx_kernel_drops;
  }
  s.rx_oversize = rx_oversize_.load(std::memory_order_relaxed);
  s.rx_linearised = rx_linearised_.load(std::memory_order_relaxed);
  s.rx_chain_drop = rx_chain_drop_.load(std::memory_order_relaxed);
  s.bell_rings = bell_ ? bell_->rings() : 0;
  return s;
}

wire::MacAddr DpdkPort::mac() const {
  rte_ether_addr a{};
  rte_eth_macaddr_get(port_id_, &a);
  wire::MacAddr m;
  std::copy(std::begin(a.addr_bytes), std::end(a.addr_bytes), m.begin());
  return m;
}

unsigned DpdkPort::pool_size() const { return pool_ != nullptr ? pool_->size : 0; }
unsigned DpdkPort::pool_available() const { return pool_ != nullptr ? rte_mempool_avail_count(pool_) : 0; }

}  // namespace uroce::glue
