// The transport's congestion-control hooks, driven through the protocol-test harness: RTT samples reach
// on_ack (and Karn's rule withholds them for re-sent packets), the responder echoes a request's INT stack in
// its response and the requester hands it to on_telemetry before on_ack, NAKs reach on_nak, the notification
// point honours a per-device min_time_between_cnps per QP, and the counters count.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cc/dcqcn.h"
#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

// An algorithm that records the events it is given, in order.
struct Recorder final : cc::Algorithm {
  struct Ack {
    uint64_t now, bytes, rtt;
  };
  std::vector<Ack> acks;
  std::vector<cc::IntStack> ints;
  std::vector<std::string> log;
  void on_ack(uint64_t now, uint64_t bytes, uint64_t rtt) override {
    acks.push_back({now, bytes, rtt});
    log.push_back("ack");
  }
  void on_telemetry(uint64_t, const cc::IntStack& s) override {
    ints.push_back(s);
    log.push_back("int");
  }
  void on_nak(uint64_t) override { log.push_back("nak"); }
  void on_ecn_echo(uint64_t) override { log.push_back("ecn"); }
  void on_timeout(uint64_t) override { log.push_back("timeout"); }
};

cc::IntStack two_hops() {
  cc::IntStack s;
  s.hops = 2;
  s.hop[0] = {1'000, 123'456, 3'000, 100'000'000'000ull};
  s.hop[1] = {1'500, 654'321, 0, 40'000'000'000ull};
  return s;
}

bool same(const cc::IntStack& a, const cc::IntStack& b) {
  if (a.hops != b.hops) return false;
  for (int i = 0; i < a.hops; ++i) {
    const cc::IntHop &x = a.hop[i], &y = b.hop[i];
    if (x.ts_ns != y.ts_ns || x.tx_bytes != y.tx_bytes || x.qlen_bytes != y.qlen_bytes ||
        x.line_rate_bps != y.line_rate_bps)
      return false;
  }
  return true;
}

class CcRequester : public ::testing::Test {
 protected:
  CcRequester() {
    env.unlimited_credits();
    auto r = std::make_unique<Recorder>();
    rec = r.get();
    env.qp->replace_cc(std::move(r));
    env.clock.set(1'000'000);
  }
  ProtoEnv env;
  Recorder* rec = nullptr;
  const uint32_t p = env.opt.sq_psn;
};

TEST_F(CcRequester, AnAckGivesOnAckTheRttOfThePacketItAcknowledges) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.clock.advance(7'000);
  env.inject_ack(p);
  env.run();
  ASSERT_EQ(rec->acks.size(), 1u);
  EXPECT_EQ(rec->acks[0].rtt, 7'000u);
  EXPECT_EQ(rec->acks[0].now, 1'007'000u);
  EXPECT_EQ(rec->acks[0].bytes, 100u) << "the payload the ACK covers";

  // A two-packet WRITE: the ACK of its last packet measures from that packet's send time.
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 2000, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 2u);
  env.clock.advance(3'000);
  env.inject_ack(p + 2);
  env.run();
  ASSERT_EQ(rec->acks.size(), 2u);
  EXPECT_EQ(rec->acks[1].rtt, 3'000u);
  EXPECT_EQ(rec->acks[1].bytes, 2000u);
}

// A pass reads the clock without ordering (cheaper); such a reading can lag one taken with order just
// before, on another thread. The algorithm never sees the device's time go back.
TEST_F(CcRequester, TimeNeverGoesBackWhenAPassReadsALaggingClock) {
  env.clock.set_unordered_lag(500);
  const uint64_t before = env.dev->now();  // outside a pass: the ordered reading
  ASSERT_EQ(before, 1'000'000u);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.inject_ack(p);
  env.run();
  ASSERT_EQ(rec->acks.size(), 1u);
  EXPECT_EQ(rec->acks[0].now, before) << "the pass's lagging reading, raised to the time handed out before";
  env.clock.advance(2'000);
  EXPECT_EQ(env.dev->now(), 1'002'000u) << "and moves on with the clock";
}

TEST_F(CcRequester, ARetransmittedPacketGivesNoSample) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  const std::vector<Emitted> again = env.next();  // local ACK timeout: sent again
  ASSERT_EQ(again.size(), 1u);
  ASSERT_EQ(again[0].psn(), p);
  env.clock.advance(2'000);
  env.inject_ack(p);
  env.run();
  ASSERT_EQ(rec->acks.size(), 1u);
  EXPECT_EQ(rec->acks[0].rtt, 0u) << "Karn: the ACK cannot tell which copy it answers";

  // The next, never re-sent packet gives a sample again.
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.clock.advance(4'000);
  env.inject_ack(p + 1);
  env.run();
  ASSERT_EQ(rec->acks.size(), 2u);
  EXPECT_EQ(rec->acks[1].rtt, 4'000u);
}

TEST_F(CcRequester, PacketsAfterAGoBackNRoundGiveNoSampleEither) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 3000, 1, 0x1000, 1), 0);  // p, p+1, p+2
  ASSERT_EQ(env.run().size(), 3u);
  env.inject_ack(p, AethKind::kNak, 0);  // sequence error at p: go back to p
  EXPECT_EQ(env.run().size(), 3u);
  env.clock.advance(1'000);
  env.inject_ack(p + 2);
  env.run();
  ASSERT_FALSE(rec->acks.empty());
  EXPECT_EQ(rec->acks.back().rtt, 0u);
  EXPECT_NE(std::find(rec->log.begin(), rec->log.end(), "nak"), rec->log.end()) << "the NAK reached on_nak";
}

TEST_F(CcRequester, TheFirstReadResponseGivesTheReadsRtt) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 8192, 2000, 1, 0x10000, 7), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.clock.advance(5'000);
  env.inject_read_resp(op::kRcReadRespFirst, p, pattern(1024, 1));
  env.run();
  env.clock.advance(100);
  env.inject_read_resp(op::kRcReadRespLast, p + 1, pattern(976, 2));
  env.run();
  ASSERT_GE(rec->acks.size(), 2u);
  EXPECT_EQ(rec->acks[0].rtt, 5'000u);
  EXPECT_EQ(rec->acks[1].rtt, 0u) << "later response packets measure serialisation, not the RTT";
  ASSERT_EQ(env.poll().size(), 1u);
}

TEST_F(CcRequester, AnAtomicAckGivesASample) {
  ASSERT_EQ(env.post(WrOpcode::kAtomicFetchAndAdd, 0, 8, 1, 0x10000, 7), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.clock.advance(6'000);
  env.inject_atomic_ack(p, 42);
  env.run();
  ASSERT_FALSE(rec->acks.empty());
  EXPECT_EQ(rec->acks[0].rtt, 6'000u);
}

TEST_F(CcRequester, EchoedIntReachesOnTelemetryBeforeOnAck) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  PacketHeaders h = env.peer_headers(op::kRcAck, p);
  h.aeth = {aeth_syndrome(AethKind::kAck, 31), 0};
  env.inject(h, {}, two_hops());
  env.run();
  ASSERT_EQ(rec->ints.size(), 1u);
  EXPECT_TRUE(same(rec->ints[0], two_hops()));
  EXPECT_EQ(rec->log, (std::vector<std::string>{"int", "ack"}));

  // An ACK without INT (hops 0) calls no on_telemetry.
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 2, 0x1000, 1), 0);
  env.run();
  env.inject_ack(p + 1);
  env.run();
  EXPECT_EQ(rec->ints.size(), 1u);
}

TEST_F(CcRequester, AnEcnEchoReachesOnEcnEchoBeforeOnAck) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  PacketHeaders h = env.peer_headers(op::kRcAck, p);
  h.aeth = {aeth_syndrome(AethKind::kAck, 31), 0};
  h.bth.resv8a = 0x40;  // BECN
  env.inject(h);
  env.run();
  EXPECT_EQ(rec->log, (std::vector<std::string>{"ecn", "ack"}));

  // An ACK without BECN calls no on_ecn_echo.
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 2, 0x1000, 1), 0);
  env.run();
  env.inject_ack(p + 1);
  env.run();
  EXPECT_EQ(rec->log, (std::vector<std::string>{"ecn", "ack", "ack"}));
}

TEST_F(CcRequester, TheLocalAckTimeoutReachesOnTimeout) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  ASSERT_EQ(env.next().size(), 1u);  // the timeout re-sends it
  EXPECT_EQ(rec->log, (std::vector<std::string>{"timeout"}));
}

