// Device queries, SRQ, completion channels, async events and the error paths of the verbs API over uroce.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

TEST(DeviceVerbs, QueriesDescribeARoceV2Port) {
  ibv_context* ctx = open_uroce();
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr_ex dev{};
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &dev), 0);
  EXPECT_GE(dev.orig_attr.max_qp, 1024);
  EXPECT_GE(dev.orig_attr.max_sge, 4);
  EXPECT_EQ(dev.orig_attr.phys_port_cnt, 1);
  EXPECT_NE(dev.orig_attr.atomic_cap, IBV_ATOMIC_NONE);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(ctx, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(ibv_query_port(ctx, 2, &port), EINVAL);
  ibv_gid_entry entry{};
  ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &entry, 0), 0);
  EXPECT_EQ(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
  uint16_t pkey = 0;
  ASSERT_EQ(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
  EXPECT_EQ(pkey, 0xFFFF);
  ibv_ece ece{};
  ibv_qp* none = nullptr;
  (void)none;
  EXPECT_EQ(ibv_close_device(ctx), 0);
  (void)ece;
}

TEST(DeviceVerbs, CreateArgumentsAreChecked) {
  VerbsSide a;
  make_side(&a, IBV_QPT_RC);
  ibv_device_attr dev{};
  ASSERT_EQ(ibv_query_device(a.ctx, &dev), 0);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(a.ctx, dev.max_cqe + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // An AH without a GRH cannot address anything on a RoCE port.
  ibv_ah_attr ah{};
  ah.port_num = 1;
  ah.dlid = 5;
  errno = 0;
  EXPECT_EQ(ibv_create_ah(a.pd, &ah), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // Modify with an attribute mask that the transition does not allow.
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_INIT;
  at.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PORT),
            EINVAL);  // missing PKEY_INDEX, ACCESS_FLAGS
  EXPECT_EQ(
      ibv_modify_qp(a.qp, &at,
                    IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN),
      EINVAL);  // SQ_PSN is not allowed for RESET->INIT
  // ECE is not supported, as on other devices without it.
  ibv_ece ece{};
  EXPECT_EQ(ibv_query_ece(a.qp, &ece), EOPNOTSUPP);
  destroy_side(&a);
}

class ErrorPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    make_side(&a, IBV_QPT_RC);
    make_side(&b, IBV_QPT_RC);
    ASSERT_EQ(connect_rc(a, b), 0);
  }
  void TearDown() override {
    destroy_side(&a);
    destroy_side(&b);
  }
  // Posts one WR and returns the first completion of `a`.
  ibv_wc one(ibv_wr_opcode op, ibv_sge s, uint64_t raddr, uint32_t rkey) {
    EXPECT_EQ(post_send(a.qp, op, &s, 1, raddr, rkey), 0);
    auto w = poll_n(a.cq, 1);
    EXPECT_EQ(w.size(), 1u);
    return w.empty() ? ibv_wc{} : w[0];
  }
  VerbsSide a, b;
};

TEST_F(ErrorPaths, BadLkeyIsALocalProtectionError) {
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey + 0x100};
  const ibv_wc wc = one(IBV_WR_RDMA_WRITE, s, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey);
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
}

TEST_F(ErrorPaths, BadRkeyIsARemoteAccessError) {
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  EXPECT_EQ(one(IBV_WR_RDMA_WRITE, s, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey ^ 0x700).status,
            IBV_WC_REM_ACCESS_ERR);
}

TEST_F(ErrorPaths, OutOfBoundsIsARemoteAccessError) {
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  EXPECT_EQ(one(IBV_WR_RDMA_READ, s, reinterpret_cast<uint64_t>(b.buf.data() + b.buf.size() - 32), b.mr->rkey)
                .status,
            IBV_WC_REM_ACCESS_ERR);
}

