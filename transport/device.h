// A uroce device: what a hardware RNIC is, in software. It owns the protection domains, memory regions,
// completion queues, shared receive queues and queue pairs, and runs the engine over one PacketIo port.
//
// Threading: a Device is single-threaded ("_st"). Every call, verbs and progress alike, must come from the
// thread that holds it; the provider serialises callers with the device lock and drives progress from
// whichever thread is in the library (DESIGN.md, "Progress is adaptive").
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cc/cc.h"
#include "transport/clock.h"
#include "transport/counters.h"
#include "transport/cq.h"
#include "transport/fifo.h"
#include "transport/mr.h"
#include "transport/packet_io.h"
#include "transport/params.h"
#include "transport/qp.h"
#include "transport/recv_queue.h"
#include "transport/wire/headers.h"
#include "transport/wire/rx_drop.h"

namespace uroce {

struct DeviceConfig {
  std::string name = "uroce0";
  Gid gid{};  // GID index 0: an IPv4-mapped address (RoCEv2 over IPv4) or an IPv6 address
  wire::MacAddr mac{};
  Mtu port_mtu = Mtu::k4096;
  uint64_t link_rate_bps = 100'000'000'000ull;
  std::string cc = "none";
  // The algorithm's parameters (UROCE_CC_PARAMS), plus the notification point's min_time_between_cnps (us),
  // which the device applies itself to every QP, whatever the algorithm.
  cc::Params cc_params;
  // RC QPs created on this device use selective repeat (Qp::set_selective_repeat; UROCE_SELECTIVE_REPEAT).
  bool selective_repeat = false;
  // ACK coalescing (UROCE_ACK_HOLD_US): an RC responder receiving a stream (requests less than this apart)
  // holds the ACK a request asks for up to this long, so that it answers the requests behind it too. A lone
  // request, or one the responder's own next packet can carry the ACK past, is answered at once. 0: an ACK
  // for every AckReq.
  uint64_t ack_hold_ns = 0;
  bool vlan = false;  // tag frames with 802.1Q; the PCP is the address vector's SL
  uint16_t vlan_id = 0;
  // Identifiers: nonzero seeds the random choice of QP numbers and memory keys, so that they differ from run
  // to run and cannot be guessed from each other (the provider seeds from std::random_device). 0 keeps them
  // sequential (QPNs from 17), for simulations that must reproduce a run exactly.
  uint64_t id_seed = 0;
  // Neighbour resolution: the MAC for a destination GID. Unset: the uroce convention, mac_for_gid().
  std::function<bool(const Gid&, wire::MacAddr*)> resolve;
};

// uroce endpoints derive their MAC from their address (02:00 + the low 32 bits of the GID), so two uroce
// devices reach each other without ARP. Ports with real neighbours install DeviceConfig::resolve.
wire::MacAddr mac_for_gid(const Gid& gid);

class Device {
 public:
  // Throws std::invalid_argument naming the bad key for an unknown CC algorithm or parameter.
  Device(DeviceConfig config, PacketIo* io, const Clock* clock);
  // The same checks without building a device: "" or the message the constructor would throw.
  static std::string check_config(const DeviceConfig& config);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceConfig& config() const { return cfg_; }
  const Counters& counters() const { return cnt_; }
  // Counts an event of the engine above the device (its post_send coalescing), single writer as the rest.
  void count(Counter c) { cnt_.add(c); }
  const wire::RxDropCounters& rx_drops() const { return drops_; }
  // Notification point: a QP sends at most one CNP per this (min_time_between_cnps).
  uint64_t cnp_interval_ns() const { return cnp_interval_ns_; }

