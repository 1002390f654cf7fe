// What the QP transitions do (IBA 10.3.1, 11.6.3): SQD stops new work and reports the drain, SQD -> RTS
// resumes, ERR flushes, RESET forgets the connection so that the QP can be connected again, COMM_EST fires
// on the first packet in RTR, and query_qp reports what was set. A pass visits only QPs with work.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

int to_state(Qp* qp, QpState s, uint32_t mask = 0, QpAttr a = {}) {
  a.qp_state = s;
  return qp->modify(a, kQpState | mask);
}

TEST(QpLifecycle, SqdDrainsOutstandingWorkThenResumesInRts) {
  ProtoEnv env;
  env.unlimited_credits();
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 2u);
  QpAttr a;
  a.en_sqd_async_notify = true;
  ASSERT_EQ(to_state(env.qp, QpState::kSqd, kQpEnSqdAsyncNotify, a), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 3, 0x1000, 1), 0);
  EXPECT_TRUE(env.run().empty()) << "SQD starts no new work";
  QpAttr q;
  env.qp->query(&q);
  EXPECT_EQ(q.qp_state, QpState::kSqd);
  EXPECT_TRUE(q.sq_draining);
  EXPECT_TRUE(env.events().empty());

  env.inject_ack(p + 1);
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.poll().size(), 2u);
  env.qp->query(&q);
  EXPECT_FALSE(q.sq_draining);
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::kSqDrained);

  // SQD -> SQD may change the path parameters; SQD -> RTS resumes with the WQE posted meanwhile.
  QpAttr t;
  t.timeout = 10;
  ASSERT_EQ(env.qp->modify(t, kQpTimeout), 0);
  ASSERT_EQ(to_state(env.qp, QpState::kRts), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), p + 2);
  env.inject_ack(p + 2);
  env.run();
  EXPECT_EQ(env.poll().size(), 1u);
}

TEST(QpLifecycle, SqdOnAnIdleQpReportsTheDrainAtOnce) {
  ProtoEnv env;
  QpAttr a;
  a.en_sqd_async_notify = true;
  ASSERT_EQ(to_state(env.qp, QpState::kSqd, kQpEnSqdAsyncNotify, a), 0);
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u) << "nothing outstanding: the send queue is drained already (IBA 11.6.3.2)";
  EXPECT_EQ(ev[0].type, EventType::kSqDrained);
  EXPECT_EQ(ev[0].element, env.qp->qpn());
  QpAttr q;
  env.qp->query(&q);
  EXPECT_FALSE(q.sq_draining);
}

TEST(QpLifecycle, DrainWaitsForAMessageCaughtHalfSent) {
  ProtoOptions o;
  o.mtu = Mtu::k256;
  ProtoEnv env(o);
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 20 * 256, 2, 0x1000, 1), 0);
  env.dev->progress();  // one pass: the first WRITE and 15 packets of the second
  ASSERT_EQ(env.port.take().size(), 16u);
  QpAttr a;
  a.en_sqd_async_notify = true;
  ASSERT_EQ(to_state(env.qp, QpState::kSqd, kQpEnSqdAsyncNotify, a), 0);
  env.inject_ack(p);
  EXPECT_EQ(env.run().size(), 5u) << "a message already started is finished in SQD";
  EXPECT_TRUE(env.events().empty()) << "not drained while the second WRITE is unacknowledged";
  QpAttr q;
  env.qp->query(&q);
  EXPECT_TRUE(q.sq_draining);
  env.inject_ack(p + 20);
  env.run();
  EXPECT_EQ(env.poll().size(), 2u);
  const std::vector<AsyncEvent> ev = env.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, EventType::kSqDrained);
}

TEST(QpLifecycle, SqdToRtsKeepsTheConnectionsCredits) {
  ProtoEnv env;
  env.unlimited_credits();
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  ASSERT_EQ(to_state(env.qp, QpState::kSqd), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 2), 0);
  EXPECT_TRUE(env.run().empty());
  ASSERT_EQ(to_state(env.qp, QpState::kRts), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "the responder advertised no credit limit; SQD -> RTS does not forget it";
  EXPECT_EQ(f[0].psn(), p + 1);
  EXPECT_EQ(env.dev->counters()[Counter::kRetransmits], 0u);
}

