// Responder, RC, on valid requests: ACKs with credits and MSN (IBA 9.7.5.1, 9.7.7.2), READ responses
// FIRST/MIDDLE/LAST/ONLY, ATOMIC ACKs with the original value, receive completions, and duplicates (IBA
// 9.7.5.2.x: SEND/WRITE re-acknowledged, READ re-executed from the duplicate's PSN, ATOMIC answered from
// the saved result).
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

class ResponderRc : public ::testing::Test {
 protected:
  PacketHeaders req(uint8_t opcode, uint32_t psn, bool ackreq = false) const {
    PacketHeaders h = env.peer_headers(opcode, psn);
    h.bth.ackreq = ackreq;
    return h;
  }
  PacketHeaders rdma(uint8_t opcode, uint32_t psn, size_t off, uint32_t len, bool ackreq = false) const {
    PacketHeaders h = req(opcode, psn, ackreq);
    h.reth = {env.addr(off), env.mr->rkey, len};
    return h;
  }
  void expect_ack(const Emitted& f, uint32_t psn, uint32_t msn, uint8_t credits) const {
    EXPECT_EQ(f.verdict, RxDrop::kNone);
    EXPECT_EQ(f.opcode(), op::kRcAck);
    EXPECT_EQ(f.psn(), psn);
    EXPECT_EQ(f.aeth_kind(), AethKind::kAck);
    EXPECT_EQ(f.aeth_value(), credits);
    EXPECT_EQ(f.msn(), msn);
    EXPECT_EQ(f.h.bth.dqpn, env.opt.peer_qpn);
    EXPECT_EQ(f.h.ip.dst, ProtoEnv::peer_gid());
  }

  ResponderRc() = default;
  explicit ResponderRc(const ProtoOptions& o) : env(o) {}

  static constexpr uint32_t kPsn = 0x500;  // ProtoOptions::rq_psn
  ProtoEnv env;
};

TEST_F(ResponderRc, SendOnlyIsAckedWithCreditsAndMsn) {
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(env.post_recv(i * 2048, 1024, 10 + i), 0);
  const std::vector<uint8_t> data = pattern(100, 1);
  env.inject(req(op::kRcSendOnly, kPsn, true), data);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn, 1, 2);  // two receive WQEs left: credit code 2 (IBA table 44)
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[0].wr_id, 10u);
  EXPECT_EQ(wc[0].byte_len, 100u);
  EXPECT_EQ(wc[0].wc_flags, 0u);
  EXPECT_EQ(env.bytes(0, 100), data);

  env.inject(req(op::kRcSendOnly, kPsn + 1, true), data);
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 1, 2, 1);
  env.inject(req(op::kRcSendOnly, kPsn + 2, true), data);
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 2, 3, 0);
  EXPECT_EQ(env.poll().size(), 2u);
}

TEST_F(ResponderRc, MultiPacketSendIsAckedWhereAskedAndCountsOneMessage) {
  ASSERT_EQ(env.post_recv(0, 4096, 1), 0);
  const std::vector<uint8_t> data = pattern(2148, 2);
  const std::span<const uint8_t> d(data);
  env.inject(req(op::kRcSendFirst, kPsn), d.subspan(0, 1024));
  env.inject(req(op::kRcSendMiddle, kPsn + 1), d.subspan(1024, 1024));
  EXPECT_TRUE(env.run().empty()) << "no ACK before AckReq";
  env.inject(req(op::kRcSendLast, kPsn + 2, true), d.subspan(2048));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 2, 1, 0);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].byte_len, 2148u);
  EXPECT_EQ(env.bytes(0, 2148), data);
}

