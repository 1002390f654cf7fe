// Requester, RC: every request opcode it emits, with the header fields, payload slices and flags that IBA
// 9.2-9.4 prescribe, checked on the frames it hands the port.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::ProtoEnv;
using test::ProtoOptions;

SendWr make_wr(WrOpcode op, const Sge* s, uint32_t n, uint64_t id, uint32_t flags = kSendSignaled) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = op;
  wr.sg_list = s;
  wr.num_sge = n;
  wr.send_flags = flags;
  return wr;
}

std::vector<uint8_t> slice(const std::vector<uint8_t>& v, size_t off, size_t len) {
  return {v.begin() + static_cast<std::ptrdiff_t>(off), v.begin() + static_cast<std::ptrdiff_t>(off + len)};
}

TEST(Requester, SendOnlyIsAddressedToThePeerAndAsksForAnAck) {
  ProtoEnv env;
  env.fill(0, 100, 1);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 100, 7), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, RxDrop::kNone);
  EXPECT_EQ(f[0].opcode(), op::kRcSendOnly);
  EXPECT_EQ(f[0].psn(), env.opt.sq_psn);
  EXPECT_EQ(f[0].h.bth.dqpn, env.opt.peer_qpn);
  EXPECT_EQ(f[0].h.bth.pkey, 0xFFFF);
  EXPECT_TRUE(f[0].h.bth.ackreq);
  EXPECT_FALSE(f[0].h.bth.se);
  EXPECT_EQ(f[0].h.eth.dst, mac_for_gid(ProtoEnv::peer_gid()));
  EXPECT_EQ(f[0].h.eth.src, mac_for_gid(ProtoEnv::local_gid()));
  EXPECT_EQ(f[0].h.ip.src, ProtoEnv::local_gid());
  EXPECT_EQ(f[0].h.ip.dst, ProtoEnv::peer_gid());
  EXPECT_EQ(f[0].payload, env.bytes(0, 100));
  EXPECT_TRUE(env.poll().empty()) << "RC completes on the ACK, not on transmission";

  env.inject_ack(env.opt.sq_psn);
  EXPECT_TRUE(env.run().empty());
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].qp_num, env.qp->qpn());
}

TEST(Requester, MultiPacketSendWithImmediateAndSolicitedEvent) {
  ProtoEnv env;
  env.fill(0, 3500, 2);
  const Sge s = env.sge(0, 3500);
  SendWr wr = make_wr(WrOpcode::kSendWithImm, &s, 1, 1, kSendSignaled | kSendSolicited);
  wr.imm_data_be = 0xEFBEADDE;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 4u);
  const uint8_t ops[] = {op::kRcSendFirst, op::kRcSendMiddle, op::kRcSendMiddle, op::kRcSendLastImm};
  const std::vector<uint8_t> all = env.bytes(0, 3500);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(f[i].opcode(), ops[i]);
    EXPECT_EQ(f[i].psn(), env.opt.sq_psn + i);
    EXPECT_EQ(f[i].h.bth.ackreq, i == 3);
    EXPECT_EQ(f[i].h.bth.se, i == 3);
    EXPECT_EQ(f[i].payload, slice(all, i * 1024, i == 3 ? 428 : 1024));
  }
  EXPECT_EQ(f[3].h.imm_be, 0xEFBEADDEu);
  EXPECT_EQ(env.port.free_buffers(), env.port.pool_size()) << "the device keeps no transmit buffer";
}

TEST(Requester, SendOnlyWithImmediate) {
  ProtoEnv env;
  const Sge s = env.sge(0, 8);
  SendWr wr = make_wr(WrOpcode::kSendWithImm, &s, 1, 1);
  wr.imm_data_be = 0x04030201;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcSendOnlyImm);
  EXPECT_EQ(f[0].h.imm_be, 0x04030201u);
  EXPECT_FALSE(f[0].h.bth.se);
}

