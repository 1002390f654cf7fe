// What each work-request opcode is, in one table (IBA table 39 and chapter 10.6-10.8): which QP types may
// post it, how it travels, and what its send completion reports. The requester, the send-queue checks and
// complete_send read it instead of keeping their own switch statements.
#pragma once

#include <cstdint>

#include "transport/verbs_types.h"

namespace uroce {

struct WrOpInfo {
  bool rc, uc, ud;  // QP types that may post it
  bool write;       // RDMA WRITE (with or without immediate)
  bool imm;         // carries immediate data
  bool rd_atomic;   // a READ or an atomic: counts against max_rd_atomic, needs local write on its SGEs
  bool atomic;      // CMP_SWP or FETCH_ADD: one 8-byte SGE
  bool local;       // executed by the send queue itself, without a packet (memory-window operations)
  WcOpcode wc;      // the opcode of its send completion
  uint8_t wc_len;   // byte_len of its completion when fixed (atomics: 8); 0 = none or the message length
};

// Indexed by WrOpcode (dense from 0).
inline constexpr WrOpInfo kWrOps[] = {
    /* kRdmaWrite         */ {true, true, false, true, false, false, false, false, WcOpcode::kRdmaWrite, 0},
    /* kRdmaWriteWithImm  */ {true, true, false, true, true, false, false, false, WcOpcode::kRdmaWrite, 0},
    /* kSend              */ {true, true, true, false, false, false, false, false, WcOpcode::kSend, 0},
    /* kSendWithImm       */ {true, true, true, false, true, false, false, false, WcOpcode::kSend, 0},
    /* kRdmaRead          */ {true, false, false, false, false, true, false, false, WcOpcode::kRdmaRead, 0},
    /* kAtomicCmpAndSwp   */ {true, false, false, false, false, true, true, false, WcOpcode::kCompSwap, 8},
    /* kAtomicFetchAndAdd */ {true, false, false, false, false, true, true, false, WcOpcode::kFetchAdd, 8},
    // Windows are for connected QPs (IBA 10.6.7); SEND with Invalidate exists on RC only (table 39).
    /* kLocalInv          */ {true, true, false, false, false, false, false, true, WcOpcode::kLocalInv, 0},
    /* kBindMw            */ {true, true, false, false, false, false, false, true, WcOpcode::kBindMw, 0},
    /* kSendWithInv       */ {true, false, false, false, false, false, false, false, WcOpcode::kSend, 0},
    // Values libibverbs defines that no QP type here may post.
    /* 10 TSO             */ {false, false, false, false, false, false, false, false, WcOpcode::kSend, 0},
    /* 11 DRIVER1         */ {false, false, false, false, false, false, false, false, WcOpcode::kSend, 0},
    /* 12                 */ {false, false, false, false, false, false, false, false, WcOpcode::kSend, 0},
    /* 13                 */ {false, false, false, false, false, false, false, false, WcOpcode::kSend, 0},
    /* 14 FLUSH           */ {false, false, false, false, false, false, false, false, WcOpcode::kSend, 0},
    // ATOMIC WRITE (IBA 1.5, RC only) travels and is acknowledged like a one-packet WRITE: it is neither a
    // READ nor an atomic with a response, so it holds no responder resource and needs no local write.
    /* kAtomicWrite       */
    {true, false, false, false, false, false, false, false, WcOpcode::kAtomicWrite, 8},
};

inline constexpr uint8_t kWrOpCount = sizeof(kWrOps) / sizeof(kWrOps[0]);
static_assert(kWrOpCount == static_cast<uint8_t>(WrOpcode::kAtomicWrite) + 1, "one row per WrOpcode value");

// The row of `op`; nullptr for a value outside the enum (a bad cast from an application's opcode).
inline const WrOpInfo* wr_op(WrOpcode op) {
  const auto i = static_cast<uint8_t>(op);
  return i < kWrOpCount ? &kWrOps[i] : nullptr;
}

inline bool wr_op_allowed(QpType t, WrOpcode op) {
  const WrOpInfo* w = wr_op(op);
  return w && (t == QpType::kRc ? w->rc : t == QpType::kUc ? w->uc : w->ud);
}
inline bool is_write(WrOpcode op) { return kWrOps[static_cast<uint8_t>(op)].write; }
inline bool has_imm(WrOpcode op) { return kWrOps[static_cast<uint8_t>(op)].imm; }
inline bool is_rd_atomic(WrOpcode op) { return kWrOps[static_cast<uint8_t>(op)].rd_atomic; }
inline bool is_atomic(WrOpcode op) { return kWrOps[static_cast<uint8_t>(op)].atomic; }
inline bool is_local_op(WrOpcode op) { return kWrOps[static_cast<uint8_t>(op)].local; }
inline bool is_atomic_write(WrOpcode op) { return op == WrOpcode::kAtomicWrite; }

}  // namespace uroce
