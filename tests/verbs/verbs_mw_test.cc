// Memory windows through the system libibverbs, as an application uses them: the capabilities the device
// advertises, ibv_alloc_mw of both types, ibv_bind_mw (type 1) and IBV_WR_BIND_MW / ibv_wr_bind_mw (type 2),
// remote writes through a window's rkey, LOCAL_INV, SEND with Invalidate, and the binds that fail at once.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

constexpr size_t kWinOff = 8192, kWinLen = 4096;

// Two connected RC sides; b's buffer also has an MR that allows binding windows and grants no remote access.
struct MwPair {
  MwPair() {
    make_side(&a, IBV_QPT_RC);
    make_side(&b, IBV_QPT_RC);
    if (testing::Test::HasFatalFailure()) return;
    bind_mr = ibv_reg_mr(b.pd, b.buf.data(), b.buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    EXPECT_NE(bind_mr, nullptr);
    EXPECT_EQ(connect_rc(a, b), 0);
  }
  ~MwPair() {
    for (ibv_mw* mw : mws) EXPECT_EQ(ibv_dealloc_mw(mw), 0);
    if (bind_mr) {
      EXPECT_EQ(ibv_dereg_mr(bind_mr), 0) << "no window holds it any more";
    }
  }
  ibv_mw* alloc(ibv_mw_type t) {
    ibv_mw* mw = ibv_alloc_mw(b.pd, t);
    EXPECT_NE(mw, nullptr) << strerror(errno);
    if (mw) mws.push_back(mw);
    return mw;
  }
  uint64_t win(size_t off = kWinOff) { return reinterpret_cast<uint64_t>(b.buf.data() + off); }
  ibv_mw_bind_info info(uint64_t len = kWinLen, int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
                        ibv_mr* mr = nullptr) {
    return ibv_mw_bind_info{mr ? mr : bind_mr, win(), len, static_cast<unsigned>(access)};
  }
  // ibv_bind_mw of a type 1 window; waits for its completion.
  int bind1(ibv_mw* mw, const ibv_mw_bind_info& bi) {
    ibv_mw_bind mb{};
    mb.wr_id = 42;
    mb.send_flags = IBV_SEND_SIGNALED;
    mb.bind_info = bi;
    if (int e = ibv_bind_mw(b.qp, mw, &mb)) return e;
    return expect_b_completion(IBV_WC_BIND_MW);
  }
  // IBV_WR_BIND_MW of a type 2 window with the next key; returns the error of ibv_post_send.
  int post_bind2(ibv_mw* mw, const ibv_mw_bind_info& bi, uint32_t* rkey) {
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 43;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = *rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = bi;
    return ibv_post_send(b.qp, &wr, &bad);
  }
  int expect_b_completion(ibv_wc_opcode op) {
    const std::vector<ibv_wc> wc = poll_n(b.cq, 1);
    EXPECT_EQ(wc.size(), 1u);
    if (wc.size() != 1) return -1;
    EXPECT_EQ(wc[0].opcode, op);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[0].status);
    return wc[0].status == IBV_WC_SUCCESS ? 0 : -1;
  }
  // An RDMA WRITE of 1 KiB from a into the window; returns the completion status a gets.
  ibv_wc_status write(uint32_t rkey, uint8_t seed, size_t off = kWinOff) {
    std::memset(a.buf.data(), seed, 1024);
    ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 1024, a.mr->lkey};
    EXPECT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, win(off), rkey), 0);
    const std::vector<ibv_wc> wc = poll_n(a.cq, 1);
    EXPECT_EQ(wc.size(), 1u);
    return wc.empty() ? IBV_WC_GENERAL_ERR : wc[0].status;
  }
  bool landed(uint8_t seed, size_t off = kWinOff) const {
    for (size_t i = 0; i < 1024; ++i)
      if (b.buf[off + i] != seed) return false;
    return true;
  }

  VerbsSide a, b;
  ibv_mr* bind_mr = nullptr;
  std::vector<ibv_mw*> mws;
};