TEST_F(ResponderRc, AcksAreCoalescedUntilAckReq) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(env.post_recv(i * 64, 64, i), 0);
  const std::vector<uint8_t> data = pattern(8, 3);
  for (uint32_t i = 0; i < 3; ++i) env.inject(req(op::kRcSendOnly, kPsn + i), data);
  EXPECT_TRUE(env.run().empty());
  env.inject(req(op::kRcSendOnly, kPsn + 3, true), data);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 3, 4, 0);
  EXPECT_EQ(env.poll().size(), 4u);
}

// ACK coalescing (DeviceConfig::ack_hold_ns): a request that follows the previous one within the hold time
// has its ACK held for the requests behind it; a lone request is answered at once.
class ResponderAckHold : public ResponderRc {
 protected:
  static constexpr uint64_t kHold = 3'000;
  static ProtoOptions opts() {
    ProtoOptions o;
    o.ack_hold_ns = kHold;
    return o;
  }
  ResponderAckHold() : ResponderRc(opts()) {}

  // Two receives; a request answered at once, then one 100 ns later whose ACK is held (now 100 ns later).
  void hold_an_ack() {
    for (uint64_t i = 0; i < 2; ++i) ASSERT_EQ(env.post_recv(i * 64, 64, i), 0);
    const std::vector<uint8_t> data = pattern(8, 3);
    env.inject(req(op::kRcSendOnly, kPsn, true), data);
    ASSERT_EQ(env.run().size(), 1u);
    env.inject(req(op::kRcSendOnly, kPsn + 1, true), data);
    EXPECT_TRUE(env.advance(100).empty());  // held
  }

  // An application that moves the QP to ERR (rdma_disconnect does, right after its last message) or RESET has
  // seen the completions: the held ACK of its last request leaves before the QP stops answering, or the
  // peer would retry into silence and end with RETRY_EXC_ERR.
  void held_ack_leaves_on(QpState next) {
    hold_an_ack();
    ASSERT_EQ(env.poll().size(), 2u);
    QpAttr a;
    a.qp_state = next;
    ASSERT_EQ(env.qp->modify(a, kQpState), 0);
    EXPECT_EQ(env.qp->state(), next);
    const std::vector<Emitted> f = env.port.take();
    ASSERT_EQ(f.size(), 1u);
    expect_ack(f[0], kPsn + 1, 2, 0);
    EXPECT_TRUE(env.next().empty()) << "sent once";
  }
};

TEST_F(ResponderAckHold, AStreamGetsOneAckAfterTheHoldALoneRequestOneAtOnce) {
  for (uint64_t i = 0; i < 8; ++i) ASSERT_EQ(env.post_recv(i * 64, 64, i), 0);
  const std::vector<uint8_t> data = pattern(8, 3);
  env.inject(req(op::kRcSendOnly, kPsn, true), data);  // nothing before it: answered at once
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn, 1, aeth_credit_code(7));
  for (uint32_t i = 1; i < 5; ++i) {  // a stream, 100 ns apart: held
    env.inject(req(op::kRcSendOnly, kPsn + i, true), data);
    EXPECT_TRUE(env.advance(100).empty()) << i;
  }
  EXPECT_EQ(env.dev->counters().n[static_cast<size_t>(Counter::kAcksHeld)], 1u);
  f = env.next();  // the hold's deadline: one ACK for the four
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 4, 5, aeth_credit_code(3));
  EXPECT_EQ(env.now(), 100 + kHold);  // held from the first of them, not extended by the others
  EXPECT_EQ(env.poll().size(), 5u);
  EXPECT_TRUE(env.advance(kHold).empty());
  env.inject(req(op::kRcSendOnly, kPsn + 5, true), data);  // after a pause: at once again
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 5, 6, aeth_credit_code(2));
}

TEST_F(ResponderAckHold, AHeldAckLeavesWhenTheApplicationMovesTheQpToErr) {
  held_ack_leaves_on(QpState::kErr);
}

TEST_F(ResponderAckHold, AHeldAckLeavesWhenTheApplicationResetsTheQp) { held_ack_leaves_on(QpState::kReset); }

