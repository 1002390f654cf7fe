// The ibv_qp_ex work-request API (ibv_wr_start / ibv_wr_<op> / ibv_wr_set_* / ibv_wr_complete). Each
// ibv_wr_<op> opens a WR, the data setter finishes it, and the batch is posted as a whole by wr_complete (or
// dropped by wr_abort), with the first error returned there as the API specifies.
#include <cstring>

#include "provider/provider.h"
#include "transport/params.h"

namespace uroce::provider {

namespace {

UQp* from(ibv_qp_ex* qp) { return reinterpret_cast<UQp*>(qp); }

PendingWr& open_wr(ibv_qp_ex* qp, WrOpcode op) {
  UQp* q = from(qp);
  PendingWr& p = q->ex_wrs.emplace_back();
  p.wr.wr_id = qp->wr_id;
  p.wr.send_flags = qp->wr_flags;
  p.wr.opcode = op;
  return p;
}

void rdma(ibv_qp_ex* qp, WrOpcode op, uint32_t rkey, uint64_t addr, __be32 imm = 0) {
  PendingWr& p = open_wr(qp, op);
  p.wr.rkey = rkey;
  p.wr.remote_addr = addr;
  p.wr.imm_data_be = imm;
}

void wr_send(ibv_qp_ex* qp) { open_wr(qp, WrOpcode::kSend); }
void wr_send_imm(ibv_qp_ex* qp, __be32 imm) { open_wr(qp, WrOpcode::kSendWithImm).wr.imm_data_be = imm; }
void wr_rdma_write(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr) {
  rdma(qp, WrOpcode::kRdmaWrite, rkey, addr);
}
void wr_rdma_write_imm(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr, __be32 imm) {
  rdma(qp, WrOpcode::kRdmaWriteWithImm, rkey, addr, imm);
}
void wr_rdma_read(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr) { rdma(qp, WrOpcode::kRdmaRead, rkey, addr); }
void wr_atomic_cmp_swp(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap) {
  rdma(qp, WrOpcode::kAtomicCmpAndSwp, rkey, addr);
  from(qp)->ex_wrs.back().wr.compare_add = compare;
  from(qp)->ex_wrs.back().wr.swap = swap;
}
void wr_atomic_fetch_add(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr, uint64_t add) {
  rdma(qp, WrOpcode::kAtomicFetchAndAdd, rkey, addr);
  from(qp)->ex_wrs.back().wr.compare_add = add;
}

// The 8 bytes are the WR's data (no SGE setter follows): they are copied now, as inline data.
void wr_atomic_write(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr, const void* value) {
  rdma(qp, WrOpcode::kAtomicWrite, rkey, addr);
  UQp* q = from(qp);
  PendingWr& p = q->ex_wrs.back();
  const size_t off = q->ex_inline.size();
  const auto* b = static_cast<const uint8_t*>(value);
  q->ex_inline.insert(q->ex_inline.end(), b, b + 8);
  p.wr.send_flags |= kSendInline;
  p.sge_first = static_cast<uint32_t>(q->ex_sges.size());
  p.sge_count = 1;
  q->ex_sges.push_back(Sge{off, 8, 0});
}

void wr_bind_mw(ibv_qp_ex* qp, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
  PendingWr& p = open_wr(qp, WrOpcode::kBindMw);
  // A BIND_MW WR binds type 2 windows; type 1 windows are bound by ibv_bind_mw.
  int err = mw && mw->type == IBV_MW_TYPE_2 && info ? mw_bind_from(mw, rkey, *info, &p.wr.bind) : EINVAL;
  if (err && !from(qp)->ex_err) from(qp)->ex_err = err;
}
void wr_local_inv(ibv_qp_ex* qp, uint32_t rkey) { open_wr(qp, WrOpcode::kLocalInv).wr.imm_data_be = rkey; }
void wr_send_inv(ibv_qp_ex* qp, uint32_t rkey) { open_wr(qp, WrOpcode::kSendWithInv).wr.imm_data_be = rkey; }

// A setter with no WR open is an application error: remember it for wr_complete.
PendingWr* current(ibv_qp_ex* qp) {
  UQp* q = from(qp);
  if (q->ex_wrs.empty()) {
    q->ex_err = EINVAL;
    return nullptr;
  }
  return &q->ex_wrs.back();
}

void wr_set_ud_addr(ibv_qp_ex* qp, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  PendingWr* p = current(qp);
  if (!p) return;
  p->has_av = true;
  p->av = reinterpret_cast<UAh*>(ah)->av;
  p->wr.remote_qpn = remote_qpn;
  p->wr.remote_qkey = remote_qkey;
}

void wr_set_xrc_srqn(ibv_qp_ex* qp, uint32_t srqn) {
  if (PendingWr* p = current(qp)) p->wr.xrc_srqn = srqn;
}

void wr_set_sge_list(ibv_qp_ex* qp, size_t n, const ibv_sge* sges) {
  PendingWr* p = current(qp);
  if (!p) return;
  UQp* q = from(qp);
  p->sge_first = static_cast<uint32_t>(q->ex_sges.size());
  p->sge_count = static_cast<uint32_t>(n);
  for (size_t i = 0; i < n; ++i) q->ex_sges.push_back(Sge{sges[i].addr, sges[i].length, sges[i].lkey});
}

void wr_set_sge(ibv_qp_ex* qp, uint32_t lkey, uint64_t addr, uint32_t length) {
  const ibv_sge s{addr, length, lkey};
  wr_set_sge_list(qp, 1, &s);
}

void wr_set_inline_data_list(ibv_qp_ex* qp, size_t n, const ibv_data_buf* bufs) {
  PendingWr* p = current(qp);
  if (!p) return;
  UQp* q = from(qp);
  size_t len = 0;
  for (size_t i = 0; i < n; ++i) len += bufs[i].length;
  if (len > params::kMaxInline) {
    q->ex_err = EINVAL;
    return;
  }
  // The inline bytes are copied now; their address is fixed up at wr_complete (the buffer may grow).
  const size_t off = q->ex_inline.size();
  for (size_t i = 0; i < n; ++i) {
    const auto* b = static_cast<const uint8_t*>(bufs[i].addr);
    q->ex_inline.insert(q->ex_inline.end(), b, b + bufs[i].length);
  }
  p->wr.send_flags |= kSendInline;
  p->sge_first = static_cast<uint32_t>(q->ex_sges.size());
  p->sge_count = 1;
  q->ex_sges.push_back(Sge{off, static_cast<uint32_t>(len), 0});
}

void wr_set_inline_data(ibv_qp_ex* qp, void* addr, size_t length) {
  const ibv_data_buf b{addr, length};
  wr_set_inline_data_list(qp, 1, &b);
}

void wr_start(ibv_qp_ex* qp) {
  UQp* q = from(qp);
  q->ex_wrs.clear();
  q->ex_sges.clear();
  q->ex_inline.clear();
  q->ex_err = 0;
}

void wr_abort(ibv_qp_ex* qp) { wr_start(qp); }

int wr_complete(ibv_qp_ex* qp) {
  UQp* q = from(qp);
  int err = q->ex_err;
  if (!err) {
    std::vector<SendWr>& wrs = q->ex_post;
    wrs.clear();
    for (PendingWr& p : q->ex_wrs) {
      Sge* s = q->ex_sges.data() + p.sge_first;
      if (p.wr.send_flags & kSendInline) s->addr = reinterpret_cast<uint64_t>(q->ex_inline.data() + s->addr);
      p.wr.sg_list = s;
      p.wr.num_sge = p.sge_count;
      if (p.has_av) p.wr.ah = &p.av;
      wrs.push_back(p.wr);
    }
    size_t bad = 0;
    err = post_send_batch(q, wrs.data(), wrs.size(), &bad);
  }
  wr_start(qp);
  return err;
}

}  // namespace

void init_qp_ex(UQp* q, uint64_t ops) {
  ibv_qp_ex& ex = q->vqp.qp_ex;
  ex.wr_start = wr_start;
  ex.wr_complete = wr_complete;
  ex.wr_abort = wr_abort;
  if (ops & IBV_QP_EX_WITH_SEND) ex.wr_send = wr_send;
  if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM) ex.wr_send_imm = wr_send_imm;
  if (ops & IBV_QP_EX_WITH_RDMA_WRITE) ex.wr_rdma_write = wr_rdma_write;
  if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) ex.wr_rdma_write_imm = wr_rdma_write_imm;
  if (ops & IBV_QP_EX_WITH_RDMA_READ) ex.wr_rdma_read = wr_rdma_read;
  if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) ex.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) ex.wr_atomic_fetch_add = wr_atomic_fetch_add;
  if (ops & IBV_QP_EX_WITH_BIND_MW) ex.wr_bind_mw = wr_bind_mw;
  if (ops & IBV_QP_EX_WITH_LOCAL_INV) ex.wr_local_inv = wr_local_inv;
  if (ops & IBV_QP_EX_WITH_SEND_WITH_INV) ex.wr_send_inv = wr_send_inv;
  if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE) ex.wr_atomic_write = wr_atomic_write;
  ex.wr_set_sge = wr_set_sge;
  ex.wr_set_sge_list = wr_set_sge_list;
  ex.wr_set_inline_data = wr_set_inline_data;
  ex.wr_set_inline_data_list = wr_set_inline_data_list;
  if (q->vqp.qp.qp_type == IBV_QPT_UD) ex.wr_set_ud_addr = wr_set_ud_addr;
  if (q->vqp.qp.qp_type == IBV_QPT_XRC_SEND) ex.wr_set_xrc_srqn = wr_set_xrc_srqn;
  q->ex_wrs.reserve(64);
  q->ex_sges.reserve(64);
}

}  // namespace uroce::provider