  // Verbs. Each returns 0 or an errno (never throws) and creates through an out-parameter.
  int alloc_pd(Pd** out);
  int dealloc_pd(Pd* pd);  // EBUSY while anything uses it
  int reg_mr(Pd* pd, void* addr, size_t length, uint32_t access, Mr** out);
  // An MR whose I/O virtual address `iova` differs from `addr` (ibv_reg_mr_iova2).
  int reg_mr(Pd* pd, void* addr, size_t length, uint64_t iova, uint32_t access, Mr** out);
  int rereg_mr(Mr* mr, Pd* pd, void* addr, size_t length, uint32_t access);
  int rereg_mr(Mr* mr, Pd* pd, void* addr, size_t length, uint64_t iova, uint32_t access);
  int dereg_mr(Mr* mr);  // EBUSY while memory windows are bound to it
  // Memory windows; binding and invalidation are send-queue work (Qp::post_send, BIND_MW and LOCAL_INV).
  int alloc_mw(Pd* pd, MwType type, Mw** out);
  int dealloc_mw(Mw* mw);
  int create_cq(uint32_t cqe, Cq** out);
  int resize_cq(Cq* cq, uint32_t cqe);
  int destroy_cq(Cq* cq);  // EBUSY while a QP uses it
  int create_srq(Pd* pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit, Srq** out);
  // XRC: domains, and SRQs of a domain whose receives complete to `cq`. EBUSY while SRQs or QPs use it.
  int alloc_xrcd(Xrcd** out);
  int dealloc_xrcd(Xrcd* xrcd);
  int create_xrc_srq(Pd* pd, Xrcd* xrcd, Cq* cq, uint32_t max_wr, uint32_t max_sge, uint32_t limit,
                     Srq** out);
  Srq* find_srq(uint32_t srqn) const;
  int modify_srq(Srq* srq, uint32_t max_wr, uint32_t limit, uint32_t mask);  // mask: 1 max_wr, 2 limit
  int post_srq_recv(Srq* srq, const RecvWr& wr);
  int destroy_srq(Srq* srq);
  int create_qp(Pd* pd, const QpInitAttr& init, Qp** out);
  int destroy_qp(Qp* qp);
  // The general services interface (QP1), for the connection manager: a UD QP whose number is 1, with the
  // usual UD rules (its Q_Key, set by modify, is 0x80010000 for CM MADs). Never handed to a verbs consumer.
  // EBUSY if the device already has one.
  int create_gsi_qp(Pd* pd, const QpInitAttr& init, Qp** out);
  Qp* find_qp(uint32_t qpn) const;

  // UD multicast (ibv_attach_mcast, ibv_detach_mcast; mcast.cc). A QP attached to a group receives a copy of
  // every datagram sent to it (destination QP kMcastQpn, destination IP the group), from the port and from
  // this device's own QPs, its sender included when attached. `mgid` must be a multicast GID
  // (wire::is_multicast_gid) and the QP a UD QP other than QP1, else EINVAL; attaching again is a no-op;
  // detaching a group the QP is not attached to is EINVAL; ENOMEM beyond the params:: limits. A destroyed QP
  // leaves its groups. No LID: RoCE has none.
  int attach_mcast(Qp* qp, const Gid& mgid);
  int detach_mcast(Qp* qp, const Gid& mgid);
  // The QPs attached to `mgid`, in the order they attached (empty: no such group here).
  std::span<Qp* const> mcast_members(const Gid& mgid) const;

  // Async events (ibv_get_async_event). on_async_event, if set, is called as each is raised.
  bool get_async_event(AsyncEvent* ev);
  std::function<void()> on_async_event;

  // One engine pass: receive a burst, run due timers, transmit. Returns the packets handled (rx + tx), so a
  // caller can tell an idle pass from a busy one. `now_hint`: the caller's reading of the clock just before
  // (0: none), which a pass that receives nothing uses instead of reading the clock again (an application
  // thread polling an empty CQ reads it twice per call, not three times).
  uint32_t progress(uint64_t now_hint = 0);
  // When the last progress() ended, read after its work; 0 if it did nothing (and perhaps read no clock).
  uint64_t last_pass_ns() const { return last_pass_ns_; }
  // One-sided requests (RDMA WRITE, READ, ATOMIC packets) the responders accepted: a pass that moved the
  // count placed one.
  uint64_t one_sided_requests() const { return one_sided_requests_; }
  // When progress() next has something to do without new packets arriving (kNever: nothing).
  uint64_t next_deadline() const;
  // QPs a pass visits: those with something to send, a timer or a time to send at (idle QPs cost nothing).
  size_t active_qps() const { return active_.size(); }
  // The clock's time. Inside progress() it is read once per phase (when the burst arrives, then before the
  // timers and transmission) and every packet of that phase sees the same time, as a NIC stamps a burst.
  // Never earlier than a time the device handed out before.
  uint64_t now() const { return pass_now_ ? pass_now_ : latest(clock_->now_ns()); }

  // The port's GID table (ibv_query_gid's). Index 0 is DeviceConfig::gid; a device bound to a netdev mirrors
  // its addresses into the other slots and follows them as they change (a zero GID is an empty slot). A QP
  // sends from its address vector's sgid_index; frames to any GID of the table are the device's.
  void set_gid(unsigned index, const Gid& gid);
  // The GID at `index`, or nullptr when the index is out of range or the slot is empty.
  const Gid* gid(unsigned index) const;

 private:
  friend class Qp;