TEST(Requester, WriteCarriesRethOnTheFirstPacketOnly) {
  ProtoEnv env;
  env.fill(0, 2500, 3);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 2500, 1, 0xABCD0000, 0x4242), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 4000, 16, 2, 0xABCE0000, 0x4343), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].opcode(), op::kRcWriteFirst);
  EXPECT_EQ(f[1].opcode(), op::kRcWriteMiddle);
  EXPECT_EQ(f[2].opcode(), op::kRcWriteLast);
  EXPECT_EQ(f[3].opcode(), op::kRcWriteOnly);
  EXPECT_EQ(f[0].h.reth.va, 0xABCD0000u);
  EXPECT_EQ(f[0].h.reth.rkey, 0x4242u);
  EXPECT_EQ(f[0].h.reth.dma_len, 2500u);
  EXPECT_FALSE(f[1].has(kHasReth));
  EXPECT_FALSE(f[2].has(kHasReth));
  EXPECT_EQ(f[3].h.reth.va, 0xABCE0000u);
  EXPECT_EQ(f[3].h.reth.rkey, 0x4343u);
  EXPECT_EQ(f[3].h.reth.dma_len, 16u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(f[i].psn(), env.opt.sq_psn + i);
  EXPECT_FALSE(f[0].h.bth.ackreq);
  EXPECT_FALSE(f[1].h.bth.ackreq);
  EXPECT_TRUE(f[2].h.bth.ackreq);
  EXPECT_TRUE(f[3].h.bth.ackreq);
  EXPECT_EQ(f[2].payload, env.bytes(2048, 452));
}

// A QP paced far below its message size per ACK timeout (DCQCN's 1 Mb/s floor: a 1024-byte packet every
// 8.7 ms, a 16-packet message in 139 ms) asks for an ACK at least every quarter of the local ACK timeout
// (16.8 ms at timeout 14). A peer that answers what is asked then keeps the 67 ms timer from firing; asking
// only on a message's last packet, the requester would time out, go back to the message's start and never
// finish it. The first packet, sent with nothing outstanding, starts that clock; at full speed only the last
// packet asks.
TEST(Requester, APacedQpAsksForAnAckAtLeastEveryQuarterAckTimeout) {
  ProtoEnv env;
  env.unlimited_credits();
  env.fill(0, 16 * 1024, 5);
  env.qp->cc()->rate_bps = 1'000'000;
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 16 * 1024, 1, 0xABCD0000, 0x4242), 0);
  std::vector<Emitted> f;
  std::vector<Wc> wc;
  for (int i = 0; i < 200 && wc.empty(); ++i) {
    for (Emitted& e : i == 0 ? env.run() : env.next()) {
      if (e.h.bth.ackreq) env.inject_ack(e.psn());  // the peer answers at once
      f.push_back(std::move(e));
    }
    wc = env.poll();
  }
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  ASSERT_EQ(f.size(), 16u) << "nothing sent twice";
  EXPECT_EQ(env.dev->counters().n[static_cast<size_t>(Counter::kTimeouts)], 0u);
  const uint64_t quarter = 1024ull << env.opt.timeout;
  // The clock starts with the first packet sent while nothing is outstanding: the first of all, and the one
  // after each answered ask. A packet asks exactly when a quarter of the timeout has passed since.
  uint64_t start = f[0].time_ns;
  int asks = 0;
  for (size_t i = 0; i + 1 < f.size(); ++i) {
    EXPECT_EQ(f[i].psn(), env.opt.sq_psn + i);
    EXPECT_EQ(f[i].h.bth.ackreq, f[i].time_ns - start >= quarter) << "packet " << i;
    if (f[i].h.bth.ackreq) {
      ++asks;
      start = f[i + 1].time_ns;
    }
  }
  EXPECT_TRUE(f[15].h.bth.ackreq);
  EXPECT_GE(asks, 5) << "16 packets 8.7 ms apart: every third asks";

  env.qp->cc()->rate_bps = 0;
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 16 * 1024, 2, 0xABCD0000, 0x4242), 0);
  f = env.run();
  ASSERT_EQ(f.size(), 16u);
  for (size_t i = 0; i < 15; ++i) EXPECT_FALSE(f[i].h.bth.ackreq) << "packet " << i;
  EXPECT_TRUE(f[15].h.bth.ackreq);
}