TEST(VerbsMw, TheDeviceAdvertisesType1AndType2BWindows) {
  ibv_context* ctx = open_uroce();
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr attr{};
  ASSERT_EQ(ibv_query_device(ctx, &attr), 0);
  EXPECT_TRUE(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
  EXPECT_TRUE(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
  EXPECT_FALSE(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A);
  EXPECT_GT(attr.max_mw, 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(VerbsMw, Type1WindowBoundByIbvBindMwTakesWritesUntilUnbound) {
  MwPair p;
  if (testing::Test::HasFatalFailure()) return;
  ibv_mw* mw = p.alloc(IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  EXPECT_EQ(mw->type, IBV_MW_TYPE_1);
  const uint32_t before = mw->rkey;
  ASSERT_EQ(p.bind1(mw, p.info()), 0);
  EXPECT_EQ(mw->rkey, ibv_inc_rkey(before)) << "the bound window's key is the next key byte";
  EXPECT_EQ(p.write(mw->rkey, 0x5A), IBV_WC_SUCCESS);
  EXPECT_TRUE(p.landed(0x5A));
  ASSERT_EQ(p.bind1(mw, p.info(0)), 0);  // length 0: unbound
  EXPECT_EQ(p.write(mw->rkey, 0x6B), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(p.landed(0x5A));
}

TEST(VerbsMw, Type2WindowBoundByAWorkRequestTakesWritesWithinItOnly) {
  MwPair p;
  if (testing::Test::HasFatalFailure()) return;
  ibv_mw* mw = p.alloc(IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  uint32_t rkey = 0;
  ASSERT_EQ(p.post_bind2(mw, p.info(), &rkey), 0);
  ASSERT_EQ(p.expect_b_completion(IBV_WC_BIND_MW), 0);
  EXPECT_EQ(p.write(rkey, 0x11), IBV_WC_SUCCESS);
  EXPECT_TRUE(p.landed(0x11));
  EXPECT_EQ(p.write(rkey, 0x12, kWinOff + kWinLen - 512), IBV_WC_REM_ACCESS_ERR) << "past the window's end";
  EXPECT_EQ(p.write(rkey, 0x12), IBV_WC_WR_FLUSH_ERR) << "the QP is in ERR after the access error";
}

TEST(VerbsMw, AReadOnlyWindowServesReadsAndRefusesWrites) {
  MwPair p;
  if (testing::Test::HasFatalFailure()) return;
  ibv_mw* mw = p.alloc(IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  ASSERT_EQ(p.bind1(mw, p.info(kWinLen, IBV_ACCESS_REMOTE_READ)), 0);
  std::memset(p.b.buf.data() + kWinOff, 0x77, kWinLen);
  ibv_sge s{reinterpret_cast<uint64_t>(p.a.buf.data()), kWinLen, p.a.mr->lkey};
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_READ, &s, 1, p.win(), mw->rkey), 0);
  const std::vector<ibv_wc> wc = poll_n(p.a.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(p.a.buf[0], 0x77);
  EXPECT_EQ(p.a.buf[kWinLen - 1], 0x77);
  EXPECT_EQ(p.write(mw->rkey, 0x78), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(p.landed(0x77)) << "the window grants no remote write";
}

TEST(VerbsMw, LocalInvalidateEndsAType2Window) {
  MwPair p;
  if (testing::Test::HasFatalFailure()) return;
  ibv_mw* mw = p.alloc(IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  uint32_t rkey = 0;
  ASSERT_EQ(p.post_bind2(mw, p.info(), &rkey), 0);
  ASSERT_EQ(p.expect_b_completion(IBV_WC_BIND_MW), 0);
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = 44;
  wr.opcode = IBV_WR_LOCAL_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.invalidate_rkey = rkey;
  ASSERT_EQ(ibv_post_send(p.b.qp, &wr, &bad), 0);
  ASSERT_EQ(p.expect_b_completion(IBV_WC_LOCAL_INV), 0);
  EXPECT_EQ(p.write(rkey, 0x21), IBV_WC_REM_ACCESS_ERR);
  EXPECT_FALSE(p.landed(0x21));
}

TEST(VerbsMw, SendWithInvalidateEndsThePeersWindowAndReportsItsKey) {
  MwPair p;
  if (testing::Test::HasFatalFailure()) return;
  ibv_mw* mw = p.alloc(IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  uint32_t rkey = 0;
  ASSERT_EQ(p.post_bind2(mw, p.info(), &rkey), 0);
  ASSERT_EQ(p.expect_b_completion(IBV_WC_BIND_MW), 0);
  ibv_sge r{reinterpret_cast<uint64_t>(p.b.buf.data()), 256, p.b.mr->lkey};
  ASSERT_EQ(post_recv(p.b.qp, &r, 1), 0);
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  ibv_sge s{reinterpret_cast<uint64_t>(p.a.buf.data()), 64, p.a.mr->lkey};
  wr.opcode = IBV_WR_SEND_WITH_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.invalidate_rkey = rkey;
  ASSERT_EQ(ibv_post_send(p.a.qp, &wr, &bad), 0);
  const std::vector<ibv_wc> sw = poll_n(p.a.cq, 1);
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(sw[0].opcode, IBV_WC_SEND);
  const std::vector<ibv_wc> rw = poll_n(p.b.cq, 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw[0].opcode, IBV_WC_RECV);
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_WITH_INV);
  EXPECT_EQ(rw[0].invalidated_rkey, rkey);
  EXPECT_EQ(p.write(rkey, 0x31), IBV_WC_REM_ACCESS_ERR);
  EXPECT_FALSE(p.landed(0x31));
}

TEST(VerbsMw, BindsThatCannotSucceedFailAtOnce) {
  MwPair p;
  if (testing::Test::HasFatalFailure()) return;
  ibv_mw* w1 = p.alloc(IBV_MW_TYPE_1);
  ibv_mw* w2 = p.alloc(IBV_MW_TYPE_2);
  ASSERT_TRUE(w1 && w2);
  ibv_mw_bind mb{};
  mb.send_flags = IBV_SEND_SIGNALED;
  mb.bind_info = p.info(kWinLen, IBV_ACCESS_REMOTE_WRITE, p.b.mr);
  EXPECT_EQ(ibv_bind_mw(p.b.qp, w1, &mb), EINVAL) << "the MR lacks IBV_ACCESS_MW_BIND";
  mb.bind_info = p.info(p.b.buf.size());
  mb.bind_info.addr = p.win(1024);
  EXPECT_EQ(ibv_bind_mw(p.b.qp, w1, &mb), EINVAL) << "the window would end past the MR";
  ibv_mr* ro = ibv_reg_mr(p.b.pd, p.b.buf.data(), 65536, IBV_ACCESS_MW_BIND);
  ASSERT_NE(ro, nullptr);
  mb.bind_info = p.info(kWinLen, IBV_ACCESS_REMOTE_WRITE, ro);
  EXPECT_EQ(ibv_bind_mw(p.b.qp, w1, &mb), EINVAL) << "remote write needs local write on the MR";
  mb.bind_info = p.info(kWinLen, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED);
  EXPECT_EQ(ibv_bind_mw(p.b.qp, w1, &mb), EINVAL) << "zero-based windows";
  mb.bind_info = p.info();
  EXPECT_EQ(ibv_bind_mw(p.b.qp, w2, &mb), EINVAL) << "type 2 windows are bound by work requests";
  uint32_t rkey = 0;
  EXPECT_EQ(p.post_bind2(w1, p.info(), &rkey), EINVAL) << "type 1 windows are bound by ibv_bind_mw";
  EXPECT_EQ(p.post_bind2(w2, p.info(0), &rkey), EINVAL) << "a type 2 window cannot be bound with length 0";
  EXPECT_EQ(p.post_bind2(w2, p.info(kWinLen, IBV_ACCESS_REMOTE_WRITE, p.b.mr), &rkey), EINVAL);
  ibv_pd* pd2 = ibv_alloc_pd(p.b.ctx);
  ASSERT_NE(pd2, nullptr);
  ibv_mr* other = ibv_reg_mr(pd2, p.b.buf.data(), 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  ASSERT_NE(other, nullptr);
  mb.bind_info = p.info(kWinLen, IBV_ACCESS_REMOTE_WRITE, other);
  EXPECT_EQ(ibv_bind_mw(p.b.qp, w1, &mb), EPERM) << "the MR is of another PD";
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(p.b.cq, 1, &wc), 0) << "nothing failed reached the send queue";
  // A bound window holds its MR.
  ASSERT_EQ(p.bind1(w1, p.info()), 0);
  EXPECT_EQ(ibv_dereg_mr(p.bind_mr), EBUSY);
  EXPECT_EQ(ibv_dereg_mr(other), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd2), 0);
  EXPECT_EQ(ibv_dereg_mr(ro), 0);
}

TEST(VerbsMw, QpExBindsAndInvalidatesAType2Window) {
  MwPair p;
  if (testing::Test::HasFatalFailure()) return;
  // b's QP again, through ibv_create_qp_ex with the memory-window operations.
  ASSERT_EQ(ibv_destroy_qp(p.b.qp), 0);
  ibv_qp_init_attr_ex init{};
  init.send_cq = init.recv_cq = p.b.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap = ibv_qp_cap{64, 64, 4, 4, 64};
  init.pd = p.b.pd;
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  init.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV;
  p.b.qp = ibv_create_qp_ex(p.b.ctx, &init);
  ASSERT_NE(p.b.qp, nullptr) << strerror(errno);
  ibv_qp_ex* qx = ibv_qp_to_qp_ex(p.b.qp);
  ASSERT_NE(qx, nullptr);
  ASSERT_EQ(ibv_destroy_qp(p.a.qp), 0);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = p.a.cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap = ibv_qp_cap{64, 64, 4, 4, 64};
  p.a.qp = ibv_create_qp(p.a.pd, &ia);
  ASSERT_NE(p.a.qp, nullptr);
  ASSERT_EQ(connect_rc(p.a, p.b), 0);

  ibv_mw* mw = p.alloc(IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  const ibv_mw_bind_info bi = p.info();
  ibv_wr_start(qx);
  qx->wr_id = 50;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_bind_mw(qx, mw, rkey, &bi);
  ASSERT_EQ(ibv_wr_complete(qx), 0);
  ASSERT_EQ(p.expect_b_completion(IBV_WC_BIND_MW), 0);
  EXPECT_EQ(p.write(rkey, 0x41), IBV_WC_SUCCESS);
  EXPECT_TRUE(p.landed(0x41));
  ibv_wr_start(qx);
  qx->wr_id = 51;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_local_inv(qx, rkey);
  ASSERT_EQ(ibv_wr_complete(qx), 0);
  ASSERT_EQ(p.expect_b_completion(IBV_WC_LOCAL_INV), 0);
  EXPECT_EQ(p.write(rkey, 0x42), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(p.landed(0x41));
}

}  // namespace
}  // namespace uroce::test
