// Queue pairs and shared receive queues: create (plain and _ex), modify, query, destroy, post_send,
// post_recv, multicast attach and detach, and the SRQ verbs.
#include <pthread.h>

#include <cstring>
#include <new>

#include "provider/provider.h"
#include "transport/params.h"

namespace uroce::provider {

static_assert(sizeof(Sge) == sizeof(ibv_sge) && offsetof(Sge, lkey) == offsetof(ibv_sge, lkey),
              "transport Sge has ibv_sge's layout, so SGE lists pass through unconverted");

namespace {

void init_event_sync(pthread_mutex_t* mu, pthread_cond_t* cond, uint32_t* events_completed) {
  pthread_mutex_init(mu, nullptr);
  pthread_cond_init(cond, nullptr);
  *events_completed = 0;
}

// XRC_SEND is an RC QP with an XRC initiator's role (a send queue only); XRC_RECV an XRC target of `xrcd`
// (no PD, CQs or queues of its own).
UQp* make_qp(ibv_context* c, ibv_pd* pd, ibv_qp_init_attr* a, ibv_xrcd* xrcd = nullptr,
             uint32_t create_flags = 0) {
  QpType type = QpType::kRc;
  XrcRole xrc = XrcRole::kNone;
  switch (a->qp_type) {
    case IBV_QPT_XRC_SEND:
      xrc = XrcRole::kInitiator;
      break;
    case IBV_QPT_XRC_RECV:
      xrc = XrcRole::kTarget;
      break;
    case IBV_QPT_RC:
      type = QpType::kRc;
      break;
    case IBV_QPT_UC:
      type = QpType::kUc;
      break;
    case IBV_QPT_UD:
      type = QpType::kUd;
      break;
    default:
      return errno = EOPNOTSUPP, nullptr;
  }
  if (xrc == XrcRole::kTarget) {
    if (!xrcd) return errno = EINVAL, nullptr;
    pd = nullptr;
    a->send_cq = a->recv_cq = nullptr;
    a->srq = nullptr;
    a->cap = ibv_qp_cap{};
  } else if (xrc == XrcRole::kInitiator) {
    if (!pd || !a->send_cq || a->srq) return errno = EINVAL, nullptr;
    a->recv_cq = nullptr;
    a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
  } else if (!pd || !a->send_cq || !a->recv_cq) {
    return errno = EINVAL, nullptr;
  }
  auto* q = new (std::nothrow) UQp{};
  if (!q) return errno = ENOMEM, nullptr;
  QpInitAttr init;
  init.type = type;
  init.xrc = xrc;
  init.xrcd = xrcd ? uxrcd(xrcd)->xrcd : nullptr;
  init.send_cq = a->send_cq ? ucq(a->send_cq)->cq : nullptr;
  init.recv_cq = a->recv_cq ? ucq(a->recv_cq)->cq : nullptr;
  init.srq = a->srq ? usrq(a->srq)->srq : nullptr;
  init.sq_sig_all = a->sq_sig_all;
  init.block_self_mcast_lb = create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
  init.cap = QpCap{a->cap.max_send_wr, a->cap.max_recv_wr, a->cap.max_send_sge, a->cap.max_recv_sge,
                   a->cap.max_inline_data};
  Engine& e = engine(c);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().create_qp(pd ? upd(pd)->pd : nullptr, init, &q->qp)) {
    delete q;
    return errno = err, nullptr;
  }
  ibv_qp& ibv = q->vqp.qp;
  ibv.context = c;
  ibv.qp_context = a->qp_context;
  ibv.pd = pd;
  ibv.send_cq = a->send_cq;
  ibv.recv_cq = a->recv_cq;
  ibv.srq = a->srq;
  ibv.handle = q->qp->qpn();
  ibv.qp_num = q->qp->qpn();
  ibv.state = IBV_QPS_RESET;
  ibv.qp_type = a->qp_type;
  if (xrcd) {
    q->vqp.comp_mask |= kVerbsQpXrcd;
    q->vqp.xrcd = &uxrcd(xrcd)->vxrcd;
  }
  init_event_sync(&ibv.mutex, &ibv.cond, &ibv.events_completed);
  if (a->srq) a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
  a->cap.max_inline_data = q->qp->attr().cap.max_inline_data;  // rounded up to the gather list's room
  e.qp_events[ibv.qp_num] = {&ibv, async_wfd(c)};
  return q;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* a) {
  UQp* q = make_qp(pd->context, pd, a);
  return q ? &q->vqp.qp : nullptr;
}

ibv_qp* create_qp_ex(ibv_context* c, ibv_qp_init_attr_ex* a) {
  constexpr uint32_t kSupported = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                                  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;
  ibv_xrcd* xrcd = nullptr;
  if (a->qp_type == IBV_QPT_XRC_RECV) {  // a target belongs to a domain, not to a PD
    if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd) return errno = EINVAL, nullptr;
    xrcd = a->xrcd;
  } else if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD)) {
    return errno = EINVAL, nullptr;
  }
  if (a->comp_mask & ~kSupported) return errno = EOPNOTSUPP, nullptr;
  // Of the creation flags only the block of the QP's own multicast loopback (mckey -l asks for it); a
  // ConnectX has it, Linux rxe refuses every flag. The others ask for hardware features uroce does not have.
  const uint32_t create_flags = (a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) ? a->create_flags : 0;
  if (create_flags & ~uint32_t{IBV_QP_CREATE_BLOCK_SELF_MCAST_LB}) return errno = EOPNOTSUPP, nullptr;
  // The ibv_wr_* operations each QP type can post (IBA table 39; ATOMIC WRITE is RC only, like the other
  // atomics). Asking for one the type cannot do fails the create, as on other providers.
  constexpr uint64_t kUdOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
  constexpr uint64_t kUcOps = kUdOps | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                              IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
  constexpr uint64_t kRcOps = kUcOps | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                              IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV |
                              IBV_QP_EX_WITH_ATOMIC_WRITE;
  const uint64_t ops = a->qp_type == IBV_QPT_RC   ? kRcOps
                       : a->qp_type == IBV_QPT_UC ? kUcOps
                       : a->qp_type == IBV_QPT_UD ? kUdOps
                                                  : 0;
  if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a->send_ops_flags & ~ops))
    return errno = EOPNOTSUPP, nullptr;
  ibv_qp_init_attr base{};
  base.qp_context = a->qp_context;
  base.send_cq = a->send_cq;
  base.recv_cq = a->recv_cq;
  base.srq = a->srq;
  base.cap = a->cap;
  base.qp_type = a->qp_type;
  base.sq_sig_all = a->sq_sig_all;
  UQp* q = make_qp(c, xrcd ? nullptr : a->pd, &base, xrcd, create_flags);
  if (!q) return nullptr;
  a->cap = base.cap;
  // A target serves its domain's SRQs and uses no PD, but libibverbs reports the PD its creator passed, and
  // librdmacm takes the id's PD from it: rdma_xserver then creates its XRC SRQ on that PD.
  if (xrcd && (a->comp_mask & IBV_QP_INIT_ATTR_PD)) q->vqp.qp.pd = a->pd;
  if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    q->vqp.comp_mask |= kVerbsQpEx;
    init_qp_ex(q, a->send_ops_flags);
  }
  return &q->vqp.qp;
}

