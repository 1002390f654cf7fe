// What a generic RDMA device reports and refuses, as programs probe it: the extended port count, vendor
// ids, and completion vectors the context does not have.
#include <gtest/gtest.h>

#include <cerrno>

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

}  // namespace
}  // namespace uroce::test
