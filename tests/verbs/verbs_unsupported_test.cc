// Every verb uroce does not implement fails the way libibverbs documents for a device without it: a NULL
// object with errno EOPNOTSUPP (or an EOPNOTSUPP return), never a crash, a hang or an object that does not
// work. A program probing for a feature reads exactly this.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

class Unsupported : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx = open_uroce();
    ASSERT_NE(ctx, nullptr);
    pd = ibv_alloc_pd(ctx);
    ASSERT_NE(pd, nullptr);
    cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
  }
  void TearDown() override {
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }
  // Runs `make`; expects nullptr and errno EOPNOTSUPP.
  template <typename F>
  void expect_refused(const char* what, F make) {
    errno = 0;
    auto* obj = make();
    EXPECT_EQ(obj, nullptr) << what << " returned an object";
    EXPECT_EQ(errno, EOPNOTSUPP) << what << ": errno " << errno << " (" << strerror(errno) << ")";
  }

  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
};

TEST_F(Unsupported, DeviceMemory) {
  ibv_alloc_dm_attr da{};
  da.length = 4096;
  expect_refused("ibv_alloc_dm", [&] { return ibv_alloc_dm(ctx, &da); });
}

TEST_F(Unsupported, WorkQueuesAndIndirectionTables) {
  ibv_wq_init_attr wa{};
  wa.wq_type = IBV_WQT_RQ;
  wa.max_wr = 16;
  wa.max_sge = 1;
  wa.pd = pd;
  wa.cq = cq;
  expect_refused("ibv_create_wq", [&] { return ibv_create_wq(ctx, &wa); });
  ibv_rwq_ind_table_init_attr ia{};
  expect_refused("ibv_create_rwq_ind_table", [&] { return ibv_create_rwq_ind_table(ctx, &ia); });
}

TEST_F(Unsupported, ThreadDomainsAndParentDomains) {
  ibv_td_init_attr ta{};
  expect_refused("ibv_alloc_td", [&] { return ibv_alloc_td(ctx, &ta); });
  ibv_parent_domain_init_attr pa{};
  pa.pd = pd;
  expect_refused("ibv_alloc_parent_domain", [&] { return ibv_alloc_parent_domain(ctx, &pa); });
}

TEST_F(Unsupported, CountersAndFlowSteering) {
  ibv_counters_init_attr ca{};
  expect_refused("ibv_create_counters", [&] { return ibv_create_counters(ctx, &ca); });
}

TEST_F(Unsupported, AdviseMrAndDmabufMrs) {
  std::vector<char> buf(4096);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  ibv_sge sge{reinterpret_cast<uint64_t>(buf.data()), 4096, mr->lkey};
  EXPECT_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), EOPNOTSUPP);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  expect_refused("ibv_reg_dmabuf_mr",
                 [&] { return ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE); });
}

}  // namespace
}  // namespace uroce::test
