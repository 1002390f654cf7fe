// XRC end to end between two devices: an initiator QP on one, a target QP of an XRC domain on the other,
// each request naming the target's SRQ in its XRCETH. The SRQ decides where a SEND lands and completes and
// which PD a WRITE is checked against; a number that is no SRQ of the target's domain is NAKed.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/support/sim_env.h"

namespace uroce {
namespace {

using test::Endpoint;

class Xrc : public ::testing::Test {
 protected:
  Xrc() : net(1), a(net, 1), b(net, 2) {
    net.connect(*a.port, *b.port, sim::LinkConfig{});
    QpInitAttr ini;
    ini.xrc = XrcRole::kInitiator;
    ini.send_cq = a.cq;
    ini.cap = QpCap{64, 0, 4, 0, 64};
    EXPECT_EQ(a.dev->create_qp(a.pd, ini, &qi), 0);
    EXPECT_EQ(b.dev->alloc_xrcd(&xrcd), 0);
    EXPECT_EQ(b.dev->create_xrc_srq(b.pd, xrcd, b.cq, 64, 4, 0, &srq), 0);
    QpInitAttr tgt;
    tgt.xrc = XrcRole::kTarget;
    tgt.xrcd = xrcd;
    EXPECT_EQ(b.dev->create_qp(nullptr, tgt, &qt), 0);
    EXPECT_EQ(test::connect_qps(a, qi, b, qt), 0);
  }

  int post_srq_recv(Srq* s, size_t off, uint32_t len, uint64_t id) {
    const Sge sge = b.sge(off, len);
    return b.dev->post_srq_recv(s, RecvWr{id, &sge, 1});
  }

  int post(WrOpcode op, const Sge& s, uint32_t srqn, uint64_t raddr = 0, uint32_t rkey = 0) {
    SendWr wr;
    wr.wr_id = 1;
    wr.opcode = op;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.send_flags = kSendSignaled;
    wr.remote_addr = raddr;
    wr.rkey = rkey;
    wr.xrc_srqn = srqn;
    return qi->post_send(wr);
  }

  uint64_t b_counter(Counter c) const { return b.dev->counters()[c]; }

  sim::SimNetwork net;
  Endpoint a, b;
  Qp* qi = nullptr;
  Qp* qt = nullptr;
  Xrcd* xrcd = nullptr;
  Srq* srq = nullptr;
};

TEST_F(Xrc, SendLandsInTheNamedSrqAndCompletesOnItsCq) {
  for (size_t i = 0; i < 5000; ++i) *a.mem_at(i) = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(post_srq_recv(srq, 0, 8192, 55), 0);
  ASSERT_EQ(post(WrOpcode::kSend, a.sge(0, 5000), srq->handle), 0);
  auto wa = test::run_for_completions(net, a, 1);
  auto wb = test::run_for_completions(net, b, 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wb[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wb[0].wr_id, 55u);
  EXPECT_EQ(wb[0].byte_len, 5000u);
  EXPECT_EQ(wb[0].qp_num, qt->qpn());  // the target QP the message arrived on
  EXPECT_EQ(std::memcmp(a.mem_at(0), b.mem_at(0), 5000), 0);
}

TEST_F(Xrc, RdmaWriteAndReadThroughTheTarget) {
  for (size_t i = 0; i < 3000; ++i) *a.mem_at(i) = static_cast<uint8_t>(i + 1);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, a.sge(0, 3000), srq->handle, b.addr(4096), b.mr->rkey), 0);
  auto wa = test::run_for_completions(net, a, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(a.mem_at(0), b.mem_at(4096), 3000), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaRead, a.sge(8192, 3000), srq->handle, b.addr(4096), b.mr->rkey), 0);
  wa = test::run_for_completions(net, a, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(a.mem_at(8192), b.mem_at(4096), 3000), 0);
}

TEST_F(Xrc, AnUnknownSrqNumberIsAnInvalidRequest) {
  ASSERT_EQ(post_srq_recv(srq, 0, 4096, 1), 0);
  ASSERT_EQ(post(WrOpcode::kSend, a.sge(0, 100), srq->handle + 1000), 0);
  auto wa = test::run_for_completions(net, a, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kRemInvReqErr);
  EXPECT_GE(b_counter(Counter::kDropXrcSrq), 1u);
  EXPECT_TRUE(b.poll_cq().empty());  // the receive posted to the real SRQ stays
}