int destroy_qp(ibv_qp* ibv) {
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  // Posts whose frames wait for the end of the caller's burst go out first, as a NIC's doorbell already
  // ran for them: mckey's sender posts its datagrams and destroys its QP without polling.
  e.flush_posted_locked();
  e.dev().destroy_qp(uqp(ibv)->qp);
  e.qp_events.erase(ibv->qp_num);
  delete uqp(ibv);
  return 0;
}

QpAttr qp_attr_from(const ibv_qp_attr& a) {
  QpAttr q;
  q.qp_state = static_cast<QpState>(a.qp_state);
  q.cur_qp_state = static_cast<QpState>(a.cur_qp_state);
  q.path_mtu = static_cast<Mtu>(a.path_mtu);
  q.qkey = a.qkey;
  q.rq_psn = a.rq_psn;
  q.sq_psn = a.sq_psn;
  q.dest_qp_num = a.dest_qp_num;
  q.qp_access_flags = static_cast<uint32_t>(a.qp_access_flags);
  q.ah = av_from(a.ah_attr);
  q.pkey_index = a.pkey_index;
  q.en_sqd_async_notify = a.en_sqd_async_notify;
  q.max_rd_atomic = a.max_rd_atomic;
  q.max_dest_rd_atomic = a.max_dest_rd_atomic;
  q.min_rnr_timer = a.min_rnr_timer;
  q.port_num = a.port_num;
  q.timeout = a.timeout;
  q.retry_cnt = a.retry_cnt;
  q.rnr_retry = a.rnr_retry;
  q.rate_limit_kbps = a.rate_limit;
  return q;
}