class CcResponder : public ::testing::Test {
 protected:
  PacketHeaders write(uint32_t psn, bool ackreq) const {
    PacketHeaders h = env.peer_headers(op::kRcWriteOnly, psn);
    h.reth = {env.addr(0), env.mr->rkey, 16};
    h.bth.ackreq = ackreq;
    return h;
  }
  ProtoEnv env;
  const uint32_t q = env.opt.rq_psn;
};

TEST_F(CcResponder, TheAckEchoesTheRequestsIntStackOnce) {
  env.inject(write(q, true), pattern(16, 1), two_hops());
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_TRUE(same(f[0].telemetry, two_hops()));

  // A duplicate (re-sent) request without INT is acknowledged again, with no stale stack.
  env.inject(write(q, true), pattern(16, 1));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].telemetry.hops, 0);
}

TEST_F(CcResponder, ReadResponsesEchoTheReadRequestsStack) {
  PacketHeaders h = env.peer_headers(op::kRcReadRequest, q);
  h.reth = {env.addr(0), env.mr->rkey, 2000};
  env.inject(h, {}, two_hops());
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRespFirst);
  EXPECT_TRUE(same(f[0].telemetry, two_hops()));
  EXPECT_EQ(f[1].telemetry.hops, 0);
}

TEST_F(CcResponder, NoIntNoEcho) {
  env.inject(write(q, true), pattern(16, 1));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].telemetry.hops, 0);
}

