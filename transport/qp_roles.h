// The state each protocol role of a QP owns (IBA ch. 9.5-9.9), apart as Linux rxe keeps qp->req, qp->comp
// and qp->resp: the requester turns send WQEs into request packets (req.cc), the completer turns responses
// into send completions and retransmissions (comp.cc), the responder turns request packets into memory
// writes, receive completions and responses (resp.cc). What is not a counter or a PSN is a named state, each
// with a name table for diagnostics (Qp::debug_state, uroce stats).
//
// The send queue itself (its WQEs and the post/send/complete indices) is shared by requester and completer
// and stays in Qp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "cc/cc.h"
#include "transport/params.h"
#include "transport/recv_queue.h"
#include "transport/wire/packet.h"

namespace uroce {

// The name of `e` in `names`, one per enumerator in order; "?" beyond it.
template <typename E, size_t N>
constexpr std::string_view state_name(E e, const std::string_view (&names)[N]) {
  const auto i = static_cast<size_t>(e);
  return i < N ? names[i] : std::string_view("?");
}

// --- Requester ---

// Why the requester sends no packet now (Qp::req_wait). kNone: it can, time aside (the pacer and an RNR
// back-off decide when: Qp::next_tx_time).
enum class ReqWait : uint8_t {
  kNone,
  kIdle,           // every posted WQE has been sent
  kQpState,        // not RTS or SQD (or in ERR)
  kLocalError,     // the next WQE failed locally; the completer reports it
  kWindow,         // the CC window is full
  kSqDrain,        // SQD: nothing new starts
  kFence,          // a fenced WQE waits for the READs/ATOMICs before it
  kRdAtomicLimit,  // max_rd_atomic READs/ATOMICs are outstanding
  kNoCredit,       // end-to-end flow control: no credit, a probe out or not yet due (IBA 9.7.7.2)
};
inline constexpr std::string_view kReqWaitNames[] = {
    "none", "idle", "qp_state", "local_error", "window", "sq_drain", "fence", "rd_atomic_limit", "no_credit"};

struct Requester {
  uint32_t npsn = 0;           // next PSN not yet assigned to a WQE
  uint32_t psn_hw = 0;         // one past the highest PSN ever transmitted (to count retransmissions)
  uint32_t rd_atomic_out = 0;  // READ/ATOMIC WQEs sent and not yet retired (completed in order)
  uint32_t pkts_since_ackreq = 0;
  uint64_t last_ackreq_ns = 0;   // when a packet last asked for an ACK (or one left with none outstanding)
  uint64_t tx_now_ns = 0;        // the clock as req_transmit() read it, for the packets it sends
  uint64_t rnr_until = 0;        // no transmission before this (RNR NAK back-off)
  int64_t credits = 0;           // end-to-end credits left; < 0 = no limit advertised
  uint32_t credit_msgs_out = 0;  // WQE-consuming messages sent and not acknowledged
  uint64_t inflight_bytes = 0;   // payload bytes sent and not acknowledged (the CC window's measure)
  // After an ACK that left no credit with nothing outstanding: no probe before this (0: none pending).
  uint64_t probe_at = 0;
};

// --- Completer ---

// Go-back-N after an implicit NAK (a response beyond the one expected: the expected one was lost). The
// requester rewinds to `rewound_at`; once it has sent that PSN again, a response that falls back below the
// gap means the new round lost its head too and may rewind again.
enum class GoBack : uint8_t {
  kNone,
  kRewound,  // rewound to rewound_at, not yet sent again
  kResent,   // rewound_at has been sent again
};
inline constexpr std::string_view kGoBackNames[] = {"none", "rewound", "resent"};

// Selective repeat at the requester (a QP option). A NAK with the responder's bitmap of what it holds after
// the NAKed PSN names the packets known lost: those before the highest one held that are not held (later ones
// may still be on their way). A round re-sends them, oldest first, before any new packet, and widens as later
// NAKs show more; a packet re-sent once is re-sent again only when it is NAKed and the bitmap shows a packet
// held that was first sent after that re-send (so the re-send was lost too). Go-back-N (a plain NAK, an RNR
// NAK, the local ACK timeout, a lost READ response) ends the round and re-sends everything.
struct SrRequester {
  bool active = false;
  uint32_t base = 0;  // the PSN of bit 0 of `held`: the latest NAKed PSN
  uint64_t held[4] = {};
  uint32_t highest = 0;  // the highest PSN that had arrived (the latest NAK's)
  uint32_t scan = 0;     // the next PSN the round considers: those before it were re-sent or held
  uint32_t end = 0;      // one past the highest PSN known to have arrived
  bool again = false;    // again_psn is re-sent first: its re-send was lost
  uint32_t again_psn = 0;
  // Per PSN % kSrWindow: the PSN last re-sent there, and one past the highest PSN sent before that re-send.
  // Allocated when a QP with selective repeat enters RTS.
  struct Resent {
    uint32_t psn = UINT32_MAX;
    uint32_t hw = 0;
  };
  std::vector<Resent> resent;
  // The probe: when the oldest unacknowledged PSN made no progress for a few RTTs (a re-send lost with no
  // later packet to show it, a lost NAK, a tail loss), the round re-sends from it whatever the latest bitmap
  // lacks (without one: it alone), long before the local ACK timeout would go back N. Backs off while
  // nothing progresses.
  uint64_t probe_deadline = UINT64_MAX;
  uint8_t probe_backoff = 0;
  // The smallest RTT an acknowledgement gave (a smoothed one would follow the samples that packets held at
  // the responder through a recovery inflate).
  uint64_t min_rtt_ns = 0;
};

struct Completer {
  uint32_t una = 0;  // oldest PSN not acknowledged
  uint8_t retry_left = 0;
  uint8_t rnr_retry_left = 0;
  uint64_t retry_deadline = UINT64_MAX;  // local ACK timeout
  GoBack go_back = GoBack::kNone;
  uint32_t rewound_at = 0;  // with go_back != kNone
  uint32_t gap_psn = 0;     // the latest response PSN seen beyond rewound_at
  SrRequester sr;           // selective repeat on
};

// --- Responder ---

// A queued response of the responder. Responses leave in PSN order, so an ACK never overtakes the READ
// responses before it (the requester would take it as an implicit NAK of the READ).
struct RespJob {
  enum Kind : uint8_t { kAck, kNak, kRead, kAtomicAck } kind = kAck;
  bool duplicate = false;  // kRead/kAtomicAck answering a re-sent request: uses the original's resource
  uint8_t syndrome = 0;    // kAck: filled at send time with credits; kNak: the NAK code
  uint32_t psn = 0;        // kRead: PSN of the next response packet
  uint32_t msn = 0;
  // kRead
  uint64_t va = 0;
  uint64_t left = 0;  // bytes still to send
  uint32_t rkey = 0;
  bool first = true;
  // kAtomicAck
  uint64_t orig = 0;
  // kAck: held until then (0: due now); whether it was queued held; the requests it answers (coalesced)
  uint64_t not_before = 0;
  bool held = false;
  uint32_t reqs = 0;
};

// Responder resources for READ and ATOMIC (max_dest_rd_atomic deep): what a duplicate request is answered
// from (READs are re-executed, ATOMICs answered with the saved result, never re-applied).
struct RdAtomicRes {
  bool valid = false;
  bool is_atomic = false;
  uint32_t psn = 0;
  uint32_t last_psn = 0;
  uint64_t orig = 0;
};

// The message the responder is in the middle of: what the next packet's opcode must continue (IBA 9.7.5.1
// opcode sequence check).
enum class RespMsg : uint8_t {
  kIdle,      // between messages: the next packet must start one
  kSend,      // a multi-packet SEND: MIDDLE or LAST of a SEND comes next
  kWrite,     // a multi-packet RDMA WRITE: MIDDLE or LAST of a WRITE comes next
  kDropping,  // UC: a message lost a packet; the rest of it is dropped until one starts
};
inline constexpr std::string_view kRespMsgNames[] = {"idle", "send", "write", "dropping"};

// The PSN sequence (IBA 9.7.5.1.1): in order, or a sequence-error NAK is out for epsn and the rest of that
// round is dropped silently.
enum class RespSeq : uint8_t { kInOrder, kNakOut };
inline constexpr std::string_view kRespSeqNames[] = {"in_order", "nak_out"};

// Selective repeat at the responder (a QP option): request packets that arrive ahead of the expected PSN,
// within params::kSrWindow, are copied here instead of being dropped; once the missing PSN has executed,
// the held ones execute in PSN order through the same code as packets just arrived. Allocated when the QP
// goes to RTR, never per packet.
struct SrHold {
  std::vector<uint8_t> frames;          // kSrWindow slots of slot_bytes, slot = PSN % kSrWindow
  std::vector<wire::ParsedPacket> pkt;  // per slot: the held packet, parsed, in `frames`; frame null: empty
  uint32_t slot_bytes = 0;
  uint32_t count = 0;      // full slots
  uint32_t since_nak = 0;  // packets held since the last NAK for the current gap
  uint32_t highest = 0;    // the highest PSN that arrived ahead of the current gap
  bool peer_sr = false;    // the requester marks its requests: it understands op::kUroceSrNak
};

struct Responder {
  uint32_t epsn = 0;  // expected PSN
  uint32_t msn = 0;
  RespSeq seq = RespSeq::kInOrder;
  uint32_t nak_gap_psn = 0;  // with kNakOut: the latest out-of-sequence PSN since that NAK
  RespMsg msg = RespMsg::kIdle;
  std::optional<RecvWqe> wqe;  // the receive WQE a SEND (or WRITE with immediate) fills, once taken
  uint64_t recv_off = 0;       // bytes of the message placed into `wqe`
  // The multi-packet RDMA WRITE in progress (msg kWrite).
  uint64_t write_va = 0;
  uint32_t write_rkey = 0;
  uint64_t write_left = 0;
  uint64_t write_len = 0;
  bool fatal_nak_queued = false;  // a READ's region went away: once its NAK is out the QP goes to ERR
  std::vector<RdAtomicRes> res;
  uint32_t res_next = 0;
  std::vector<RespJob> jobs;  // ring, in PSN order
  uint32_t jobs_head = 0, jobs_count = 0;
  uint32_t unacked_pkts = 0;
  uint64_t last_req_ns = UINT64_MAX;  // when the latest in-order request executed (ACK coalescing)
  // Held ACKs in a row that answered only the request they were held for (Qp::resp_may_hold), and the
  // streaming requests since the last probe hold.
  uint32_t hold_misses = 0;
  uint32_t since_probe = 0;
  // The last ACK advertised no credit: the next receive posted sends the requester an update.
  bool zero_credits_sent = false;
  uint64_t next_cnp_ns = 0;  // NP: no CNP before this (min_time_between_cnps)
  bool ce_echo = false;      // a request arrived CE-marked since the last ACK: the next one sets BECN
  cc::IntStack echo_int;     // the INT stack of the latest request, for the next response to carry back
  bool comm_est = false;     // the first request in RTR raised the Communication Established event
  SrHold sr;                 // selective repeat on
};

}  // namespace uroce
