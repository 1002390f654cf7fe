// Fixed pools of frame buffers. Every buffer the simulator touches comes from one: a SimPort's pool (its
// NIC memory, shared by tx and rx as with a DPDK mempool) or a SimSwitch's (its packet buffer). Storage
// is allocated once at construction; alloc, add_ref and release never allocate.
//
// Ownership is a reference count. alloc() returns a buffer holding one reference, owned by the caller (the
// transport, or a sink copying an arriving frame in). A frame in flight holds one reference per copy:
// duplication and flooding add references instead of copying bytes. release() drops one; the last returns
// the buffer to the pool it came from, whichever component releases it.
//
// Side band: every slot also carries what travels with a frame but is not in its bytes: the INT stack
// switches stamp (PktBuf::telemetry points at it; empty after alloc) and the switch-internal FrameMeta
// (ingress port and priority, for buffer accounting). copy_frame carries the INT stack to the new buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fabric/port_queue.h"
#include "transport/packet_io.h"

namespace uroce::sim {

using fabric::FrameMeta;

class BufferPool {
 public:
  BufferPool(uint32_t frames, uint16_t frame_cap);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer with len 0, cap frame_cap() and one reference; nullptr when the pool is empty.
  PktBuf* alloc();

  static void add_ref(PktBuf* b);
  // Drops one reference; the last returns `b` to its pool. Aborts on a buffer that holds no reference:
  // a double free would hand one buffer to two owners and corrupt a run silently.
  static void release(PktBuf* b);
  static const BufferPool* owner(const PktBuf* b);
  static uint32_t refs(const PktBuf* b);
  static FrameMeta& meta(PktBuf* b) { return slot_of(b)->meta; }

  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t available() const { return static_cast<uint32_t>(free_.size()); }
  uint16_t frame_cap() const { return frame_cap_; }

 private:
  // PktBuf::impl points at the slot; the transport never reads it.
  struct Slot {
    PktBuf buf;
    BufferPool* pool = nullptr;
    uint32_t refs = 0;
    FrameMeta meta;
    cc::IntStack telemetry;  // PktBuf::telemetry points here
  };
  static Slot* slot_of(const PktBuf* b) { return static_cast<Slot*>(b->impl); }

  uint16_t frame_cap_;
  // frames * frame_cap bytes, never resized (PktBuf::data points in). Not zeroed: a large pool's pages are
  // only touched when a buffer is first used (the free list is LIFO, so a lightly used pool stays small).
  std::unique_ptr<uint8_t[]> storage_;
  std::vector<Slot> slots_;  // never resized (PktBuf::impl points in)
  std::vector<Slot*> free_;  // LIFO: the buffer freed last is reused first, as a mempool cache does
};

constexpr uint32_t kNoFlip = UINT32_MAX;

// A frame as links and queues pass it around: one buffer reference plus the damage a link did to this
// copy. The bit flip is applied when the copy lands in the next buffer, so copies sharing one buffer
// (duplicates, flooded frames) are damaged independently.
struct SimFrame {
  PktBuf* buf = nullptr;
  uint32_t flip_bit = kNoFlip;  // bit index within the frame (byte * 8 + bit), or kNoFlip
};

// Copies f (with its bit flip applied) into a fresh buffer from `pool`, which the caller then owns.
// nullptr when the pool is empty or the frame does not fit. Does not touch f's reference.
PktBuf* copy_frame(BufferPool& pool, const SimFrame& f);

}  // namespace uroce::sim
