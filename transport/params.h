// Limits of a uroce device: what query_device reports and what create calls enforce (rxe_param.h style).
#pragma once

#include <cstdint>

namespace uroce::params {

constexpr uint32_t kMaxQp = 16384;
constexpr uint32_t kMaxQpWr = 16384;
constexpr uint32_t kMaxSge = 32;
constexpr uint32_t kMaxInline = 256;
constexpr uint32_t kMaxCq = 16384;
constexpr uint32_t kMaxCqe = (1u << 20) - 1;
constexpr uint32_t kMaxMr = 1u << 16;
constexpr uint64_t kMaxMrSize = 1ull << 40;
constexpr uint32_t kMaxPd = 1u << 16;
constexpr uint32_t kMaxSrq = 4096;
constexpr uint32_t kMaxSrqWr = 16384;
constexpr uint32_t kMaxSrqSge = 32;
constexpr uint8_t kMaxRdAtomic = 128;  // max_qp_rd_atom and max_qp_init_rd_atom
constexpr uint32_t kMaxAh = 1u << 16;
constexpr uint32_t kMaxMsgSize = 1u << 31;
constexpr uint32_t kGidTableLen = 16;                  // rxe has more; 16 holds a netdev's addresses
constexpr uint32_t kUdQkeyPrivilegedBit = 0x80000000;  // a Q_Key with it set in a WR means "use the QP's"

// QP numbers: 0 and 1 are the IB special QPs; uroce allocates from here up.
constexpr uint32_t kFirstQpn = 0x11;
constexpr uint32_t kGsiQpn = 1;            // QP1: general services (CM MADs)
constexpr uint32_t kGsiQkey = 0x80010000;  // the well-known Q_Key of QP1
constexpr uint32_t kMaxQpn = 0xFFFFFF;
// The destination QP of every multicast packet: it names a group, not a QP.
constexpr uint32_t kMcastQpn = 0xFFFFFF;

// UD multicast (ibv_attach_mcast): groups per device, QPs per group and attachments in all, Soft-RoCE's
// values (rxe_param.h). An attach beyond any of them fails with ENOMEM, as in rxe.
constexpr uint32_t kMaxMcastGrp = 8192;
constexpr uint32_t kMaxMcastQpAttach = 56;
constexpr uint32_t kMaxTotalMcastQpAttach = 0x70000;

// Datapath tuning.
// A frame with at most this much payload has its payload copied, then the frame checksummed in one pass;
// a longer one is checksummed as its payload is copied (after a pass over its headers). bench_wire's
// BM_CopyAndSeal on the AMD EPYC: whole 10-35% faster up to 512 bytes, even at 1-2 KiB, 13% slower at 4 KiB.
constexpr uint32_t kSealWholeFrame = 1024;
constexpr uint32_t kTxBudgetPerQp = 16;   // packets one QP may send per progress pass (round-robin fairness)
constexpr uint32_t kAckReqEvery = 16;     // requester sets AckReq at least every this many packets
constexpr uint32_t kMaxPendingAcks = 32;  // responder sends a coalesced ACK at least this often
// ACK coalescing learns (Qp::resp_may_hold): after this many held ACKs in a row that answered only their own
// request (a requester that waits for each ACK before its next request), a QP answers at once, but for one
// probe hold every kAckHoldProbeEvery streaming requests, which puts it back to holding if requests pile up.
constexpr uint32_t kAckHoldMisses = 2;
constexpr uint32_t kAckHoldProbeEvery = 128;
// Notification point: at most one CNP per QP per this, unless the device's CC parameters set
// min_time_between_cnps (in microseconds, as the ConnectX knob; its firmware default is 4 us).
constexpr uint64_t kCnpMinIntervalNs = 4000;
// End-to-end credits: when an ACK said the responder has no receive WQE left and nothing is outstanding, the
// requester's probe waits this long for the credit update a uroce responder sends as its application posts
// a receive. A probe that still finds the queue empty costs an RNR NAK and the responder's RNR timer
// (0.64 ms for perftest's QPs), so the wait is cheap beside it; a responder that sends no updates delays
// each probe by this much.
constexpr uint64_t kCreditProbeDelayNs = 50'000;
// Requester: send times of the last this-many request PSNs, for RTT samples (a power of two).
constexpr uint32_t kRttRing = 256;
// Selective repeat (a per-QP option, off by default): the responder holds request packets up to this many
// PSNs ahead of the expected one (a power of two; the SR NAK's bitmap has one bit per PSN of it), and
// repeats its NAK for a gap after this many more packets arrived ahead of it, so that a lost retransmission
// is noticed without the local ACK timeout.
constexpr uint32_t kSrWindow = 256;
constexpr uint32_t kSrRenakEvery = 16;
// The requester's probe re-sends from the oldest unacknowledged packet after kSrProbeRtts minimum RTTs
// without progress (at least kSrProbeMinNs; kSrProbeInitNs before the first RTT sample), doubling up to
// 2^kSrProbeMaxBackoff times.
constexpr uint64_t kSrProbeRtts = 3;
constexpr uint64_t kSrProbeMinNs = 10'000;
constexpr uint64_t kSrProbeInitNs = 100'000;
constexpr uint8_t kSrProbeMaxBackoff = 3;

}  // namespace uroce::params
