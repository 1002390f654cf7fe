// The remaining verbs of the provider: ibv_create_cq_ex and its polling API, ibv_resize_cq, ibv_rereg_mr and
// ibv_query_qp.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

TEST(CqEx, PollsCompletionsThroughTheExtendedApi) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 64;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_IMM;
  ibv_cq_ex* cqx = ibv_create_cq_ex(b.ctx, &attr);
  ASSERT_NE(cqx, nullptr);
  // Replace b's QP with one whose completions go to the extended CQ.
  ASSERT_EQ(ibv_destroy_qp(b.qp), 0);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = ibv_cq_ex_to_cq(cqx);
  init.qp_type = IBV_QPT_RC;
  init.cap = ibv_qp_cap{16, 16, 1, 1, 0};
  b.qp = ibv_create_qp(b.pd, &init);
  ASSERT_NE(b.qp, nullptr);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 256, b.mr->lkey};
  ASSERT_EQ(post_recv(b.qp, &r, 1, 5), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 100, a.mr->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.imm_data = htobe32(1234);
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  ibv_poll_cq_attr pa{};
  int rc = ENOENT;
  for (int i = 0; i < 100000 && rc == ENOENT; ++i) rc = ibv_start_poll(cqx, &pa);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(cqx->wr_id, 5u);
  EXPECT_EQ(cqx->status, IBV_WC_SUCCESS);
  EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
  EXPECT_EQ(ibv_wc_read_byte_len(cqx), 100u);
  EXPECT_EQ(ibv_wc_read_qp_num(cqx), b.qp->qp_num);
  EXPECT_EQ(be32toh(ibv_wc_read_imm_data(cqx)), 1234u);
  EXPECT_EQ(ibv_next_poll(cqx), ENOENT);
  ibv_end_poll(cqx);
  // Completion timestamps are not supported: asking for them fails cleanly.
  attr.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(b.ctx, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ASSERT_EQ(ibv_destroy_qp(b.qp), 0);
  b.qp = nullptr;
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
}

TEST(ResizeCq, KeepsQueuedCompletions) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 8, a.mr->lkey};
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey,
                        IBV_SEND_SIGNALED, i),
              0);
  // Let them complete without polling them, then grow.
  ibv_wc wc;
  for (int i = 0; i < 1000; ++i) ibv_poll_cq(b.cq, 1, &wc);  // drives progress, b's CQ stays empty
  EXPECT_EQ(ibv_resize_cq(a.cq, 1024), 0);
  EXPECT_GE(a.cq->cqe, 1024);
  auto w = poll_n(a.cq, 5);
  ASSERT_EQ(w.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(w[i].wr_id, static_cast<uint64_t>(i));

  // Shrinking below the completions queued is refused (EINVAL) and loses none. The responder writes a
  // receive completion before it acknowledges the SEND, so once a's five SENDs have completed, b's CQ holds
  // exactly five receive completions.
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 64, b.mr->lkey};
  for (int i = 0; i < 5; ++i) ASSERT_EQ(post_recv(b.qp, &r, 1, 100 + i), 0);
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(post_send(a.qp, IBV_WR_SEND, &s, 1, 0, 0, IBV_SEND_SIGNALED, 10 + i), 0);
  const auto sent = poll_n(a.cq, 5);
  ASSERT_EQ(sent.size(), 5u);
  for (const ibv_wc& c : sent) ASSERT_EQ(c.status, IBV_WC_SUCCESS);
  EXPECT_EQ(ibv_resize_cq(b.cq, 4), EINVAL) << "shrink below 5 queued completions";
  EXPECT_EQ(ibv_resize_cq(b.cq, 5), 0) << "shrink to exactly the queued completions";
  auto rw = poll_n(b.cq, 5);
  ASSERT_EQ(rw.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(rw[i].wr_id, static_cast<uint64_t>(100 + i));
    EXPECT_EQ(rw[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw[i].opcode, IBV_WC_RECV);
  }
}

TEST(ReregMr, NewKeysReplaceTheOldOnes) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  const uint32_t old_rkey = b.mr->rkey;
  ASSERT_EQ(ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
            0);
  EXPECT_NE(b.mr->rkey, old_rkey);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  // The new key writes; a READ is refused now that remote read access is gone.
  ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey),
            0);
  EXPECT_EQ(poll_n(a.cq, 1).at(0).status, IBV_WC_SUCCESS);
  ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_READ, &s, 1, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey),
            0);
  EXPECT_EQ(poll_n(a.cq, 1).at(0).status, IBV_WC_REM_ACCESS_ERR);

  // The access error put both QPs in error: a fresh connected pair for the old key, which must no longer
  // open the memory, even for the access it still has.
  ASSERT_EQ(ibv_destroy_qp(a.qp), 0);
  ASSERT_EQ(ibv_destroy_qp(b.qp), 0);
  a.qp = b.qp = nullptr;
  for (VerbsSide* side : {&a, &b}) {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = side->cq;
    init.qp_type = IBV_QPT_RC;
    init.cap = ibv_qp_cap{16, 16, 1, 1, 0};
    side->qp = ibv_create_qp(side->pd, &init);
    ASSERT_NE(side->qp, nullptr);
  }
  ASSERT_EQ(connect_rc(a, b), 0);
  b.buf[100] = 0;
  a.buf[0] = 0x77;
  ASSERT_EQ(
      post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data() + 100), old_rkey), 0);
  const auto w = poll_n(a.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_REM_ACCESS_ERR) << "the rkey from before ibv_rereg_mr still opens the memory";
  EXPECT_EQ(b.buf[100], 0);
}

TEST(QueryQp, ReportsWhatModifySet) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_qp_attr at{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN, &init), 0);
  EXPECT_EQ(at.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(at.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(at.dest_qp_num, b.qp->qp_num);
  EXPECT_EQ(at.timeout, 12);
  EXPECT_EQ(at.retry_cnt, 7);
  EXPECT_EQ(init.qp_type, IBV_QPT_RC);
  EXPECT_EQ(init.send_cq, a.cq);
}

}  // namespace
}  // namespace uroce::test