// The attributes of the half an XRC QP does not have are ignored, as the kernel's uverbs does before it
// checks the mask: an initiator has no responder, a target no requester. Programs written for RC set them
// anyway (perftest -c XRC sets MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER on its initiators), and with them in the
// mask the transition table refuses the call.
int ignored_for(ibv_qp_type type) {
  switch (type) {
    case IBV_QPT_XRC_SEND:
      return IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    case IBV_QPT_XRC_RECV:
      return IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
    default:
      return 0;
  }
}

int modify_qp(ibv_qp* ibv, ibv_qp_attr* a, int mask) {
  mask &= ~ignored_for(ibv->qp_type);
  // RoCE has no LID routing: a connected QP's address vector must carry a GRH.
  if ((mask & IBV_QP_AV) && !a->ah_attr.is_global) return EINVAL;
  if ((mask & IBV_QP_STATE) && a->qp_state > IBV_QPS_ERR) return EINVAL;
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  if (int err = uqp(ibv)->qp->modify(qp_attr_from(*a), static_cast<uint32_t>(mask))) return err;
  ibv->state = static_cast<ibv_qp_state>(uqp(ibv)->qp->state());
  e.progress_locked();
  return 0;
}

int query_qp(ibv_qp* ibv, ibv_qp_attr* out, int, ibv_qp_init_attr* init) {
  QpAttr a;
  {
    std::lock_guard lock(engine(ibv->context).mu());
    uqp(ibv)->qp->query(&a);
  }
  *out = ibv_qp_attr{};
  out->qp_state = static_cast<ibv_qp_state>(a.qp_state);
  out->cur_qp_state = static_cast<ibv_qp_state>(a.cur_qp_state);
  out->path_mtu = static_cast<ibv_mtu>(a.path_mtu);
  out->path_mig_state = IBV_MIG_MIGRATED;
  out->qkey = a.qkey;
  out->rq_psn = a.rq_psn;
  out->sq_psn = a.sq_psn;
  out->dest_qp_num = a.dest_qp_num;
  out->qp_access_flags = static_cast<int>(a.qp_access_flags);
  out->cap = ibv_qp_cap{a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge,
                        a.cap.max_inline_data};
  out->ah_attr.is_global = 1;
  out->ah_attr.port_num = 1;
  out->ah_attr.sl = a.ah.sl;
  std::memcpy(out->ah_attr.grh.dgid.raw, a.ah.dgid.data(), 16);
  out->ah_attr.grh.flow_label = a.ah.flow_label;
  out->ah_attr.grh.hop_limit = a.ah.hop_limit;
  out->ah_attr.grh.traffic_class = a.ah.traffic_class;
  out->ah_attr.grh.sgid_index = a.ah.sgid_index;
  out->pkey_index = a.pkey_index;
  out->en_sqd_async_notify = a.en_sqd_async_notify;
  out->sq_draining = a.sq_draining;
  out->max_rd_atomic = a.max_rd_atomic;
  out->max_dest_rd_atomic = a.max_dest_rd_atomic;
  out->min_rnr_timer = a.min_rnr_timer;
  out->port_num = a.port_num;
  out->timeout = a.timeout;
  out->retry_cnt = a.retry_cnt;
  out->rnr_retry = a.rnr_retry;
  out->rate_limit = a.rate_limit_kbps;
  if (init) {
    *init = ibv_qp_init_attr{};
    init->qp_context = ibv->qp_context;
    init->send_cq = ibv->send_cq;
    init->recv_cq = ibv->recv_cq;
    init->srq = ibv->srq;
    init->cap = out->cap;
    init->qp_type = ibv->qp_type;
    init->sq_sig_all = uqp(ibv)->qp->init_attr().sq_sig_all;
  }
  return 0;
}

