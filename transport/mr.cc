#include "transport/mr.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "transport/params.h"
#include "transport/wire/icrc.h"

namespace uroce {

bool mr_access_valid(uint32_t access) {
  constexpr uint32_t kKnown = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                              kAccessRemoteAtomic | kAccessMwBind | kAccessZeroBased | kAccessOnDemand;
  if (access & ~kKnown) return false;
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite)) return false;
  return !(access & kAccessZeroBased);  // not supported
}

namespace {

// A region's ranges: [addr, addr + length) and [iova, iova + length) may not wrap, and a region is at most
// kMaxMrSize long, except the implicit ODP region (ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND)),
// which spans the whole address space at I/O virtual address 0.
bool mr_range_valid(uint64_t addr, uint64_t iova, uint64_t length, uint32_t access) {
  if ((access & kAccessOnDemand) && addr == 0 && iova == 0 && length == UINT64_MAX) return true;
  return length <= params::kMaxMrSize && addr + length >= addr && iova + length >= iova;
}

}  // namespace

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

int MrTable::reg(Pd* pd, uint64_t addr, uint64_t iova, uint64_t length, uint32_t access, Mr** out) {
  if (!pd || !mr_access_valid(access) || !mr_range_valid(addr, iova, length, access)) return EINVAL;
  uint32_t idx;
  if (int e = take_slot(&idx)) return e;
  auto mr = std::make_unique<Mr>();
  mr->pd = pd;
  mr->addr = addr;
  mr->iova = iova;
  mr->length = length;
  mr->access = access;
  mr->odp = access & kAccessOnDemand;
  mr->lkey = mr->rkey = next_key(idx);
  ++pd->refs;
  *out = mr.get();
  slots_[idx].mr = std::move(mr);
  ++live_;
  return 0;
}

int MrTable::rereg(Mr* mr, Pd* pd, uint64_t addr, uint64_t iova, uint64_t length, uint32_t access) {
  if (!mr_access_valid(access) || !mr_range_valid(addr, iova, length, access)) return EINVAL;
  // Windows bound to the region keep their bounds and rights only as long as the region stays as it was.
  if (mr->mw_binds) return EBUSY;
  if (pd != mr->pd) {
    --mr->pd->refs;
    ++pd->refs;
    mr->pd = pd;
  }
  mr->addr = addr;
  mr->iova = iova;
  mr->length = length;
  mr->access = access;
  mr->odp = access & kAccessOnDemand;
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
  // C10-75: the window lies within the region (both in the region's I/O virtual addresses).
  if (b.addr < mr->iova || b.length > mr->length || b.addr - mr->iova > mr->length - b.length) return EINVAL;
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

bool MrTable::remote_write(uint32_t key, const Qp* qp, const Pd* pd, uint64_t va, const uint8_t* src,
                           uint32_t len) const {
  const Mr* mr = check_remote(key, qp, pd, va, len, kAccessRemoteWrite);
  if (!mr) return false;
  if (mr->odp)
    return odp_copy(const_cast<uint8_t*>(src), reinterpret_cast<uint64_t>(mr->host(va)), len, true);
  std::memcpy(mr->host(va), src, len);
  return true;
}

bool MrTable::remote_read_source(uint32_t key, const Qp* qp, const Pd* pd, uint64_t va, uint32_t len,
                                 Sge* out) const {
  const Mr* mr = check_remote(key, qp, pd, va, len, kAccessRemoteRead);
  if (!mr) return false;
  const uint64_t host = reinterpret_cast<uint64_t>(mr->host(va));
  if (!mr->odp) {
    *out = Sge{host, len, 0};
    return true;
  }
  if (len > bounce_.size() || !odp_copy(bounce_.data(), host, len, false)) return false;
  *out = Sge{reinterpret_cast<uint64_t>(bounce_.data()), len, 0};
  return true;
}

uint64_t* MrTable::remote_atomic_target(uint32_t key, const Qp* qp, const Pd* pd, uint64_t va) const {
  const Mr* mr = check_remote(key, qp, pd, va, 8, kAccessRemoteAtomic);
  if (!mr) return nullptr;
  auto* target = reinterpret_cast<uint64_t*>(mr->host(va));
  // The atomic itself must be a CPU atomic (local threads may use the word too), so for an ODP region the
  // kernel only proves the word is mapped first: reading it faults the page in or fails for a hole.
  uint64_t probe;
  if (mr->odp && !odp_copy(reinterpret_cast<uint8_t*>(&probe), reinterpret_cast<uint64_t>(target), 8, false))
    return nullptr;
  // A mapped page may still be read-only (an implicit region covers the program's text too): the CPU store
  // would kill the process, so it is refused first.
  if (mr->odp && !odp_writable(reinterpret_cast<uint64_t>(target))) return nullptr;
  return target;
}

bool odp_writable(uint64_t addr) {
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return false;
  char* line = nullptr;
  size_t cap = 0;
  bool writable = false;
  while (getline(&line, &cap, f) > 0) {
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi) {
      writable = perms[1] == 'w';
      break;
    }
  }
  std::free(line);
  std::fclose(f);
  return writable;
}