PacketHeaders ce_write(const ProtoEnv& env, Qp* qp, uint32_t psn) {
  PacketHeaders h = env.peer_headers(op::kRcWriteOnly, psn);
  h.bth.dqpn = qp->qpn();
  h.reth = {env.addr(0), env.mr->rkey, 4};
  h.ip.tclass = static_cast<uint8_t>(26 << 2 | static_cast<uint8_t>(Ecn::kCe));
  return h;
}

size_t cnps(const std::vector<Emitted>& f) {
  size_t n = 0;
  for (const Emitted& e : f) n += e.opcode() == op::kCnp;
  return n;
}

TEST(CcNotificationPoint, MinTimeBetweenCnpsIsAPerDeviceSettingAppliedPerQp) {
  ProtoOptions o;
  o.cc_params = {{"min_time_between_cnps", 10}};  // microseconds, as the ConnectX knob
  ProtoEnv env(o);
  EXPECT_EQ(env.dev->cnp_interval_ns(), 10'000u);
  QpInitAttr init = env.qp->init_attr();
  Qp* q2 = nullptr;
  ASSERT_EQ(env.dev->create_qp(env.pd, init, &q2), 0);
  ASSERT_EQ(env.connect(q2), 0);

  uint32_t psn1 = o.rq_psn, psn2 = o.rq_psn;
  env.inject(ce_write(env, env.qp, psn1++), pattern(4, 1));
  env.inject(ce_write(env, q2, psn2++), pattern(4, 1));
  EXPECT_EQ(cnps(env.run()), 2u) << "each QP has its own interval";
  env.clock.advance(9'999);
  env.inject(ce_write(env, env.qp, psn1++), pattern(4, 1));
  EXPECT_EQ(cnps(env.run()), 0u) << "1 ns before 10 us";
  env.clock.advance(1);
  env.inject(ce_write(env, env.qp, psn1++), pattern(4, 1));
  EXPECT_EQ(cnps(env.run()), 1u);

  EXPECT_EQ(env.qp->counters().ecn_marked, 3u);
  EXPECT_EQ(env.qp->counters().cnp_sent, 2u);
  EXPECT_EQ(q2->counters().ecn_marked, 1u);
  EXPECT_EQ(q2->counters().cnp_sent, 1u);
  EXPECT_EQ(env.dev->counters()[Counter::kCnpSent], 3u);
  EXPECT_EQ(env.dev->counters()[Counter::kEcnMarked], 4u);
}

// DCTCP's ECN echo: the ACK that acknowledges a CE-marked request sets BTH BECN, once; the CNP still goes
// out as before, so a DCQCN sender is served too, and ACKs of unmarked requests carry no BECN.
TEST(CcNotificationPoint, TheAckOfACeMarkedRequestEchoesItInBecn) {
  ProtoEnv env;
  uint32_t psn = env.opt.rq_psn;
  PacketHeaders h = ce_write(env, env.qp, psn++);
  h.bth.ackreq = true;
  env.inject(h, pattern(4, 1));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(cnps(f), 1u);
  const Emitted& ack = f[0].opcode() == op::kRcAck ? f[0] : f[1];
  ASSERT_EQ(ack.opcode(), op::kRcAck);
  EXPECT_EQ(ack.h.bth.resv8a, 0x40) << "the ACK echoes the mark";

  PacketHeaders plain = env.peer_headers(op::kRcWriteOnly, psn++);
  plain.reth = {env.addr(0), env.mr->rkey, 4};
  plain.bth.ackreq = true;
  env.inject(plain, pattern(4, 2));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].h.bth.resv8a, 0) << "echoed once; an unmarked request's ACK has no BECN";
}