TEST_F(Xrc, AnSrqOfAnotherDomainIsAnInvalidRequest) {
  Xrcd* other = nullptr;
  Srq* foreign = nullptr;
  ASSERT_EQ(b.dev->alloc_xrcd(&other), 0);
  ASSERT_EQ(b.dev->create_xrc_srq(b.pd, other, b.cq, 16, 1, 0, &foreign), 0);
  ASSERT_EQ(post_srq_recv(foreign, 0, 4096, 1), 0);
  ASSERT_EQ(post(WrOpcode::kSend, a.sge(0, 100), foreign->handle), 0);
  auto wa = test::run_for_completions(net, a, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kRemInvReqErr);
  EXPECT_TRUE(b.poll_cq().empty());
}

TEST_F(Xrc, AWriteIsCheckedAgainstTheNamedSrqsPd) {
  Pd* pd2 = nullptr;
  Srq* srq2 = nullptr;
  ASSERT_EQ(b.dev->alloc_pd(&pd2), 0);
  ASSERT_EQ(b.dev->create_xrc_srq(pd2, xrcd, b.cq, 16, 1, 0, &srq2), 0);
  std::memset(b.mem_at(4096), 0xEE, 100);
  // b's MR belongs to b.pd: through an SRQ of pd2 the same rkey is no access.
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, a.sge(0, 100), srq2->handle, b.addr(4096), b.mr->rkey), 0);
  auto wa = test::run_for_completions(net, a, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(*b.mem_at(4096), 0xEE);
}

TEST_F(Xrc, AnRcQpDoesNotTakeXrcPackets) {
  // The same initiator pointed at a plain RC QP: XRC opcodes are not RC's, so nothing reaches it.
  Qp* rc = b.create_qp(QpType::kRc);
  Qp* qi2 = nullptr;
  QpInitAttr ini;
  ini.xrc = XrcRole::kInitiator;
  ini.send_cq = a.cq;
  ini.cap = QpCap{8, 0, 1, 0, 0};
  ASSERT_EQ(a.dev->create_qp(a.pd, ini, &qi2), 0);
  test::RcOptions o;
  o.retry_cnt = 0;
  o.timeout = 8;
  ASSERT_EQ(test::connect_qps(a, qi2, b, rc, o), 0);
  const Sge s = b.sge(0, 64);
  ASSERT_EQ(rc->post_recv(RecvWr{1, &s, 1}), 0);
  SendWr wr;
  const Sge src = a.sge(0, 64);
  wr.sg_list = &src;
  wr.num_sge = 1;
  wr.send_flags = kSendSignaled;
  wr.xrc_srqn = srq->handle;
  ASSERT_EQ(qi2->post_send(wr), 0);
  auto wa = test::run_for_completions(net, a, 1);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kRetryExcErr);
  EXPECT_GE(b_counter(Counter::kDropWrongQpType), 1u);
  EXPECT_TRUE(b.poll_cq().empty());
}

TEST_F(Xrc, QueuesAnXrcQpDoesNotHave) {
  const Sge s = b.sge(0, 64);
  EXPECT_EQ(qt->post_recv(RecvWr{1, &s, 1}), EINVAL);  // receives go to the domain's SRQs
  EXPECT_EQ(qi->post_recv(RecvWr{1, &s, 1}), EINVAL);  // an initiator receives nothing
  SendWr wr;
  EXPECT_EQ(qt->post_send(wr), EINVAL);  // a target sends nothing of its own
  EXPECT_EQ(b.dev->dealloc_xrcd(xrcd), EBUSY);
  EXPECT_EQ(b.dev->destroy_cq(b.cq), EBUSY);  // the XRC SRQ completes to it
  QpInitAttr bad;
  bad.xrc = XrcRole::kTarget;  // without a domain
  Qp* q = nullptr;
  EXPECT_EQ(b.dev->create_qp(nullptr, bad, &q), EINVAL);
  bad.xrc = XrcRole::kInitiator;  // without a send CQ
  EXPECT_EQ(a.dev->create_qp(a.pd, bad, &q), EINVAL);
}

TEST_F(Xrc, ADestroyedSrqIsForgotten) {
  ASSERT_EQ(post_srq_recv(srq, 0, 4096, 1), 0);
  ASSERT_EQ(post(WrOpcode::kSend, a.sge(0, 100), srq->handle), 0);
  ASSERT_EQ(test::run_for_completions(net, a, 1).size(), 1u);
  ASSERT_EQ(test::run_for_completions(net, b, 1).size(), 1u);
  const uint32_t gone = srq->handle;
  ASSERT_EQ(b.dev->destroy_srq(srq), 0);
  EXPECT_EQ(b.dev->destroy_qp(qt), 0);
  EXPECT_EQ(b.dev->dealloc_xrcd(xrcd), 0);
  EXPECT_EQ(b.dev->find_srq(gone), nullptr);
  EXPECT_EQ(b.dev->destroy_cq(b.cq), 0);  // nothing refers to it any more
}

}  // namespace
}  // namespace uroce
