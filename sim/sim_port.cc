#include "sim/sim_port.h"

#include <cstdio>
#include <cstdlib>

#include "sim/fabric_queue.h"
#include "sim/sim_network.h"

namespace uroce::sim {

SimPort::SimPort(SimNetwork& net, const PortConfig& cfg, uint32_t id)
    : net_(net), cfg_(cfg), id_(id), pool_(cfg.pool_frames, cfg.max_frame), rx_(cfg.pool_frames) {}

uint16_t SimPort::alloc_burst(PktBuf** bufs, uint16_t n) {
  uint16_t i = 0;
  for (; i < n; ++i) {
    bufs[i] = pool_.alloc();
    if (bufs[i] == nullptr) break;
  }
  return i;
}

uint16_t SimPort::tx_burst(PktBuf** bufs, uint16_t n) {
  net_.process_due();
  const uint64_t now = net_.now_ns();
  uint16_t i = 0;
  for (; i < n; ++i) {
    if (uplink_ == nullptr ||
        (cfg_.tx_ring_frames != 0 && uplink_->queue().frames() >= cfg_.tx_ring_frames)) {
      tx_blocked_ = uplink_ != nullptr;
      counters_.tx_refused += n - i;
      break;
    }
    if (BufferPool::owner(bufs[i]) != &pool_) {
      std::fprintf(stderr, "uroce sim: port %u tx_burst of a buffer from another pool\n", id_);
      std::abort();
    }
    ++counters_.tx_frames;
    counters_.tx_bytes += bufs[i]->len;
    if (wire_tap_) wire_tap_(*bufs[i], now);
    uplink_->send(SimFrame{bufs[i]}, now);  // a tail drop is the link's to count
  }
  return i;
}

uint16_t SimPort::rx_burst(PktBuf** bufs, uint16_t n) {
  net_.process_due();
  uint16_t i = 0;
  for (; i < n && !rx_.empty(); ++i) bufs[i] = rx_.pop();
  return i;
}

void SimPort::free_burst(PktBuf** bufs, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) {
    if (BufferPool::owner(bufs[i]) != &pool_) {
      std::fprintf(stderr, "uroce sim: port %u free_burst of a buffer from another pool\n", id_);
      std::abort();
    }
    BufferPool::release(bufs[i]);
  }
}

void SimPort::receive(const SimFrame& f, uint64_t now) {
  if (wire_tap_) wire_tap_(*f.buf, now);
  fabric::PfcFrame pfc;
  if (fabric::parse_pfc(f.buf->data, f.buf->len, &pfc)) {
    // MAC control frames end in the MAC: the transport never sees them.
    ++counters_.pfc_rx;
    if (auto* q = dynamic_cast<FabricQueue*>(uplink_ ? &uplink_->queue() : nullptr)) q->apply_pfc(pfc, now);
    return;
  }
  if (credit_feeder_ != nullptr) {
    // The NIC's receive buffer drains at once (into the pool or, without a buffer, to a drop).
    const fabric::FrameClass c = fabric::classify(f.buf->data, f.buf->len, 0);
    if (credit_mask_ >> c.prio & 1)
      static_cast<FabricQueue&>(credit_feeder_->queue())
          .return_credits(c.prio, fabric::credit_blocks(f.buf->len), now + credit_feeder_->config().delay_ns);
  }
  if (f.buf->len > pool_.frame_cap()) {
    ++counters_.rx_oversize;
    return;
  }
  PktBuf* b = copy_frame(pool_, f);
  if (b == nullptr) {
    ++counters_.rx_no_buffer;
    return;
  }
  ++counters_.rx_frames;
  counters_.rx_bytes += b->len;
  rx_.push(b);
  if (rx_tap_) rx_tap_(*b, now);
}

bool SimPort::tx_unblocked() const {
  return tx_blocked_ && uplink_ != nullptr &&
         (cfg_.tx_ring_frames == 0 || uplink_->queue().frames() < cfg_.tx_ring_frames);
}

}  // namespace uroce::sim
