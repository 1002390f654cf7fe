// Protection domains, memory regions and memory windows: the key table every local and remote access goes
// through. Nothing from the wire touches memory unless rkey, protection domain (or, for a type 2 window, the
// QP it was bound through), bounds, access rights and validity all match.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/verbs_types.h"

namespace uroce {

class Qp;

struct Pd {
  uint32_t handle = 0;
  uint32_t refs = 0;  // MRs, QPs, SRQs, AHs that name it
};

// A memory region covers [iova, iova + length) of the I/O virtual address space that keys, SGEs, RETHs and
// window binds name, mapped onto [addr, addr + length) of the process (ibv_reg_mr_iova2; plain ibv_reg_mr
// has iova == addr). An on-demand-paging region (IBV_ACCESS_ON_DEMAND) may name memory that is not mapped,
// or no longer is: every copy into or out of it goes through the kernel (odp_copy), which faults pages in and
// reports an unmapped page as an error, so a peer naming a hole gets an access error instead of crashing the
// process. An implicit ODP region (address 0, length UINT64_MAX) covers the whole address space.
struct Mr {
  Pd* pd = nullptr;
  uint64_t addr = 0;  // the application's virtual address of the first byte
  uint64_t iova = 0;  // the I/O virtual address of the first byte
  uint64_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint32_t access = 0;
  uint32_t mw_binds = 0;  // windows bound to it: it can be neither deregistered nor re-registered meanwhile
  bool odp = false;       // kAccessOnDemand
  // The process address of I/O virtual address `va` of this region (which must lie in it).
  uint8_t* host(uint64_t va) const { return reinterpret_cast<uint8_t*>(addr + (va - iova)); }
};

// IBV_MW_TYPE_1 / IBV_MW_TYPE_2 (type 2 is the IBA's type 2B: bound to the QP it was bound through).
enum class MwType : uint8_t { k1 = 1, k2 = 2 };

// A memory window: a remote-access view of part of an MR, with its own rkey and access rights (IBA 10.6.7).
// A type 1 window is bound and unbound by the Bind MW verb; a type 2 window by BIND_MW work requests, and
// invalidated by LOCAL_INV or a remote SEND with Invalidate. Unbound (mr == nullptr) it grants nothing.
struct Mw {
  Pd* pd = nullptr;
  MwType type = MwType::k1;
  uint32_t rkey = 0;
  Mr* mr = nullptr;
  const Qp* qp = nullptr;  // type 2, bound: the only QP whose requests may use it
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
};

// One step of the splitmix64 generator: the source of the random identifiers (keys, QPNs) a seeded device
// hands out.
uint64_t splitmix64(uint64_t* state);

// Keys are (slot index << 8 | tag) XOR a per-table mask: a re-registered or reused slot gets a new tag, so a
// stale key misses. Seeded (seed()), the mask and every tag are random, as hardware varies the key byte per
// registration: keys differ from run to run, and one key does not tell the next. Unseeded (simulations, which
// must be reproducible), the mask is 0 and tags count up.
class MrTable {
 public:
  void seed(uint64_t s);
  // Returns 0 and the new MR over [addr, addr + length) of the process at I/O virtual address `iova`, or an
  // errno (EINVAL for bad flags or ranges, ENOMEM when full).
  int reg(Pd* pd, uint64_t addr, uint64_t iova, uint64_t length, uint32_t access, Mr** out);
  int reg(Pd* pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out) {
    return reg(pd, addr, addr, length, access, out);
  }
  // Changes translation, PD and/or access of `mr` in place and gives it new keys (ibv_rereg_mr).
  int rereg(Mr* mr, Pd* pd, uint64_t addr, uint64_t iova, uint64_t length, uint32_t access);
  int rereg(Mr* mr, Pd* pd, uint64_t addr, uint64_t length, uint32_t access) {
    return rereg(mr, pd, addr, addr, length, access);
  }
  // EBUSY while windows are bound to it.
  int dereg(Mr* mr);
  size_t count() const { return live_; }

