// Congestion-control hooks of the transport (RoCEv2 A17.9, DCQCN): as notification point the responder
// answers a CE-marked request with a CNP to the sender's QP, at most once per kCnpMinIntervalNs; as reaction
// point a received CNP reaches the QP's CC algorithm.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"
#include "transport/params.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

PacketHeaders ce_write(const ProtoEnv& env, uint32_t psn) {
  PacketHeaders h = env.peer_headers(op::kRcWriteOnly, psn);
  h.reth = {env.addr(0), env.mr->rkey, 4};
  h.ip.tclass = static_cast<uint8_t>(26 << 2 | static_cast<uint8_t>(Ecn::kCe));
  return h;
}

std::vector<Emitted> cnps(const std::vector<Emitted>& f) {
  std::vector<Emitted> out;
  for (const Emitted& e : f)
    if (e.opcode() == op::kCnp) out.push_back(e);
  return out;
}

TEST(CcHooks, CeMarkedRequestMakesTheResponderSendACnp) {
  ProtoEnv env;
  env.clock.set(5'000'000);
  env.inject(ce_write(env, env.opt.rq_psn), pattern(4, 1));
  const std::vector<Emitted> f = cnps(env.run());
  ASSERT_EQ(f.size(), 1u);
  const Emitted& c = f[0];
  EXPECT_EQ(c.verdict, RxDrop::kNone);
  EXPECT_EQ(c.h.bth.dqpn, env.opt.peer_qpn) << "the CNP goes to the flow to slow: the sender's QP";
  EXPECT_TRUE(c.h.bth.resv8a & 0x40) << "BECN";
  EXPECT_EQ(c.h.bth.pkey, 0xFFFF);
  EXPECT_EQ(c.psn(), 0u);
  EXPECT_EQ(c.h.cnp_resv, (std::array<uint8_t, 16>{}));
  EXPECT_EQ(c.h.ip.src, ProtoEnv::local_gid());
  EXPECT_EQ(c.h.ip.dst, ProtoEnv::peer_gid());
  EXPECT_EQ(c.h.eth.dst, mac_for_gid(ProtoEnv::peer_gid()));
  EXPECT_EQ(env.dev->counters()[Counter::kCnpSent], 1u);
  EXPECT_EQ(env.dev->counters()[Counter::kEcnMarked], 1u);
  EXPECT_EQ(env.bytes(0, 4), pattern(4, 1)) << "the marked request is executed as usual";
}

TEST(CcHooks, AtMostOneCnpPerMinimumInterval) {
  ProtoEnv env;  // the clock starts at 0, as a simulation's does
  uint32_t psn = env.opt.rq_psn;
  env.inject(ce_write(env, psn++), pattern(4, 1));
  env.inject(ce_write(env, psn++), pattern(4, 1));
  EXPECT_EQ(cnps(env.run()).size(), 1u);
  env.clock.advance(1);
  env.inject(ce_write(env, psn++), pattern(4, 1));
  EXPECT_TRUE(cnps(env.run()).empty()) << "1 ns after the first CNP";
  env.clock.advance(params::kCnpMinIntervalNs - 2);
  env.inject(ce_write(env, psn++), pattern(4, 1));
  EXPECT_TRUE(cnps(env.run()).empty()) << "1 ns before the interval ends";
  env.clock.advance(1);
  env.inject(ce_write(env, psn++), pattern(4, 1));
  EXPECT_EQ(cnps(env.run()).size(), 1u);
  EXPECT_EQ(env.dev->counters()[Counter::kCnpSent], 2u);
  EXPECT_EQ(env.dev->counters()[Counter::kEcnMarked], 5u);
}

TEST(CcHooks, UnmarkedOrEctRequestsSendNoCnp) {
  ProtoEnv env;
  PacketHeaders h = ce_write(env, env.opt.rq_psn);
  h.ip.tclass = static_cast<uint8_t>(26 << 2 | static_cast<uint8_t>(Ecn::kEct0));
  env.inject(h, pattern(4, 1));
  EXPECT_TRUE(cnps(env.run()).empty());
}

TEST(CcHooks, UdCnpGoesToTheSourceQpOfTheDeth) {
  ProtoOptions o;
  o.type = QpType::kUd;
  ProtoEnv env(o);
  ASSERT_EQ(env.post_recv(0, 128, 1), 0);
  PacketHeaders h = env.peer_headers(op::kUdSendOnly, 0);
  h.deth.src_qp = 0x4242;
  h.ip.tclass = static_cast<uint8_t>(Ecn::kCe);
  env.inject(h, pattern(8, 1));
  const std::vector<Emitted> f = cnps(env.run());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].h.bth.dqpn, 0x4242u);
}

TEST(CcHooks, ReceivedCnpReachesTheQpsCongestionControl) {
  ProtoEnv env;
  PacketHeaders h = env.peer_headers(op::kCnp, 0);
  h.bth.resv8a = 0x40;
  h.bth.migreq = false;
  env.inject(h);
  env.inject(h);
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.qp->cc()->cnp_handled, 2u);
  EXPECT_EQ(env.dev->counters()[Counter::kCnpRcvd], 2u);

  h.bth.dqpn = env.qp->qpn() + 1;  // no such QP
  env.inject(h);
  env.run();
  EXPECT_EQ(env.qp->cc()->cnp_handled, 2u);
  EXPECT_EQ(env.dev->counters()[Counter::kDropUnknownQp], 1u);
}

}  // namespace
}  // namespace uroce
