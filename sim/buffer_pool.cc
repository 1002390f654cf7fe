#include "sim/buffer_pool.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace uroce::sim {

BufferPool::BufferPool(uint32_t frames, uint16_t frame_cap)
    : frame_cap_(frame_cap), storage_(new uint8_t[size_t{frames} * frame_cap]), slots_(frames) {
  free_.reserve(frames);
  for (uint32_t i = 0; i < frames; ++i) {
    Slot& s = slots_[i];
    s.buf.data = storage_.get() + size_t{i} * frame_cap;
    s.buf.cap = frame_cap;
    s.buf.impl = &s;
    s.buf.telemetry = &s.telemetry;
    s.pool = this;
  }
  // Reverse order so that a fresh pool hands out slot 0 first.
  for (uint32_t i = frames; i > 0; --i) free_.push_back(&slots_[i - 1]);
}

PktBuf* BufferPool::alloc() {
  if (free_.empty()) return nullptr;
  Slot* s = free_.back();
  free_.pop_back();
  s->refs = 1;
  s->buf.len = 0;
  s->telemetry.hops = 0;
  s->meta = FrameMeta{};
  return &s->buf;
}

void BufferPool::add_ref(PktBuf* b) { ++slot_of(b)->refs; }

void BufferPool::release(PktBuf* b) {
  Slot* s = slot_of(b);
  if (s == nullptr || s->refs == 0) {
    std::fprintf(stderr, "uroce sim: release of a buffer that holds no reference (double free?)\n");
    std::abort();
  }
  if (--s->refs == 0) s->pool->free_.push_back(s);
}

const BufferPool* BufferPool::owner(const PktBuf* b) { return slot_of(b)->pool; }

uint32_t BufferPool::refs(const PktBuf* b) { return slot_of(b)->refs; }

PktBuf* copy_frame(BufferPool& pool, const SimFrame& f) {
  if (f.buf->len > pool.frame_cap()) return nullptr;
  PktBuf* b = pool.alloc();
  if (b == nullptr) return nullptr;
  std::memcpy(b->data, f.buf->data, f.buf->len);
  b->len = f.buf->len;
  const cc::IntStack& in = *f.buf->telemetry;
  b->telemetry->hops = in.hops;
  for (uint8_t i = 0; i < in.hops && i < cc::kMaxIntHops; ++i) b->telemetry->hop[i] = in.hop[i];
  if (f.flip_bit != kNoFlip) b->data[f.flip_bit / 8] ^= static_cast<uint8_t>(1u << (f.flip_bit % 8));
  return b;
}

}  // namespace uroce::sim
