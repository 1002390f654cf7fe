#include "transport/device.h"
#include "transport/wire/address.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>

#include "transport/params.h"

namespace uroce {

wire::MacAddr mac_for_gid(const Gid& gid) { return wire::mac_for_gid(gid); }

namespace {

constexpr uint32_t kSgeBytes = 16;  // an SGE in a send queue entry: address, length and key

// Takes the notification point's keys out of `p` (what remains is the reaction point's) and returns the CNP
// interval. Throws std::invalid_argument naming a bad key.
uint64_t take_np_params(cc::Params* p) {
  auto it = p->find("min_time_between_cnps");
  if (it == p->end()) return params::kCnpMinIntervalNs;
  const double us = it->second;
  if (!std::isfinite(us) || us < 0 || us > 4.0e9)
    throw std::invalid_argument("cc parameter 'min_time_between_cnps' = " + std::to_string(us) +
                                " is out of range [0, 4e9] (microseconds)");
  p->erase(it);
  return static_cast<uint64_t>(std::llround(us * 1000));
}

}  // namespace

Device::Device(DeviceConfig config, PacketIo* io, const Clock* clock)
    : cfg_(std::move(config)),
      io_(io),
      clock_(clock),
      rp_params_(cfg_.cc_params),
      cnp_interval_ns_(take_np_params(&rp_params_)),
      next_qpn_(params::kFirstQpn),
      qpn_rng_(cfg_.id_seed ^ 0x5155504E52414E44ull) {
  mrs_.seed(cfg_.id_seed);
  gids_[0] = cfg_.gid;
  // A bad CC name or parameter must fail at device open, naming the key, not at the first QP.
  (void)cc::make(cfg_.cc, rp_params_, cfg_.link_rate_bps);
}

std::string Device::check_config(const DeviceConfig& config) {
  try {
    cc::Params rp = config.cc_params;
    (void)take_np_params(&rp);
    (void)cc::make(config.cc, rp, config.link_rate_bps);
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

Device::~Device() {
  flush_tx();
  io_->free_burst(txq_, txq_count_);
  while (!loopback_.empty()) {
    PktBuf* b = loopback_.front();
    loopback_.pop_front();
    io_->free_burst(&b, 1);
  }
}

int Device::alloc_pd(Pd** out) {
  if (pds_.size() >= params::kMaxPd) return ENOMEM;
  auto pd = std::make_unique<Pd>();
  pd->handle = next_handle_++;
  *out = pd.get();
  pds_.push_back(std::move(pd));
  return 0;
}

template <typename T>
static void erase_owned(std::vector<std::unique_ptr<T>>& v, T* p) {
  v.erase(std::find_if(v.begin(), v.end(), [p](const auto& u) { return u.get() == p; }));
}

int Device::dealloc_pd(Pd* pd) {
  if (pd->refs) return EBUSY;
  erase_owned(pds_, pd);
  return 0;
}

int Device::reg_mr(Pd* pd, void* addr, size_t length, uint32_t access, Mr** out) {
  return mrs_.reg(pd, reinterpret_cast<uint64_t>(addr), length, access, out);
}

int Device::reg_mr(Pd* pd, void* addr, size_t length, uint64_t iova, uint32_t access, Mr** out) {
  return mrs_.reg(pd, reinterpret_cast<uint64_t>(addr), iova, length, access, out);
}

int Device::rereg_mr(Mr* mr, Pd* pd, void* addr, size_t length, uint32_t access) {
  return mrs_.rereg(mr, pd, reinterpret_cast<uint64_t>(addr), length, access);
}

int Device::rereg_mr(Mr* mr, Pd* pd, void* addr, size_t length, uint64_t iova, uint32_t access) {
  return mrs_.rereg(mr, pd, reinterpret_cast<uint64_t>(addr), iova, length, access);
}

int Device::dereg_mr(Mr* mr) { return mrs_.dereg(mr); }

int Device::alloc_mw(Pd* pd, MwType type, Mw** out) { return mrs_.alloc_mw(pd, type, out); }

int Device::dealloc_mw(Mw* mw) {
  mrs_.dealloc_mw(mw);
  return 0;
}

int Device::create_cq(uint32_t cqe, Cq** out) {
  if (cqe < 1 || cqe > params::kMaxCqe) return EINVAL;
  if (cqs_.size() >= params::kMaxCq) return ENOMEM;
  auto cq = std::make_unique<Cq>(next_handle_++, cqe);
  *out = cq.get();
  cqs_.push_back(std::move(cq));
  return 0;
}

int Device::resize_cq(Cq* cq, uint32_t cqe) {
  if (cqe < 1 || cqe > params::kMaxCqe) return EINVAL;
  return cq->resize(cqe);
}

int Device::destroy_cq(Cq* cq) {
  for (Qp* qp : qp_list_)
    if (qp->init_.send_cq == cq || qp->init_.recv_cq == cq) return EBUSY;
  for (const auto& s : srqs_)
    if (s->cq == cq) return EBUSY;
  erase_owned(cqs_, cq);
  return 0;
}

int Device::create_srq(Pd* pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit, Srq** out) {
  if (max_wr < 1 || max_wr > params::kMaxSrqWr || max_sge > params::kMaxSrqSge || limit > max_wr)
    return EINVAL;
  if (srqs_.size() >= params::kMaxSrq) return ENOMEM;
  auto srq = std::make_unique<Srq>(next_handle_++, pd, max_wr, max_sge);
  srq->limit = limit;
  ++pd->refs;
  *out = srq.get();
  srqs_.push_back(std::move(srq));
  return 0;
}

int Device::alloc_xrcd(Xrcd** out) {
  auto x = std::make_unique<Xrcd>();
  x->handle = next_handle_++;
  *out = x.get();
  xrcds_.push_back(std::move(x));
  return 0;
}

int Device::dealloc_xrcd(Xrcd* xrcd) {
  if (xrcd->refs) return EBUSY;
  erase_owned(xrcds_, xrcd);
  return 0;
}

int Device::create_xrc_srq(Pd* pd, Xrcd* xrcd, Cq* cq, uint32_t max_wr, uint32_t max_sge, uint32_t limit,
                           Srq** out) {
  if (!pd || !xrcd || !cq) return EINVAL;
  if (const int rc = create_srq(pd, max_wr, max_sge, limit, out)) return rc;
  (*out)->xrcd = xrcd;
  (*out)->cq = cq;
  ++xrcd->refs;
  return 0;
}

Srq* Device::find_srq(uint32_t srqn) const {
  for (const auto& s : srqs_)
    if (s->handle == srqn) return s.get();
  return nullptr;
}

int Device::modify_srq(Srq* srq, uint32_t /*max_wr*/, uint32_t limit, uint32_t mask) {
  constexpr uint32_t kSrqMaxWr = 1, kSrqLimit = 2;
  if (mask & ~(kSrqMaxWr | kSrqLimit)) return EINVAL;
  if (mask & kSrqMaxWr) return EINVAL;  // resizing an SRQ is not supported (no IBV_DEVICE_SRQ_RESIZE)
  if (mask & kSrqLimit) {
    if (limit > srq->rq.max_wr()) return EINVAL;
    srq->limit = limit;
  }
  return 0;
}

int Device::post_srq_recv(Srq* srq, const RecvWr& wr) { return srq->rq.post(wr); }

int Device::destroy_srq(Srq* srq) {
  if (srq->qp_refs) return EBUSY;
  --srq->pd->refs;
  if (srq->xrcd) {
    --srq->xrcd->refs;
    // XRC targets that last served from it forget it (a message it was filling is dropped).
    for (Qp* qp : qp_list_) {
      if (qp->init_.xrc != XrcRole::kTarget || qp->init_.srq != srq) continue;
      qp->init_.srq = nullptr;
      qp->init_.recv_cq = nullptr;
      qp->pd_ = nullptr;
      qp->resp_.wqe.reset();
      qp->resp_.msg = RespMsg::kIdle;
    }
  }
  erase_owned(srqs_, srq);
  return 0;
}

int Device::check_qp_init(const QpInitAttr& init) const {
  const QpCap& c = init.cap;
  switch (init.xrc) {
    case XrcRole::kNone:
      if (!init.send_cq || !init.recv_cq) return EINVAL;
      break;
    case XrcRole::kInitiator:  // a send queue only
      if (!init.send_cq || init.srq || c.max_recv_wr || init.type != QpType::kRc) return EINVAL;
      break;
    case XrcRole::kTarget:  // no queue of its own: it serves requests from its domain's SRQs
      if (!init.xrcd || init.type != QpType::kRc) return EINVAL;
      break;
  }
  if (init.type != QpType::kRc && init.type != QpType::kUc && init.type != QpType::kUd) return EOPNOTSUPP;
  if (c.max_send_wr > params::kMaxQpWr || c.max_send_sge > params::kMaxSge ||
      c.max_inline_data > params::kMaxInline)
    return EINVAL;
  if (!init.srq && (c.max_recv_wr > params::kMaxQpWr || c.max_recv_sge > params::kMaxSge)) return EINVAL;
  if (qps_.size() >= params::kMaxQp) return ENOMEM;
  return 0;
}

int Device::create_gsi_qp(Pd* pd, const QpInitAttr& init, Qp** out) {
  if (init.type != QpType::kUd) return EINVAL;
  if (const int rc = check_qp_init(init)) return rc;
  if (qps_.count(params::kGsiQpn)) return EBUSY;
  place_qp(params::kGsiQpn, pd, init, out);
  return 0;
}

void Device::place_qp(uint32_t qpn, Pd* pd, const QpInitAttr& init, Qp** out) {
  auto qp = std::make_unique<Qp>(this, qpn, pd, init);
  if (init.xrc == XrcRole::kTarget) {
    qp->init_.send_cq = qp->init_.recv_cq = nullptr;
    qp->init_.srq = nullptr;
    qp->pd_ = nullptr;
    ++init.xrcd->refs;
  } else {
    ++pd->refs;
  }
  if (init.srq) ++init.srq->qp_refs;
  *out = qp.get();
  qp->list_pos_ = static_cast<uint32_t>(qp_list_.size());
  qp_list_.push_back(qp.get());
  qps_.emplace(qpn, std::move(qp));
}

int Device::create_qp(Pd* pd, const QpInitAttr& init, Qp** out) {
  if (const int rc = check_qp_init(init)) return rc;
  uint32_t qpn;
  if (cfg_.id_seed) {
    // Random, unused, and never one of the reserved numbers below kFirstQpn (QP0, QP1) or the multicast QPN
    // (kMaxQpn, 0xFFFFFF).
    do
      qpn = static_cast<uint32_t>(splitmix64(&qpn_rng_) % (params::kMaxQpn - params::kFirstQpn)) +
            params::kFirstQpn;
    while (qps_.count(qpn));
  } else {
    // The same range in order, wrapping before the multicast QPN.
    const auto step = [](uint32_t n) { return n + 1 >= params::kMcastQpn ? params::kFirstQpn : n + 1; };
    while (qps_.count(next_qpn_)) next_qpn_ = step(next_qpn_);
    qpn = next_qpn_;
    next_qpn_ = step(next_qpn_);
  }
  // Inline data takes the room of a send queue entry's gather list, as in Soft-RoCE: a QP gets at least the
  // bytes its send SGEs would take, whatever it asked for, and its creator is told (ibv_create_qp updates
  // the caps). Programs that post a few bytes inline without asking for any (rdma_xclient) work as on
  // hardware, where a ConnectX rounds up to its WQE size too.
  QpInitAttr eff = init;
  eff.cap.max_inline_data =
      std::max(init.cap.max_inline_data, std::min(init.cap.max_send_sge * kSgeBytes, params::kMaxInline));
  place_qp(qpn, pd, eff, out);
  return 0;
}

int Device::destroy_qp(Qp* qp) {
  if (!qp->error()) qp->resp_flush_acks();
  if (qp->init_.xrc == XrcRole::kTarget) {
    --qp->init_.xrcd->refs;
  } else {
    --qp->pd_->refs;
    if (qp->init_.srq) --qp->init_.srq->qp_refs;
  }
  mrs_.qp_gone(qp);
  mcast_leave_all(qp);
  qp_list_.erase(qp_list_.begin() + qp->list_pos_);
  for (uint32_t i = qp->list_pos_; i < qp_list_.size(); ++i) qp_list_[i]->list_pos_ = i;
  if (qp->active_) active_.erase(std::find(active_.begin(), active_.end(), qp));
  qps_.erase(qp->qpn());
  return 0;
}

Qp* Device::find_qp(uint32_t qpn) const {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second.get();
}

bool Device::get_async_event(AsyncEvent* ev) {
  if (events_.empty()) return false;
  *ev = events_.front();
  events_.pop_front();
  return true;
}

void Device::raise(EventType type, uint32_t element) {
  events_.push_back(AsyncEvent{type, element});
  if (on_async_event) on_async_event();
}

void Device::set_gid(unsigned index, const Gid& gid) {
  if (index >= gids_.size()) return;
  gids_[index] = gid;
  if (index == 0) cfg_.gid = gid;
  extra_gids_ = static_cast<unsigned>(
      std::count_if(gids_.begin() + 1, gids_.end(), [](const Gid& g) { return g != Gid{}; }));
}

const Gid* Device::gid(unsigned index) const {
  return index < gids_.size() && gids_[index] != Gid{} ? &gids_[index] : nullptr;
}

bool Device::resolve_mac(const Gid& gid, wire::MacAddr* mac) const {
  // A group has no neighbour to ask: its frames go to the group's Ethernet address.
  if (wire::is_multicast_gid(gid)) {
    *mac = wire::multicast_mac(gid);
    return true;
  }
  if (cfg_.resolve) return cfg_.resolve(gid, mac);
  *mac = mac_for_gid(gid);
  return true;
}

PktBuf* Device::alloc_tx() {
  if (txq_count_ == kTxQueue) flush_tx();
  if (tx_blocked_ || txq_count_ == kTxQueue) return nullptr;
  PktBuf* buf;
  if (io_->alloc_burst(&buf, 1) == 1) return buf;
  flush_tx();  // the pool may be waiting on our own unsent frames
  if (io_->alloc_burst(&buf, 1) == 1) return buf;
  pool_empty_ = true;
  cnt_.add(Counter::kTxNoBuffer);
  return nullptr;
}

void Device::transmit(PktBuf* buf, bool loopback) {
  cnt_.add(Counter::kTxPackets);
  cnt_.add(Counter::kTxBytes, buf->len);
  if (loopback) {
    loopback_.push_back(buf);
    return;
  }
  txq_[txq_count_++] = buf;
  if (txq_count_ >= kBurst) flush_tx();
}

void Device::flush_tx() {
  uint16_t sent = 0;
  while (sent < txq_count_) {
    const uint16_t n = io_->tx_burst(txq_ + sent, static_cast<uint16_t>(txq_count_ - sent));
    if (n == 0) break;
    sent = static_cast<uint16_t>(sent + n);
  }
  std::copy(txq_ + sent, txq_ + txq_count_, txq_);
  txq_count_ = static_cast<uint16_t>(txq_count_ - sent);
  tx_blocked_ = txq_count_ != 0;
  if (tx_blocked_) cnt_.add(Counter::kTxRingFull);
}

uint32_t Device::progress(uint64_t now_hint) {
  uint32_t work = 0;
  PktBuf* rx[kBurst];
  uint16_t n = io_->rx_burst(rx, kBurst);
  // Received packets are stamped when they arrive (RTT samples, ACK coalescing); an empty burst may take
  // the caller's time.
  pass_now_ = latest(n || !now_hint ? clock_->now_ns_unordered() : now_hint);
  for (uint16_t i = 0; i < n; ++i) handle_rx(rx[i]);
  if (n) io_->free_burst(rx, n);
  work += n;
  for (uint32_t i = 0; i < kBurst && !loopback_.empty(); ++i, ++work) {
    PktBuf* b = loopback_.front();
    loopback_.pop_front();
    handle_rx(b);
    io_->free_burst(&b, 1);
  }

  // Received packets took time to handle: timers and pacing see the time after them.
  if (work) pass_now_ = latest(clock_->now_ns_unordered());
  const uint64_t t = pass_now_;
  for (size_t i = 0; i < active_.size(); ++i)
    if (active_[i]->next_timer() <= t) active_[i]->on_timer(t);

  pool_empty_ = false;
  flush_tx();
  const uint32_t before_tx = work;
  if (!tx_blocked_) {
    // Round robin over the device's QPs in creation order, starting one further each pass; only active
    // QPs can have anything to send, so the turn goes through them from the first at or after the start.
    const size_t nqp = qp_list_.size(), nact = active_.size();
    if (nact) {
      const size_t first = static_cast<size_t>(active_at(rr_next_) - active_.begin());
      for (size_t k = 0; k < nact; ++k) {
        Qp* qp = active_[(first + k) % nact];
        if (qp->has_tx_work()) work += qp->transmit(params::kTxBudgetPerQp);
      }
    }
    if (nqp) rr_next_ = static_cast<uint32_t>((rr_next_ + 1) % nqp);
    flush_tx();
  }
  retire_idle();
  // A pass that worked ends at a time read after its work (a long message takes microseconds to build).
  if (work != before_tx)
    last_pass_ns_ = latest(clock_->now_ns_unordered());
  else
    last_pass_ns_ = work ? pass_now_ : 0;
  pass_now_ = 0;
  return work;
}

void Device::retire_idle() {
  size_t kept = 0;
  for (Qp* qp : active_) {
    if (qp->has_tx_work() || qp->next_timer() != kNever || qp->next_tx_time() != kNever)
      active_[kept++] = qp;
    else
      qp->active_ = false;
  }
  active_.resize(kept);
}

uint64_t Device::next_deadline() const {
  if (!loopback_.empty()) return 0;
  uint64_t d = pool_empty_ ? now() + 1000 : kNever;
  for (const Qp* qp : active_) {
    d = std::min(d, qp->next_timer());
    // While the port refuses frames, only its draining (which wakes the caller) lets the QPs send again.
    if (!tx_blocked_ && !pool_empty_) d = std::min(d, qp->next_tx_time());
  }
  return d;
}

}  // namespace uroce
