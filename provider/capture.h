// `uroce capture`: a copy of every frame a device sends and receives, written as a pcap file.
//
// CaptureTap sits between a Device and its port: a PacketIo that forwards every call. While no capture is
// armed, a burst costs that forwarding call plus one predictable branch. While armed, tx_burst and rx_burst
// copy each frame (up to snaplen bytes) into a CaptureRing, one timestamp per burst; the engine's control
// thread drains the ring into the file with buffered writes (control.h). The datapath never writes a file,
// and a full ring drops frames from the capture (counted), never from the wire.
//
// Frames a device addresses to itself never reach the port (Device hands them over internally), so the tap
// does not see them.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "transport/packet_io.h"

namespace uroce::provider {

// A classic pcap file (format 2.4, nanosecond timestamps, LINKTYPE_ETHERNET), as Wireshark and tshark
// read it. Buffered: write() only copies unless the buffer is full.
class PcapWriter {
 public:
  PcapWriter() = default;
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Creates `path` (a new file, mode 0600: an existing file or a symbolic link there is refused) and writes
  // the file header. Returns "" or an error naming the path.
  std::string open(const std::string& path, uint32_t snaplen);
  // The same on a file the caller opened for writing (`uroce capture` creates it and passes the descriptor);
  // takes ownership of `fd` whatever the outcome. `path` is for messages.
  std::string adopt(int fd, const std::string& path, uint32_t snaplen);
  // One record: `cap_len` bytes of a frame that was `orig_len` long on the wire. False after a write error.
  bool write(uint64_t ts_ns, const uint8_t* data, uint32_t cap_len, uint32_t orig_len);
  // Flushes and closes. Returns "" or the first write error.
  std::string close();
  uint64_t records() const { return records_; }

 private:
  FILE* f_ = nullptr;
  std::unique_ptr<char[]> buf_;
  std::string path_;
  std::string error_;
  uint64_t records_ = 0;
};

// Frames in flight from the datapath to the pcap writer: fixed-size slots, one producer (the thread that
// holds the engine lock) and one consumer (the control thread). Head and tail run free; the producer
// publishes a slot with a release store of head_, the consumer frees it with a release store of tail_.
class CaptureRing {
 public:
  // `slot_bytes` is the most a frame record keeps (the snap length); `limit` frames at most (0: no limit).
  CaptureRing(uint32_t slots, uint32_t slot_bytes, uint64_t limit);

  // Producer. Copies up to n frames into the free slots past the head without publishing them, stamped
  // `ts_ns`; returns how many it copied (fewer when the ring is full or the limit is near).
  uint32_t stage(PktBuf* const* bufs, uint32_t n, uint64_t ts_ns);
  // Publishes the first `n` staged frames out of `seen` frames that really went by (the rest of `seen`,
  // up to the limit, count as dropped).
  void publish(uint32_t n, uint32_t seen);

  // Consumer: calls fn(ts_ns, data, cap_len, orig_len) for every published frame, oldest first, then frees
  // their slots. Returns how many.
  template <typename Fn>
  uint32_t drain(Fn&& fn);

  bool limit_reached() const { return limit_reached_.load(std::memory_order_acquire); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint32_t slot_bytes() const { return slot_bytes_; }

 private:
  struct SlotHeader {
    uint64_t ts_ns;
    uint32_t cap_len;
    uint32_t orig_len;
  };
  uint8_t* slot(uint64_t i) { return mem_.get() + (i & mask_) * stride_; }

  std::unique_ptr<uint8_t[]> mem_;
  uint64_t mask_;
  uint32_t stride_;
  uint32_t slot_bytes_;
  uint64_t remaining_;  // producer only: frames still to capture (UINT64_MAX: no limit)
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> limit_reached_{false};
};

template <typename Fn>
uint32_t CaptureRing::drain(Fn&& fn) {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  const uint64_t head = head_.load(std::memory_order_acquire);
  for (uint64_t i = tail; i != head; ++i) {
    const uint8_t* s = slot(i);
    SlotHeader h;
    __builtin_memcpy(&h, s, sizeof(h));
    fn(h.ts_ns, s + sizeof(h), h.cap_len, h.orig_len);
  }
  tail_.store(head, std::memory_order_release);
  return static_cast<uint32_t>(head - tail);
}

// The PacketIo the Device talks to; forwards to `inner` and copies frames into an attached ring.
class CaptureTap final : public PacketIo {
 public:
  explicit CaptureTap(PacketIo* inner) : inner_(inner) {}

  // Ownership as in transport/packet_io.h: the tap never keeps a buffer.
  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override { return inner_->alloc_burst(bufs, n); }
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override { inner_->free_burst(bufs, n); }
  uint16_t max_frame() const override { return inner_->max_frame(); }

  // Arms (a ring) or disarms (nullptr). The caller holds the lock under which the Device runs, so the
  // datapath sees the change at its next burst and never touches a ring after it was detached.
  void attach_locked(CaptureRing* ring) { ring_ = ring; }

 private:
  PacketIo* inner_;
  CaptureRing* ring_ = nullptr;
};

// Wall-clock nanoseconds (CLOCK_REALTIME, vDSO: no system call), for pcap timestamps.
uint64_t capture_now_ns();

}  // namespace uroce::provider
