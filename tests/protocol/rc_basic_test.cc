// RC operations end to end between two devices on a lossless simulated link.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/support/sim_env.h"

namespace uroce {
namespace {

using test::Endpoint;

class RcBasic : public ::testing::Test {
 protected:
  RcBasic() : net(1), a(net, 1), b(net, 2) {
    net.connect(*a.port, *b.port, sim::LinkConfig{});
    qa = a.create_qp(QpType::kRc);
    qb = b.create_qp(QpType::kRc);
    EXPECT_EQ(test::connect_qps(a, qa, b, qb), 0);
  }

  int post_recv(Endpoint& ep, Qp* qp, size_t off, uint32_t len, uint64_t id) {
    const Sge s = ep.sge(off, len);
    return qp->post_recv(RecvWr{id, &s, 1});
  }

  int post(Qp* qp, WrOpcode op, const Sge& s, uint64_t raddr = 0, uint32_t rkey = 0, uint64_t id = 1) {
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = op;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.send_flags = kSendSignaled;
    wr.remote_addr = raddr;
    wr.rkey = rkey;
    return qp->post_send(wr);
  }

  sim::SimNetwork net;
  Endpoint a, b;
  Qp* qa;
  Qp* qb;
};

TEST_F(RcBasic, SendRecvMultiPacket) {
  for (size_t i = 0; i < 5000; ++i) *a.mem_at(i) = static_cast<uint8_t>(i * 3);
  ASSERT_EQ(post_recv(b, qb, 0, 8192, 77), 0);
  ASSERT_EQ(post(qa, WrOpcode::kSend, a.sge(0, 5000)), 0);
  auto wa = test::run_for_completions(net, a, 1);
  auto wb = test::run_for_completions(net, b, 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wa[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wb[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wb[0].byte_len, 5000u);
  EXPECT_EQ(wb[0].wr_id, 77u);
  EXPECT_EQ(std::memcmp(a.mem_at(0), b.mem_at(0), 5000), 0);
}

TEST_F(RcBasic, WriteReadAtomics) {
  for (size_t i = 0; i < 10000; ++i) *a.mem_at(i) = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(post(qa, WrOpcode::kRdmaWrite, a.sge(0, 10000), b.addr(4096), b.mr->rkey, 1), 0);
  auto w = test::run_for_completions(net, a, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, WcStatus::kSuccess);
  EXPECT_EQ(w[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(std::memcmp(a.mem_at(0), b.mem_at(4096), 10000), 0);

  ASSERT_EQ(post(qa, WrOpcode::kRdmaRead, a.sge(100000, 10000), b.addr(4096), b.mr->rkey, 2), 0);
  w = test::run_for_completions(net, a, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, WcStatus::kSuccess);
  EXPECT_EQ(w[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(w[0].byte_len, 10000u);
  EXPECT_EQ(std::memcmp(a.mem_at(0), a.mem_at(100000), 10000), 0);

  uint64_t v = 40;
  std::memcpy(b.mem_at(8), &v, 8);
  SendWr wr;
  const Sge s = a.sge(200000, 8);
  wr.wr_id = 3;
  wr.opcode = WrOpcode::kAtomicFetchAndAdd;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.send_flags = kSendSignaled;
  wr.remote_addr = b.addr(8);
  wr.rkey = b.mr->rkey;
  wr.compare_add = 2;
  ASSERT_EQ(qa->post_send(wr), 0);
  wr.wr_id = 4;
  wr.opcode = WrOpcode::kAtomicCmpAndSwp;
  wr.compare_add = 42;
  wr.swap = 1000;
  const Sge s2 = a.sge(200008, 8);
  wr.sg_list = &s2;
  ASSERT_EQ(qa->post_send(wr), 0);
  w = test::run_for_completions(net, a, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].opcode, WcOpcode::kFetchAdd);
  EXPECT_EQ(w[1].opcode, WcOpcode::kCompSwap);
  uint64_t r1, r2, now;
  std::memcpy(&r1, a.mem_at(200000), 8);
  std::memcpy(&r2, a.mem_at(200008), 8);
  std::memcpy(&now, b.mem_at(8), 8);
  EXPECT_EQ(r1, 40u);
  EXPECT_EQ(r2, 42u);
  EXPECT_EQ(now, 1000u);
}

}  // namespace
}  // namespace uroce
