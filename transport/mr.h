// Protection domains and memory regions: the key table every local and remote access goes through.
// Nothing from the wire touches memory unless rkey, protection domain, bounds and access rights all match.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/verbs_types.h"

namespace uroce {

struct Pd {
  uint32_t handle = 0;
  uint32_t refs = 0;  // MRs, QPs, SRQs, AHs that name it
};

struct Mr {
  Pd* pd = nullptr;
  uint64_t addr = 0;  // the application's virtual address (and the IOVA: no zero-based MRs)
  uint64_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
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
  // Returns 0 and the new MR, or an errno (EINVAL for bad flags, ENOMEM when full).
  int reg(Pd* pd, uint64_t addr, uint64_t length, uint32_t access, Mr** out);
  // Changes translation, PD and/or access of `mr` in place and gives it new keys (ibv_rereg_mr).
  int rereg(Mr* mr, Pd* pd, uint64_t addr, uint64_t length, uint32_t access);
  void dereg(Mr* mr);
  size_t count() const { return live_; }

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
    if (addr < mr->addr || len > mr->length || addr - mr->addr > mr->length - len) return nullptr;
    return mr;
  }

 private:
  struct Slot {
    std::unique_ptr<Mr> mr;
    uint8_t tag = 0;
  };
  uint32_t next_key(uint32_t idx);
  uint32_t slot_of(const Mr* mr) const { return (mr->lkey ^ mask_) >> 8; }
  uint64_t rng_ = 0;  // splitmix64 state; 0: unseeded
  uint32_t mask_ = 0;
  std::vector<Slot> slots_{1};  // slot 0 unused so that no valid key is 0
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

// Validity of an access-flag set for reg_mr: remote write and remote atomic need local write too
// (ibv_reg_mr(3) fails such a request with EINVAL).
bool mr_access_valid(uint32_t access);

// Copies between a message and the SGE list it is scattered over. The SGEs must have been validated.
void sge_gather(const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst, uint32_t len);
// sge_gather, continuing the CRC-32 state `crc` over the bytes as they are copied (one pass); returns it.
uint32_t sge_gather_crc(const Sge* sge, uint32_t num_sge, uint64_t offset, uint8_t* dst, uint32_t len,
                        uint32_t crc);
void sge_scatter(const Sge* sge, uint32_t num_sge, uint64_t offset, const uint8_t* src, uint32_t len);

}  // namespace uroce