TEST(Requester, WriteWithImmediateOpcodes) {
  ProtoEnv env;
  env.unlimited_credits();  // WRITE with immediate consumes a receive WQE: two need credits
  const Sge big = env.sge(0, 1500), small = env.sge(0, 4);
  SendWr wr = make_wr(WrOpcode::kRdmaWriteWithImm, &big, 1, 1);
  wr.remote_addr = 0x1000;
  wr.rkey = 9;
  wr.imm_data_be = 0x11223344;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  wr.sg_list = &small;
  wr.imm_data_be = 0x55667788;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].opcode(), op::kRcWriteFirst);
  EXPECT_EQ(f[1].opcode(), op::kRcWriteLastImm);
  EXPECT_EQ(f[1].h.imm_be, 0x11223344u);
  EXPECT_EQ(f[2].opcode(), op::kRcWriteOnlyImm);
  EXPECT_EQ(f[2].h.imm_be, 0x55667788u);
  EXPECT_EQ(f[2].h.reth.dma_len, 4u);
}

TEST(Requester, ReadRequestReservesThePsnsOfItsResponses) {
  ProtoEnv env;
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 3000, 1, 0x77000, 0x99), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 4000, 10, 2), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRequest);
  EXPECT_EQ(f[0].psn(), env.opt.sq_psn);
  EXPECT_EQ(f[0].h.reth.va, 0x77000u);
  EXPECT_EQ(f[0].h.reth.rkey, 0x99u);
  EXPECT_EQ(f[0].h.reth.dma_len, 3000u);
  EXPECT_TRUE(f[0].payload.empty());
  EXPECT_EQ(f[1].opcode(), op::kRcSendOnly);
  EXPECT_EQ(f[1].psn(), env.opt.sq_psn + 3) << "three response PSNs belong to the READ";
}

TEST(Requester, AtomicsCarryTheirOperands) {
  ProtoEnv env;
  const Sge a = env.sge(0, 8), b = env.sge(8, 8);
  SendWr cs = make_wr(WrOpcode::kAtomicCmpAndSwp, &a, 1, 1);
  cs.remote_addr = 0x5000;
  cs.rkey = 0x31;
  cs.compare_add = 0x1111;
  cs.swap = 0x2222;
  SendWr fa = make_wr(WrOpcode::kAtomicFetchAndAdd, &b, 1, 2);
  fa.remote_addr = 0x5008;
  fa.rkey = 0x32;
  fa.compare_add = 5;
  ASSERT_EQ(env.qp->post_send(cs), 0);
  ASSERT_EQ(env.qp->post_send(fa), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcCmpSwap);
  EXPECT_EQ(f[0].psn(), env.opt.sq_psn);
  EXPECT_EQ(f[0].h.atomic.va, 0x5000u);
  EXPECT_EQ(f[0].h.atomic.rkey, 0x31u);
  EXPECT_EQ(f[0].h.atomic.swap_add, 0x2222u);
  EXPECT_EQ(f[0].h.atomic.compare, 0x1111u);
  EXPECT_EQ(f[1].opcode(), op::kRcFetchAdd);
  EXPECT_EQ(f[1].psn(), env.opt.sq_psn + 1);
  EXPECT_EQ(f[1].h.atomic.va, 0x5008u);
  EXPECT_EQ(f[1].h.atomic.swap_add, 5u);
  // A misaligned or wrongly sized atomic is refused at post time.
  const Sge c = env.sge(16, 4);
  EXPECT_EQ(env.qp->post_send(make_wr(WrOpcode::kAtomicFetchAndAdd, &c, 1, 3)), EINVAL);
}

TEST(Requester, InlineDataIsCopiedAtPostTime) {
  ProtoEnv env;
  env.fill(0, 48, 4);
  const std::vector<uint8_t> before = env.bytes(0, 48);
  const Sge s{env.addr(0), 48, 0};  // inline SGEs need no lkey
  ASSERT_EQ(env.qp->post_send(make_wr(WrOpcode::kSend, &s, 1, 1, kSendSignaled | kSendInline)), 0);
  env.fill(0, 48, 5);  // the application reuses its buffer at once
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].payload, before);
  const Sge too_big{env.addr(0), 65, 0};
  EXPECT_EQ(env.qp->post_send(make_wr(WrOpcode::kSend, &too_big, 1, 2, kSendInline)), EINVAL);
}