TEST_F(ErrorPaths, MissingRemoteAccessRightIsARemoteAccessError) {
  ibv_mr* ro = ibv_reg_mr(b.pd, b.buf.data(), 4096, IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(ro, nullptr);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  EXPECT_EQ(one(IBV_WR_RDMA_WRITE, s, reinterpret_cast<uint64_t>(b.buf.data()), ro->rkey).status,
            IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ibv_dereg_mr(ro), 0);
}

TEST_F(ErrorPaths, WorkAfterAnErrorIsFlushed) {
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, 0x10, b.mr->rkey, IBV_SEND_SIGNALED, 1), 0);
  ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, 0x10, b.mr->rkey, 0, 2), 0);  // unsignaled
  auto w = poll_n(a.cq, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(w[1].status, IBV_WC_WR_FLUSH_ERR);  // flushed work completes even if unsignaled
  ibv_qp_attr at{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a.qp, &at, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(at.qp_state, IBV_QPS_ERR);
}

TEST(AsyncEvents, RetryExhaustionRaisesQpFatal) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b, /*timeout=*/4, /*retry_cnt=*/2), 0);
  // The peer disappears: every request is now dropped at the receiver (unknown QP).
  ASSERT_EQ(ibv_destroy_qp(b.qp), 0);
  b.qp = nullptr;
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey),
            0);
  auto w = poll_n(a.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_RETRY_EXC_ERR);
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(a.ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(ev.element.qp, a.qp);
  ibv_ack_async_event(&ev);
  destroy_side(&a);
  destroy_side(&b);
}

// A CQ overrun (more completions than it has entries, none polled) puts the CQ in error and raises
// IBV_EVENT_CQ_ERR naming it; the completions that fitted stay pollable, later ones are lost.
TEST(AsyncEvents, CqOverrunRaisesCqErr) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ibv_cq* small = ibv_create_cq(a.ctx, 2, nullptr, nullptr, 0);
  ASSERT_NE(small, nullptr);
  const int depth = small->cqe;
  ASSERT_GE(depth, 2);
  ASSERT_LE(depth, 64);
  ASSERT_EQ(ibv_destroy_qp(a.qp), 0);
  ibv_qp_init_attr init{};
  init.send_cq = small;
  init.recv_cq = a.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap = ibv_qp_cap{128, 16, 1, 1, 0};
  a.qp = ibv_create_qp(a.pd, &init);
  ASSERT_NE(a.qp, nullptr);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 8, a.mr->lkey};
  const int posted = depth + 3;
  for (int i = 0; i < posted; ++i)
    ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey,
                        IBV_SEND_SIGNALED, i),
              0);
  // The event, within 10 s (the async fd is pollable; ibv_get_async_event would block).
  pollfd pfd{a.ctx->async_fd, POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 10000), 1) << "no async event after " << posted << " completions on a CQ of "
                                     << depth;
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(a.ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
  if (ev.event_type == IBV_EVENT_CQ_ERR) {
    EXPECT_EQ(ev.element.cq, small);
  }
  ibv_ack_async_event(&ev);
  std::vector<ibv_wc> wc(static_cast<size_t>(posted));
  const int n = ibv_poll_cq(small, posted, wc.data());
  EXPECT_EQ(n, depth) << "the completions that fitted";
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(wc[static_cast<size_t>(i)].wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(wc[static_cast<size_t>(i)].status, IBV_WC_SUCCESS);
  }
  ASSERT_EQ(ibv_destroy_qp(a.qp), 0);
  a.qp = nullptr;
  EXPECT_EQ(ibv_destroy_cq(small), 0);
}

TEST(Srq, SharedReceiveQueueFeedsQpsAndRaisesTheLimitEvent) {
  VerbsSide a, b;
  b.ctx = open_uroce();
  ASSERT_NE(b.ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(b.ctx);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 2;
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);  // in use by the SRQ: refused, and the PD stays intact
  make_side(&a, IBV_QPT_RC);
  b.pd = ibv_alloc_pd(b.ctx);
  // b's QP must use the SRQ's PD for its memory; recreate the SRQ there.
  ASSERT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  srq = ibv_create_srq(b.pd, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_pd* keep = b.pd;
  b.pd = nullptr;
  b.ctx = nullptr;
  VerbsSide bb;
  bb.ctx = keep->context;
  // Build b's side by hand on the same PD as the SRQ.
  bb.pd = keep;
  bb.cq = ibv_create_cq(bb.ctx, 64, nullptr, nullptr, 0);
  bb.buf.assign(1 << 16, 0);
  bb.mr = ibv_reg_mr(bb.pd, bb.buf.data(), bb.buf.size(), IBV_ACCESS_LOCAL_WRITE);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = bb.cq;
  init.srq = srq;
  init.qp_type = IBV_QPT_RC;
  init.cap = ibv_qp_cap{16, 0, 2, 0, 0};
  bb.qp = ibv_create_qp(bb.pd, &init);
  ASSERT_NE(bb.qp, nullptr);
  ASSERT_EQ(connect_rc(a, bb), 0);
  for (int i = 0; i < 10; ++i) {
    ibv_sge r{reinterpret_cast<uint64_t>(bb.buf.data() + i * 1024), 1024, bb.mr->lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = 100 + i;
    wr.sg_list = &r;
    wr.num_sge = 1;
    ASSERT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
  }
  ibv_srq_attr lim{};
  lim.srq_limit = 8;
  ASSERT_EQ(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 100, a.mr->lkey};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(post_send(a.qp, IBV_WR_SEND, &s, 1), 0);
  auto w = poll_n(bb.cq, 3);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].wr_id, 100u);
  EXPECT_EQ(w[2].wr_id, 102u);
  ibv_async_event ev{};
  ASSERT_EQ(ibv_get_async_event(bb.ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev.element.srq, srq);
  ibv_ack_async_event(&ev);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 0u);  // the limit is one-shot
  EXPECT_EQ(ibv_destroy_qp(bb.qp), 0);
  bb.qp = nullptr;
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  destroy_side(&bb);
  destroy_side(&a);
}