// Ping-pong: the answer a request gets from the application goes out right behind its ACK, never before.
TEST_F(ResponderAckHold, AHeldAckGoesAheadOfTheQpsOwnNextRequest) {
  env.unlimited_credits();
  hold_an_ack();
  ASSERT_EQ(env.post(WrOpcode::kSend, 1024, 8, 77), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  expect_ack(f[0], kPsn + 1, 2, 0);
  EXPECT_EQ(f[1].opcode(), op::kRcSendOnly);
  EXPECT_EQ(env.now(), 100u);
}

TEST_F(ResponderAckHold, AHeldAckGoesAheadOfAReadResponseAndAtTheAckLimit) {
  hold_an_ack();
  const std::vector<uint8_t> data = pattern(8, 3);
  env.inject(rdma(op::kRcReadRequest, kPsn + 2, 4096, 16), {});
  std::vector<Emitted> f = env.advance(100);
  ASSERT_EQ(f.size(), 2u);  // the ACK, then the response, in PSN order
  expect_ack(f[0], kPsn + 1, 2, 0);
  EXPECT_EQ(f[1].opcode(), op::kRcReadRespOnly);
  // A stream of WRITEs each asking for an ACK: the one that reaches kMaxPendingAcks unanswered requests is
  // answered before the hold ends.
  for (uint32_t i = 0; i < params::kMaxPendingAcks; ++i)
    env.inject(rdma(op::kRcWriteOnly, kPsn + 3 + i, 0, 8, true), data);
  f = env.advance(100);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_GT(f[0].psn(), kPsn + 3);
}

// A requester that waits for each ACK before its next request (one outstanding: a synchronous WRITE loop)
// sends its requests less than a hold apart, yet each held ACK only delays it by the whole hold: after
// params::kAckHoldMisses held ACKs that answered one request each, the QP answers at once.
class ResponderAckHoldLearns : public ResponderAckHold {
 protected:
  static constexpr uint64_t kRoundTrip = 500;  // the ACK's way back and the requester's next request
  uint32_t psn = kPsn;
  const std::vector<uint8_t> data = pattern(8, 3);

  uint64_t held() const { return env.dev->counters().n[static_cast<size_t>(Counter::kAcksHeld)]; }
  // One synchronous request: its ACK, at once or at the hold's deadline. Returns whether it was held.
  bool wait_for_ack() {
    env.inject(rdma(op::kRcWriteOnly, psn, 0, 8, true), data);
    const uint64_t at = env.now();
    std::vector<Emitted> f = env.run();
    const bool was_held = f.empty();
    if (was_held) {
      f = env.next();
      EXPECT_EQ(env.now(), at + kHold);
    }
    EXPECT_EQ(f.size(), 1u);
    if (!f.empty()) {
      EXPECT_EQ(f[0].opcode(), op::kRcAck);
      EXPECT_EQ(f[0].psn(), psn);
    }
    ++psn;
    env.advance(kRoundTrip);
    return was_held;
  }
  // Requests one per pass, `gap` apart, each asking for an ACK; returns the ACKs they drew.
  size_t trickle(uint32_t n, uint64_t gap) {
    size_t acks = 0;
    for (uint32_t i = 0; i < n; ++i) {
      env.inject(rdma(op::kRcWriteOnly, psn++, 0, 8, true), data);
      acks += env.advance(gap).size();
    }
    return acks;
  }
};

TEST_F(ResponderAckHoldLearns, ARequesterThatWaitsForEachAckIsAnsweredAtOnceOnceTheHoldsMiss) {
  uint32_t held_acks = 0;
  for (int i = 0; i < 40; ++i) held_acks += wait_for_ack();
  // The first request is lone; every other one then came within a hold of the previous (the ones after a
  // held ACK came a hold later): held until the misses add up, never after.
  EXPECT_EQ(held_acks, params::kAckHoldMisses);
  EXPECT_EQ(held(), params::kAckHoldMisses);
}

TEST_F(ResponderAckHoldLearns, TwoRequestsUnderOneAckPutTheQpBackToHolding) {
  for (int i = 0; i < 8; ++i) wait_for_ack();  // answered at once from the fifth
  ASSERT_EQ(held(), params::kAckHoldMisses);
  // Two requests in one pass: one ACK answers both, so requests pile up after all.
  env.inject(rdma(op::kRcWriteOnly, psn++, 0, 8, true), data);
  env.inject(rdma(op::kRcWriteOnly, psn++, 0, 8, true), data);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), psn - 1);
  EXPECT_EQ(held(), params::kAckHoldMisses);
  EXPECT_EQ(trickle(4, 100), 0u) << "held again, for all four";
  EXPECT_EQ(held(), params::kAckHoldMisses + 1);
  f = env.next();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), psn - 1);
}