  // Memory windows. alloc_mw: 0 and the window, or EINVAL/ENOMEM. dealloc_mw unbinds it first.
  int alloc_mw(Pd* pd, MwType type, Mw** out);
  void dealloc_mw(Mw* mw);
  size_t mw_count() const { return mws_live_; }
  // The window `key` names by its slot, whatever its key byte now (nullptr: no window there).
  Mw* mw_slot(uint32_t key) const {
    const uint32_t idx = (key ^ mask_) >> 8;
    return idx < slots_.size() ? slots_[idx].mw.get() : nullptr;
  }
  // The checks a bind request passes whatever state the window is in when it executes (ibv_post_send fails
  // it at once): EINVAL, or EPERM when the MR is of another PD than the window.
  int bind_static_check(const MwBind& b, const Pd* qp_pd) const;
  // Executes a bind through `qp` (of `qp_pd`). Returns false, changing nothing, when the IBA forbids it
  // (the completion is then MW_BIND_ERR).
  bool bind(const MwBind& b, const Qp* qp, const Pd* qp_pd);
  // LOCAL_INV (qp_remote == nullptr) or a SEND with Invalidate arriving at `qp_remote`: only a bound type 2
  // window of `pd` can be invalidated (user MRs and type 1 windows cannot); remotely only through the QP it
  // was bound through. Returns false when `key` names nothing that may be invalidated.
  bool invalidate(uint32_t key, const Pd* pd, const Qp* qp_remote);
  // A QP is destroyed: type 2 windows bound through it are invalidated.
  void qp_gone(const Qp* qp);

  Mr* lookup(uint32_t key) const {
    const uint32_t idx = (key ^ mask_) >> 8;
    if (idx >= slots_.size() || !slots_[idx].mr) return nullptr;
    Mr* mr = slots_[idx].mr.get();
    return mr->lkey == key ? mr : nullptr;
  }

  // The MR that allows `need` access to [addr, addr + len) for `pd`, or nullptr. Local access (need without
  // remote bits) is checked against lkeys; remote access against rkeys (the same value here).
  Mr* check(uint32_t key, const Pd* pd, uint64_t addr, uint64_t len, uint32_t need) const {
    Mr* mr = lookup(key);
    if (!mr || mr->pd != pd || (mr->access & need) != need) return nullptr;
    if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len) return nullptr;
    return mr;
  }

  // check() for the SGE of a work request when it starts: for an ODP region the kernel also proves every
  // page of [addr, addr + len) is there (faulting it in), and writable when `need` has local write, so that
  // a SEND from or a READ into a hole fails its work request with a local protection error up front.
  const Mr* check_local(uint32_t key, const Pd* pd, uint64_t addr, uint64_t len, uint32_t need) const;

  // The MR behind `key`: the MR itself for an MR's key, the MR a window is bound to for a window's current
  // key; nullptr for anything else. Translates checked addresses (a window's addresses are its MR's I/O
  // virtual addresses).
  const Mr* resolve(uint32_t key) const {
    const uint32_t idx = (key ^ mask_) >> 8;
    if (idx >= slots_.size()) return nullptr;
    const Slot& s = slots_[idx];
    if (s.mr) return s.mr->lkey == key ? s.mr.get() : nullptr;
    return s.mw && s.mw->rkey == key ? s.mw->mr : nullptr;
  }

  // A remote access (the R_Key of a WRITE, READ or ATOMIC) arriving at `qp`, of protection domain `pd`: an
  // MR's rkey as check() does, or a bound window's, whose bounds and access rights apply instead of its MR's
  // and which answers only to QPs of its PD (type 1) or to the QP it was bound through (type 2). Called for
  // every packet, so a window invalidated or deallocated mid-message stops the rest of it. Returns the MR the
  // access lands in (a window's MR), or nullptr when it is refused.
  const Mr* check_remote(uint32_t key, const Qp* qp, const Pd* pd, uint64_t addr, uint64_t len,
                         uint32_t need) const {
    const uint32_t idx = (key ^ mask_) >> 8;
    if (idx >= slots_.size()) return nullptr;
    const Slot& s = slots_[idx];
    if (s.mr) return check(key, pd, addr, len, need);
    const Mw* mw = s.mw.get();
    if (!mw || mw->rkey != key || !mw->mr || mw->pd != pd) return nullptr;
    if (mw->type == MwType::k2 && mw->qp != qp) return nullptr;
    if ((mw->access & need) != need) return nullptr;
    if (addr < mw->addr || len > mw->length || addr - mw->addr > mw->length - len) return nullptr;
    return mw->mr;
  }

