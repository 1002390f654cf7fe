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

int MrTable::take_slot(uint32_t* idx) {
  if (!free_.empty()) {
    *idx = free_.back();
    free_.pop_back();
    return 0;
  }
  if (slots_.size() > params::kMaxMr) return ENOMEM;
  *idx = static_cast<uint32_t>(slots_.size());
  slots_.emplace_back();
  return 0;
}

void MrTable::release_slot(uint32_t idx) {
  slots_[idx].mr.reset();
  slots_[idx].mw.reset();
  free_.push_back(idx);
}

int MrTable::reg(Pd* pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out) {
  if (!pd || !mr_access_valid(access) || length > params::kMaxMrSize || addr + length < addr) return EINVAL;
  uint32_t idx;
  if (int e = take_slot(&idx)) return e;
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
  // Windows bound to the region keep their bounds and rights only as long as the region stays as it was.
  if (mr->mw_binds) return EBUSY;
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

int MrTable::dereg(Mr* mr) {
  if (mr->mw_binds) return EBUSY;  // as Linux rxe: a region with bound windows stays
  --mr->pd->refs;
  release_slot(slot_of(mr));
  --live_;
  return 0;
}

int MrTable::alloc_mw(Pd* pd, MwType type, Mw** out) {
  if (!pd || (type != MwType::k1 && type != MwType::k2)) return EINVAL;
  uint32_t idx;
  if (int e = take_slot(&idx)) return e;
  auto mw = std::make_unique<Mw>();
  mw->pd = pd;
  mw->type = type;
  mw->rkey = next_key(idx);
  ++pd->refs;
  *out = mw.get();
  slots_[idx].mw = std::move(mw);
  ++mws_live_;
  return 0;
}

void MrTable::unbind(Mw* mw) {
  if (!mw->mr) return;
  --mw->mr->mw_binds;
  if (mw->type == MwType::k2) --type2_bound_;
  mw->mr = nullptr;
  mw->qp = nullptr;
  mw->addr = mw->length = 0;
  mw->access = 0;
}

void MrTable::dealloc_mw(Mw* mw) {
  unbind(mw);
  const uint32_t idx = (mw->rkey ^ mask_) >> 8;
  slots_[idx].tag = static_cast<uint8_t>(mw->rkey);  // the next key of this slot differs from the window's
  --mw->pd->refs;
  release_slot(idx);
  --mws_live_;
}

int MrTable::bind_static_check(const MwBind& b, const Pd* qp_pd) const {
  const Mw* mw = mw_slot(b.mw_rkey);
  if (!mw) return EINVAL;
  constexpr uint32_t kMwAccess =
      kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic | kAccessZeroBased;
  if (b.access & ~kMwAccess) return EINVAL;
  if (b.access & kAccessZeroBased) return EINVAL;                 // zero-based windows are not supported
  if (mw->pd != qp_pd) return EINVAL;                             // C10-72: window and QP share the PD
  if (b.length == 0) return mw->type == MwType::k2 ? EINVAL : 0;  // o10-37.2.40: type 2 never unbinds so
  const Mr* mr = lookup(b.mr_lkey);
  if (!mr) return EINVAL;
  if (mr->pd != mw->pd) return EPERM;
  if (!(mr->access & kAccessMwBind)) return EINVAL;  // C10-73
  // C10-74: a window cannot grant remote write or atomic access to a region the owner cannot write locally.
  if ((b.access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(mr->access & kAccessLocalWrite))
    return EINVAL;
  // C10-75: the window lies within the region.
  if (b.addr < mr->addr || b.length > mr->length || b.addr - mr->addr > mr->length - b.length) return EINVAL;
  return 0;
}

bool MrTable::bind(const MwBind& b, const Qp* qp, const Pd* qp_pd) {
  if (bind_static_check(b, qp_pd) != 0) return false;
  Mw* mw = mw_slot(b.mw_rkey);
  if (mw->type == MwType::k2 && mw->mr) return false;  // o10-37.2.30: a type 2 window binds only when free
  unbind(mw);
  const uint32_t idx = (mw->rkey ^ mask_) >> 8;
  mw->rkey = (mw->rkey & ~0xFFu) | (b.new_rkey & 0xFFu);  // the consumer's key byte (ibv_inc_rkey)
  slots_[idx].tag = static_cast<uint8_t>(mw->rkey);
  if (b.length == 0) return true;
  mw->mr = lookup(b.mr_lkey);
  ++mw->mr->mw_binds;
  mw->addr = b.addr;
  mw->length = b.length;
  mw->access = b.access & (kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic);
  if (mw->type == MwType::k2) {
    mw->qp = qp;
    ++type2_bound_;
  }
  return true;
}

bool MrTable::invalidate(uint32_t key, const Pd* pd, const Qp* qp_remote) {
  Mw* mw = mw_slot(key);
  if (!mw || mw->rkey != key || mw->type != MwType::k2 || !mw->mr || mw->pd != pd) return false;
  if (qp_remote && mw->qp != qp_remote) return false;
  unbind(mw);
  return true;
}

void MrTable::qp_gone(const Qp* qp) {
  if (!type2_bound_) return;
  for (Slot& s : slots_)
    if (s.mw && s.mw->type == MwType::k2 && s.mw->qp == qp) unbind(s.mw.get());
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