TEST(QpLifecycle, ModifyToErrFlushesBothQueuesWithoutAnAsyncEvent) {
  ProtoEnv env;
  ASSERT_EQ(env.post_recv(0, 64, 10), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 2, 0, 0, 0), 0);
  ASSERT_EQ(env.run().size(), 1u);
  ASSERT_EQ(to_state(env.qp, QpState::kErr), 0);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 3u);
  for (const Wc& w : wc) EXPECT_EQ(w.status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[2].wr_id, 10u);
  EXPECT_TRUE(env.events().empty()) << "the application asked for ERR: nothing to report";
  EXPECT_EQ(env.dev->next_deadline(), kNever);
}

TEST(QpLifecycle, ResetForgetsTheConnectionAndTheQpConnectsAgain) {
  ProtoEnv env;
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  PacketHeaders h = env.peer_headers(op::kRcSendOnly, env.opt.rq_psn);
  h.bth.ackreq = true;
  env.inject(h, pattern(8, 1));
  ASSERT_EQ(env.run().size(), 1u);  // ACK, MSN 1
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 2), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 3), 0);
  ASSERT_EQ(env.run().size(), 1u);
  ASSERT_EQ(env.post_recv(0, 64, 4), 0);
  env.poll();

  ASSERT_EQ(to_state(env.qp, QpState::kReset), 0);
  EXPECT_TRUE(env.poll().empty()) << "RESET discards work without completions";
  // What the responder had queued (here the credit update for receive 4) left before the QP forgot the
  // connection, as an RNIC would have sent it already.
  for (const Emitted& e : env.port.take()) {
    EXPECT_EQ(e.aeth_kind(), AethKind::kAck);
    EXPECT_EQ(e.psn(), env.opt.rq_psn);
  }
  EXPECT_EQ(env.dev->next_deadline(), kNever);
  env.opt.sq_psn = p + 1000;
  env.opt.rq_psn = 0x9000;
  ASSERT_EQ(env.connect(env.qp), 0);

  // A new connection: MSNs start again from 0, nothing old is retransmitted or acknowledged.
  EXPECT_TRUE(env.advance(1'000'000'000).empty());
  ASSERT_EQ(env.post_recv(0, 64, 5), 0);
  h = env.peer_headers(op::kRcSendOnly, 0x9000);
  h.bth.ackreq = true;
  env.inject(h, pattern(8, 2));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].psn(), 0x9000u);
  EXPECT_EQ(f[0].msn(), 1u);
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 5u);

  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 6), 0);
  f = env.run();
  ASSERT_EQ(f.size(), 1u) << "one probe: no credits advertised on the new connection yet";
  EXPECT_EQ(f[0].psn(), p + 1000);
  env.inject_ack(p + 1000);
  env.run();
  wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 6u);
}

TEST(QpLifecycle, FirstPacketInRtrRaisesCommunicationEstablished) {
  ProtoOptions o;
  o.to_rts = false;
  ProtoEnv env(o);
  auto to_rtr = [&env] {
    QpAttr a;
    a.port_num = 1;
    a.qp_access_flags = kAccessRemoteWrite;
    a.path_mtu = Mtu::k1024;
    a.dest_qp_num = env.opt.peer_qpn;
    a.rq_psn = env.opt.rq_psn;
    a.ah.dgid = ProtoEnv::peer_gid();
    a.max_dest_rd_atomic = 1;
    ASSERT_EQ(to_state(env.qp, QpState::kInit, kQpPkeyIndex | kQpPort | kQpAccessFlags, a), 0);
    ASSERT_EQ(to_state(env.qp, QpState::kRtr,
                       kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer, a),
              0);
  };
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    to_rtr();
    PacketHeaders h = env.peer_headers(op::kRcWriteOnly, env.opt.rq_psn);
    h.reth = {env.addr(0), env.mr->rkey, 4};
    h.bth.ackreq = true;
    env.inject(h, pattern(4, 1));
    const std::vector<Emitted> f = env.run();
    ASSERT_EQ(f.size(), 1u) << "an RTR QP responds";
    const std::vector<AsyncEvent> ev = env.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, EventType::kCommEst);
    ASSERT_EQ(to_state(env.qp, QpState::kReset), 0);
  }
}