  // The responder's accesses to remote-accessible memory: check_remote, then the copy. Each returns false,
  // touching nothing (or, when an ODP page vanishes mid-copy, only what was mapped), when the access is
  // refused or the memory is not there: the request is then a remote access error.
  // An RDMA WRITE packet's payload into [va, va + len).
  bool remote_write(uint32_t key, const Qp* qp, const Pd* pd, uint64_t va, const uint8_t* src,
                    uint32_t len) const;
  // A READ response packet's source: `*out` becomes one SGE over process memory (lkey 0) holding the bytes
  // of [va, va + len), len at most one MTU; for an ODP region they are first copied into a bounce buffer
  // (valid until the next call), since a missing page cannot be reported once the packet is being built.
  bool remote_read_source(uint32_t key, const Qp* qp, const Pd* pd, uint64_t va, uint32_t len,
                          Sge* out) const;
  // The 8-byte target of an ATOMIC at `va` (aligned), or nullptr.
  uint64_t* remote_atomic_target(uint32_t key, const Qp* qp, const Pd* pd, uint64_t va) const;

 private:
  struct Slot {
    std::unique_ptr<Mr> mr;
    std::unique_ptr<Mw> mw;
    uint8_t tag = 0;  // the key byte the slot's object has (or had last)
  };
  int take_slot(uint32_t* idx);
  void release_slot(uint32_t idx);
  void unbind(Mw* mw);
  uint32_t next_key(uint32_t idx);
  uint32_t slot_of(const Mr* mr) const { return (mr->lkey ^ mask_) >> 8; }
  uint64_t rng_ = 0;  // splitmix64 state; 0: unseeded
  uint32_t mask_ = 0;
  std::vector<Slot> slots_{1};  // slot 0 unused so that no valid key is 0
  std::vector<uint32_t> free_;
  mutable std::vector<uint8_t> bounce_ = std::vector<uint8_t>(mtu_bytes(Mtu::k4096));  // remote_read_source
  size_t live_ = 0;
  size_t mws_live_ = 0;
  size_t type2_bound_ = 0;  // so that destroying a QP scans only when some window may name it
};

// Validity of an access-flag set for reg_mr: remote write and remote atomic need local write too
// (ibv_reg_mr(3) fails such a request with EINVAL).
bool mr_access_valid(uint32_t access);

// Copies `n` bytes between `local` and process address `addr` through the kernel (process_vm_readv/writev
// on this process): a page not yet touched is faulted in, an unmapped or write-protected one makes it return
// false instead of faulting. Used for ODP regions only; ordinary regions are copied with memcpy.
bool odp_copy(uint8_t* local, uint64_t addr, size_t n, bool to_addr);

// Whether every page of [addr, addr + len) of the process is mapped (readable, and writable if `write`),
// asked of the kernel one byte per page (process_vm_readv, then writing the same bytes back with
// process_vm_writev for `write`): untouched pages are faulted in on the way. For ODP regions only.
bool odp_probe(uint64_t addr, uint64_t len, bool write);
// Whether the page holding `addr` is mapped writable (the process's own memory map): what a CPU atomic
// into an ODP region needs, since the kernel's copies cannot prove it without writing.
bool odp_writable(uint64_t addr);

// Copies between a message and the SGE list it is scattered over, with the SGEs' addresses as process
// addresses (inline data, test buffers).
void sge_gather(const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst, uint32_t len);
void sge_scatter(const Sge* sge, uint32_t num_sge, uint64_t offset, const uint8_t* src, uint32_t len);
// The same over validated SGEs in registered memory: each SGE's address is an I/O virtual address of the
// region its lkey names, translated through `mrs`; an SGE with lkey 0 is process memory (inline data, READ
// response sources). sge_gather_crc continues the CRC-32 state `crc` over the bytes as they are copied (one
// pass) and returns it; bytes it cannot fetch (an ODP page gone, a region deregistered since validation) go
// out as zeros. sge_scatter returns false when some bytes could not be placed.
uint32_t sge_gather_crc(const MrTable& mrs, const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst,
                        uint32_t len, uint32_t crc);
// sge_gather_crc without the CRC.
void sge_gather(const MrTable& mrs, const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst,
                uint32_t len);
bool sge_scatter(const MrTable& mrs, const Sge* sge, uint32_t num_sge, uint64_t offset, const uint8_t* src,
                 uint32_t len);

}  // namespace uroce