TEST(Requester, MultipleSgesAreGatheredAcrossPacketBoundaries) {
  ProtoEnv env;
  env.fill(0, 8000, 6);
  const Sge s[3] = {env.sge(100, 300), env.sge(2000, 1000), env.sge(5000, 300)};
  ASSERT_EQ(env.qp->post_send(make_wr(WrOpcode::kSend, s, 3, 1)), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  std::vector<uint8_t> want = env.bytes(100, 300);
  for (const auto& part : {env.bytes(2000, 1000), env.bytes(5000, 300)})
    want.insert(want.end(), part.begin(), part.end());
  EXPECT_EQ(f[0].opcode(), op::kRcSendFirst);
  EXPECT_EQ(f[0].payload, slice(want, 0, 1024));
  EXPECT_EQ(f[1].opcode(), op::kRcSendLast);
  EXPECT_EQ(f[1].payload, slice(want, 1024, 576));
  const Sge five[5] = {};
  EXPECT_EQ(env.qp->post_send(make_wr(WrOpcode::kSend, five, 5, 2)), EINVAL) << "max_send_sge is 4";
}

TEST(Requester, ZeroLengthMessagesUseOnePacketWithoutPayload) {
  ProtoEnv env;
  ASSERT_EQ(env.qp->post_send(make_wr(WrOpcode::kSend, nullptr, 0, 1)), 0);
  SendWr w = make_wr(WrOpcode::kRdmaWrite, nullptr, 0, 2);
  w.remote_addr = 0x10;
  w.rkey = 3;
  ASSERT_EQ(env.qp->post_send(w), 0);
  w.opcode = WrOpcode::kRdmaRead;
  w.wr_id = 3;
  ASSERT_EQ(env.qp->post_send(w), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].opcode(), op::kRcSendOnly);
  EXPECT_EQ(f[1].opcode(), op::kRcWriteOnly);
  EXPECT_EQ(f[1].h.reth.dma_len, 0u);
  EXPECT_EQ(f[2].opcode(), op::kRcReadRequest);
  EXPECT_EQ(f[2].h.reth.dma_len, 0u);
  EXPECT_TRUE(f[0].h.bth.ackreq);
  EXPECT_TRUE(f[1].h.bth.ackreq);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(f[i].psn(), env.opt.sq_psn + i);
    EXPECT_TRUE(f[i].payload.empty());
  }
}

TEST(Requester, AckReqAtLeastEverySixteenPackets) {
  ProtoOptions o;
  o.mtu = Mtu::k256;
  o.mem_bytes = 8192;
  ProtoEnv env(o);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 20 * 256, 1, 0x1000, 1), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 20u);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(f[i].h.bth.ackreq, i == 15 || i == 19) << i;
}

TEST(Requester, SolicitedEventOnlyOnSendAndWriteWithImmediate) {
  ProtoEnv env;
  env.unlimited_credits();
  const Sge s = env.sge(0, 4);
  const WrOpcode ops[] = {WrOpcode::kRdmaWrite, WrOpcode::kRdmaWriteWithImm, WrOpcode::kSend};
  for (WrOpcode o : ops) {
    SendWr wr = make_wr(o, &s, 1, 1, kSendSolicited);
    wr.remote_addr = 0x1000;
    ASSERT_EQ(env.qp->post_send(wr), 0);
  }
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 3u);
  // IBA 9.2 (BTH SE): the solicited event bit belongs to SEND and RDMA WRITE with immediate, whose last
  // packet produces a receive completion; a plain WRITE has nothing to solicit.
  EXPECT_FALSE(f[0].h.bth.se);
  EXPECT_TRUE(f[1].h.bth.se);
  EXPECT_TRUE(f[2].h.bth.se);
}

}  // namespace
}  // namespace uroce
