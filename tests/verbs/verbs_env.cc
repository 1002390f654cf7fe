#include "tests/verbs/verbs_env.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace uroce::test {

ibv_context* open_uroce() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* ctx = nullptr;
  for (int i = 0; list && i < n; ++i)
    if (std::strncmp(ibv_get_device_name(list[i]), "uroce", 5) == 0) {
      ctx = ibv_open_device(list[i]);
      break;
    }
  if (list) ibv_free_device_list(list);
  EXPECT_NE(ctx, nullptr) << "no uroce device: run this test under 'uroce run'";
  return ctx;
}

ibv_gid gid0(ibv_context* ctx) {
  ibv_gid g{};
  EXPECT_EQ(ibv_query_gid(ctx, 1, 0, &g), 0);
  return g;
}

void make_side(VerbsSide* s, ibv_qp_type type, size_t bytes, ibv_srq* srq, ibv_comp_channel* channel) {
  if (!s->ctx) s->ctx = open_uroce();
  ASSERT_NE(s->ctx, nullptr);
  s->pd = ibv_alloc_pd(s->ctx);
  ASSERT_NE(s->pd, nullptr);
  s->cq = ibv_create_cq(s->ctx, 256, nullptr, channel, 0);
  ASSERT_NE(s->cq, nullptr);
  s->buf.assign(bytes, 0);
  s->mr = ibv_reg_mr(
      s->pd, s->buf.data(), s->buf.size(),
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  ASSERT_NE(s->mr, nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  init.srq = srq;
  init.qp_type = type;
  init.cap = ibv_qp_cap{128, srq ? 0u : 128u, 4, 4, 64};
  s->qp = ibv_create_qp(s->pd, &init);
  ASSERT_NE(s->qp, nullptr) << strerror(errno);
}

VerbsSide::~VerbsSide() {
  if (qp) ibv_destroy_qp(qp);
  if (mr) ibv_dereg_mr(mr);
  if (cq) ibv_destroy_cq(cq);
  if (pd) ibv_dealloc_pd(pd);
  if (ctx) ibv_close_device(ctx);
}

void destroy_side(VerbsSide* s) {
  if (s->qp) {
    EXPECT_EQ(ibv_destroy_qp(s->qp), 0);
  }
  if (s->mr) {
    EXPECT_EQ(ibv_dereg_mr(s->mr), 0);
  }
  if (s->cq) {
    EXPECT_EQ(ibv_destroy_cq(s->cq), 0);
  }
  if (s->pd) {
    EXPECT_EQ(ibv_dealloc_pd(s->pd), 0);
  }
  if (s->ctx) {
    EXPECT_EQ(ibv_close_device(s->ctx), 0);
  }
  s->qp = nullptr;
  s->mr = nullptr;
  s->cq = nullptr;
  s->pd = nullptr;
  s->ctx = nullptr;
  s->buf.clear();
}

static int to_rts(ibv_qp* qp, const ibv_gid& dgid, uint32_t dqpn, uint8_t timeout, uint8_t retry,
                  uint8_t rnr) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return e;
  const bool rc = qp->qp_type == IBV_QPT_RC;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dqpn;
  a.rq_psn = 7;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = dgid;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (rc) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int e = ibv_modify_qp(qp, &a, mask)) return e;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  a.timeout = timeout;
  a.retry_cnt = retry;
  a.rnr_retry = rnr;
  a.max_rd_atomic = 4;
  mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (rc) mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  return ibv_modify_qp(qp, &a, mask);
}

int connect_rc(VerbsSide& a, VerbsSide& b, uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry) {
  if (int e = to_rts(a.qp, gid0(b.ctx), b.qp->qp_num, timeout, retry_cnt, rnr_retry)) return e;
  return to_rts(b.qp, gid0(a.ctx), a.qp->qp_num, timeout, retry_cnt, rnr_retry);
}

int to_rts_ud(ibv_qp* qp, uint32_t qkey) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = qkey;
  if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) return e;
  a.qp_state = IBV_QPS_RTR;
  if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE)) return e;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

std::vector<ibv_wc> poll_n(ibv_cq* cq, size_t n, int timeout_ms) {
  std::vector<ibv_wc> out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out.size() < n && std::chrono::steady_clock::now() < end) {
    ibv_wc wc[16];
    const int got = ibv_poll_cq(cq, 16, wc);
    EXPECT_GE(got, 0);
    for (int i = 0; i < got; ++i) out.push_back(wc[i]);
    if (got == 0) std::this_thread::yield();
  }
  return out;
}

int post_send(ibv_qp* qp, ibv_wr_opcode op, ibv_sge* sges, int nsge, uint64_t raddr, uint32_t rkey,
              unsigned flags, uint64_t wr_id) {
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = sges;
  wr.num_sge = nsge;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return ibv_post_send(qp, &wr, &bad);
}

int post_recv(ibv_qp* qp, ibv_sge* sges, int nsge, uint64_t wr_id) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = wr_id;
  wr.sg_list = sges;
  wr.num_sge = nsge;
  return ibv_post_recv(qp, &wr, &bad);
}

void make_ud_pair(VerbsSide* a, VerbsSide* b, uint32_t qkey) {
  make_side(a, IBV_QPT_UD);
  make_side(b, IBV_QPT_UD);
  ASSERT_EQ(to_rts_ud(a->qp, qkey), 0);
  ASSERT_EQ(to_rts_ud(b->qp, qkey), 0);
}

ibv_ah* ah_to(const VerbsSide& from, const VerbsSide& to) {
  ibv_ah_attr a{};
  a.is_global = 1;
  a.grh.dgid = gid0(to.ctx);
  a.grh.hop_limit = 64;
  a.port_num = 1;
  return ibv_create_ah(from.pd, &a);
}

int post_ud_send(ibv_qp* qp, ibv_ah* ah, uint32_t remote_qpn, uint32_t qkey, ibv_sge* sge) {
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = remote_qpn;
  wr.wr.ud.remote_qkey = qkey;
  return ibv_post_send(qp, &wr, &bad);
}

}  // namespace uroce::test
