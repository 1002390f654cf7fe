// The datapath allocates nothing per work request or packet (DESIGN.md: "No allocation ... on the
// datapath"): across N round trips of posts, packets and polls between two contexts of the device (the
// in-process loopback port, under `uroce run`), the number of operator new calls in the whole process (the
// application thread, the progress thread) does not grow with N. Each case warms up first (vectors reach
// their steady capacity), then counts over kShort and over kLong iterations; the long run may allocate no
// more than the short one plus a small allowance for one-off events (a timer list growing, a log line).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "tests/verbs/verbs_env.h"

// GCC pairs the malloc inside the replaced operator new with the free inside the replaced operator delete and
// warns when it inlines both; they match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<uint64_t> g_news{0};
}  // namespace

// Every allocation of the process goes through these (the provider is a shared library: its operator new
// calls bind to the executable's definitions).
void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  const size_t al = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace uroce::test {
namespace {

constexpr int kWarm = 200, kShort = 200, kLong = 2000;
// One-off allocations a long run may make beyond a short one; a per-operation allocation makes thousands.
constexpr uint64_t kAllowance = 20;

// Waits for one completion on `cq` without allocating (poll_n returns a vector); false after ~10 s.
bool poll_one(ibv_cq* cq, ibv_wc* wc) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end)
    if (ibv_poll_cq(cq, 1, wc) == 1) return true;
  return false;
}

// Runs `op` (one operation and its completions; false on a failure) kWarm times, then returns the operator
// new calls over kShort and over kLong runs.
template <typename Op>
void count_news(Op op, uint64_t* short_news, uint64_t* long_news) {
  for (int i = 0; i < kWarm; ++i) ASSERT_TRUE(op()) << "warm-up iteration " << i;
  uint64_t before = g_news.load();
  for (int i = 0; i < kShort; ++i) ASSERT_TRUE(op());
  *short_news = g_news.load() - before;
  before = g_news.load();
  for (int i = 0; i < kLong; ++i) ASSERT_TRUE(op());
  *long_news = g_news.load() - before;
}

class NoAllocPerOp : public ::testing::Test {
 protected:
  void SetUp() override {
    make_side(&a_, IBV_QPT_RC);
    make_side(&b_, IBV_QPT_RC);
    ASSERT_EQ(connect_rc(a_, b_), 0);
    sge_ = {reinterpret_cast<uint64_t>(a_.buf.data()), 64, a_.mr->lkey};
  }
  bool completed(ibv_cq* cq) {
    ibv_wc wc;
    return poll_one(cq, &wc) && wc.status == IBV_WC_SUCCESS;
  }
  VerbsSide a_, b_;
  ibv_sge sge_{};
};

TEST_F(NoAllocPerOp, RdmaWriteThroughPostSend) {
  const uint64_t raddr = reinterpret_cast<uint64_t>(b_.buf.data());
  uint64_t s = 0, l = 0;
  count_news(
      [&] {
        return post_send(a_.qp, IBV_WR_RDMA_WRITE, &sge_, 1, raddr, b_.mr->rkey) == 0 && completed(a_.cq);
      },
      &s, &l);
  RecordProperty("news_short", std::to_string(s));
  RecordProperty("news_long", std::to_string(l));
  EXPECT_LE(l, s + kAllowance) << kShort << " WRITEs allocated " << s << " times, " << kLong << " allocated "
                               << l;
}

TEST_F(NoAllocPerOp, SendAndReceive) {
  ibv_sge rs{reinterpret_cast<uint64_t>(b_.buf.data()), 64, b_.mr->lkey};
  uint64_t s = 0, l = 0;
  count_news(
      [&] {
        return post_recv(b_.qp, &rs, 1) == 0 && post_send(a_.qp, IBV_WR_SEND, &sge_, 1) == 0 &&
               completed(a_.cq) && completed(b_.cq);
      },
      &s, &l);
  EXPECT_LE(l, s + kAllowance) << kShort << " SENDs allocated " << s << " times, " << kLong << " allocated "
                               << l;
}

// The ibv_qp_ex path: ibv_wr_start / ibv_wr_rdma_write / ibv_wr_set_sge / ibv_wr_complete.
TEST(NoAllocPerOpEx, RdmaWriteThroughWrComplete) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(ibv_destroy_qp(a.qp), 0);
  ibv_qp_init_attr_ex init{};
  init.send_cq = a.cq;
  init.recv_cq = a.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap = ibv_qp_cap{128, 128, 4, 4, 64};
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  init.pd = a.pd;
  init.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
  a.qp = ibv_create_qp_ex(a.ctx, &init);
  ASSERT_NE(a.qp, nullptr) << strerror(errno);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_qp_ex* ex = ibv_qp_to_qp_ex(a.qp);
  ASSERT_NE(ex, nullptr);
  const uint64_t raddr = reinterpret_cast<uint64_t>(b.buf.data());
  uint64_t s = 0, l = 0;
  count_news(
      [&] {
        ibv_wr_start(ex);
        ex->wr_id = 1;
        ex->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_rdma_write(ex, b.mr->rkey, raddr);
        ibv_wr_set_sge(ex, a.mr->lkey, reinterpret_cast<uint64_t>(a.buf.data()), 64);
        ibv_wc wc;
        return ibv_wr_complete(ex) == 0 && poll_one(a.cq, &wc) && wc.status == IBV_WC_SUCCESS;
      },
      &s, &l);
  EXPECT_LE(l, s + kAllowance) << kShort << " wr_complete calls allocated " << s << " times, " << kLong
                               << " allocated " << l;
}

}  // namespace
}  // namespace uroce::test
