// Protection domains, memory regions and address handles.
#include <cstring>
#include <new>

#include "provider/provider.h"

namespace uroce::provider {

namespace {

ibv_pd* alloc_pd(ibv_context* c) {
  auto* p = new (std::nothrow) UPd{};
  if (!p) return errno = ENOMEM, nullptr;
  std::lock_guard lock(engine(c).mu());
  if (int e = engine(c).dev().alloc_pd(&p->pd)) {
    delete p;
    return errno = e, nullptr;
  }
  p->ibv.context = c;
  p->ibv.handle = p->pd->handle;
  return &p->ibv;
}

int dealloc_pd(ibv_pd* ibv) {
  UPd* p = upd(ibv);
  std::lock_guard lock(engine(ibv->context).mu());
  if (int e = engine(ibv->context).dev().dealloc_pd(p->pd)) return e;
  delete p;
  return 0;
}

// `hca_va` is the MR's I/O virtual address: what SGEs, RDMA requests and window binds name it by
// (ibv_reg_mr_iova2; plain ibv_reg_mr passes addr). With IBV_ACCESS_ON_DEMAND nothing is pinned (nothing ever
// is here) and the region may cover unmapped memory; ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND | ...) is the
// implicit ODP region over the whole address space.
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) {
  auto* m = new (std::nothrow) UMr{};
  if (!m) return errno = ENOMEM, nullptr;
  Engine& e = engine(pd->context);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().reg_mr(upd(pd)->pd, addr, length, hca_va, static_cast<uint32_t>(access), &m->mr)) {
    delete m;
    return errno = err, nullptr;
  }
  ibv_mr& mr = m->vmr.ibv_mr;
  mr.context = pd->context;
  mr.pd = pd;
  mr.addr = addr;
  mr.length = length;
  mr.handle = m->mr->lkey;
  mr.lkey = m->mr->lkey;
  mr.rkey = m->mr->rkey;
  m->vmr.access = access;
  return &mr;
}

int rereg_mr(verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  UMr* m = reinterpret_cast<UMr*>(vmr);
  ibv_mr& mr = vmr->ibv_mr;
  if (flags & ~(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS))
    return EINVAL;
  ibv_pd* new_pd = (flags & IBV_REREG_MR_CHANGE_PD) ? pd : mr.pd;
  // A new translation also moves the I/O virtual address to the new address, as libibverbs passes it to the
  // kernel (which has no separate IOVA for rereg); otherwise the region keeps its IOVA.
  void* new_addr = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? addr : mr.addr;
  const uint64_t new_iova =
      (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? reinterpret_cast<uint64_t>(addr) : m->mr->iova;
  const size_t new_len = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? length : mr.length;
  const int new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? access : vmr->access;
  Engine& e = engine(mr.context);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().rereg_mr(m->mr, upd(new_pd)->pd, new_addr, new_len, new_iova,
                                 static_cast<uint32_t>(new_access)))
    return err;
  mr.pd = new_pd;
  mr.addr = new_addr;
  mr.length = new_len;
  mr.lkey = mr.handle = m->mr->lkey;
  mr.rkey = m->mr->rkey;
  vmr->access = new_access;
  return 0;
}

int dereg_mr(verbs_mr* vmr) {
  UMr* m = reinterpret_cast<UMr*>(vmr);
  Engine& e = engine(vmr->ibv_mr.context);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().dereg_mr(m->mr)) return err;
  delete m;
  return 0;
}

struct UMw {
  ibv_mw ibv;
  Mw* mw;
};

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  static_assert(IBV_MW_TYPE_1 == static_cast<int>(MwType::k1) &&
                IBV_MW_TYPE_2 == static_cast<int>(MwType::k2));
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) return errno = EINVAL, nullptr;
  auto* w = new (std::nothrow) UMw{};
  if (!w) return errno = ENOMEM, nullptr;
  Engine& e = engine(pd->context);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().alloc_mw(upd(pd)->pd, static_cast<MwType>(type), &w->mw)) {
    delete w;
    return errno = err, nullptr;
  }
  w->ibv.context = pd->context;
  w->ibv.pd = pd;
  w->ibv.rkey = w->mw->rkey;
  w->ibv.handle = w->mw->rkey;
  w->ibv.type = type;
  return &w->ibv;
}

int dealloc_mw(ibv_mw* ibv) {
  auto* w = reinterpret_cast<UMw*>(ibv);
  Engine& e = engine(ibv->context);
  {
    std::lock_guard lock(e.mu());
    e.dev().dealloc_mw(w->mw);
  }
  delete w;
  return 0;
}

// ibv_bind_mw: a type 1 window is bound (or, with length 0, unbound) by a bind WR on `qp`'s send queue; its
// completion is IBV_WC_BIND_MW. The window's new key (the next key byte, ibv_inc_rkey) is in mw->rkey at
// once, as rdma-core providers set it.
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mb) {
  if (mw->type != IBV_MW_TYPE_1) return EINVAL;
  SendWr wr;
  wr.wr_id = mb->wr_id;
  wr.opcode = WrOpcode::kBindMw;
  wr.send_flags = static_cast<uint32_t>(mb->send_flags) & (kSendSignaled | kSendFence);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  if (int err = mw_bind_from(mw, rkey, mb->bind_info, &wr.bind)) return err;
  size_t bad = 0;
  if (int err = post_send_batch(uqp(qp), &wr, 1, &bad)) return err;
  mw->rkey = rkey;
  return 0;
}

ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  // RoCE addresses by GID: an address handle without a GRH cannot reach anything (IBV_AH_ATTR: is_global).
  if (!attr->is_global || attr->port_num != 1 || attr->grh.sgid_index >= params::kGidTableLen)
    return errno = EINVAL, nullptr;
  auto* ah = new (std::nothrow) UAh{};
  if (!ah) return errno = ENOMEM, nullptr;
  ah->ibv.context = pd->context;
  ah->ibv.pd = pd;
  ah->av = av_from(*attr);
  return &ah->ibv;
}

int destroy_ah(ibv_ah* ah) {
  delete reinterpret_cast<UAh*>(ah);
  return 0;
}

}  // namespace

int mw_bind_from(const ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& info, MwBind* out) {
  if (!info.mr && (info.addr || info.length)) return EINVAL;
  if (info.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;
  if (info.mr && info.mr->pd != mw->pd) return EPERM;
  out->mw_rkey = mw->rkey;
  out->new_rkey = rkey;
  out->mr_lkey = info.mr ? info.mr->lkey : 0;
  out->addr = info.addr;
  out->length = info.length;
  out->access = info.mw_access_flags;
  return 0;
}

AddressVector av_from(const ibv_ah_attr& a) {
  AddressVector av;
  std::memcpy(av.dgid.data(), a.grh.dgid.raw, 16);
  av.sgid_index = a.grh.sgid_index;
  av.flow_label = a.grh.flow_label;
  av.hop_limit = a.grh.hop_limit;
  av.traffic_class = a.grh.traffic_class;
  av.sl = a.sl;
  return av;
}

void fill_mr_ops(verbs_context_ops* ops) {
  ops->alloc_pd = alloc_pd;
  ops->dealloc_pd = dealloc_pd;
  ops->reg_mr = reg_mr;
  ops->rereg_mr = rereg_mr;
  ops->dereg_mr = dereg_mr;
  ops->alloc_mw = alloc_mw;
  ops->dealloc_mw = dealloc_mw;
  ops->bind_mw = bind_mw;
  ops->create_ah = create_ah;
  ops->destroy_ah = destroy_ah;
}

}  // namespace uroce::provider
