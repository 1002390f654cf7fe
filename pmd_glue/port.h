// What the provider's engine needs of a link port beside the bursts: the link's state, a wake-up for a
// sleeping progress thread, the close's linger and the counters. DpdkPort (any DPDK PMD) and MemifClient
// (uroce's own memif client) implement it; the in-process loopback port has none of it.
#pragma once

#include <cstdint>

#include "transport/packet_io.h"

namespace uroce::glue {

struct PortStats {
  uint64_t rx_frames = 0, rx_bytes = 0, tx_frames = 0, tx_bytes = 0;  // from the PMD
  // rx_missed: the PMD's imissed, plus for af_packet the kernel's ring drops (rx_kernel_drops): DPDK
  // 22.11's af_packet PMD reports no imissed, so the port reads PACKET_STATISTICS from the PMD's socket.
  uint64_t rx_missed = 0, rx_errors = 0, tx_errors = 0, rx_nombuf = 0;  // from the PMD
  uint64_t rx_kernel_drops = 0;  // af_packet: frames the kernel dropped because the rx ring was full
  uint64_t rx_oversize = 0;      // dropped here: longer than max_frame()
  uint64_t rx_linearised = 0;    // chained frames copied into one buffer
  uint64_t rx_chain_drop = 0;    // chained frames that did not fit one buffer
  uint64_t bell_rings = 0;       // memif: times we woke a sleeping peer through its bell
};

class Port : public PacketIo {
 public:
  virtual bool link_up() const = 0;

  // Rx interrupts, for a progress thread that sleeps. rx_event_fd() is -1 when the port has none (in DPDK
  // 22.11 only tap's PMD has one; af_packet and ring have none). A memif port has uroce's own bell instead
  // (memif_bell.h) when its files could be opened: rx_interrupt_is_hint() then says that a peer without a
  // bell sends frames without waking us, so a sleeper should still nap. Protocol: enable_rx_interrupt(),
  // poll once more (a frame may have arrived before arming), sleep until the fd is readable,
  // disable_rx_interrupt(), then poll. Wait for readability only: never read() the fd (for tap it is the
  // queue's data fd).
  virtual int rx_event_fd() const = 0;
  virtual bool rx_interrupt_is_hint() const = 0;
  // A memif port whose peer has joined the bell: it rings when we arm (memif_bell.h).
  virtual bool peer_rings() const = 0;
  // Whether a caller should hold the lock it holds around rx_burst for enable/disable_rx_interrupt: a PMD's
  // interrupt control is not documented as safe beside a burst; the bell's flag and FIFO are the receiving
  // thread's own.
  virtual bool rx_interrupt_needs_lock() const = 0;
  // requests_only: the memif bell rings only for frames with a one-sided request (memif_bell.h); other
  // interrupts fire for every frame whatever it is.
  virtual bool enable_rx_interrupt(bool requests_only = false) = 0;
  virtual void disable_rx_interrupt() = 0;

  // memif: on close, a port that has transmitted waits up to `ms` for the peer to have read everything it
  // sent (a disconnect frees the shared region with whatever the peer has not read yet). 0: close at once.
  virtual void set_close_linger_ms(uint32_t ms) = 0;
  // The close's wait, now (for a process that exits without closing its device), by the thread that may
  // burst on the port. A close after it does not wait again unless more frames went out.
  virtual void linger() = 0;

  virtual PortStats stats() const = 0;
};

}  // namespace uroce::glue
