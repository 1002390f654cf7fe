// Device and QP counters: one enum, one name table (rxe_hw_counters style). Single writer: the engine.
#pragma once

#include <array>
#include <cstdint>

namespace uroce {

#define UROCE_COUNTERS(X)                       \
  X(kTxPackets, "tx_packets")                   \
  X(kTxBytes, "tx_bytes")                       \
  X(kRxPackets, "rx_packets")                   \
  X(kRxBytes, "rx_bytes")                       \
  X(kTxNoBuffer, "tx_no_buffer")                \
  X(kRetransmits, "retransmitted_packets")      \
  X(kTimeouts, "local_ack_timeouts")            \
  X(kRnrNakSent, "rnr_nak_sent")                \
  X(kRnrNakRcvd, "rnr_nak_received")            \
  X(kSeqNakSent, "seq_err_nak_sent")            \
  X(kSeqNakRcvd, "seq_err_nak_received")        \
  X(kInvReqNakSent, "inv_req_nak_sent")         \
  X(kRemAccessNakSent, "rem_access_nak_sent")   \
  X(kRemOpNakSent, "rem_op_nak_sent")           \
  X(kNakRcvd, "fatal_nak_received")             \
  X(kImplicitNak, "implicit_nak")               \
  X(kDuplicateRequest, "duplicate_request")     \
  X(kOutOfSequence, "out_of_sequence")          \
  X(kDuplicateResponse, "duplicate_response")   \
  X(kGhostResponse, "ghost_response")           \
  X(kAcksSent, "acks_sent")                     \
  X(kCreditStall, "credit_stalls")              \
  X(kCnpSent, "cnp_sent")                       \
  X(kCnpRcvd, "cnp_handled")                    \
  X(kEcnMarked, "ecn_marked_packets")           \
  X(kCcRateChanges, "cc_rate_changes")          \
  X(kDropUnknownQp, "drop_unknown_qp")          \
  X(kDropQpState, "drop_qp_state")              \
  X(kDropWrongQpType, "drop_wrong_qp_type")     \
  X(kDropXrcSrq, "drop_xrc_srq")                \
  X(kDropPkey, "drop_bad_pkey")                 \
  X(kDropQkey, "drop_bad_qkey")                 \
  X(kDropUdNoWqe, "drop_ud_no_recv_wqe")        \
  X(kDropUcMessage, "drop_uc_message")          \
  X(kDropDstGid, "drop_not_my_gid")             \
  X(kDropMalformed, "drop_malformed")           \
  X(kDropSrcAddr, "drop_src_addr")              \
  X(kDropSrcMac, "drop_src_mac")                \
  X(kDropDstMac, "drop_dst_mac")                \
  X(kDropVlan, "drop_vlan")                     \
  X(kDropIpFamily, "drop_ip_family")            \
  X(kRdAtomicOverLimit, "rd_atomic_over_limit") \
  X(kRespQueueFull, "drop_resp_queue_full")

enum class Counter : uint8_t {
#define X(name, str) name,
  UROCE_COUNTERS(X)
#undef X
      kCount
};

constexpr const char* counter_name(Counter c) {
  constexpr const char* kNames[] = {
#define X(name, str) str,
      UROCE_COUNTERS(X)
#undef X
  };
  return kNames[static_cast<uint8_t>(c)];
}

struct Counters {
  std::array<uint64_t, static_cast<size_t>(Counter::kCount)> n{};
  void add(Counter c, uint64_t v = 1) { n[static_cast<size_t>(c)] += v; }
  uint64_t operator[](Counter c) const { return n[static_cast<size_t>(c)]; }
};

}  // namespace uroce
