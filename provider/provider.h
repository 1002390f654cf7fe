// The provider's objects: each libibverbs object embeds the struct libibverbs knows (first) and points at the
// transport object behind it. Every entry point converts, takes the engine lock, calls the transport, and
// returns an errno; no exception crosses the C ABI.
#pragma once

#include <array>
#include <cerrno>
#include <mutex>
#include <vector>

#include "provider/abi.h"
#include "provider/engine.h"

namespace uroce::provider {

struct UContext {
  verbs_context ibv_ctx;  // must be first: libibverbs allocates and frees this struct
  Engine* engine;         // shared by every context of the device; kept alive by `ref`
  std::shared_ptr<Engine>* ref;
  int async_wfd;  // write end of the async event pipe; the read end is ibv_context::async_fd
};

struct UPd {
  ibv_pd ibv;
  Pd* pd;
};

struct UMr {
  verbs_mr vmr;
  Mr* mr;
};

struct UCq {
  verbs_cq vcq;
  Cq* cq;
  ibv_comp_channel* channel;
  uint32_t wc_flags;  // create_cq_ex: which read_* fields the application asked for
  Wc cur;             // create_cq_ex: the completion start_poll/next_poll moved to
  // poll_cq's batch, under the device lock: a buffer on its stack would be zeroed (1.5 KiB) on every call,
  // empty ones included.
  static constexpr int kBatch = 32;
  std::array<Wc, kBatch> batch;
};

struct USrq {
  verbs_srq vsrq;
  Srq* srq;
};

struct UXrcd {
  verbs_xrcd vxrcd;
  Xrcd* xrcd;
};

struct UAh {
  ibv_ah ibv;
  AddressVector av;
};

// A work request built through the ibv_qp_ex API, held until wr_complete posts the batch.
struct PendingWr {
  SendWr wr;
  uint32_t sge_first = 0, sge_count = 0;  // into UQp::ex_sges
  bool has_av = false;
  AddressVector av;
};

struct UQp {
  verbs_qp vqp;
  Qp* qp;
  // ibv_qp_ex batch between wr_start and wr_complete/wr_abort (qp_ex.cc). Inline data is copied into
  // ex_inline, and every inline WR refers to its bytes through one SGE.
  std::vector<PendingWr> ex_wrs;
  std::vector<Sge> ex_sges;
  std::vector<uint8_t> ex_inline;
  std::vector<SendWr> ex_post;  // wr_complete's batch; kept, so that a steady batch size allocates nothing
  int ex_err = 0;
};

// ibv_context is the last member of verbs_context, not the first: step back from it.
inline UContext* ucontext(ibv_context* c) {
  return reinterpret_cast<UContext*>(reinterpret_cast<char*>(c) - offsetof(UContext, ibv_ctx.context));
}
inline Engine& engine(ibv_context* c) { return *ucontext(c)->engine; }
inline int async_wfd(ibv_context* c) { return ucontext(c)->async_wfd; }
inline UPd* upd(ibv_pd* p) { return reinterpret_cast<UPd*>(p); }
inline UCq* ucq(ibv_cq* c) { return reinterpret_cast<UCq*>(c); }
inline UQp* uqp(ibv_qp* q) { return reinterpret_cast<UQp*>(q); }
inline USrq* usrq(ibv_srq* s) { return reinterpret_cast<USrq*>(s); }
inline UXrcd* uxrcd(ibv_xrcd* x) { return reinterpret_cast<UXrcd*>(x); }

// Fills the verbs ops table (verbs_*.cc each contribute their part).
void fill_device_ops(verbs_context_ops* ops);
void fill_mr_ops(verbs_context_ops* ops);
void fill_cq_ops(verbs_context_ops* ops);
void fill_qp_ops(verbs_context_ops* ops);
void fill_xrc_ops(verbs_context_ops* ops);

// ibv_qp_ex work-request builder (qp_ex.cc).
void init_qp_ex(UQp* q, uint64_t send_ops_flags);
// Posts the WRs of `wrs` (post_send's path, lock taken inside); returns the first error, with *bad its index.
int post_send_batch(UQp* q, const SendWr* wrs, size_t n, size_t* bad);

// Conversions between libibverbs and transport types.
AddressVector av_from(const ibv_ah_attr& a);
// A bind of `mw` to `info` with the new key `rkey` (verbs_mr.cc): 0, or the errno ibv_bind_mw(3) and
// ibv_post_send(3) fail it with before it reaches the send queue.
int mw_bind_from(const ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& info, MwBind* out);
void fill_ibv_wc(const Wc& w, ibv_wc* out);

}  // namespace uroce::provider
