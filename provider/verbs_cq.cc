// Completion queues: ibv_create_cq / ibv_create_cq_ex (with the ibv_cq_ex polling API), polling,
// notification through completion channels, resize and destroy.
#include <dlfcn.h>

#include <cstdlib>
#include <new>
#include <string>

#include "provider/provider.h"
#include "runtime/yield_backoff.h"
#include "transport/params.h"

namespace uroce::provider {

namespace {

// The preload shim creates completion channels (libibverbs would ask the kernel) and exports this to
// signal one. Without the shim no channel can exist, so a missing symbol is never needed.
using NotifyFn = int (*)(ibv_comp_channel*, ibv_cq*);
NotifyFn channel_notify() {
  static NotifyFn fn = reinterpret_cast<NotifyFn>(dlsym(RTLD_DEFAULT, "uroce_comp_channel_notify"));
  return fn;
}

constexpr uint64_t kSupportedWcFlags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                                       IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
                                       IBV_WC_EX_WITH_DLID_PATH_BITS;

UCq* make_cq(ibv_context* c, int cqe, ibv_comp_channel* channel, uint32_t comp_vector) {
  if (cqe < 1 || static_cast<uint32_t>(cqe) > params::kMaxCqe) return errno = EINVAL, nullptr;
  // The completion vector must be one the context has (ibv_create_cq(3): 0 .. num_comp_vectors - 1).
  if (comp_vector >= static_cast<uint32_t>(c->num_comp_vectors)) return errno = EINVAL, nullptr;
  auto* q = new (std::nothrow) UCq{};
  if (!q) return errno = ENOMEM, nullptr;
  Engine& e = engine(c);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().create_cq(static_cast<uint32_t>(cqe), &q->cq)) {
    delete q;
    return errno = err, nullptr;
  }
  q->channel = channel;
  ibv_cq* ibv = &q->vcq.cq;
  ibv->context = c;
  ibv->cqe = cqe;
  ibv->handle = q->cq->handle();
  if (channel) {
    q->cq->on_notify = [q](Cq*) {
      if (NotifyFn fn = channel_notify()) fn(q->channel, &q->vcq.cq);
    };
  }
  e.cq_events[q->cq->handle()] = {ibv, async_wfd(c)};
  return q;
}

ibv_cq* create_cq(ibv_context* c, int cqe, ibv_comp_channel* channel, int comp_vector) {
  UCq* q = make_cq(c, cqe, channel, static_cast<uint32_t>(comp_vector));
  return q ? &q->vcq.cq : nullptr;  // libibverbs runs verbs_init_cq on it
}

int destroy_cq(ibv_cq* ibv) {
  UCq* q = ucq(ibv);
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().destroy_cq(q->cq)) return err;
  e.cq_events.erase(ibv->handle);
  delete q;
  return 0;
}

// Called after every CQ poll, without the device lock. With UROCE_POLL_YIELD=1, a thread that has found
// nothing for a while lets other runnable threads have its core: through uroced, the switch is a third busy
// process, and with more busy pollers than cores the frame this thread waits for sits in uroced until it
// gets a core (ib_send_lat through uroced: median 55-87 us without, 11-15 us with). Not sooner than
// YieldBackoff::kSpinFirstNs, and off by default: over a direct pair it cost ib_write_bw ~15%. sched_yield
// returns at once when nothing else wants the core.
void after_poll(const Engine& e, bool found) {
  thread_local uint64_t empty_since = 0;
  if (found) {
    empty_since = 0;
  } else if (e.poll_yield()) {
    const uint64_t now = SteadyClock().now_ns();
    if (empty_since == 0) {
      empty_since = now;
    } else if (now - empty_since > runtime::YieldBackoff::kSpinFirstNs) {
      // Backs off when the core went to a process with work of its own.
      runtime::YieldBackoff::this_thread().yield(now);
    }
  }
}

int poll_cq(ibv_cq* ibv, int n, ibv_wc* wc) {
  if (n < 0) return -EINVAL;
  Engine& e = engine(ibv->context);
  Engine::AppCall call(e);
  // The pass runs only if the lock is free: when the progress thread holds it, it is running that pass now,
  // and this thread waits for it only to read the CQ.
  std::unique_lock lock(e.mu(), std::try_to_lock);
  const bool pass = lock.owns_lock();
  if (!pass) lock.lock();
  e.verb_entered_locked(call.entered());
  const uint64_t placed_before = e.dev().one_sided_requests();
  const uint64_t passed = pass ? e.progress_locked(call.entered()) : 0;
  if (passed)
    call.saw(passed);
  else if (pass)
    call.quick();  // its pass found nothing to do
  UCq* q = ucq(ibv);
  int total = 0;
  while (total < n) {
    const int got = q->cq->poll(std::min(n - total, UCq::kBatch), q->batch.data());
    for (int i = 0; i < got; ++i) fill_ibv_wc(q->batch[i], &wc[total + i]);
    total += got;
    if (got < UCq::kBatch) break;
  }
  // A poll that found its completions is where an application that goes on to spin on memory leaves.
  const uint64_t linger_from =
      total ? e.polled_completions_locked(placed_before, passed ? passed : call.entered())
            : Engine::kNoLinger;
  lock.unlock();
  if (const uint64_t t = e.linger(linger_from)) call.saw(t);
  after_poll(e, total != 0);
  return total;
}

