// Requester-visible error completions (IBA 10.8.3, ibv_wc_status): a fatal NAK completes its WQE with the
// matching remote error, a bad local key with LOC_PROT_ERR; the QP goes to ERR and every later WQE, posted
// before or after, completes with WR_FLUSH_ERR.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;

struct NakCase {
  uint8_t code;
  WcStatus status;
};

class FatalNak : public ::testing::TestWithParam<NakCase> {};

TEST_P(FatalNak, CompletesTheNakedWqeWithItsStatusAndFlushesTheRest) {
  ProtoEnv env;
  env.unlimited_credits();
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post_recv(0, 64, 100), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 2), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 3, 0x1000, 1, 0), 0);  // unsignaled: flushed anyway
  ASSERT_EQ(env.run().size(), 3u);
  env.inject_ack(p);
  env.inject_ack(p + 1, AethKind::kNak, GetParam().code);
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 4u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].status, GetParam().status);
  EXPECT_EQ(wc[2].wr_id, 3u);
  EXPECT_EQ(wc[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc[3].wr_id, 100u) << "the receive queue is flushed too";
  EXPECT_EQ(wc[3].status, WcStatus::kWrFlushErr);
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::kQpFatal);
  EXPECT_EQ(ev[0].element, env.qp->qpn());

  // In ERR, work posted completes at once with WR_FLUSH_ERR and nothing is sent.
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 4), 0);
  ASSERT_EQ(env.post_recv(0, 64, 101), 0);
  EXPECT_TRUE(env.run().empty());
  wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 4u);
  EXPECT_EQ(wc[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc[1].wr_id, 101u);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
}

INSTANTIATE_TEST_SUITE_P(Codes, FatalNak,
                         ::testing::Values(NakCase{1, WcStatus::kRemInvReqErr},
                                           NakCase{2, WcStatus::kRemAccessErr},
                                           NakCase{3, WcStatus::kRemOpErr}),
                         [](const ::testing::TestParamInfo<NakCase>& i) {
                           return std::string(i.param.code == 1   ? "InvalidRequest"
                                              : i.param.code == 2 ? "RemoteAccess"
                                                                  : "RemoteOperational");
                         });

TEST(RequesterErrors, NakOfAReadCompletesTheRead) {
  ProtoEnv env;
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 3000, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 4096, 8, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 2u);
  env.inject_ack(p, AethKind::kNak, 2);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
}

TEST(RequesterErrors, BadLkeyCompletesWithLocalProtectionError) {
  ProtoEnv env;
  env.unlimited_credits();
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 1, 0x1000, 1), 0);
  Sge bad = env.sge(0, 8);
  bad.lkey = 0xBAD00;
  SendWr wr;
  wr.wr_id = 2;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = &bad;
  wr.num_sge = 1;
  ASSERT_EQ(env.qp->post_send(wr), 0) << "keys are checked when the WQE executes, as an RNIC does";
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 3), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "nothing after the bad WQE is sent";
  EXPECT_EQ(f[0].psn(), p);
  EXPECT_TRUE(env.poll().empty()) << "completions stay in order: the WRITE before it is unacknowledged";
  env.inject_ack(p);
  EXPECT_TRUE(env.run().empty());
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 3u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(env.qp->state(), QpState::kErr);
}

TEST(RequesterErrors, OutOfBoundsOrReadOnlyLocalBufferIsAProtectionError) {
  ProtoEnv env;
  Mr* ro = nullptr;
  ASSERT_EQ(env.dev->reg_mr(env.pd, env.at(0), 4096, 0, &ro), 0);  // local read only
  // A READ writes its local buffer: it needs local write access.
  const Sge s{env.addr(0), 8, ro->lkey};
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kRdmaRead;
  wr.sg_list = &s;
  wr.num_sge = 1;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  EXPECT_TRUE(env.run().empty());
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(env.qp->state(), QpState::kErr);

  ProtoEnv env2;
  ASSERT_EQ(env2.post(WrOpcode::kSend, env2.opt.mem_bytes - 4, 8, 1), 0);  // past the end of the MR
  EXPECT_TRUE(env2.run().empty());
  wc = env2.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
}

}  // namespace
}  // namespace uroce
