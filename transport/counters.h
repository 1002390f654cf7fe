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
  X(kTxRingFull, "tx_ring_full")                \
  X(kMcastTxPackets, "mcast_tx_packets")        \
  X(kMcastRxPackets, "mcast_rx_packets")        \
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
  X(kAcksHeld, "acks_held")                     \
  X(kPostsCoalesced, "posts_coalesced")         \
  X(kCoalescingLeft, "coalescing_left")         \
  X(kLingersCaught, "lingers_caught")           \
  X(kLingersMissed, "lingers_missed")           \
  X(kCreditStall, "credit_stalls")              \
  X(kCreditUpdateSent, "credit_updates_sent")   \
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
  X(kDropMcastNoGroup, "drop_mcast_no_group")   \
  X(kDropMalformed, "drop_malformed")           \
  X(kDropSrcAddr, "drop_src_addr")              \
  X(kDropSrcMac, "drop_src_mac")                \
  X(kDropDstMac, "drop_dst_mac")                \
  X(kDropVlan, "drop_vlan")                     \
  X(kDropIpFamily, "drop_ip_family")            \
  X(kRdAtomicOverLimit, "rd_atomic_over_limit") \
  X(kRespQueueFull, "drop_resp_queue_full")     \
  X(kSrHeld, "sr_packets_held")                 \
  X(kSrReleased, "sr_packets_released")         \
  X(kSrRetransmits, "sr_selective_retransmits") \
  X(kSrNakSent, "sr_nak_sent")

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

// The names other RDMA stacks give these counters, for tools and dashboards written against them: the
// hw_counters of mlx5 (drivers/infiniband/hw/mlx5/counters.c) and rxe (drivers/infiniband/sw/rxe/
// rxe_hw_counters.c), which `rdma statistic show` and /sys/class/infiniband/DEV/ports/N/hw_counters/ list,
// and the IB PMA port counters of /sys/class/infiniband/DEV/ports/N/counters/. A value is the uroce
// counter divided by `divisor` (the PMA's *_data count 4-byte words). Several names may share one source.
// Every name is unique across both kinds; the uroce names stay as they are.
enum class StdCounterKind : uint8_t { kHw, kPma };

struct StdCounter {
  const char* name;
  Counter src;
  StdCounterKind kind;
  uint8_t divisor;
};

inline constexpr StdCounter kStdCounters[] = {
    // mlx5
    {"np_cnp_sent", Counter::kCnpSent, StdCounterKind::kHw, 1},
    {"rp_cnp_handled", Counter::kCnpRcvd, StdCounterKind::kHw, 1},
    {"np_ecn_marked_roce_packets", Counter::kEcnMarked, StdCounterKind::kHw, 1},
    {"local_ack_timeout_err", Counter::kTimeouts, StdCounterKind::kHw, 1},
    {"out_of_sequence", Counter::kOutOfSequence, StdCounterKind::kHw, 1},
    {"duplicate_request", Counter::kDuplicateRequest, StdCounterKind::kHw, 1},  // rxe's name too
    {"packet_seq_err", Counter::kSeqNakRcvd, StdCounterKind::kHw, 1},
    {"implied_nak_seq_err", Counter::kImplicitNak, StdCounterKind::kHw, 1},
    // rxe
    {"sent_pkts", Counter::kTxPackets, StdCounterKind::kHw, 1},
    {"rcvd_pkts", Counter::kRxPackets, StdCounterKind::kHw, 1},
    {"out_of_seq_request", Counter::kOutOfSequence, StdCounterKind::kHw, 1},
    {"rcvd_rnr_err", Counter::kRnrNakRcvd, StdCounterKind::kHw, 1},
    {"send_rnr_err", Counter::kRnrNakSent, StdCounterKind::kHw, 1},
    {"rcvd_seq_err", Counter::kSeqNakRcvd, StdCounterKind::kHw, 1},
    // IB PMA (PortCounters, PortCountersExtended)
    {"port_xmit_data", Counter::kTxBytes, StdCounterKind::kPma, 4},
    {"port_rcv_data", Counter::kRxBytes, StdCounterKind::kPma, 4},
    {"port_xmit_packets", Counter::kTxPackets, StdCounterKind::kPma, 1},
    {"port_rcv_packets", Counter::kRxPackets, StdCounterKind::kPma, 1},
    {"port_unicast_xmit_packets", Counter::kTxPackets, StdCounterKind::kPma, 1},
    {"port_unicast_rcv_packets", Counter::kRxPackets, StdCounterKind::kPma, 1},
    {"port_multicast_xmit_packets", Counter::kMcastTxPackets, StdCounterKind::kPma, 1},
    {"port_multicast_rcv_packets", Counter::kMcastRxPackets, StdCounterKind::kPma, 1},
};
inline constexpr size_t kStdCounterCount = sizeof(kStdCounters) / sizeof(kStdCounters[0]);

// The standard counter's value from the device's counters.
inline uint64_t std_counter_value(const StdCounter& s, const Counters& c) { return c[s.src] / s.divisor; }

}  // namespace uroce