TEST(CcNotificationPoint, ACeMarkedReadResponseSlowsTheResponder) {
  ProtoEnv env;
  env.unlimited_credits();
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 8192, 100, 1, 0x10000, 7), 0);
  ASSERT_EQ(env.run().size(), 1u);
  PacketHeaders h = env.peer_headers(op::kRcReadRespOnly, env.opt.sq_psn);
  h.aeth = {aeth_syndrome(AethKind::kAck, 31), 1};
  h.ip.tclass = static_cast<uint8_t>(Ecn::kCe);
  env.inject(h, pattern(100, 3));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(cnps(f), 1u);
  EXPECT_EQ(f[0].h.bth.dqpn, env.opt.peer_qpn) << "the READ's data came from the peer's QP";
  EXPECT_EQ(env.qp->counters().ecn_marked, 1u);
  ASSERT_EQ(env.poll().size(), 1u) << "the response is placed as usual";
}

TEST(CcNotificationPoint, DefaultIntervalIsTheConnectXDefault) {
  ProtoEnv env;
  EXPECT_EQ(env.dev->cnp_interval_ns(), 4'000u);
  ProtoOptions o;
  o.cc = "dcqcn";
  o.cc_params = {{"min_time_between_cnps", 0}, {"rpg_ai_rate", 10}};
  ProtoEnv zero(o);
  EXPECT_EQ(zero.dev->cnp_interval_ns(), 0u) << "0: a CNP for every marked packet";
  EXPECT_EQ(static_cast<cc::Dcqcn*>(zero.qp->cc())->config().ai_bps, 10'000'000u)
      << "the other keys reach the QP's algorithm";
}

void expect_device_error(const std::string& cc, const cc::Params& params, const std::string& key) {
  ProtoOptions o;
  o.cc = cc;
  o.cc_params = params;
  try {
    ProtoEnv env(o);
    ADD_FAILURE() << "device opened with " << key;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(CcDeviceConfig, CheckConfigSaysWhatTheConstructorWouldThrow) {
  DeviceConfig c;
  EXPECT_EQ(Device::check_config(c), "");
  c.cc = "dcqcn";
  c.cc_params = {{"min_time_between_cnps", 2}, {"rpg_time_reset", 55}};
  EXPECT_EQ(Device::check_config(c), "");
  c.cc_params["rpg_time_rest"] = 55;
  EXPECT_NE(Device::check_config(c).find("'rpg_time_rest'"), std::string::npos);
  c.cc_params = {{"min_time_between_cnps", -2}};
  EXPECT_NE(Device::check_config(c).find("'min_time_between_cnps'"), std::string::npos);
}

TEST(CcDeviceConfig, ABadParameterFailsDeviceOpenNamingTheKey) {
  expect_device_error("dcqcn", {{"min_time_between_cnps", -1}}, "'min_time_between_cnps'");
  expect_device_error("dcqcn", {{"rpg_ai_rat", 5}}, "'rpg_ai_rat'");
  expect_device_error("none", {{"rpg_ai_rate", 5}}, "'rpg_ai_rate'");
  expect_device_error("dcqnc", {}, "'dcqnc'");
}

TEST(CcDcqcnOnTheWire, ReadResponsesAreEctPacedAndCountedByTheByteCounter) {
  ProtoOptions o;
  o.cc = "dcqcn";
  o.cc_params = {{"rpg_byte_reset", 1000}};
  ProtoEnv env(o);
  PacketHeaders cnp = env.peer_headers(op::kCnp, 0);
  cnp.bth.resv8a = 0x40;
  cnp.bth.migreq = false;
  env.inject(cnp);
  env.run();
  auto* d = static_cast<cc::Dcqcn*>(env.qp->cc());
  ASSERT_EQ(d->rate_bps, 50'048'828'125u);
  PacketHeaders h = env.peer_headers(op::kRcReadRequest, env.opt.rq_psn);
  h.reth = {env.addr(0), env.mr->rkey, 3000};
  env.inject(h);
  std::vector<Emitted> f = env.run();  // paced: the first response now, the rest as the clock moves
  for (int i = 0; i < 10 && f.size() < 3; ++i) {
    const std::vector<Emitted> more = env.next();
    f.insert(f.end(), more.begin(), more.end());
  }
  ASSERT_EQ(f.size(), 3u);
  for (const Emitted& e : f) EXPECT_EQ(e.h.ip.tclass & 3, static_cast<int>(Ecn::kEct0));
  EXPECT_GT(f[1].time_ns, f[0].time_ns) << "paced at the cut rate";
  EXPECT_EQ(d->byte_stage(), 3u) << "3000 bytes of responses, a byte-counter event per 1000";
}

TEST(CcDcqcnOnTheWire, DataIsEctAndACnpCutsTheRateAndIsCounted) {
  ProtoOptions o;
  o.cc = "dcqcn";
  ProtoEnv env(o);
  env.unlimited_credits();
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 100, 1, 0x1000, 1), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].h.ip.tclass & 3, static_cast<int>(Ecn::kEct0));
  EXPECT_EQ(env.qp->cc()->rate_bps, 100'000'000'000u);

  PacketHeaders h = env.peer_headers(op::kCnp, 0);
  h.bth.resv8a = 0x40;
  h.bth.migreq = false;
  env.inject(h);
  env.run();
  EXPECT_EQ(env.qp->cc()->rate_bps, 50'048'828'125u);
  EXPECT_EQ(env.qp->counters().cnp_handled, 1u);
  EXPECT_EQ(env.dev->counters()[Counter::kCnpRcvd], 1u);
  EXPECT_EQ(env.dev->counters()[Counter::kCcRateChanges], 1u);
  // The rate-increase timer runs through the device's timers.
  EXPECT_LE(env.dev->next_deadline(), env.now() + 300'000);
  env.next();
  EXPECT_GT(env.qp->cc()->rate_bps, 50'048'828'125u);
  EXPECT_EQ(env.dev->counters()[Counter::kCcRateChanges], 2u);
}

}  // namespace
}  // namespace uroce
