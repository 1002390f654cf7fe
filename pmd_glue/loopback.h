// In-process loopback: the port of every uroce device opened in this process attaches to one hub that
// forwards frames by destination MAC, so two contexts in one process talk without DPDK. Frames are copied
// into the receiving port's own buffers: no buffer ever changes owner, and a port can go away while frames
// for it are in flight elsewhere. Any thread may transmit; each port is drained by its own engine.
#pragma once

#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/stack.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "transport/packet_io.h"
#include "transport/wire/headers.h"

namespace uroce::glue {

class LoopbackHub;

class LoopbackPort final : public PacketIo {
 public:
  // `wake` is called (from the transmitting thread) after frames were queued for this port.
  LoopbackPort(LoopbackHub& hub, const wire::MacAddr& mac, std::function<void()> wake, uint32_t frames = 2048,
               uint16_t max_frame = 4224);
  ~LoopbackPort() override;

  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;  // takes all n; undeliverable frames are dropped
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t max_frame() const override { return max_frame_; }

  const wire::MacAddr& mac() const { return mac_; }
  uint64_t dropped() const { return dropped_; }

 private:
  friend class LoopbackHub;
  bool deliver(const PktBuf& src);  // copies src into one of our buffers; false when full

  LoopbackHub& hub_;
  wire::MacAddr mac_;
  std::function<void()> wake_;
  uint16_t max_frame_;
  std::vector<uint8_t> storage_;
  std::vector<PktBuf> bufs_;
  boost::lockfree::stack<PktBuf*> free_;
  boost::lockfree::queue<PktBuf*> rx_;
  uint64_t dropped_ = 0;
};

class LoopbackHub {
 public:
  static LoopbackHub& instance();

  // Forwards a copy of `frame` to the port that owns its destination MAC. False if there is none or it is
  // full.
  bool forward(const PktBuf& frame);

 private:
  friend class LoopbackPort;
  void attach(LoopbackPort* port);
  void detach(LoopbackPort* port);

  std::shared_mutex mu_;  // attach/detach exclusive; forward shared
  std::unordered_map<uint64_t, LoopbackPort*> ports_;
};

}  // namespace uroce::glue
