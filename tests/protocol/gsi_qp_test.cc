// The general services QP (QP1) that the connection manager speaks through: a UD QP numbered 1 whose MADs
// carry DETH SrcQP 1 and the well-known Q_Key, one per device, and never a number create_qp hands out.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "tests/support/sim_env.h"
#include "transport/params.h"

namespace uroce {
namespace {

using test::Endpoint;

constexpr uint32_t kGrh = 40;  // a UD receive buffer starts with the 40-byte GRH
constexpr uint32_t kMad = 256;

Qp* make_gsi(Endpoint& ep) {
  QpInitAttr init;
  init.type = QpType::kUd;
  init.send_cq = init.recv_cq = ep.cq;
  init.cap = QpCap{16, 16, 1, 1, 0};
  Qp* qp = nullptr;
  EXPECT_EQ(ep.dev->create_gsi_qp(ep.pd, init, &qp), 0);
  if (qp) {
    EXPECT_EQ(test::ud_to_rts(qp, params::kGsiQkey), 0);
  }
  return qp;
}

int send_mad(Endpoint& ep, Qp* qp, const AddressVector& av, size_t off, uint32_t qkey) {
  const Sge s = ep.sge(off, kMad);
  SendWr wr;
  wr.wr_id = 9;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.send_flags = kSendSignaled;
  wr.ah = &av;
  wr.remote_qpn = params::kGsiQpn;
  wr.remote_qkey = qkey;
  return qp->post_send(wr);
}

TEST(GsiQp, MadCrossesBetweenQp1s) {
  sim::SimNetwork net(1);
  Endpoint a(net, 1), b(net, 2);
  net.connect(*a.port, *b.port, sim::LinkConfig{});
  Qp* ga = make_gsi(a);
  Qp* gb = make_gsi(b);
  ASSERT_TRUE(ga && gb);
  EXPECT_EQ(ga->qpn(), 1u);
  EXPECT_EQ(gb->qpn(), 1u);
  for (uint32_t i = 0; i < kMad; ++i) *a.mem_at(i) = static_cast<uint8_t>(i ^ 0x5A);
  const Sge r = b.sge(4096, kGrh + kMad);
  ASSERT_EQ(gb->post_recv(RecvWr{5, &r, 1}), 0);
  AddressVector av;
  av.dgid = b.gid();
  // The privileged bit: the QP's own Q_Key (0x80010000) goes on the wire, as a CM agent sends.
  ASSERT_EQ(send_mad(a, ga, av, 0, params::kUdQkeyPrivilegedBit), 0);
  const auto wb = test::run_for_completions(net, b, 1);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wb[0].byte_len, kGrh + kMad);
  EXPECT_EQ(wb[0].src_qp, 1u);
  EXPECT_EQ(std::memcmp(b.mem_at(4096 + kGrh), a.mem_at(0), kMad), 0);
}

TEST(GsiQp, WrongQkeyIsDropped) {
  sim::SimNetwork net(1);
  Endpoint a(net, 1), b(net, 2);
  net.connect(*a.port, *b.port, sim::LinkConfig{});
  Qp* ga = make_gsi(a);
  Qp* gb = make_gsi(b);
  ASSERT_TRUE(ga && gb);
  const Sge r = b.sge(4096, kGrh + kMad);
  ASSERT_EQ(gb->post_recv(RecvWr{5, &r, 1}), 0);
  AddressVector av;
  av.dgid = b.gid();
  ASSERT_EQ(send_mad(a, ga, av, 0, 0x1234), 0);
  test::run_for_completions(net, a, 1);
  EXPECT_TRUE(test::run_for_completions(net, b, 1, 50'000'000).empty());
}

TEST(GsiQp, OnePerDeviceAndNeverFromCreateQp) {
  sim::SimNetwork net(1);
  test::EndpointOptions o;
  o.device.id_seed = 42;
  Endpoint a(net, 1, o);
  Qp* g = make_gsi(a);
  ASSERT_TRUE(g);
  QpInitAttr init;
  init.type = QpType::kUd;
  init.send_cq = init.recv_cq = a.cq;
  init.cap = QpCap{4, 4, 1, 1, 0};
  Qp* again = nullptr;
  EXPECT_EQ(a.dev->create_gsi_qp(a.pd, init, &again), EBUSY);
  init.type = QpType::kRc;
  EXPECT_EQ(a.dev->create_gsi_qp(a.pd, init, &again), EINVAL);
  init.type = QpType::kUd;
  std::set<uint32_t> seen;
  for (int i = 0; i < 200; ++i) {
    Qp* q = nullptr;
    ASSERT_EQ(a.dev->create_qp(a.pd, init, &q), 0);
    EXPECT_GE(q->qpn(), params::kFirstQpn);
    seen.insert(q->qpn());
  }
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(a.dev->destroy_qp(g), 0);
  EXPECT_EQ(a.dev->create_gsi_qp(a.pd, init, &again), 0) << "a destroyed QP1 can be created again";
}

}  // namespace
}  // namespace uroce