// What a QP learned of its requester goes with the connection: reset and connected again, it holds.
TEST_F(ResponderAckHoldLearns, ANewConnectionStartsOutHolding) {
  for (int i = 0; i < 4; ++i) wait_for_ack();
  ASSERT_EQ(held(), params::kAckHoldMisses);
  QpAttr a;
  a.qp_state = QpState::kReset;
  ASSERT_EQ(env.qp->modify(a, kQpState), 0);
  ASSERT_EQ(env.connect(env.qp), 0);
  psn = env.opt.rq_psn;
  EXPECT_EQ(trickle(1, kHold), 1u) << "lone";
  EXPECT_EQ(trickle(1, 100), 0u) << "held";
  EXPECT_EQ(held(), params::kAckHoldMisses + 1);
}

// A stream whose requests come one per pass never puts two under an ACK that is not held: a probe hold
// every kAckHoldProbeEvery streaming requests finds it.
TEST_F(ResponderAckHoldLearns, AProbeHoldFindsAStreamOfOneRequestPerPass) {
  for (int i = 0; i < 4; ++i) wait_for_ack();
  ASSERT_EQ(held(), params::kAckHoldMisses);
  // The first comes a hold and a round trip after the last held request, so it is no stream yet; each of
  // the others is, and the one that makes kAckHoldProbeEvery of them is held.
  EXPECT_EQ(trickle(params::kAckHoldProbeEvery, 100), params::kAckHoldProbeEvery) << "one ACK each";
  EXPECT_EQ(held(), params::kAckHoldMisses);
  EXPECT_EQ(trickle(8, 100), 0u) << "the probe holds, and its ACK answers the seven behind it too";
  EXPECT_EQ(held(), params::kAckHoldMisses + 1);
  std::vector<Emitted> f = env.next();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), psn - 1);
  EXPECT_EQ(trickle(4, 100), 0u) << "holding again";
  EXPECT_EQ(held(), params::kAckHoldMisses + 2);
}

TEST_F(ResponderRc, SendWithImmediateAndSolicitedEvent) {
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  ASSERT_EQ(env.post_recv(64, 64, 2), 0);
  int notified = 0;
  env.cq->on_notify = [&notified](Cq*) { ++notified; };
  env.cq->arm(true);
  env.inject(req(op::kRcSendOnly, kPsn, true), pattern(4, 1));
  env.run();
  EXPECT_EQ(notified, 0) << "an unsolicited message does not satisfy a solicited-only arm";
  PacketHeaders h = req(op::kRcSendOnlyImm, kPsn + 1, true);
  h.imm_be = 0x0D0C0B0A;
  h.bth.se = true;
  env.inject(h, pattern(4, 1));
  env.run();
  EXPECT_EQ(notified, 1);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].wc_flags, uint32_t{kWcWithImm});
  EXPECT_EQ(wc[1].imm_data_be, 0x0D0C0B0Au);
}

