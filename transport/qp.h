// A queue pair and the state of its three protocol roles. The roles' code lives in one file each
// (STYLE.md): req.cc (requester: send queue -> packets), resp.cc (responder: request packets -> memory,
// receive completions, ACK/NAK/READ/ATOMIC responses), comp.cc (completer: responses -> send completions,
// retransmission), with recv.cc validating and dispatching received packets and qp_state.cc holding the
// IBA state machine.
//
// Threading: a Qp belongs to its Device and is used only by the thread that holds the device (see device.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cc/cc.h"
#include "transport/counters.h"
#include "transport/cq.h"
#include "transport/mr.h"
#include "transport/qp_roles.h"
#include "transport/recv_queue.h"
#include "transport/verbs_types.h"
#include "transport/wire/packet.h"

namespace uroce {

class Device;

// SEND and RDMA WRITE with immediate consume a receive WQE at the responder (and so an end-to-end credit).
bool consumes_recv_wqe(WrOpcode op);

// XRC QPs are RC QPs with a role: an initiator sends requests (with an XRCETH naming the target's SRQ) and
// has no receive queue; a target has no PD, CQs or send queue of its own and serves each request from the
// SRQ of its XRC domain the request names (that SRQ's PD, receive queue and CQ).
enum class XrcRole : uint8_t { kNone, kInitiator, kTarget };

struct QpInitAttr {
  QpType type = QpType::kRc;
  XrcRole xrc = XrcRole::kNone;  // with type kRc
  Xrcd* xrcd = nullptr;          // kTarget
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  Srq* srq = nullptr;
  QpCap cap;
  bool sq_sig_all = false;
  // UD: the QP's own multicast sends are not looped back to it (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB); the
  // device's other members of the group still get their copy.
  bool block_self_mcast_lb = false;
};

enum class WqeState : uint8_t {
  kPosted,   // not started
  kSending,  // some packets sent
  kSent,     // every packet sent, waiting for its response
  kDone,     // response received (or, UC/UD, sent): ready to complete
};

struct SendWqe {
  uint64_t wr_id = 0;
  uint64_t remote_addr = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  uint64_t length = 0;
  uint64_t atomic_orig = 0;  // ATOMIC: the value the responder returned
  const Sge* sge = nullptr;  // into the QP's SGE arena; for inline sends a single SGE over inline data
  uint32_t num_sge = 0;
  uint32_t rkey = 0;
  uint32_t imm_be = 0;
  uint32_t flags = 0;
  uint32_t first_psn = 0;
  uint32_t npkts = 0;      // packets of the message (READ: of its responses)
  uint64_t read_done = 0;  // READ: response bytes placed so far
  WrOpcode opcode = WrOpcode::kSend;
  WqeState state = WqeState::kPosted;
  WcStatus status = WcStatus::kSuccess;
  // UD
  AddressVector av;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  MwBind bind;            // BIND_MW
  uint32_t xrc_srqn = 0;  // XRC initiator: the SRQ at the target
};

struct QpCounters {
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  uint64_t retransmits = 0, timeouts = 0, rnr_naks_rcvd = 0, rnr_naks_sent = 0;
  uint64_t seq_naks_sent = 0, seq_naks_rcvd = 0, duplicates = 0, out_of_sequence = 0;
  // Congestion control: CE-marked requests received, CNPs sent for them (NP) and CNPs handled (RP). The
  // algorithm's own counters (rate changes) are in cc().
  uint64_t ecn_marked = 0, cnp_sent = 0, cnp_handled = 0;
};

class Qp {
 public:
  Qp(Device* dev, uint32_t qpn, Pd* pd, const QpInitAttr& init);
  ~Qp();

  uint32_t qpn() const { return qpn_; }
  QpType type() const { return init_.type; }
  XrcRole xrc() const { return init_.xrc; }
  QpState state() const { return attr_.qp_state; }
  Pd* pd() const { return pd_; }
  const QpInitAttr& init_attr() const { return init_; }
  const QpAttr& attr() const { return attr_; }
  const QpCounters& counters() const { return cnt_; }
  cc::Algorithm* cc() const { return cc_.get(); }
  // Replaces the QP's CC algorithm (the device's choice) with one the caller built: for tests and tools that
  // drive or observe an algorithm object directly.
  void replace_cc(std::unique_ptr<cc::Algorithm> algo);
  // Selective repeat (RC only, off by default; the device's DeviceConfig::selective_repeat picks it for new
  // QPs): the responder holds packets that arrive ahead of a gap and NAKs with a bitmap of them, and the
  // requester re-sends only what such a NAK says is missing. Either side interoperates with a go-back-N
  // peer. Settable in RESET only: EINVAL otherwise, or for a QP that is not RC (XRC included).
  int set_selective_repeat(bool on);
  bool selective_repeat() const { return sr_; }

  // Verbs (qp_state.cc, req.cc, resp.cc). Return 0 or an errno; never throw.
  int modify(const QpAttr& attr, uint32_t mask);
  void query(QpAttr* attr) const;
  int post_send(const SendWr& wr);
  int post_recv(const RecvWr& wr);

