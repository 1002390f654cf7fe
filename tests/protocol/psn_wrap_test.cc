// PSNs are 24 bits and wrap (IBA 9.7.1): requester and responder near 0xFFFFFF, with multi-packet messages,
// READ reservations, acknowledgements, NAKs and duplicates across the wrap.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

ProtoOptions near_wrap(uint32_t sq_psn, uint32_t rq_psn) {
  ProtoOptions o;
  o.sq_psn = sq_psn;
  o.rq_psn = rq_psn;
  return o;
}

std::vector<uint32_t> psns(const std::vector<Emitted>& f) {
  std::vector<uint32_t> out;
  for (const Emitted& e : f) out.push_back(e.psn());
  return out;
}

TEST(PsnWrap, RequesterMessagesCrossTheWrap) {
  ProtoEnv env(near_wrap(0xFFFFFE, 0));
  env.unlimited_credits();
  env.fill(0, 3500, 1);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 3500, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 8192, 2048, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 3, 0x1000, 1), 0);
  std::vector<Emitted> f = env.run();
  EXPECT_EQ(psns(f), (std::vector<uint32_t>{0xFFFFFE, 0xFFFFFF, 0, 1, 2, 4}));
  EXPECT_EQ(f[0].opcode(), op::kRcSendFirst);
  EXPECT_EQ(f[3].opcode(), op::kRcSendLast);
  EXPECT_EQ(f[4].opcode(), op::kRcReadRequest);

  env.inject_ack(1);
  env.inject_read_resp(op::kRcReadRespFirst, 2, pattern(1024, 2));
  env.inject_read_resp(op::kRcReadRespLast, 3, pattern(1024, 3));
  env.inject_ack(4);
  EXPECT_TRUE(env.run().empty());
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 3u);
  for (const Wc& w : wc) EXPECT_EQ(w.status, WcStatus::kSuccess);
  EXPECT_EQ(env.bytes(9216, 1024), pattern(1024, 3));
  EXPECT_EQ(env.dev->next_deadline(), kNever);
}

TEST(PsnWrap, GoBackNAcrossTheWrap) {
  ProtoEnv env(near_wrap(0xFFFFFF, 0));
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 3000, 1, 0x1000, 1), 0);
  ASSERT_EQ(psns(env.run()), (std::vector<uint32_t>{0xFFFFFF, 0, 1}));
  env.inject_ack(0, AethKind::kNak, 0);  // PSN 0 was lost
  EXPECT_EQ(psns(env.run()), (std::vector<uint32_t>{0, 1}));
  env.inject_ack(1);
  env.run();
  ASSERT_EQ(env.poll().size(), 1u);
  // The next message continues after the wrap.
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 2048, 2, 0x1000, 1), 0);
  ASSERT_EQ(psns(env.run()), (std::vector<uint32_t>{2, 3}));
}

TEST(PsnWrap, ResponderAcceptsAndAcknowledgesAcrossTheWrap) {
  ProtoEnv env(near_wrap(0x100, 0xFFFFFF));
  ASSERT_EQ(env.post_recv(0, 4096, 1), 0);
  const std::vector<uint8_t> data = pattern(2100, 4);
  const std::span<const uint8_t> d(data);
  env.inject(env.peer_headers(op::kRcSendFirst, 0xFFFFFF), d.subspan(0, 1024));
  env.inject(env.peer_headers(op::kRcSendMiddle, 0), d.subspan(1024, 1024));
  PacketHeaders last = env.peer_headers(op::kRcSendLast, 1);
  last.bth.ackreq = true;
  env.inject(last, d.subspan(2048));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].psn(), 1u);
  EXPECT_EQ(f[0].msn(), 1u);
  EXPECT_EQ(env.bytes(0, 2100), data);

  // 0xFFFFFF is now a duplicate (acknowledged again), 3 is a gap (NAKed at 2).
  PacketHeaders dup = env.peer_headers(op::kRcSendFirst, 0xFFFFFF);
  dup.bth.ackreq = true;
  env.inject(dup, d.subspan(0, 1024));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].psn(), 1u);
  env.inject(env.peer_headers(op::kRcSendOnly, 3), d.subspan(0, 8));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kNak);
  EXPECT_EQ(f[0].psn(), 2u);
  EXPECT_EQ(env.poll().size(), 1u);
}

TEST(PsnWrap, ReadResponsesAndDuplicateReadAcrossTheWrap) {
  ProtoEnv env(near_wrap(0x100, 0xFFFFFE));
  env.fill(0, 3000, 5);
  PacketHeaders rd = env.peer_headers(op::kRcReadRequest, 0xFFFFFE);
  rd.reth = {env.addr(0), env.mr->rkey, 3000};
  env.inject(rd);
  EXPECT_EQ(psns(env.run()), (std::vector<uint32_t>{0xFFFFFE, 0xFFFFFF, 0}));
  env.inject(rd);  // duplicate: re-executed
  const std::vector<Emitted> f = env.run();
  EXPECT_EQ(psns(f), (std::vector<uint32_t>{0xFFFFFE, 0xFFFFFF, 0}));
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[2].opcode(), op::kRcReadRespLast);
  EXPECT_EQ(f[2].payload, env.bytes(2048, 952));
  PacketHeaders w = env.peer_headers(op::kRcWriteOnly, 1);
  w.reth = {env.addr(4096), env.mr->rkey, 4};
  w.bth.ackreq = true;
  env.inject(w, pattern(4, 1));
  const std::vector<Emitted> a = env.run();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(a[0].psn(), 1u);
}

}  // namespace
}  // namespace uroce
