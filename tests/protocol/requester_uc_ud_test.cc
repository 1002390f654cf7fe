// Requester, UC and UD: the unreliable services' opcodes (IBA 9.8, 9.9 / table 39), DETH and Q_Key on UD,
// no AckReq, and completion as soon as the message is on the wire.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::ProtoEnv;
using test::ProtoOptions;

ProtoOptions with_type(QpType t) {
  ProtoOptions o;
  o.type = t;
  o.mem_bytes = 16384;
  return o;
}

TEST(RequesterUc, SendAndWriteOpcodesWithoutAckReq) {
  ProtoEnv env(with_type(QpType::kUc));
  env.fill(0, 2500, 1);
  const Sge big = env.sge(0, 2500), small = env.sge(0, 8);
  SendWr wr;
  wr.send_flags = kSendSignaled;
  wr.num_sge = 1;
  struct Case {
    WrOpcode op;
    const Sge* s;
  };
  const Case cases[] = {{WrOpcode::kSend, &big},
                        {WrOpcode::kSendWithImm, &small},
                        {WrOpcode::kRdmaWrite, &big},
                        {WrOpcode::kRdmaWriteWithImm, &small},
                        {WrOpcode::kSendWithImm, &big},
                        {WrOpcode::kRdmaWrite, &small},
                        {WrOpcode::kRdmaWriteWithImm, &big},
                        {WrOpcode::kSend, &small}};
  uint64_t id = 0;
  for (const Case& c : cases) {
    wr.wr_id = ++id;
    wr.opcode = c.op;
    wr.sg_list = c.s;
    wr.imm_data_be = static_cast<uint32_t>(id);
    wr.remote_addr = 0x8000 + id;
    wr.rkey = 0x70;
    ASSERT_EQ(env.qp->post_send(wr), 0);
  }
  const std::vector<Emitted> f = env.run();
  const uint8_t want[] = {op::kUcSendFirst,  op::kUcSendMiddle,  op::kUcSendLast,     op::kUcSendOnlyImm,
                          op::kUcWriteFirst, op::kUcWriteMiddle, op::kUcWriteLast,    op::kUcWriteOnlyImm,
                          op::kUcSendFirst,  op::kUcSendMiddle,  op::kUcSendLastImm,  op::kUcWriteOnly,
                          op::kUcWriteFirst, op::kUcWriteMiddle, op::kUcWriteLastImm, op::kUcSendOnly};
  ASSERT_EQ(f.size(), std::size(want));
  for (size_t i = 0; i < f.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(f[i].opcode(), want[i]);
    EXPECT_EQ(f[i].psn(), env.opt.sq_psn + i);
    EXPECT_FALSE(f[i].h.bth.ackreq) << "UC has no acknowledgements";
    EXPECT_EQ(f[i].h.bth.dqpn, env.opt.peer_qpn);
  }
  EXPECT_EQ(f[4].h.reth.va, 0x8003u);
  EXPECT_EQ(f[4].h.reth.dma_len, 2500u);
  EXPECT_EQ(f[7].h.imm_be, 4u);
  EXPECT_EQ(f[10].h.imm_be, 5u);
  EXPECT_EQ(f[2].payload, env.bytes(2048, 452));
  // UC completes once sent.
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), std::size(cases));
  for (size_t i = 0; i < wc.size(); ++i) {
    EXPECT_EQ(wc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wc[i].wr_id, i + 1);
  }
}

TEST(RequesterUc, ReadAndAtomicsAreNotUcOperations) {
  ProtoEnv env(with_type(QpType::kUc));
  EXPECT_EQ(env.post(WrOpcode::kRdmaRead, 0, 8, 1, 0x1000, 1), EINVAL);
  EXPECT_EQ(env.post(WrOpcode::kAtomicFetchAndAdd, 0, 8, 2, 0x1000, 1), EINVAL);
  EXPECT_EQ(env.post(WrOpcode::kAtomicCmpAndSwp, 0, 8, 3, 0x1000, 1), EINVAL);
  EXPECT_TRUE(env.run().empty());
}