  // Engine entry points (device.cc calls these).
  // Counter::kCount when `pkt` comes from the far end of the QP's path (or the QP is not connected), else
  // the drop reason (recv.cc).
  Counter check_source(const wire::ParsedPacket& pkt) const;
  void on_request(const wire::ParsedPacket& pkt);   // resp.cc
  void on_response(const wire::ParsedPacket& pkt);  // comp.cc
  void on_cnp();                                    // tx.cc
  void on_timer(uint64_t now);                      // comp.cc
  uint32_t transmit(uint32_t budget);               // tx.cc: responses, then requests: packets sent
  bool has_tx_work() const;
  bool has_responses() const { return resp_.jobs_count != 0; }  // ACKs or READ responses queued
  uint64_t next_timer() const;    // when on_timer must run: retransmit and CC timers
  uint64_t next_tx_time() const;  // when transmit() could send (0: now; kNever: waits for a response)
  bool error() const { return attr_.qp_state == QpState::kErr; }
  // One line of requester/responder state for diagnostics (uroce stats, failing tests).
  std::string debug_state() const;

 private:
  friend class Device;

  // qp_state.cc
  void enter_error();
  void flush();
  void complete_send(SendWqe& w, WcStatus status);
  void complete_recv(const RecvWqe& w, WcStatus status, uint32_t byte_len, WcOpcode op, uint32_t flags,
                     uint32_t imm, uint32_t src_qp, bool solicited, uint8_t sl = 0);
  void reset_connection();
  bool sq_idle() const;  // no WQE is being sent or waiting for its response
  void sqd_check_drained();
  void build_template();
  void fill_headers(const AddressVector& av, uint32_t dqpn, wire::PacketHeaders* h) const;

  // req.cc
  uint32_t req_transmit(uint32_t budget);
  ReqWait req_blocked(const SendWqe& w) const;  // by SQ drain, fence, max_rd_atomic or credits
  ReqWait req_wait() const;                     // why no packet can be sent now, time aside (or kNone)
  bool req_ready() const { return req_wait() == ReqWait::kNone; }
  bool req_send_packet(SendWqe& w);
  // Builds and sends packet `k` of `w` (a re-send too). `sr_resend`: a selective re-send, which neither
  // moves the send position nor counts again toward the bytes in flight. `*last`: it was the WQE's last.
  bool req_emit(SendWqe& w, uint32_t k, bool sr_resend, bool* last);
  bool sr_resend_pending() const;
  uint32_t req_sr_resend(uint32_t budget, uint64_t now);
  bool req_sr_next(uint32_t* idx, uint32_t* k, uint32_t* psn);
  int validate_local(const SendWqe& w) const;
  void start_wqe(SendWqe& w);
  void run_local_op(SendWqe& w);  // BIND_MW, LOCAL_INV: executed in send-queue order, no packet
  void req_local_ops();           // runs those at the head of the send queue

  // resp.cc
  bool resp_take_recv_wqe();
  WcStatus resp_place(const uint8_t* data, uint32_t len);
  void resp_fail(uint32_t psn, uint8_t nak, WcStatus recv_status, EventType ev);
  void resp_drop_message();
  bool resp_xrc_select(const wire::ParsedPacket& pkt);
  void resp_rc(const wire::ParsedPacket& pkt);
  void resp_uc(const wire::ParsedPacket& pkt);
  void resp_ud(const wire::ParsedPacket& pkt);
  void resp_execute(const wire::ParsedPacket& pkt);
  void resp_read(const wire::ParsedPacket& pkt);
  void resp_atomic(const wire::ParsedPacket& pkt);
  bool resp_atomic_write(const wire::ParsedPacket& pkt);
  void resp_duplicate(const wire::ParsedPacket& pkt);
  void resp_queue(const RespJob& job);
  bool resp_trim_jobs(uint32_t psn);
  uint32_t resp_rd_atomic_queued() const;  // READ/ATOMIC requests whose responses are queued
  void resp_flush_acks();                  // sends the queued ACKs/NAKs/atomic ACKs up to a READ response
  void resp_queue_ack(uint32_t psn, bool hold = false);
  // The newest queued response; the queue must not be empty.
  RespJob& resp_tail() { return resp_.jobs[(resp_.jobs_head + resp_.jobs_count - 1) % resp_.jobs.size()]; }
  bool resp_may_hold();
  void resp_ack_sent(const RespJob& ack);
  uint32_t resp_transmit(uint32_t budget);
  bool resp_send_job(RespJob& job);
  bool resp_emit_job(RespJob& job, const cc::IntStack* echo);
  uint8_t resp_credit_code() const;
  void resp_np_ecn(const wire::ParsedPacket& pkt);
  void resp_sr_setup();
  void resp_sr_out_of_order(const wire::ParsedPacket& pkt, uint32_t psn, int32_t d);
  void resp_sr_release();
  void resp_sr_bitmap(uint32_t base, uint8_t* out) const;