  // Used by the roles.
  PktBuf* alloc_tx();
  void transmit(PktBuf* buf, bool loopback);
  // A frame to multicast group `group` (mcast.cc): out on the port, and a copy for this device's own
  // members. Takes ownership of `buf` as transmit() does.
  void transmit_mcast(PktBuf* buf, const Gid& group);
  void raise(EventType type, uint32_t element);
  bool resolve_mac(const Gid& gid, wire::MacAddr* mac) const;
  Counters& cnt() { return cnt_; }
  bool is_local_gid(const Gid& gid) const {
    return wire::ip_equal(gid, cfg_.gid) ||
           (extra_gids_ && std::find(gids_.begin() + 1, gids_.end(), gid) != gids_.end());
  }

  void handle_rx(PktBuf* buf);
  void rx_mcast(const wire::ParsedPacket& pkt);  // a frame to kMcastQpn: to each member of its group
  void mcast_leave_all(Qp* qp);
  void flush_tx();
  void activate(Qp* qp) {
    if (qp->active_) return;
    qp->active_ = true;
    active_.insert(active_at(qp->list_pos_), qp);
  }
  // The first active QP at or after position `pos` of qp_list_ (active_ is in qp_list_'s order).
  std::vector<Qp*>::iterator active_at(uint32_t pos) {
    return std::lower_bound(active_.begin(), active_.end(), pos,
                            [](const Qp* q, uint32_t p) { return q->list_pos_ < p; });
  }
  void retire_idle();  // drops QPs without work from active_
  // The larger of t and every time handed out so far. A pass reads the clock unordered (it need not wait for
  // the loads before it, such as the rx ring's): such a reading may be a little older than one another
  // thread took under the device's lock just before, and an interval computed from the two must not wrap.
  uint64_t latest(uint64_t t) const {
    if (t > last_now_) last_now_ = t;
    return last_now_;
  }
  int check_qp_init(const QpInitAttr& init) const;
  void place_qp(uint32_t qpn, Pd* pd, const QpInitAttr& init, Qp** out);

  DeviceConfig cfg_;
  PacketIo* io_;
  const Clock* clock_;
  uint64_t pass_now_ = 0;            // the time of the current progress() phase; 0 outside progress()
  uint64_t last_pass_ns_ = 0;        // last_pass_ns()
  uint64_t one_sided_requests_ = 0;  // one_sided_requests()
  mutable uint64_t last_now_ = 0;    // the latest time handed out (latest())
  Counters cnt_;
  wire::RxDropCounters drops_;
  cc::Params rp_params_;  // cfg_.cc_params without the notification point's keys: what each QP's RP gets
  uint64_t cnp_interval_ns_;
  const cc::IntStack* rx_int_ = nullptr;  // INT of the frame being handled, if it carries any

  std::vector<std::unique_ptr<Pd>> pds_;
  MrTable mrs_;
  std::vector<std::unique_ptr<Cq>> cqs_;
  std::vector<std::unique_ptr<Srq>> srqs_;
  std::vector<std::unique_ptr<Xrcd>> xrcds_;
  std::unordered_map<uint32_t, std::unique_ptr<Qp>> qps_;
  std::vector<Qp*> qp_list_;  // every QP, in creation order
  // The QPs that may have work: something to transmit, a timer, or a time when they may send. A QP joins
  // when a verb or a packet reaches it (activate()) and leaves when a pass finds it with none of these, so
  // a pass, and next_deadline(), cost nothing for idle QPs however many there are. Kept in qp_list_'s
  // order, so that timers run and QPs take their turns as they would in a pass over every QP.
  std::vector<Qp*> active_;
  uint32_t rr_next_ = 0;  // round-robin start for transmit fairness: a position in qp_list_
  uint32_t next_qpn_;
  uint64_t qpn_rng_;  // splitmix64 state for random QPNs (cfg_.id_seed != 0)
  uint32_t next_handle_ = 1;
  std::deque<AsyncEvent> events_;
  // Multicast groups with at least one member, each with its members in attach order, and the attachments
  // of all groups together (params::kMaxTotalMcastQpAttach). The receive path only looks groups up.
  std::map<Gid, std::vector<Qp*>> mcast_;
  uint32_t mcast_attached_ = 0;
  std::array<Gid, params::kGidTableLen> gids_{};  // [0] == cfg_.gid
  unsigned extra_gids_ = 0;  // nonzero slots beyond 0: the fast path checks only cfg_.gid

  // Frames built and not yet accepted by the port. When the port refuses some (its tx ring is full), the
  // device builds nothing new until they are gone: backpressure reaches the QPs instead of frames being lost.
  static constexpr uint16_t kTxQueue = 2 * kBurst;
  PktBuf* txq_[kTxQueue];
  uint16_t txq_count_ = 0;
  bool tx_blocked_ = false;
  bool pool_empty_ = false;  // alloc_burst failed: retry on a short timer
  Fifo<PktBuf*> loopback_;   // frames addressed to this device, received on the next pass
};

}  // namespace uroce
