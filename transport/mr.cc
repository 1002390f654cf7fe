#include "transport/mr.h"

#include <cerrno>
#include <cstring>

#include "transport/params.h"
#include "transport/wire/icrc.h"

namespace uroce {

bool mr_access_valid(uint32_t access) {
  constexpr uint32_t kKnown = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                              kAccessRemoteAtomic | kAccessMwBind | kAccessZeroBased;
  if (access & ~kKnown) return false;
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite)) return false;
  return !(access & kAccessZeroBased);  // not supported
}

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void MrTable::seed(uint64_t s) {
  rng_ = s;
  if (!s) return;
  uint32_t m;
  do m = static_cast<uint32_t>(splitmix64(&rng_)) & 0xFFFFFF00u;
  while (m == 0);
  mask_ = m;
}

uint32_t MrTable::next_key(uint32_t idx) {
  uint8_t& tag = slots_[idx].tag;
  if (!rng_) return (idx << 8 | ++tag) ^ mask_;
  // A random tag, never the slot's previous one (a stale key must miss) and never one that makes the key 0.
  for (;;) {
    const uint8_t t = static_cast<uint8_t>(splitmix64(&rng_));
    const uint32_t key = (idx << 8 | t) ^ mask_;
    if (t == tag || key == 0) continue;
    tag = t;
    return key;
  }
}

int MrTable::reg(Pd* pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out) {
  if (!pd || !mr_access_valid(access) || length > params::kMaxMrSize || addr + length < addr) return EINVAL;
  uint32_t idx;
  if (!free_.empty()) {
    idx = free_.back();
    free_.pop_back();
  } else {
    if (slots_.size() > params::kMaxMr) return ENOMEM;
    idx = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  auto mr = std::make_unique<Mr>();
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  mr->access = access;
  mr->lkey = mr->rkey = next_key(idx);
  ++pd->refs;
  *out = mr.get();
  slots_[idx].mr = std::move(mr);
  ++live_;
  return 0;
}

int MrTable::rereg(Mr* mr, Pd* pd, uint64_t addr, uint64_t length, uint32_t access) {
  if (!mr_access_valid(access) || length > params::kMaxMrSize || addr + length < addr) return EINVAL;
  if (pd != mr->pd) {
    --mr->pd->refs;
    ++pd->refs;
    mr->pd = pd;
  }
  mr->addr = addr;
  mr->length = length;
  mr->access = access;
  mr->lkey = mr->rkey = next_key(slot_of(mr));
  return 0;
}

void MrTable::dereg(Mr* mr) {
  const uint32_t idx = slot_of(mr);
  --mr->pd->refs;
  slots_[idx].mr.reset();
  free_.push_back(idx);
  --live_;
}

namespace {

template <typename Copy>
void walk(const Sge* sge, uint32_t num_sge, uint64_t offset, uint32_t len, Copy copy) {
  for (uint32_t i = 0; i < num_sge && len; ++i) {
    if (offset >= sge[i].length) {
      offset -= sge[i].length;
      continue;
    }
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(sge[i].length - offset, len));
    copy(reinterpret_cast<uint8_t*>(sge[i].addr + offset), n);
    offset = 0;
    len -= n;
  }
}

}  // namespace

void sge_gather(const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst, uint32_t len) {
  walk(sge, num_sge, offset, len, [&dst](uint8_t* p, uint32_t n) {
    std::memcpy(dst, p, n);
    dst += n;
  });
}

uint32_t sge_gather_crc(const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst, uint32_t len,
                        uint32_t crc) {
  walk(sge, num_sge, offset, len, [&dst, &crc](uint8_t* p, uint32_t n) {
    crc = wire::crc32_copy_update(crc, dst, wire::ConstBytes(p, n));
    dst += n;
  });
  return crc;
}

void sge_scatter(const Sge* sge, uint32_t num_sge, uint64_t offset, const uint8_t* src, uint32_t len) {
  walk(sge, num_sge, offset, len, [&src](uint8_t* p, uint32_t n) {
    std::memcpy(p, src, n);
    src += n;
  });
}

}  // namespace uroce