const Mr* MrTable::check_local(uint32_t key, const Pd* pd, uint64_t addr, uint64_t len, uint32_t need) const {
  const Mr* mr = check(key, pd, addr, len, need);
  if (mr && mr->odp && !odp_probe(reinterpret_cast<uint64_t>(mr->host(addr)), len, need & kAccessLocalWrite))
    return nullptr;
  return mr;
}

bool odp_probe(uint64_t addr, uint64_t len, bool write) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  constexpr int kBatch = 64;  // pages per system call
  const pid_t self = getpid();
  const uint64_t end = addr + len;
  iovec remote[kBatch];
  uint8_t bytes[kBatch];
  for (uint64_t p = addr; p < end;) {
    int n = 0;
    for (; n < kBatch && p < end; ++n) {
      remote[n] = iovec{reinterpret_cast<void*>(p), 1};
      p = (p & ~(page - 1)) + page;  // the next page's first byte
    }
    const iovec local{bytes, static_cast<size_t>(n)};
    if (process_vm_readv(self, &local, 1, remote, n, 0) != n) return false;
    // The bytes go back unchanged: they lie in a buffer the work request is about to overwrite anyway.
    if (write && process_vm_writev(self, &local, 1, remote, n, 0) != n) return false;
  }
  return true;
}

bool odp_copy(uint8_t* local, uint64_t addr, size_t n, bool to_addr) {
  // getpid() on every call, never cached: after fork() the child must copy within itself.
  const pid_t self = getpid();
  while (n) {
    const iovec l{local, n};
    const iovec r{reinterpret_cast<void*>(addr), n};
    const ssize_t k =
        to_addr ? process_vm_writev(self, &l, 1, &r, 1, 0) : process_vm_readv(self, &l, 1, &r, 1, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;  // EFAULT: an unmapped (or, writing, write-protected) page at `addr`
    local += k;
    addr += static_cast<uint64_t>(k);
    n -= static_cast<size_t>(k);
  }
  return true;
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
    copy(sge[i], offset, n);
    offset = 0;
    len -= n;
  }
}

// Where SGE `s` at `offset` is in the process, and whether its region pages on demand; nullptr when its
// region is gone.
uint8_t* sge_host(const MrTable& mrs, const Sge& s, uint64_t offset, bool* odp) {
  *odp = false;
  if (!s.lkey) return reinterpret_cast<uint8_t*>(s.addr + offset);
  const Mr* mr = mrs.resolve(s.lkey);
  if (!mr) return nullptr;
  *odp = mr->odp;
  return mr->host(s.addr + offset);
}

}  // namespace

void sge_gather(const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst, uint32_t len) {
  walk(sge, num_sge, offset, len, [&dst](const Sge& s, uint64_t off, uint32_t n) {
    std::memcpy(dst, reinterpret_cast<const uint8_t*>(s.addr + off), n);
    dst += n;
  });
}

void sge_scatter(const Sge* sge, uint32_t num_sge, uint64_t offset, const uint8_t* src, uint32_t len) {
  walk(sge, num_sge, offset, len, [&src](const Sge& s, uint64_t off, uint32_t n) {
    std::memcpy(reinterpret_cast<uint8_t*>(s.addr + off), src, n);
    src += n;
  });
}

namespace {

// Copies the bytes of validated SGEs in registered memory to dst and, with kCrc, continues `crc` over them in
// the same pass; bytes it cannot fetch go out as zeros.
template <bool kCrc>
uint32_t gather_registered(const MrTable& mrs, const Sge* sge, uint32_t num_sge, uint64_t offset,
                           uint8_t* dst, uint32_t len, uint32_t crc) {
  walk(sge, num_sge, offset, len, [&](const Sge& s, uint64_t off, uint32_t n) {
    bool odp;
    const uint8_t* p = sge_host(mrs, s, off, &odp);
    if (p && !odp) {
      if constexpr (kCrc)
        crc = wire::crc32_copy_update(crc, dst, wire::ConstBytes(p, n));
      else
        std::memcpy(dst, p, n);
    } else {
      if (!p || !odp_copy(dst, reinterpret_cast<uint64_t>(p), n, false)) std::memset(dst, 0, n);
      if constexpr (kCrc) crc = wire::crc32_update(crc, wire::ConstBytes(dst, n));
    }
    dst += n;
  });
  return crc;
}

}  // namespace

uint32_t sge_gather_crc(const MrTable& mrs, const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst,
                        uint32_t len, uint32_t crc) {
  return gather_registered<true>(mrs, sge, num_sge, offset, dst, len, crc);
}

void sge_gather(const MrTable& mrs, const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst,
                uint32_t len) {
  gather_registered<false>(mrs, sge, num_sge, offset, dst, len, 0);
}

bool sge_scatter(const MrTable& mrs, const Sge* sge, uint32_t num_sge, uint64_t offset, const uint8_t* src,
                 uint32_t len) {
  bool ok = true;
  walk(sge, num_sge, offset, len, [&](const Sge& s, uint64_t off, uint32_t n) {
    bool odp;
    uint8_t* p = sge_host(mrs, s, off, &odp);
    if (p && !odp)
      std::memcpy(p, src, n);
    else
      ok &= p && odp_copy(const_cast<uint8_t*>(src), reinterpret_cast<uint64_t>(p), n, true);
    src += n;
  });
  return ok;
}

}  // namespace uroce