class RequesterUd : public ::testing::Test {
 protected:
  RequesterUd() : env(with_type(QpType::kUd)) { av.dgid = ProtoEnv::peer_gid(); }

  SendWr ud_wr(const Sge* s, uint32_t qkey, uint64_t id = 1) {
    SendWr wr;
    wr.wr_id = id;
    wr.sg_list = s;
    wr.num_sge = s ? 1 : 0;
    wr.send_flags = kSendSignaled;
    wr.ah = &av;
    wr.remote_qpn = 0x77;
    wr.remote_qkey = qkey;
    return wr;
  }

  ProtoEnv env;
  AddressVector av;
};

TEST_F(RequesterUd, SendOnlyCarriesDethWithQkeyAndSourceQp) {
  env.fill(0, 300, 2);
  const Sge s = env.sge(0, 300);
  ASSERT_EQ(env.qp->post_send(ud_wr(&s, 0x42)), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kUdSendOnly);
  EXPECT_EQ(f[0].h.bth.dqpn, 0x77u);
  EXPECT_EQ(f[0].psn(), env.opt.sq_psn);
  EXPECT_FALSE(f[0].h.bth.ackreq);
  EXPECT_EQ(f[0].h.deth.qkey, 0x42u);
  EXPECT_EQ(f[0].h.deth.src_qp, env.qp->qpn());
  EXPECT_EQ(f[0].h.ip.dst, ProtoEnv::peer_gid());
  EXPECT_EQ(f[0].h.eth.dst, mac_for_gid(ProtoEnv::peer_gid()));
  EXPECT_EQ(f[0].payload, env.bytes(0, 300));
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u) << "UD completes once sent";
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST_F(RequesterUd, PrivilegedQkeyInTheWrMeansTheQpsQkey) {
  const Sge s = env.sge(0, 4);
  ASSERT_EQ(env.qp->post_send(ud_wr(&s, 0x80000000u)), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].h.deth.qkey, env.opt.qkey);
}

TEST_F(RequesterUd, ImmediateSolicitedAndZeroLength) {
  const Sge s = env.sge(0, 16);
  SendWr wr = ud_wr(&s, 1, 1);
  wr.opcode = WrOpcode::kSendWithImm;
  wr.imm_data_be = 0xCAFEF00D;
  wr.send_flags |= kSendSolicited;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  ASSERT_EQ(env.qp->post_send(ud_wr(nullptr, 1, 2)), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kUdSendOnlyImm);
  EXPECT_EQ(f[0].h.imm_be, 0xCAFEF00Du);
  EXPECT_TRUE(f[0].h.bth.se);
  EXPECT_EQ(f[1].opcode(), op::kUdSendOnly);
  EXPECT_FALSE(f[1].h.bth.se);
  EXPECT_TRUE(f[1].payload.empty());
  EXPECT_EQ(f[1].psn(), env.opt.sq_psn + 1);
}

TEST_F(RequesterUd, PostRejectsWhatUdCannotCarry) {
  const Sge big = env.sge(0, 4097);  // larger than the port MTU: UD messages are one packet
  EXPECT_EQ(env.qp->post_send(ud_wr(&big, 1)), EINVAL);
  const Sge s = env.sge(0, 8);
  SendWr wr = ud_wr(&s, 1);
  wr.ah = nullptr;
  EXPECT_EQ(env.qp->post_send(wr), EINVAL) << "UD needs an address handle";
  wr = ud_wr(&s, 1);
  wr.opcode = WrOpcode::kRdmaWrite;
  EXPECT_EQ(env.qp->post_send(wr), EINVAL);
  wr.opcode = WrOpcode::kRdmaRead;
  EXPECT_EQ(env.qp->post_send(wr), EINVAL);
  EXPECT_TRUE(env.run().empty());
}

}  // namespace
}  // namespace uroce