TEST_F(ResponderRc, WriteLandsInMemoryWithoutConsumingAReceive) {
  const std::vector<uint8_t> data = pattern(2100, 4);
  const std::span<const uint8_t> d(data);
  env.inject(rdma(op::kRcWriteFirst, kPsn, 8192, 2100), d.subspan(0, 1024));
  env.inject(req(op::kRcWriteMiddle, kPsn + 1), d.subspan(1024, 1024));
  env.inject(req(op::kRcWriteLast, kPsn + 2, true), d.subspan(2048));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 2, 1, 0);
  EXPECT_EQ(env.bytes(8192, 2100), data);
  EXPECT_TRUE(env.poll().empty());
}

TEST_F(ResponderRc, WriteWithImmediateCompletesAReceive) {
  ASSERT_EQ(env.post_recv(0, 16, 5), 0);
  PacketHeaders h = rdma(op::kRcWriteOnlyImm, kPsn, 8192, 200, true);
  h.imm_be = 0x12345678;
  const std::vector<uint8_t> data = pattern(200, 5);
  env.inject(h, data);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn, 1, 0);
  EXPECT_EQ(env.bytes(8192, 200), data);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(wc[0].byte_len, 200u);
  EXPECT_EQ(wc[0].imm_data_be, 0x12345678u);
  EXPECT_EQ(wc[0].wr_id, 5u);
}

TEST_F(ResponderRc, ReadIsAnsweredFirstMiddleLastWithAethOnFirstAndLast) {
  env.fill(8192, 2500, 6);
  env.inject(rdma(op::kRcReadRequest, kPsn, 8192, 2500));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 3u);
  const uint8_t ops[] = {op::kRcReadRespFirst, op::kRcReadRespMiddle, op::kRcReadRespLast};
  for (uint32_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(f[i].opcode(), ops[i]);
    EXPECT_EQ(f[i].psn(), kPsn + i);
    EXPECT_EQ(f[i].payload, env.bytes(8192 + i * 1024, i == 2 ? 452 : 1024));
    EXPECT_EQ(f[i].has(kHasAeth), i != 1);
    EXPECT_EQ(f[i].h.bth.dqpn, env.opt.peer_qpn);
  }
  // C9-148: the READ counts as a message when it is accepted, so its responses carry the new MSN.
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].msn(), 1u);
  EXPECT_EQ(f[2].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[2].msn(), 1u);

  // The READ took three PSNs: the next request is expected at kPsn + 3.
  env.inject(rdma(op::kRcWriteOnly, kPsn + 3, 0, 4, true), pattern(4, 1));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn + 3, 2, 0);
}

TEST_F(ResponderRc, ShortAndZeroLengthReadsAreAnsweredWithReadResponseOnly) {
  env.fill(0, 100, 7);
  env.inject(rdma(op::kRcReadRequest, kPsn, 0, 100));
  env.inject(rdma(op::kRcReadRequest, kPsn + 1, 0, 0));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRespOnly);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(f[0].payload, env.bytes(0, 100));
  EXPECT_EQ(f[0].msn(), 1u);
  EXPECT_EQ(f[1].opcode(), op::kRcReadRespOnly);
  EXPECT_EQ(f[1].psn(), kPsn + 1);
  EXPECT_TRUE(f[1].payload.empty());
  EXPECT_EQ(f[1].msn(), 2u);
}