// Returns 0 or the errno that fails the WR before it reaches the send queue.
int send_wr_from(const ibv_send_wr& w, SendWr* out) {
  SendWr& s = *out;
  s.wr_id = w.wr_id;
  s.sg_list = reinterpret_cast<const Sge*>(w.sg_list);
  s.num_sge = static_cast<uint32_t>(w.num_sge);
  s.opcode = static_cast<WrOpcode>(w.opcode);
  s.send_flags = w.send_flags;
  s.imm_data_be = w.imm_data;
  switch (w.opcode) {
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      s.remote_addr = w.wr.atomic.remote_addr;
      s.rkey = w.wr.atomic.rkey;
      s.compare_add = w.wr.atomic.compare_add;
      s.swap = w.wr.atomic.swap;
      break;
    case IBV_WR_BIND_MW:
      // Type 1 windows are bound by ibv_bind_mw only (IBA 10.6.7.2); a BIND_MW WR binds type 2 windows.
      if (!w.bind_mw.mw || w.bind_mw.mw->type != IBV_MW_TYPE_2) return EINVAL;
      s.num_sge = 0;
      return mw_bind_from(w.bind_mw.mw, w.bind_mw.rkey, w.bind_mw.bind_info, &s.bind);
    case IBV_WR_LOCAL_INV:
      s.num_sge = 0;
      break;
    default:
      s.remote_addr = w.wr.rdma.remote_addr;
      s.rkey = w.wr.rdma.rkey;
  }
  return 0;
}

int post_send(ibv_qp* ibv, ibv_send_wr* wr, ibv_send_wr** bad) {
  Engine& e = engine(ibv->context);
  Qp* qp = uqp(ibv)->qp;
  const bool ud = ibv->qp_type == IBV_QPT_UD;
  const bool xrc = ibv->qp_type == IBV_QPT_XRC_SEND;
  Engine::AppCall call(e);
  std::unique_lock lock(e.mu(), std::try_to_lock);
  const bool waited = !lock.owns_lock();
  if (waited) lock.lock();
  e.verb_entered_locked(call.entered());
  int err = 0;
  for (; wr; wr = wr->next) {
    if (__builtin_expect(wr->num_sge < 0, 0)) {
      err = EINVAL;
      break;
    }
    SendWr s;
    if (__builtin_expect((err = send_wr_from(*wr, &s)) != 0, 0)) break;
    if (ud) {
      if (__builtin_expect(!wr->wr.ud.ah, 0)) {
        err = EINVAL;
        break;
      }
      s.ah = &reinterpret_cast<const UAh*>(wr->wr.ud.ah)->av;
      s.remote_qpn = wr->wr.ud.remote_qpn;
      s.remote_qkey = wr->wr.ud.remote_qkey;
    }
    if (xrc) s.xrc_srqn = wr->qp_type.xrc.remote_srqn;
    if ((err = qp->post_send(s)) != 0) break;
  }
  if (err) *bad = wr;
  // The packets leave now, from the caller's thread, or at the burst's end.
  if (const uint64_t sent = e.posted_locked(call.entered()))
    call.saw(sent);
  else if (!waited)
    call.quick();
  return err;
}

int post_recv(ibv_qp* ibv, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Engine& e = engine(ibv->context);
  Qp* qp = uqp(ibv)->qp;
  Engine::AppCall call(e);
  std::unique_lock lock(e.mu(), std::try_to_lock);
  const bool waited = !lock.owns_lock();
  if (waited) lock.lock();
  int err = 0;
  for (; wr; wr = wr->next) {
    if (wr->num_sge < 0) {
      err = EINVAL;
      break;
    }
    if ((err = qp->post_recv(RecvWr{wr->wr_id, reinterpret_cast<const Sge*>(wr->sg_list),
                                    static_cast<uint32_t>(wr->num_sge)})) != 0)
      break;
  }
  if (err) *bad = wr;
  // A receive posted after the QP advertised no credit queues a credit update for the peer: send it now.
  if (qp->has_responses())
    call.saw(e.progress_locked(call.entered()));
  else if (!waited)
    call.quick();
  return err;
}

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* a) {
  auto* s = new (std::nothrow) USrq{};
  if (!s) return errno = ENOMEM, nullptr;
  Engine& e = engine(pd->context);
  std::lock_guard lock(e.mu());
  if (int err =
          e.dev().create_srq(upd(pd)->pd, a->attr.max_wr, a->attr.max_sge, a->attr.srq_limit, &s->srq)) {
    delete s;
    return errno = err, nullptr;
  }
  ibv_srq& ibv = s->vsrq.srq;
  ibv.context = pd->context;
  ibv.srq_context = a->srq_context;
  ibv.pd = pd;
  ibv.handle = s->srq->handle;
  init_event_sync(&ibv.mutex, &ibv.cond, &ibv.events_completed);
  s->vsrq.srq_type = IBV_SRQT_BASIC;
  e.srq_events[ibv.handle] = {&ibv, async_wfd(pd->context)};
  return &ibv;
}

