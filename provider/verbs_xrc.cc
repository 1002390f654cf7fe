// XRC: domains (ibv_open_xrcd/ibv_close_xrcd), SRQs created through ibv_create_srq_ex (basic and XRC) and
// their numbers (ibv_get_srq_num). XRC QPs are created in verbs_qp.cc.
//
// A domain opened with a file descriptor is the one of that file's inode, as with the kernel: every open of
// the same file in this process gets the same domain (O_CREAT makes it on first use, O_EXCL refuses an
// existing one). Processes do not share domains: each process is its own RNIC.
#include <fcntl.h>
#include <sys/stat.h>

#include <map>
#include <new>
#include <tuple>

#include "provider/provider.h"

namespace uroce::provider {

namespace {

struct SharedXrcd {
  Xrcd* xrcd;
  int opens;
};
// (engine, st_dev, st_ino) -> the domain; under the engine's lock.
using InodeKey = std::tuple<const Engine*, dev_t, ino_t>;
std::map<InodeKey, SharedXrcd>& inode_domains() {
  static auto* m = new std::map<InodeKey, SharedXrcd>;  // never destroyed: used from atexit paths too
  return *m;
}

ibv_xrcd* open_xrcd(ibv_context* c, ibv_xrcd_init_attr* a) {
  constexpr uint32_t kKnown = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  if (!a || (a->comp_mask & ~kKnown)) return errno = EINVAL, nullptr;
  const int fd = (a->comp_mask & IBV_XRCD_INIT_ATTR_FD) ? a->fd : -1;
  const int oflags = (a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ? a->oflags : 0;
  if (oflags & ~(O_CREAT | O_EXCL)) return errno = EINVAL, nullptr;
  if (fd < 0 && !(oflags & O_CREAT)) return errno = EINVAL, nullptr;  // a private domain is always new
  InodeKey key{};
  if (fd >= 0) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return errno = EBADF, nullptr;
    key = InodeKey{&engine(c), st.st_dev, st.st_ino};
  }
  auto* x = new (std::nothrow) UXrcd{};
  if (!x) return errno = ENOMEM, nullptr;
  Engine& e = engine(c);
  std::lock_guard lock(e.mu());
  if (fd >= 0) {
    auto& m = inode_domains();
    auto it = m.find(key);
    if (it != m.end()) {
      if (oflags & O_EXCL) {
        delete x;
        return errno = EEXIST, nullptr;
      }
      ++it->second.opens;
      x->xrcd = it->second.xrcd;
    } else if (!(oflags & O_CREAT)) {
      delete x;
      return errno = ENOENT, nullptr;
    }
  }
  if (!x->xrcd) {
    if (int err = e.dev().alloc_xrcd(&x->xrcd)) {
      delete x;
      return errno = err, nullptr;
    }
    if (fd >= 0) inode_domains()[key] = SharedXrcd{x->xrcd, 1};
  }
  x->vxrcd.xrcd.context = c;
  x->vxrcd.handle = x->xrcd->handle;
  return &x->vxrcd.xrcd;
}

int close_xrcd(ibv_xrcd* ibv) {
  UXrcd* x = uxrcd(ibv);
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  auto& m = inode_domains();
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it->second.xrcd != x->xrcd) continue;
    if (--it->second.opens > 0) {  // another open of the same file still holds it
      delete x;
      return 0;
    }
    if (int err = e.dev().dealloc_xrcd(x->xrcd)) {
      ++it->second.opens;
      return err;
    }
    m.erase(it);
    delete x;
    return 0;
  }
  if (int err = e.dev().dealloc_xrcd(x->xrcd)) return err;  // EBUSY while SRQs or QPs use it
  delete x;
  return 0;
}

ibv_srq* create_srq_ex(ibv_context* c, ibv_srq_init_attr_ex* a) {
  constexpr uint32_t kKnown =
      IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  if (a->comp_mask & ~kKnown) return errno = EOPNOTSUPP, nullptr;  // tag matching SRQs
  const ibv_srq_type type = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type : IBV_SRQT_BASIC;
  if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC) return errno = EOPNOTSUPP, nullptr;
  if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd) return errno = EINVAL, nullptr;
  const bool xrc = type == IBV_SRQT_XRC;
  if (xrc && (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd ||
              !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->cq))
    return errno = EINVAL, nullptr;
  auto* s = new (std::nothrow) USrq{};
  if (!s) return errno = ENOMEM, nullptr;
  Engine& e = engine(c);
  std::lock_guard lock(e.mu());
  const int err =
      xrc ? e.dev().create_xrc_srq(upd(a->pd)->pd, uxrcd(a->xrcd)->xrcd, ucq(a->cq)->cq, a->attr.max_wr,
                                   a->attr.max_sge, a->attr.srq_limit, &s->srq)
          : e.dev().create_srq(upd(a->pd)->pd, a->attr.max_wr, a->attr.max_sge, a->attr.srq_limit, &s->srq);
  if (err) {
    delete s;
    return errno = err, nullptr;
  }
  ibv_srq& ibv = s->vsrq.srq;
  ibv.context = c;
  ibv.srq_context = a->srq_context;
  ibv.pd = a->pd;
  ibv.handle = s->srq->handle;
  pthread_mutex_init(&ibv.mutex, nullptr);
  pthread_cond_init(&ibv.cond, nullptr);
  ibv.events_completed = 0;
  s->vsrq.srq_type = type;
  if (xrc) {
    s->vsrq.xrcd = &uxrcd(a->xrcd)->vxrcd;
    s->vsrq.cq = a->cq;
  }
  s->vsrq.srq_num = s->srq->handle;
  e.srq_events[ibv.handle] = {&ibv, async_wfd(c)};
  return &ibv;
}

int get_srq_num(ibv_srq* ibv, uint32_t* num) {
  *num = usrq(ibv)->srq->handle;
  return 0;
}

}  // namespace

void fill_xrc_ops(verbs_context_ops* ops) {
  ops->open_xrcd = open_xrcd;
  ops->close_xrcd = close_xrcd;
  ops->create_srq_ex = create_srq_ex;
  ops->get_srq_num = get_srq_num;
}

}  // namespace uroce::provider