TEST_F(ResponderRc, AtomicsAnswerWithTheOriginalValue) {
  env.set_u64(64, 40);
  PacketHeaders fa = req(op::kRcFetchAdd, kPsn);
  fa.atomic = {env.addr(64), env.mr->rkey, 2, 0};
  PacketHeaders cs = req(op::kRcCmpSwap, kPsn + 1);
  cs.atomic = {env.addr(64), env.mr->rkey, 7, 42};
  PacketHeaders cs_miss = req(op::kRcCmpSwap, kPsn + 2);
  cs_miss.atomic = {env.addr(64), env.mr->rkey, 1, 99};
  env.inject(fa);
  env.inject(cs);
  env.inject(cs_miss);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 3u);
  const uint64_t orig[] = {40, 42, 7};
  for (uint32_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(f[i].opcode(), op::kRcAtomicAck);
    EXPECT_EQ(f[i].psn(), kPsn + i);
    EXPECT_EQ(f[i].aeth_kind(), AethKind::kAck);
    EXPECT_EQ(f[i].msn(), i + 1);
    EXPECT_EQ(f[i].h.atomic_ack_orig, orig[i]);
  }
  EXPECT_EQ(env.u64(64), 7u) << "the last compare missed and swapped nothing";
}

TEST_F(ResponderRc, DuplicateSendIsAcknowledgedAgainNotExecutedAgain) {
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  ASSERT_EQ(env.post_recv(64, 64, 2), 0);
  env.inject(req(op::kRcSendOnly, kPsn, true), pattern(8, 1));
  ASSERT_EQ(env.run().size(), 1u);
  env.inject(req(op::kRcSendOnly, kPsn, true), pattern(8, 1));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_ack(f[0], kPsn, 1, 1);
  EXPECT_EQ(env.poll().size(), 1u) << "one receive completion";
  EXPECT_EQ(env.dev->counters()[Counter::kDuplicateRequest], 1u);
}

TEST_F(ResponderRc, DuplicateReadIsReExecutedFromTheDuplicatesPsn) {
  env.fill(8192, 3000, 8);
  env.inject(rdma(op::kRcReadRequest, kPsn, 8192, 3000));
  ASSERT_EQ(env.run().size(), 3u);
  env.fill(8192, 3000, 9);  // a re-executed READ reads memory as it is now
  env.inject(rdma(op::kRcReadRequest, kPsn, 8192, 3000));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRespFirst);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(f[0].payload, env.bytes(8192, 1024));
  EXPECT_EQ(f[2].opcode(), op::kRcReadRespLast);
  EXPECT_EQ(f[2].psn(), kPsn + 2);

  // A requester that already has the first response asks for the rest: PSN kPsn + 1, the VA and length
  // of what is missing. The responses start at that PSN.
  env.inject(rdma(op::kRcReadRequest, kPsn + 1, 8192 + 1024, 3000 - 1024));
  f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRespFirst);
  EXPECT_EQ(f[0].psn(), kPsn + 1);
  EXPECT_EQ(f[0].payload, env.bytes(8192 + 1024, 1024));
  EXPECT_EQ(f[1].opcode(), op::kRcReadRespLast);
  EXPECT_EQ(f[1].psn(), kPsn + 2);
  EXPECT_EQ(f[1].payload, env.bytes(8192 + 2048, 952));
}

TEST_F(ResponderRc, DuplicateAtomicIsAnsweredFromTheSavedResult) {
  env.set_u64(0, 10);
  PacketHeaders fa = req(op::kRcFetchAdd, kPsn);
  fa.atomic = {env.addr(0), env.mr->rkey, 5, 0};
  env.inject(fa);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].h.atomic_ack_orig, 10u);
  EXPECT_EQ(env.u64(0), 15u);
  env.inject(fa);
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAtomicAck);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(f[0].h.atomic_ack_orig, 10u);
  EXPECT_EQ(env.u64(0), 15u) << "an ATOMIC is never applied twice";
}

TEST(ResponderSrq, AdvertisesNoCreditLimit) {
  ProtoOptions o;
  o.srq = true;
  ProtoEnv env(o);
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  PacketHeaders h = env.peer_headers(op::kRcSendOnly, o.rq_psn);
  h.bth.ackreq = true;
  env.inject(h, pattern(8, 1));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].aeth_value(), 31) << "an SRQ is shared: no per-QP credits";
  EXPECT_EQ(env.poll().size(), 1u);
}

}  // namespace
}  // namespace uroce