TEST(QpLifecycle, QueryReportsTheAttributes) {
  ProtoOptions o;
  o.mtu = Mtu::k2048;
  o.timeout = 12;
  o.retry_cnt = 5;
  o.rnr_retry = 3;
  o.min_rnr_timer = 9;
  o.max_rd_atomic = 2;
  o.max_dest_rd_atomic = 3;
  ProtoEnv env(o);
  QpAttr q;
  env.qp->query(&q);
  EXPECT_EQ(q.qp_state, QpState::kRts);
  EXPECT_EQ(q.cur_qp_state, QpState::kRts);
  EXPECT_EQ(q.path_mtu, Mtu::k2048);
  EXPECT_EQ(q.sq_psn, o.sq_psn);
  EXPECT_EQ(q.rq_psn, o.rq_psn);
  EXPECT_EQ(q.dest_qp_num, o.peer_qpn);
  EXPECT_EQ(q.qp_access_flags, o.access);
  EXPECT_EQ(q.ah.dgid, ProtoEnv::peer_gid());
  EXPECT_EQ(q.timeout, 12);
  EXPECT_EQ(q.retry_cnt, 5);
  EXPECT_EQ(q.rnr_retry, 3);
  EXPECT_EQ(q.min_rnr_timer, 9);
  EXPECT_EQ(q.max_rd_atomic, 2);
  EXPECT_EQ(q.max_dest_rd_atomic, 3);
  EXPECT_EQ(q.cap.max_send_wr, o.max_wr);
  EXPECT_EQ(q.cap.max_inline_data, o.max_inline);
}

// A pass, and the device's next deadline, visit only QPs that have something to send, a timer, or a time
// to send at: an application with many idle connections pays nothing per pass for them. A verb or a packet
// brings a QP back.
TEST(QpLifecycle, APassVisitsOnlyQpsWithWork) {
  ProtoEnv env;
  env.unlimited_credits();
  std::vector<Qp*> idle(100);
  QpInitAttr init = env.qp->init_attr();
  for (Qp*& q : idle) {
    ASSERT_EQ(env.dev->create_qp(env.pd, init, &q), 0);
    ASSERT_EQ(env.connect(q), 0);
  }
  env.run();
  EXPECT_EQ(env.dev->active_qps(), 0u) << "connected, nothing posted";
  EXPECT_EQ(env.dev->next_deadline(), kNever);

  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  EXPECT_EQ(env.dev->active_qps(), 1u) << "the verb brought its QP in";
  ASSERT_EQ(env.run().size(), 1u);
  EXPECT_EQ(env.dev->active_qps(), 1u) << "waiting for the ACK, its retry timer running";
  EXPECT_NE(env.dev->next_deadline(), kNever);

  // Unanswered, the timer still fires and the packet goes again.
  const std::vector<Emitted> again = env.next();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].psn(), env.opt.sq_psn);

  env.inject_ack(env.opt.sq_psn);
  env.run();
  ASSERT_EQ(env.poll().size(), 1u);
  EXPECT_EQ(env.dev->active_qps(), 0u) << "acknowledged: nothing left to do";
  EXPECT_EQ(env.dev->next_deadline(), kNever);

  // A request for an idle QP brings it in for its ACK.
  ASSERT_EQ(env.post_recv(0, 64, 7), 0);
  env.run();
  PacketHeaders h = env.peer_headers(op::kRcSendOnly, env.opt.rq_psn);
  h.bth.ackreq = true;
  env.inject(h, pattern(16, 1));
  const std::vector<Emitted> ack = env.run();
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(env.dev->active_qps(), 0u);

  for (Qp* q : idle) ASSERT_EQ(env.dev->destroy_qp(q), 0);
}

}  // namespace
}  // namespace uroce