TEST(CompletionChannel, EventsArriveOnAPollableFd) {
  VerbsSide a, b;
  a.ctx = open_uroce();
  ASSERT_NE(a.ctx, nullptr);
  ibv_comp_channel* ch = ibv_create_comp_channel(a.ctx);
  ASSERT_NE(ch, nullptr) << "completion channels need the uroce preload shim (uroce run)";
  make_side(&a, IBV_QPT_RC, 1 << 16, nullptr, ch);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  ASSERT_EQ(ibv_req_notify_cq(a.cq, 0), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
  ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey),
            0);
  pollfd pfd{ch->fd, POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch, &cq, &cq_ctx), 0);
  EXPECT_EQ(cq, a.cq);
  ibv_ack_cq_events(cq, 1);
  EXPECT_EQ(poll_n(a.cq, 1).size(), 1u);
  // Destroying the channel while a CQ uses it fails; after the CQ is gone it succeeds.
  EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);
  ibv_context* ctx = a.ctx;
  a.ctx = nullptr;  // closed below, after the channel
  destroy_side(&a);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
  destroy_side(&b);
}

}  // namespace
}  // namespace uroce::test

namespace uroce::test {
namespace {

size_t count_entries(const char* dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir)) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

TEST(Lifecycle, CloseDeviceLeavesNoFdOrThreadBehind) {
  // Warm up libibverbs' own one-time state (device list, provider load) first.
  ibv_context* warm = open_uroce();
  ASSERT_NE(warm, nullptr);
  ASSERT_EQ(ibv_close_device(warm), 0);
  const size_t fds = count_entries("/proc/self/fd");
  const size_t threads = count_entries("/proc/self/task");
  for (int round = 0; round < 3; ++round) {
    VerbsSide a, b;
    make_side(&a, IBV_QPT_RC);
    make_side(&b, IBV_QPT_RC);
    ASSERT_EQ(connect_rc(a, b), 0);
    ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 4096, a.mr->lkey};
    ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data()), b.mr->rkey),
              0);
    ASSERT_EQ(poll_n(a.cq, 1).size(), 1u);
    destroy_side(&a);
    destroy_side(&b);
  }
  EXPECT_EQ(count_entries("/proc/self/fd"), fds);
  EXPECT_EQ(count_entries("/proc/self/task"), threads);
}

// The device's progress thread sleeps in an io_uring. Had the thread that opens the device created that
// ring, closing the device would make the kernel queue exit work for that thread, interrupting its next
// blocking call: epoll_wait fails with EINTR though no signal was sent (libfabric's fi_eq_sread saw -4
// right after its probe closed a device). Each round waits 200 ms in epoll_wait on an fd that never becomes
// readable: it must time out, not fail.
TEST(Lifecycle, ClosingTheDeviceDoesNotInterruptTheThreadThatOpenedIt) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  const int ev = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(ep, 0);
  ASSERT_GE(ev, 0);
  epoll_event in{};
  in.events = EPOLLIN;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, ev, &in), 0);
  for (int round = 0; round < 5; ++round) {
    ibv_context* ctx = open_uroce();
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(ibv_close_device(ctx), 0);
    epoll_event out{};
    const int n = epoll_wait(ep, &out, 1, 200);
    const int err = errno;
    EXPECT_EQ(n, 0) << "round " << round << ": epoll_wait "
                    << (n < 0 ? std::strerror(err) : "returned an event");
  }
  close(ev);
  close(ep);
}

}  // namespace
}  // namespace uroce::test