  // comp.cc
  void comp_ack(uint32_t psn, const wire::Aeth& aeth);
  void comp_read_response(const wire::ParsedPacket& pkt);
  void comp_atomic_ack(const wire::ParsedPacket& pkt);
  bool comp_acknowledge_through(uint32_t psn, uint64_t rtt_ns = 0);
  void comp_retire();
  SendWqe* comp_match_response(uint32_t psn, bool read, bool* oldest);
  void comp_rd_atomic_done(SendWqe& w, bool oldest);
  void comp_implicit_nak(uint32_t expect, uint32_t psn);
  void comp_sr_nak(const wire::ParsedPacket& pkt);
  void sr_probe(uint64_t now);
  uint64_t sr_probe_interval() const;
  bool sr_held(uint32_t psn) const;
  void comp_rewind(uint32_t psn);
  void comp_fatal(WcStatus status);
  void arm_retry_timer();

  // Helpers shared by the roles.
  SendWqe& sq_at(uint32_t idx) { return sq_[idx & sq_mask_]; }
  const SendWqe& sq_at(uint32_t idx) const { return sq_[idx & sq_mask_]; }
  uint32_t mtu() const { return mtu_bytes(attr_.path_mtu); }
  // Builds and transmits one frame with `len` payload bytes gathered from the SGEs at `offset` (tx.cc).
  // Returns false when no transmit buffer is free; nothing was sent then.
  // Data packets (requests, READ responses) are `paced` by CC and the QP rate limit; ACKs, NAKs and CNPs
  // are not.
  // `echo`: an INT stack to copy into the frame's telemetry side band, when the port models INT.
  bool emit(const wire::PacketHeaders& h, const Sge* sge, uint32_t num_sge, uint64_t offset, uint32_t len,
            bool paced, const cc::IntStack* echo = nullptr);
  uint64_t pace_next() const;  // when the next paced (data) frame may start
  // CC bookkeeping shared by the roles (tx.cc).
  void rtt_sent(uint32_t psn, bool first_time,
                uint32_t len);              // the request packet emit() just sent, `len` payload bytes
  uint64_t rtt_sample(uint32_t psn) const;  // now - send time of `psn`, 0 if unknown or re-sent (Karn)
  void cc_account();                        // folds the algorithm's new rate changes into the counters
  // Payload bytes an acknowledgement through `last_psn` (covering `npsn` new PSNs) acknowledges.
  uint64_t acked_bytes(uint32_t last_psn, uint32_t npsn);
  RecvQueue& rq();

  Device* dev_;
  uint32_t qpn_;
  Pd* pd_;
  QpInitAttr init_;
  QpAttr attr_;
  QpCounters cnt_;
  std::unique_ptr<cc::Algorithm> cc_;
  bool sr_ = false;          // selective repeat
  bool active_ = false;      // on the device's list of QPs that may have work (Device::activate)
  uint32_t list_pos_ = 0;    // the QP's position in the device's qp_list_
  wire::PacketHeaders hdr_;  // RC/UC: every header field that does not change per packet (built at RTR)
  // UD: the multicast groups the QP is attached to (Device::attach_mcast), which it leaves when destroyed.
  std::vector<Gid> mcast_groups_;

  // Send queue: WQEs in [comp_idx_, post_idx_) are posted and not yet completed; send_idx_ is the one the
  // requester transmits next, from its packet send_pkt_. All indices run free and are masked on access.
  std::vector<SendWqe> sq_;
  std::vector<Sge> sq_sges_;
  std::vector<uint8_t> sq_inline_;
  uint32_t sq_mask_ = 0;
  uint32_t post_idx_ = 0, send_idx_ = 0, comp_idx_ = 0, send_pkt_ = 0;

  Requester req_;   // req.cc
  Completer comp_;  // comp.cc
  // Shared by the roles (tx.cc). The pacer: when the last paced frame started and its length (pace_next()).
  uint64_t pace_start_ns_ = 0;
  uint32_t pace_len_ = 0;
  uint64_t emitted_ns_ = 0;  // when emit() last handed a frame to the device (the send time rtt_sent records)
  // First-transmission times of recent request PSNs, indexed by PSN % kRttRing (RC only).
  struct RttSlot {
    uint32_t psn = UINT32_MAX;
    bool resent = false;
    uint64_t sent_ns = 0;
    uint64_t end_bytes = 0;  // sent_bytes_ once this PSN had left
  };
  std::vector<RttSlot> rtt_ring_;
  uint64_t sent_bytes_ = 0;   // payload bytes of first transmissions, cumulative
  uint64_t acked_bytes_ = 0;  // how many of them acknowledgements covered
  uint64_t cc_changes_seen_ = 0;

  // Responder (resp.cc); its receive queue is the QP's own, or the SRQ's.
  std::unique_ptr<RecvQueue> rq_;
  Responder resp_;
};

}  // namespace uroce