int modify_srq(ibv_srq* ibv, ibv_srq_attr* a, int mask) {
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  return e.dev().modify_srq(usrq(ibv)->srq, a->max_wr, a->srq_limit, static_cast<uint32_t>(mask));
}

int query_srq(ibv_srq* ibv, ibv_srq_attr* a) {
  std::lock_guard lock(engine(ibv->context).mu());
  const Srq* s = usrq(ibv)->srq;
  a->max_wr = s->rq.max_wr();
  a->max_sge = s->rq.max_sge();
  a->srq_limit = s->limit;
  return 0;
}

int destroy_srq(ibv_srq* ibv) {
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().destroy_srq(usrq(ibv)->srq)) return err;
  e.srq_events.erase(ibv->handle);
  delete usrq(ibv);
  return 0;
}

int post_srq_recv(ibv_srq* ibv, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  int err = 0;
  for (; wr; wr = wr->next) {
    if (wr->num_sge < 0) {
      err = EINVAL;
      break;
    }
    if ((err = e.dev().post_srq_recv(usrq(ibv)->srq,
                                     RecvWr{wr->wr_id, reinterpret_cast<const Sge*>(wr->sg_list),
                                            static_cast<uint32_t>(wr->num_sge)})) != 0)
      break;
  }
  if (err) *bad = wr;
  return err;
}

// UD multicast (ibv_attach_mcast(3)): the device's groups (transport/mcast.cc). The LID is ignored, as the
// kernel ignores it on a RoCE port (IBA A17: RoCE has no LIDs).
int attach_mcast(ibv_qp* ibv, const ibv_gid* gid, uint16_t /*lid*/) {
  Gid g;
  std::memcpy(g.data(), gid->raw, g.size());
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  return e.dev().attach_mcast(uqp(ibv)->qp, g);
}

int detach_mcast(ibv_qp* ibv, const ibv_gid* gid, uint16_t /*lid*/) {
  Gid g;
  std::memcpy(g.data(), gid->raw, g.size());
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  return e.dev().detach_mcast(uqp(ibv)->qp, g);
}

// No enhanced connection establishment: answer as other non-ECE devices do.
int query_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
int set_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }

}  // namespace

void fill_qp_ops(verbs_context_ops* ops) {
  ops->create_qp = create_qp;
  ops->create_qp_ex = create_qp_ex;
  ops->destroy_qp = destroy_qp;
  ops->modify_qp = modify_qp;
  ops->query_qp = query_qp;
  ops->post_send = post_send;
  ops->post_recv = post_recv;
  ops->create_srq = create_srq;
  ops->modify_srq = modify_srq;
  ops->query_srq = query_srq;
  ops->destroy_srq = destroy_srq;
  ops->post_srq_recv = post_srq_recv;
  ops->attach_mcast = attach_mcast;
  ops->detach_mcast = detach_mcast;
  ops->query_ece = query_ece;
  ops->set_ece = set_ece;
}

int post_send_batch(UQp* q, const SendWr* wrs, size_t n, size_t* bad) {
  Engine& e = engine(q->vqp.qp.context);
  Engine::AppCall call(e);
  std::lock_guard lock(e.mu());
  int err = 0;
  size_t i = 0;
  for (; i < n; ++i)
    if ((err = q->qp->post_send(wrs[i])) != 0) break;
  *bad = i;
  call.saw(e.progress_locked(call.entered()));
  return err;
}

}  // namespace uroce::provider
