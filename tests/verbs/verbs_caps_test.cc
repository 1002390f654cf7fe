// What a generic RDMA device reports and refuses, as programs probe it: the extended port count, vendor
// ids, and completion vectors the context does not have.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

TEST(DeviceCaps, ExtendedAttributesAgreeWithTheBasicOnes) {
  ibv_context* ctx = open_uroce();
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr_ex dev{};
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &dev), 0);
  EXPECT_EQ(dev.orig_attr.phys_port_cnt, 1);
  EXPECT_EQ(dev.phys_port_cnt_ex, dev.orig_attr.phys_port_cnt);
  EXPECT_EQ(dev.orig_attr.vendor_id, 0xFFFFFFu) << "what software devices (Linux rxe) report";
  EXPECT_NE(dev.orig_attr.vendor_part_id, 0u);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

// A QP's inline room is at least what its gather list takes (16 bytes per send SGE, up to the device's
// max_inline_data), as on Soft-RoCE; a ConnectX rounds up to its WQE size too. ibv_create_qp and
// ibv_query_qp report it (RcVerbsInline.InlineWithoutAskedRoom posts into it).
TEST(DeviceCaps, AQpsInlineRoomIsAtLeastItsGatherList) {
  ibv_context* ctx = open_uroce();
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  struct Case {
    uint32_t sge, asked, got;
  };
  for (const Case c : {Case{1, 0, 16}, Case{4, 0, 64}, Case{2, 100, 100}, Case{0, 0, 0}, Case{32, 0, 256}}) {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 4;
    a.cap.max_send_sge = c.sge;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = c.asked;
    ibv_qp* qp = ibv_create_qp(pd, &a);
    ASSERT_NE(qp, nullptr) << c.sge << " SGEs";
    EXPECT_EQ(a.cap.max_inline_data, c.got) << c.sge << " SGEs, " << c.asked << " bytes asked";
    ibv_qp_attr q{};
    ibv_qp_init_attr init{};
    ASSERT_EQ(ibv_query_qp(qp, &q, IBV_QP_CAP, &init), 0);
    EXPECT_EQ(q.cap.max_inline_data, c.got);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
  }
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(DeviceCaps, CompletionVectorsOutsideTheContextsAreRefused) {
  ibv_context* ctx = open_uroce();
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(ctx->num_comp_vectors, 1);
  ibv_cq* ok = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ibv_destroy_cq(ok), 0);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, 16, nullptr, nullptr, 1), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, 16, nullptr, nullptr, -1), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 16;
  attr.comp_vector = 7;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  attr.comp_vector = 0;
  ibv_cq_ex* ex = ibv_create_cq_ex(ctx, &attr);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(ex)), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(DeviceCaps, ACompletionChannelIsFreeOnceItsCqsAreGone) {
  ibv_context* ctx = open_uroce();
  ASSERT_NE(ctx, nullptr);
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  ASSERT_NE(ch, nullptr);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, ch, 0);
  ASSERT_NE(cq, nullptr);
  int token = 0;
  ibv_cq_init_attr_ex attr{};
  attr.cqe = 16;
  attr.channel = ch;
  attr.cq_context = &token;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
  ibv_cq_ex* ex = ibv_create_cq_ex(ctx, &attr);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ(ibv_cq_ex_to_cq(ex)->channel, ch);
  EXPECT_EQ(ibv_cq_ex_to_cq(ex)->cq_context, &token);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY) << "still used by two CQs";
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(ex)), 0);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0) << "each CQ held one reference, and gave it back";
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

// UD receives report the packet's network header type in the SL, as ConnectX does for RoCE: UCX's ud_verbs
// reads it to find the GID in the GRH area and drops every datagram when it is 0.
TEST(DeviceCaps, UdReceiveReportsTheRoceNetworkHeaderTypeInTheSl) {
  VerbsSide a, b;
  make_ud_pair(&a, &b, 0x1234);
  if (testing::Test::HasFatalFailure()) return;
  ibv_ah* ah = ah_to(a, b);
  ASSERT_NE(ah, nullptr);
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 40 + 64, b.mr->lkey};
  ASSERT_EQ(post_recv(b.qp, &r, 1), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  ASSERT_EQ(post_ud_send(a.qp, ah, b.qp->qp_num, 0x1234, &s), 0);
  auto rw = poll_n(b.cq, 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw[0].sl & 7, 2) << "RoCEv2 over IPv4";
  EXPECT_TRUE(rw[0].sl & 8) << "over UDP";
  // Where UCX then looks for the sender's address: the IPv4 source at bytes 32..35 of the GRH area.
  const ibv_gid g = gid0(a.ctx);
  EXPECT_EQ(std::memcmp(b.buf.data() + 32, g.raw + 12, 4), 0);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  destroy_side(&a);
  destroy_side(&b);
}

}  // namespace
}  // namespace uroce::test