int req_notify_cq(ibv_cq* ibv, int solicited_only) {
  Engine& e = engine(ibv->context);
  {
    std::lock_guard lock(e.mu());
    ucq(ibv)->cq->arm(solicited_only != 0);
    e.flush_posted_locked();
  }
  e.app_arming();
  // The application is about to block until a completion arrives and will drive nothing meanwhile: the
  // progress thread, perhaps backed off because this thread was polling, must take over now.
  e.wake_if_sleeping();
  return 0;
}

int resize_cq(ibv_cq* ibv, int cqe) {
  if (cqe < 1) return EINVAL;
  Engine& e = engine(ibv->context);
  std::lock_guard lock(e.mu());
  if (int err = e.dev().resize_cq(ucq(ibv)->cq, static_cast<uint32_t>(cqe))) return err;
  ibv->cqe = cqe;
  return 0;
}

// ibv_cq_ex: start_poll / next_poll move to a completion, the read_* functions return its fields.
UCq* from_ex(ibv_cq_ex* cq) { return reinterpret_cast<UCq*>(cq); }

int next_poll(ibv_cq_ex* cq) {
  UCq* q = from_ex(cq);
  Engine& e = engine(cq->context);
  Engine::AppCall call(e);
  std::lock_guard lock(e.mu());
  if (q->cq->poll(1, &q->cur) == 0) {
    call.saw(e.progress_locked(call.entered()));
    if (q->cq->poll(1, &q->cur) == 0) return ENOENT;
  }
  cq->wr_id = q->cur.wr_id;
  cq->status = static_cast<ibv_wc_status>(q->cur.status);
  return 0;
}
int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr && attr->comp_mask) return EINVAL;
  const int rc = next_poll(cq);
  after_poll(engine(cq->context), rc == 0);
  return rc;
}
void end_poll(ibv_cq_ex*) {}
ibv_wc_opcode read_opcode(ibv_cq_ex* cq) { return static_cast<ibv_wc_opcode>(from_ex(cq)->cur.opcode); }
uint32_t read_vendor_err(ibv_cq_ex* cq) { return from_ex(cq)->cur.vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* cq) { return from_ex(cq)->cur.byte_len; }
__be32 read_imm_data(ibv_cq_ex* cq) { return from_ex(cq)->cur.imm_data_be; }
uint32_t read_qp_num(ibv_cq_ex* cq) { return from_ex(cq)->cur.qp_num; }
uint32_t read_src_qp(ibv_cq_ex* cq) { return from_ex(cq)->cur.src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* cq) { return from_ex(cq)->cur.wc_flags; }
uint32_t read_slid(ibv_cq_ex* cq) { return from_ex(cq)->cur.slid; }
uint8_t read_sl(ibv_cq_ex* cq) { return from_ex(cq)->cur.sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* cq) { return from_ex(cq)->cur.dlid_path_bits; }

ibv_cq_ex* create_cq_ex(ibv_context* c, ibv_cq_init_attr_ex* attr) {
  if (attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS))
    return errno = EOPNOTSUPP, nullptr;
  if (attr->wc_flags & ~kSupportedWcFlags) return errno = EOPNOTSUPP, nullptr;  // e.g. completion timestamps
  UCq* q = make_cq(c, static_cast<int>(attr->cqe), attr->channel, attr->comp_vector);
  if (!q) return nullptr;
  q->wc_flags = static_cast<uint32_t>(attr->wc_flags);
  ibv_cq_ex* ex = &q->vcq.cq_ex;
  ex->start_poll = start_poll;
  ex->next_poll = next_poll;
  ex->end_poll = end_poll;
  ex->read_opcode = read_opcode;
  ex->read_vendor_err = read_vendor_err;
  ex->read_wc_flags = read_wc_flags;
  if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN) ex->read_byte_len = read_byte_len;
  if (attr->wc_flags & IBV_WC_EX_WITH_IMM) ex->read_imm_data = read_imm_data;
  if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM) ex->read_qp_num = read_qp_num;
  if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP) ex->read_src_qp = read_src_qp;
  if (attr->wc_flags & IBV_WC_EX_WITH_SLID) ex->read_slid = read_slid;
  if (attr->wc_flags & IBV_WC_EX_WITH_SL) ex->read_sl = read_sl;
  if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS) ex->read_dlid_path_bits = read_dlid_path_bits;
  // libibverbs initialises the CQ (verbs_init_cq: context, channel reference, cq_context) after this returns,
  // for ibv_create_cq_ex as for ibv_create_cq; doing it here too would take a second reference on the
  // completion channel, and ibv_destroy_comp_channel would then fail with EBUSY after the CQ is gone.
  return ex;
}

}  // namespace

void fill_ibv_wc(const Wc& w, ibv_wc* out) {
  out->wr_id = w.wr_id;
  out->status = static_cast<ibv_wc_status>(w.status);
  out->opcode = static_cast<ibv_wc_opcode>(w.opcode);
  out->vendor_err = w.vendor_err;
  out->byte_len = w.byte_len;
  out->imm_data = w.imm_data_be;
  out->qp_num = w.qp_num;
  out->src_qp = w.src_qp;
  out->wc_flags = w.wc_flags;
  out->pkey_index = w.pkey_index;
  out->slid = w.slid;
  out->sl = w.sl;
  out->dlid_path_bits = w.dlid_path_bits;
}

void fill_cq_ops(verbs_context_ops* ops) {
  ops->create_cq = create_cq;
  ops->create_cq_ex = create_cq_ex;
  ops->destroy_cq = destroy_cq;
  ops->poll_cq = poll_cq;
  ops->req_notify_cq = req_notify_cq;
  ops->resize_cq = resize_cq;
}

}  // namespace uroce::provider
