// The IB CM state machine in virtual time: two agents back to back (cm_state_sim.h), with MADs lost,
// duplicated or forged on the way, checked against the transitions, timers and events of Linux's
// ib_cm + rdma_cm.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "tests/unit/cm_state_sim.h"

namespace uroce::cm {
namespace {

using test::BackToBack;
using test::Fate;
using test::kMs;
using test::Sent;

constexpr uint64_t kTcp7471 = kServiceIdPsTcp | 7471;
constexpr uint64_t kUdp7174 = kServiceIdPsUdp | 7174;

std::vector<uint8_t> bytes(const char* s) { return std::vector<uint8_t>(s, s + std::strlen(s)); }

bool starts_with(const std::vector<uint8_t>& v, const char* s) {
  return v.size() >= std::strlen(s) && std::memcmp(v.data(), s, std::strlen(s)) == 0;
}

// A connected pair: a (active) and b (passive) ESTABLISHED; returns the ids through the arguments.
void establish(BackToBack& n, CmId* ia, CmId* ib) {
  CmId l;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), ia), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_b.size(), 1u);
  *ib = n.ev_b.back().ev.id;
  AcceptParams ap;
  ap.qpn = 0x22;
  ap.starting_psn = 0x8c84dd;
  ASSERT_EQ(n.b.accept(*ib, ap), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_a.size(), 1u);
  ASSERT_EQ(n.a.accept(*ia, {}), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.a.state(*ia), CmState::kEstablished);
  ASSERT_EQ(n.b.state(*ib), CmState::kEstablished);
}

TEST(CmState, ReqRepRtuCarriesEachSidesOwnPsnAndThePeersInEvents) {
  BackToBack n;
  CmId listener, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &listener), 0);
  EXPECT_EQ(n.b.state(listener), CmState::kListen);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  EXPECT_EQ(n.a.state(ia), CmState::kReqSent);
  n.run_for(10 * kMs);

  // The REQ as the wire carries it.
  auto reqs = n.sent_of(AttrId::kReq);
  ASSERT_EQ(reqs.size(), 1u);
  const Req& req = std::get<Req>(reqs[0].mad.body);
  EXPECT_EQ(req.local_comm_id, n.a.local_comm_id(ia));
  EXPECT_EQ(req.local_comm_id >> 22, 1u);  // the caller-given index in the top bits
  EXPECT_EQ(reqs[0].mad.hdr.tid & 0xFFFFFFFF, __builtin_bswap32(req.local_comm_id));
  EXPECT_EQ(req.service_id, kTcp7471);
  EXPECT_EQ(req.local_ca_guid, 0x0002c9fffe000001ull);
  EXPECT_EQ(req.local_qpn, 0x11u);
  EXPECT_EQ(req.starting_psn, 0xe1a47du);  // a's own
  EXPECT_EQ(req.remote_cm_response_timeout, 20);
  EXPECT_EQ(req.local_cm_response_timeout, 20);
  EXPECT_EQ(req.max_cm_retries, 15);
  EXPECT_EQ(req.retry_count, 7);
  EXPECT_EQ(req.primary.local_lid, 0xFFFF);
  EXPECT_EQ(req.primary.local_ack_timeout, 19);
  EXPECT_EQ(req.primary.hop_limit, 64);
  CmaHdr cma;
  ASSERT_EQ(decode_cma_hdr(req.private_data, &cma), CmaError::kOk);
  EXPECT_EQ(cma.src_port, 0x93d7);

  ASSERT_EQ(n.ev_b.size(), 1u);
  const Event cr = n.ev_b[0].ev;
  EXPECT_EQ(cr.type, EventType::kConnectRequest);
  EXPECT_EQ(cr.listen_id, listener);
  EXPECT_EQ(n.b.state(cr.id), CmState::kReqRcvd);
  EXPECT_EQ(cr.peer_qpn, 0x11u);
  EXPECT_EQ(cr.peer_starting_psn, 0xe1a47du);
  EXPECT_EQ(cr.responder_resources, 2);  // a's initiator depth
  EXPECT_EQ(cr.initiator_depth, 1);      // a's responder resources
  EXPECT_EQ(cr.retry_count, 7);
  EXPECT_EQ(cr.rnr_retry_count, 7);
  EXPECT_EQ(cr.path_mtu, 3);
  EXPECT_EQ(cr.qp_timeout, 19);
  EXPECT_EQ(cr.peer_guid, 0x0002c9fffe000001ull);
  EXPECT_EQ(cr.path.sgid, n.gb);
  EXPECT_EQ(cr.path.dgid, n.ga);
  EXPECT_EQ(cr.path.flow_label, 0x12345u);
  EXPECT_EQ(cr.path.traffic_class, 0x68);
  EXPECT_EQ(cr.path.hop_limit, 64);
  EXPECT_TRUE(cr.has_cma);
  EXPECT_EQ(cr.cma.src_port, 0x93d7);
  EXPECT_EQ(cr.cma.dst_ip, n.gb);
  EXPECT_EQ(cr.private_data.size(), 56u);
  EXPECT_TRUE(starts_with(cr.private_data, "hello"));

  AcceptParams ap;
  ap.qpn = 0x22;
  ap.starting_psn = 0x8c84dd;
  ap.responder_resources = 3;
  ap.initiator_depth = 4;
  ap.private_data = bytes("world");
  ASSERT_EQ(n.b.accept(cr.id, ap), 0);
  EXPECT_EQ(n.b.state(cr.id), CmState::kRepSent);
  n.run_for(10 * kMs);
  auto reps = n.sent_of(AttrId::kRep);
  ASSERT_EQ(reps.size(), 1u);
  const Rep& rep = std::get<Rep>(reps[0].mad.body);
  EXPECT_EQ(rep.starting_psn, 0x8c84ddu);  // b's own
  EXPECT_EQ(rep.remote_comm_id, req.local_comm_id);
  EXPECT_EQ(rep.target_ack_delay, 15);
  EXPECT_EQ(reps[0].mad.hdr.tid, reqs[0].mad.hdr.tid);

  ASSERT_EQ(n.ev_a.size(), 1u);
  const Event resp = n.ev_a[0].ev;
  EXPECT_EQ(resp.type, EventType::kConnectResponse);
  EXPECT_EQ(resp.id, ia);
  EXPECT_EQ(n.a.state(ia), CmState::kRepRcvd);
  EXPECT_EQ(resp.peer_qpn, 0x22u);
  EXPECT_EQ(resp.peer_starting_psn, 0x8c84ddu);
  EXPECT_EQ(resp.responder_resources, 4);
  EXPECT_EQ(resp.initiator_depth, 3);
  EXPECT_EQ(resp.qp_timeout, 19);
  EXPECT_EQ(resp.private_data.size(), 196u);
  EXPECT_TRUE(starts_with(resp.private_data, "world"));

  ASSERT_EQ(n.a.accept(ia, {}), 0);  // the RTU
  EXPECT_EQ(n.a.state(ia), CmState::kEstablished);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_b.size(), 2u);
  EXPECT_EQ(n.ev_b[1].ev.type, EventType::kEstablished);
  EXPECT_EQ(n.b.state(cr.id), CmState::kEstablished);
  EXPECT_EQ(n.sent_of(AttrId::kRtu).size(), 1u);
  EXPECT_EQ(n.ev_a.size(), 1u);  // librdmacm itself reports the active side's ESTABLISHED
  EXPECT_EQ(n.a.stats().retransmits + n.b.stats().retransmits, 0u);
}

TEST(CmState, DisconnectDreqDrepTimewaitExit) {
  BackToBack n;
  CmId ia, ib;
  establish(n, &ia, &ib);
  const size_t ea = n.ev_a.size(), eb = n.ev_b.size();
  ASSERT_EQ(n.a.disconnect(ia), 0);
  EXPECT_EQ(n.a.state(ia), CmState::kDreqSent);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_b.size(), eb + 1);
  EXPECT_EQ(n.ev_b.back().ev.type, EventType::kDisconnected);
  EXPECT_EQ(n.ev_b.back().ev.status, 0);
  EXPECT_EQ(n.b.state(ib), CmState::kDreqRcvd);
  const auto dreq = n.sent_of(AttrId::kDreq);
  ASSERT_EQ(dreq.size(), 1u);
  EXPECT_EQ(std::get<Dreq>(dreq[0].mad.body).remote_qpn, 0x22u);
  EXPECT_EQ(n.ev_a.size(), ea);  // nothing until the DREP

  // The passive side answers when its application disconnects (golden rxe: seconds later).
  n.run_for(3000 * kMs);
  EXPECT_EQ(n.a.state(ia), CmState::kDreqSent);
  ASSERT_EQ(n.b.disconnect(ib), 0);
  const uint64_t t_drep = n.clock.now_ns();
  EXPECT_EQ(n.b.state(ib), CmState::kTimewait);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_a.size(), ea + 1);
  EXPECT_EQ(n.ev_a.back().ev.type, EventType::kDisconnected);
  EXPECT_EQ(n.ev_a.back().ev.status, 0);
  EXPECT_EQ(n.a.state(ia), CmState::kTimewait);
  const auto drep = n.sent_of(AttrId::kDrep);
  ASSERT_EQ(drep.size(), 1u);
  EXPECT_EQ(drep[0].mad.hdr.tid, dreq[0].mad.hdr.tid);
  // A retransmitted DREQ reaching b in timewait gets the DREP again.
  n.b.on_mad(Address{n.ga, kGsiQpn}, encode_mad(dreq[0].mad));
  n.run_for(1 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kDrep).size(), 2u);
  EXPECT_EQ(n.b.state(ib), CmState::kTimewait);

  // Timewait: conv(packet life 18 + 1) = 2048 ms, then TIMEWAIT_EXIT on both sides.
  n.run_until(t_drep + 2047 * kMs);
  EXPECT_EQ(n.b.state(ib), CmState::kTimewait);
  n.run_until(t_drep + 2100 * kMs);
  EXPECT_EQ(n.b.state(ib), CmState::kIdle);
  EXPECT_EQ(n.a.state(ia), CmState::kIdle);
  ASSERT_EQ(n.ev_b.back().ev.type, EventType::kTimewaitExit);
  EXPECT_EQ(n.ev_b.back().at, t_drep + 2048 * kMs);
  ASSERT_EQ(n.ev_a.back().ev.type, EventType::kTimewaitExit);
  EXPECT_EQ(n.ev_a.back().at, t_drep + 1 * kMs + 2048 * kMs);
  EXPECT_EQ(n.a.destroy(ia), 0);
  EXPECT_EQ(n.b.destroy(ib), 0);
  EXPECT_EQ(n.b.destroy(ib), -ENOENT);
}

TEST(CmState, NoListenerIsRej8WithoutLocalCommId) {
  BackToBack n;
  CmId ia;
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  const uint64_t t0 = n.clock.now_ns();
  n.run_for(30 * kMs);
  ASSERT_EQ(n.ev_a.size(), 1u);
  EXPECT_EQ(n.ev_a[0].ev.type, EventType::kRejected);
  // The REQ's 1 ms, the grace it is held for a listener (AgentConfig::no_listener_grace_ns), the REJ's 1 ms.
  EXPECT_EQ(n.ev_a[0].at, t0 + AgentConfig{}.no_listener_grace_ns + 2 * kMs);
  EXPECT_EQ(n.ev_a[0].ev.status, kRejInvalidServiceId);
  EXPECT_EQ(n.ev_a[0].ev.private_data.size(), 148u);
  EXPECT_EQ(n.a.state(ia), CmState::kIdle);
  const auto rej = n.sent_of(AttrId::kRej);
  ASSERT_EQ(rej.size(), 1u);
  const Rej& r = std::get<Rej>(rej[0].mad.body);
  EXPECT_EQ(r.local_comm_id, 0u);
  EXPECT_EQ(r.remote_comm_id, n.a.local_comm_id(ia));
  EXPECT_EQ(r.message_rejected, 0);
  EXPECT_EQ(rej[0].mad.hdr.tid, n.sent_of(AttrId::kReq)[0].mad.hdr.tid);
  EXPECT_EQ(n.b.stats().rx[static_cast<size_t>(RxResult::kNoListener)], 1u);
  EXPECT_EQ(n.b.connections(), 0u);
  // No retry after the REJ.
  n.run_for(100'000 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kReq).size(), 1u);
}

TEST(CmState, ListenerOnAnotherAddressIsNoListener) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, wire::ipv4_mapped(0x0A000001), true}, &l), 0);
  ASSERT_EQ(n.b.listen({kTcp7471, wire::ipv4_mapped(0x0A000001), true}, &l), -EADDRINUSE);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(30 * kMs);
  ASSERT_EQ(n.ev_a.size(), 1u);
  EXPECT_EQ(n.ev_a[0].ev.status, kRejInvalidServiceId);
}

// A server that listens again on the same port while its client already connects (perftest -R): the REQ
// that found no listener is taken by the listener that appears within the grace.
TEST(CmState, ListenerWithinTheGraceTakesAHeldReq) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(5 * kMs);
  EXPECT_TRUE(n.ev_a.empty());
  EXPECT_TRUE(n.sent_of(AttrId::kRej).empty());
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  n.run_for(1 * kMs);
  ASSERT_EQ(n.ev_b.size(), 1u);
  EXPECT_EQ(n.ev_b[0].ev.type, EventType::kConnectRequest);
  n.run_for(100 * kMs);
  EXPECT_TRUE(n.sent_of(AttrId::kRej).empty());
  EXPECT_TRUE(n.ev_a.empty());  // waiting for the REP
}

TEST(CmState, NoGraceIsRej8AtOnce) {
  BackToBack n(0);
  CmId ia;
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  const uint64_t t0 = n.clock.now_ns();
  n.run_for(30 * kMs);
  ASSERT_EQ(n.ev_a.size(), 1u);
  EXPECT_EQ(n.ev_a[0].ev.status, kRejInvalidServiceId);
  EXPECT_EQ(n.ev_a[0].at, t0 + 2 * kMs);  // the REQ's and the REJ's 1 ms
}

TEST(CmState, ListenerOnTheRequestsAddressWinsOverAWildcard) {
  BackToBack n;
  CmId any, exact, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &any), 0);
  ASSERT_EQ(n.b.listen({kTcp7471, n.gb, true}, &exact), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(2 * kMs);
  ASSERT_EQ(n.ev_b.size(), 1u);
  EXPECT_EQ(n.ev_b[0].ev.listen_id, exact);
  ASSERT_EQ(n.b.destroy(exact), 0);
  ConnectParams p = n.params(kTcp7471);
  p.qpn = 0x12;
  ASSERT_EQ(n.a.connect(p, &ia), 0);
  n.run_for(2 * kMs);
  ASSERT_EQ(n.ev_b.size(), 2u);
  EXPECT_EQ(n.ev_b[1].ev.listen_id, any);
}

TEST(CmState, ConsumerRejectIs28WithPrivateData) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_b.size(), 1u);
  const CmId ib = n.ev_b[0].ev.id;
  const auto nope = bytes("nope");
  ASSERT_EQ(n.b.reject(ib, kRejConsumerDefined, nope), 0);
  EXPECT_EQ(n.b.state(ib), CmState::kIdle);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_a.size(), 1u);
  EXPECT_EQ(n.ev_a[0].ev.type, EventType::kRejected);
  EXPECT_EQ(n.ev_a[0].ev.status, 28);
  EXPECT_TRUE(starts_with(n.ev_a[0].ev.private_data, "nope"));
  EXPECT_EQ(n.a.state(ia), CmState::kIdle);
  const auto rejs = n.sent_of(AttrId::kRej);
  ASSERT_EQ(rejs.size(), 1u);
  const Rej& r = std::get<Rej>(rejs[0].mad.body);
  EXPECT_EQ(r.local_comm_id, 0u);  // REQ_RCVD: the REQ is rejected before it got a comm ID on the wire
  EXPECT_EQ(r.message_rejected, 0);
  EXPECT_EQ(n.b.accept(ib, {}), -EINVAL);
}

// The port's link gone for good (a direct memif pair whose other process died): connected ids are
// DISCONNECTED, ids being set up UNREACHABLE, at once and without a MAD; the listener stays.
TEST(CmState, LinkLostEndsEveryConnectionWithoutAMad) {
  BackToBack n;
  CmId ia, ib;
  establish(n, &ia, &ib);
  CmId ic;
  n.fate = [](const Sent&) { return Fate::kDrop; };  // a second connection whose REQ goes nowhere
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ic), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.a.state(ic), CmState::kReqSent);
  const size_t ea = n.ev_a.size(), sent = n.sent.size();
  EXPECT_EQ(n.a.link_lost(-ENETUNREACH), 2u);
  n.run_for(10 * kMs);
  EXPECT_EQ(n.sent.size(), sent) << "nothing on the wire";
  ASSERT_EQ(n.ev_a.size(), ea + 2);
  for (size_t i = ea; i < n.ev_a.size(); ++i) {
    const Event& ev = n.ev_a[i].ev;
    EXPECT_EQ(ev.type, ev.id == ia ? EventType::kDisconnected : EventType::kUnreachable);
    EXPECT_EQ(ev.status, -ENETUNREACH);
  }
  EXPECT_EQ(n.a.state(ia), CmState::kTimewait);
  EXPECT_EQ(n.a.state(ic), CmState::kIdle);
  EXPECT_EQ(n.a.link_lost(-ENETUNREACH), 0u) << "once";
  // The REQ's timer is gone with it: no UNREACHABLE -ETIMEDOUT 98 s later.
  n.run_for(200'000 * kMs);
  for (size_t i = ea + 2; i < n.ev_a.size(); ++i) EXPECT_EQ(n.ev_a[i].ev.type, EventType::kTimewaitExit);
  // The passive side's own link loss: its connection and its listener (still listening) behave the same.
  EXPECT_EQ(n.b.link_lost(-ENETUNREACH), 1u);
  EXPECT_EQ(n.b.state(ib), CmState::kTimewait);
}

TEST(CmState, LostReqIsRetriedEvery6144MsThenUnreachable) {
  BackToBack n;
  n.fate = [](const Sent& s) { return s.from_a ? Fate::kDrop : Fate::kDeliver; };
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_until(200'000 * kMs);
  // 2 * conv(18) + conv(20) = 6144 ms per try, 1 + 15 tries, UNREACHABLE after the last one's timeout.
  const auto reqs = n.sent_of(AttrId::kReq);
  ASSERT_EQ(reqs.size(), 16u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].at, i * 6144 * kMs) << i;
    EXPECT_TRUE(reqs[i].mad == reqs[0].mad);
  }
  ASSERT_EQ(n.ev_a.size(), 1u);
  EXPECT_EQ(n.ev_a[0].ev.type, EventType::kUnreachable);
  EXPECT_EQ(n.ev_a[0].ev.status, -ETIMEDOUT);
  EXPECT_EQ(n.ev_a[0].at, 16 * 6144 * kMs);  // 98.3 s
  EXPECT_EQ(n.a.state(ia), CmState::kIdle);
  EXPECT_EQ(n.a.stats().retransmits, 15u);
  EXPECT_EQ(n.a.stats().timeouts, 1u);
}

TEST(CmState, LostRepIsRetriedAndDuplicateReqsAreIgnored) {
  BackToBack n;
  int reps = 0;
  n.fate = [&](const Sent& s) {
    return attr_of(s.mad.body) == AttrId::kRep && reps++ < 2 ? Fate::kDrop : Fate::kDeliver;
  };
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(2 * kMs);
  const CmId ib = n.ev_b.at(0).ev.id;
  AcceptParams ap;
  ap.qpn = 0x22;
  ASSERT_EQ(n.b.accept(ib, ap), 0);
  const uint64_t t_rep = n.clock.now_ns();
  n.run_for(9000 * kMs);  // (b keeps resending until the RTU; a's consumer has not sent it here)
  // REP at t, t + 4096 (both lost), REQ retried at 6144 (ignored: b is in REP_SENT), REP at t + 8192 arrives.
  const auto rep = n.sent_of(AttrId::kRep);
  ASSERT_EQ(rep.size(), 3u);
  EXPECT_EQ(rep[1].at, t_rep + 4096 * kMs);
  EXPECT_EQ(rep[2].at, t_rep + 8192 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kReq).size(), 2u);
  EXPECT_EQ(n.b.stats().rx[static_cast<size_t>(RxResult::kDuplicate)], 1u);
  EXPECT_EQ(n.sent_of(AttrId::kMra).size(), 0u);
  ASSERT_EQ(n.ev_b.size(), 1u);  // one CONNECT_REQUEST only
  ASSERT_EQ(n.ev_a.size(), 1u);
  EXPECT_EQ(n.ev_a[0].ev.type, EventType::kConnectResponse);
  EXPECT_EQ(n.a.state(ia), CmState::kRepRcvd);
}

TEST(CmState, DuplicateReqBeforeAcceptGetsTheDelayedMra) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(7000 * kMs);  // b's consumer sits on the request past a's first retry
  ASSERT_EQ(n.ev_b.size(), 1u);
  const CmId ib = n.ev_b[0].ev.id;
  EXPECT_EQ(n.sent_of(AttrId::kReq).size(), 2u);
  const auto mra = n.sent_of(AttrId::kMra);
  ASSERT_EQ(mra.size(), 1u);
  EXPECT_EQ(std::get<Mra>(mra[0].mad.body).message_mraed, 0);
  EXPECT_EQ(std::get<Mra>(mra[0].mad.body).service_timeout, 24);
  EXPECT_EQ(n.b.state(ib), CmState::kMraReqSent);
  EXPECT_EQ(n.a.state(ia), CmState::kMraReqRcvd);
  // The MRA holds a's next retry off for conv(24) + conv(19) ms.
  // (REQ retry at 6144 ms, at b 1 ms later, its MRA at a 1 ms after that.)
  n.run_until(6146 * kMs + 65536 * kMs + 2048 * kMs - 1);
  EXPECT_EQ(n.sent_of(AttrId::kReq).size(), 2u);
  n.run_for(2 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kReq).size(), 3u);
  EXPECT_EQ(n.sent_of(AttrId::kMra).size(), 2u);  // resent for the duplicate in MRA_REQ_SENT
  ASSERT_EQ(n.b.accept(ib, {}), 0);
  n.run_for(10 * kMs);
  EXPECT_EQ(n.a.state(ia), CmState::kRepRcvd);
  EXPECT_EQ(n.ev_b.size(), 1u);
}

TEST(CmState, DuplicateRepIsAnsweredWithMraThenRtu) {
  BackToBack n;
  n.fate = [](const Sent& s) {
    return attr_of(s.mad.body) == AttrId::kRep ? Fate::kDuplicate : Fate::kDeliver;
  };
  CmId ia, ib;
  establish(n, &ia, &ib);
  EXPECT_EQ(n.ev_a.size(), 1u);  // one CONNECT_RESPONSE for two REPs
  const auto mra = n.sent_of(AttrId::kMra, 1);
  ASSERT_EQ(mra.size(), 1u);  // the second REP arrived while a's consumer had not answered
  EXPECT_EQ(std::get<Mra>(mra[0].mad.body).message_mraed, 1);
  EXPECT_EQ(n.b.state(ib), CmState::kEstablished);
  // In ESTABLISHED a retransmitted REP gets the RTU again.
  const size_t rtus = n.sent_of(AttrId::kRtu).size();
  const auto rep = n.sent_of(AttrId::kRep);
  n.a.on_mad(Address{n.gb, kGsiQpn}, encode_mad(rep[0].mad));
  n.run_for(1 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kRtu).size(), rtus + 1);
  EXPECT_EQ(n.a.state(ia), CmState::kEstablished);
}

TEST(CmState, LostDrepEndsInDisconnectedEtimedout) {
  BackToBack n;
  CmId ia, ib;
  establish(n, &ia, &ib);
  n.fate = [](const Sent& s) { return attr_of(s.mad.body) == AttrId::kDrep ? Fate::kDrop : Fate::kDeliver; };
  const uint64_t t0 = n.clock.now_ns();
  ASSERT_EQ(n.a.disconnect(ia), 0);
  n.run_for(5 * kMs);
  ASSERT_EQ(n.b.disconnect(ib), 0);  // its DREP is lost
  n.run_until(t0 + 200'000 * kMs);
  const auto dreqs = n.sent_of(AttrId::kDreq);
  ASSERT_EQ(dreqs.size(), 16u);
  EXPECT_EQ(dreqs[1].at, t0 + 6144 * kMs);
  // b left timewait 2048 ms after its DREP, before a's first retry: it answers none of them.
  EXPECT_EQ(n.sent_of(AttrId::kDrep).size(), 1u);
  EXPECT_GT(n.b.stats().rx[static_cast<size_t>(RxResult::kUnexpected)], 0u);
  std::vector<test::Seen> disc;
  for (const auto& e : n.ev_a)
    if (e.ev.type == EventType::kDisconnected) disc.push_back(e);
  ASSERT_EQ(disc.size(), 1u);
  EXPECT_EQ(disc[0].ev.status, -ETIMEDOUT);
  EXPECT_EQ(disc[0].at, t0 + 16 * 6144 * kMs);
  ASSERT_EQ(n.ev_a.back().ev.type, EventType::kTimewaitExit);
  EXPECT_EQ(n.ev_a.back().at, t0 + 16 * 6144 * kMs + 2048 * kMs);
}

TEST(CmState, DreqForUnknownCommIdIsAnsweredWithDrep) {
  BackToBack n;
  Dreq d;
  d.local_comm_id = 0x01020304;
  d.remote_comm_id = 0x0A0B0C0D;
  d.remote_qpn = 0x99;
  MadHeader h;
  h.tid = 0x1122334455667788ull;
  n.b.on_mad(Address{n.ga, kGsiQpn}, encode_mad(h, d));
  n.run_for(1 * kMs);
  const auto drep = n.sent_of(AttrId::kDrep, 0);
  ASSERT_EQ(drep.size(), 1u);
  EXPECT_EQ(drep[0].mad.hdr.tid, h.tid);
  EXPECT_EQ(std::get<Drep>(drep[0].mad.body).local_comm_id, 0x0A0B0C0Du);
  EXPECT_EQ(std::get<Drep>(drep[0].mad.body).remote_comm_id, 0x01020304u);
  EXPECT_EQ(n.b.stats().rx[static_cast<size_t>(RxResult::kUnknownId)], 1u);
  EXPECT_EQ(n.b.connections(), 0u);
}

TEST(CmState, SidrSuccessNoListenerAndTimeout) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kUdp7174, {}, true}, &l), 0);
  ConnectParams p = n.params(kUdp7174);
  p.ud = true;
  p.private_data = bytes("sidr");
  ASSERT_EQ(n.a.connect(p, &ia), 0);
  EXPECT_EQ(n.a.state(ia), CmState::kSidrReqSent);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_b.size(), 1u);
  const Event cr = n.ev_b[0].ev;
  EXPECT_TRUE(cr.ud);
  EXPECT_EQ(cr.type, EventType::kConnectRequest);
  EXPECT_EQ(cr.private_data.size(), 180u);
  EXPECT_TRUE(starts_with(cr.private_data, "sidr"));
  EXPECT_EQ(n.b.state(cr.id), CmState::kSidrReqRcvd);
  // A duplicate SIDR_REQ while b decides is dropped.
  n.b.on_mad(Address{n.ga, kGsiQpn}, encode_mad(n.sent_of(AttrId::kSidrReq)[0].mad));
  EXPECT_EQ(n.ev_b.size(), 1u);
  AcceptParams ap;
  ap.qpn = 0x33;
  ap.qkey = 0x11111111;
  ap.private_data = bytes("ok");
  ASSERT_EQ(n.b.accept(cr.id, ap), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_a.size(), 1u);
  const Event est = n.ev_a[0].ev;
  EXPECT_EQ(est.type, EventType::kEstablished);
  EXPECT_TRUE(est.ud);
  EXPECT_EQ(est.peer_qpn, 0x33u);
  EXPECT_EQ(est.qkey, 0x11111111u);
  EXPECT_EQ(est.private_data.size(), 136u);
  EXPECT_TRUE(starts_with(est.private_data, "ok"));
  EXPECT_EQ(est.path.dgid, n.gb);
  EXPECT_EQ(n.a.state(ia), CmState::kIdle);

  // No listener: SIDR_REP status 1, reported as UNREACHABLE with that status.
  CmId ia2;
  p.service_id = kUdp7174 + 1;
  ASSERT_EQ(n.a.connect(p, &ia2), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.ev_a.size(), 2u);
  EXPECT_EQ(n.ev_a[1].ev.type, EventType::kUnreachable);
  EXPECT_EQ(n.ev_a[1].ev.status, kSidrUnsupported);

  // Nothing answers: 4096 ms per try, 16 tries.
  n.fate = [](const Sent& s) { return s.from_a ? Fate::kDrop : Fate::kDeliver; };
  CmId ia3;
  const uint64_t t0 = n.clock.now_ns();
  ASSERT_EQ(n.a.connect(p, &ia3), 0);
  n.run_until(t0 + 100'000 * kMs);
  ASSERT_EQ(n.ev_a.size(), 3u);
  EXPECT_EQ(n.ev_a[2].ev.type, EventType::kUnreachable);
  EXPECT_EQ(n.ev_a[2].ev.status, -ETIMEDOUT);
  EXPECT_EQ(n.ev_a[2].at, t0 + 16 * 4096 * kMs);
}

TEST(CmState, FloodOfForgedMadsIsCountedAndChangesNothing) {
  BackToBack n;
  CmId ia, ib;
  establish(n, &ia, &ib);
  const size_t ea = n.ev_a.size(), eb = n.ev_b.size(), conns_a = n.a.connections(),
               conns_b = n.b.connections();
  const uint64_t rx_a = n.a.stats().rx_total(), rx_b = n.b.stats().rx_total();
  std::mt19937 rng(7);
  const int kFlood = 3000;
  for (int i = 0; i < kFlood; ++i) {
    std::vector<uint8_t> m;
    switch (i % 3) {
      case 0:  // random bytes of a random length
        m.resize(rng() % 300);
        for (auto& b : m) b = static_cast<uint8_t>(rng());
        break;
      case 1: {  // a valid header with a random attribute and body
        m.resize(kMadLen);
        for (auto& b : m) b = static_cast<uint8_t>(rng());
        const uint8_t hdr[4] = {1, 0x07, 2, 0x03};
        std::memcpy(m.data(), hdr, 4);
        m[16] = 0;
        m[17] = static_cast<uint8_t>(rng() % 0x20);
        break;
      }
      default: {  // one header byte of a real message broken
        const auto& s = n.sent[rng() % n.sent.size()];
        const MadBytes real = encode_mad(s.mad);
        m.assign(real.begin(), real.end());
        m[rng() % 4] ^= static_cast<uint8_t>(1 + rng() % 255);
        break;
      }
    }
    Address from{n.ga, kGsiQpn};
    from.gid[15] = static_cast<uint8_t>(3 + rng() % 250);  // neither a nor b: replies go nowhere
    (i & 1 ? n.a : n.b).on_mad(from, m);
  }
  n.run_for(10 * kMs);
  EXPECT_EQ(n.a.state(ia), CmState::kEstablished);
  EXPECT_EQ(n.b.state(ib), CmState::kEstablished);
  EXPECT_EQ(n.ev_a.size(), ea);
  EXPECT_EQ(n.ev_b.size(), eb);
  EXPECT_EQ(n.a.connections(), conns_a);
  EXPECT_EQ(n.b.connections(), conns_b);
  EXPECT_EQ(n.a.stats().rx_total() - rx_a + n.b.stats().rx_total() - rx_b, static_cast<uint64_t>(kFlood));
  const size_t mal = static_cast<size_t>(RxResult::kMalformed);
  EXPECT_GT(n.a.stats().rx[mal] + n.b.stats().rx[mal], static_cast<uint64_t>(kFlood / 2));
  uint64_t by_reason = 0;
  for (uint64_t v : n.a.stats().malformed) by_reason += v;
  EXPECT_EQ(by_reason, n.a.stats().rx[mal]);
  EXPECT_GT(n.a.stats().malformed[static_cast<size_t>(MadError::kTruncated)], 0u);
  EXPECT_GT(n.a.stats().malformed[static_cast<size_t>(MadError::kUnknownAttribute)], 0u);
  // The connection still closes cleanly.
  ASSERT_EQ(n.a.disconnect(ia), 0);
  n.run_for(10 * kMs);
  ASSERT_EQ(n.b.disconnect(ib), 0);
  n.run_for(10 * kMs);
  EXPECT_EQ(n.a.state(ia), CmState::kTimewait);
}

TEST(CmState, NewReqFromAConnectedQpIsStale) {
  BackToBack n;
  CmId ia, ib, ia2;
  establish(n, &ia, &ib);
  // a lost its connection without telling b and asks again from the same QP.
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia2), 0);
  n.run_for(2 * kMs);
  const auto rejs = n.sent_of(AttrId::kRej, 0);
  ASSERT_EQ(rejs.size(), 1u);
  EXPECT_EQ(std::get<Rej>(rejs[0].mad.body).reason, kRejStaleConn);
  ASSERT_GE(n.ev_a.size(), 3u);
  const Event rejected = n.ev_a[n.ev_a.size() - 2].ev;
  EXPECT_EQ(rejected.id, ia2);
  EXPECT_EQ(rejected.type, EventType::kRejected);
  EXPECT_EQ(rejected.status, kRejStaleConn);
  EXPECT_EQ(n.ev_a.back().ev.id, ia);
  EXPECT_EQ(n.ev_a.back().ev.type, EventType::kDisconnected);
  EXPECT_EQ(n.b.stats().rx[static_cast<size_t>(RxResult::kStale)], 1u);
  // ... and b disconnects the old one.
  EXPECT_EQ(n.sent_of(AttrId::kDreq, 0).size(), 1u);
  EXPECT_EQ(n.a.state(ia), CmState::kDreqRcvd);
  EXPECT_EQ(n.ev_b.size(), 2u);  // CONNECT_REQUEST and ESTABLISHED only: no request for the stale REQ
}

TEST(CmState, CrossingDreqsEachReportDisconnectedOnce) {
  BackToBack n;
  CmId ia, ib;
  establish(n, &ia, &ib);
  const size_t ea = n.ev_a.size(), eb = n.ev_b.size();
  ASSERT_EQ(n.a.disconnect(ia), 0);
  ASSERT_EQ(n.b.disconnect(ib), 0);
  n.run_for(2 * kMs);
  EXPECT_EQ(n.a.state(ia), CmState::kDreqRcvd);
  EXPECT_EQ(n.b.state(ib), CmState::kDreqRcvd);
  ASSERT_EQ(n.ev_a.size(), ea + 1);
  ASSERT_EQ(n.ev_b.size(), eb + 1);
  EXPECT_EQ(n.ev_a.back().ev.type, EventType::kDisconnected);
  EXPECT_EQ(n.ev_b.back().ev.type, EventType::kDisconnected);
  // Each answers when its application calls rdma_disconnect again (or destroys the id).
  ASSERT_EQ(n.a.disconnect(ia), 0);
  ASSERT_EQ(n.b.disconnect(ib), 0);
  n.run_for(3000 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kDreq).size(), 2u);  // the DREQ timers stopped when the other DREQ came
  EXPECT_EQ(n.sent_of(AttrId::kDrep).size(), 2u);
  EXPECT_EQ(n.ev_a.back().ev.type, EventType::kTimewaitExit);
  EXPECT_EQ(n.ev_b.back().ev.type, EventType::kTimewaitExit);
  EXPECT_EQ(n.ev_a.size(), ea + 2);
  EXPECT_EQ(n.ev_b.size(), eb + 2);
}

TEST(CmState, CmaHeaderRules) {
  BackToBack n;
  CmId l, ia;
  ConnectParams p = n.params(kTcp7471);
  p.private_data.assign(57, 1);  // 36 + 57 > 92
  EXPECT_EQ(n.a.connect(p, &ia), -EINVAL);
  p.private_data.assign(56, 1);
  p.cma_hdr.ip_version = 5;  // a header the passive rdma_cm refuses: REJ 28
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(p, &ia), 0);
  n.run_for(2 * kMs);
  EXPECT_EQ(n.ev_a.back().ev.status, kRejConsumerDefined);
  EXPECT_EQ(n.b.stats().rx[static_cast<size_t>(RxResult::kBadCmaHdr)], 1u);
  EXPECT_TRUE(n.ev_b.empty());

  // Ids without a CMA header (AF_IB): all 92 bytes are the consumer's.
  BackToBack m;
  ASSERT_EQ(m.b.listen({kTcp7471, {}, false}, &l), 0);
  p = m.params(kTcp7471);
  p.cma = false;
  p.private_data.assign(92, 7);
  ASSERT_EQ(m.a.connect(p, &ia), 0);
  m.run_for(2 * kMs);
  ASSERT_EQ(m.ev_b.size(), 1u);
  EXPECT_FALSE(m.ev_b[0].ev.has_cma);
  EXPECT_EQ(m.ev_b[0].ev.private_data, std::vector<uint8_t>(92, 7));
}

// --- destroy in each state sends what Linux cm_destroy_id sends ---

// The MADs `agent` queued since `before` (an index into n.sent after draining).
std::vector<Sent> sent_since(const BackToBack& n, size_t before, bool from_a) {
  std::vector<Sent> out;
  for (size_t i = before; i < n.sent.size(); ++i)
    if (n.sent[i].from_a == from_a) out.push_back(n.sent[i]);
  return out;
}

TEST(CmStateDestroy, ListenAndIdle) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.b.destroy(l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(30 * kMs);
  EXPECT_EQ(n.ev_a.at(0).ev.status, kRejInvalidServiceId);
  const size_t before = n.sent.size();
  ASSERT_EQ(n.a.destroy(ia), 0);  // IDLE after the REJ
  n.run_for(1 * kMs);
  EXPECT_TRUE(sent_since(n, before, true).empty());
  EXPECT_EQ(n.a.connections(), 0u);
}

TEST(CmStateDestroy, ReqSentSendsRejTimeoutWithGuid) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(2 * kMs);  // b holds the REQ
  const size_t before = n.sent.size();
  ASSERT_EQ(n.a.destroy(ia), 0);
  n.run_for(2 * kMs);
  const auto out = sent_since(n, before, true);
  ASSERT_EQ(out.size(), 1u);
  const Rej& r = std::get<Rej>(out[0].mad.body);
  EXPECT_EQ(r.reason, kRejTimeout);
  EXPECT_EQ(r.ari_length, 8);
  EXPECT_EQ(r.ari[0], 0x00);
  EXPECT_EQ(r.ari[1], 0x02);
  EXPECT_EQ(r.ari[7], 0x01);
  EXPECT_EQ(n.a.connections(), 0u);
  EXPECT_EQ(n.ev_a.size(), 0u);
  ASSERT_EQ(n.ev_b.size(), 2u);
  EXPECT_EQ(n.ev_b[1].ev.type, EventType::kRejected);
  EXPECT_EQ(n.ev_b[1].ev.status, kRejTimeout);
  n.run_for(200'000 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kReq).size(), 1u);  // no retries after destroy
}

TEST(CmStateDestroy, ReqRcvdMraReqSentAndRepRcvdSendRej28) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    BackToBack n;
    CmId l, ia;
    ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
    ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
    n.run_for(variant == 1 ? 7000 * kMs : 2 * kMs);
    const CmId ib = n.ev_b.at(0).ev.id;
    EXPECT_EQ(n.b.state(ib), variant == 1 ? CmState::kMraReqSent : CmState::kReqRcvd);
    if (variant == 2) {
      ASSERT_EQ(n.b.accept(ib, {}), 0);
      n.run_for(2 * kMs);
      ASSERT_EQ(n.a.state(ia), CmState::kRepRcvd);
    }
    CmAgent& who = variant == 2 ? n.a : n.b;
    const size_t before = n.sent.size();
    ASSERT_EQ(who.destroy(variant == 2 ? ia : ib), 0);
    n.run_for(2 * kMs);
    const auto out = sent_since(n, before, variant == 2);
    ASSERT_EQ(out.size(), 1u);
    const Rej& r = std::get<Rej>(out[0].mad.body);
    EXPECT_EQ(r.reason, kRejConsumerDefined);
    EXPECT_EQ(r.message_rejected, variant == 2 ? 1 : 0);
    EXPECT_EQ(r.local_comm_id == 0, variant == 0);
    EXPECT_EQ(who.connections(), variant == 2 ? 0u : 1u);  // b keeps its listener
    auto& peer_ev = variant == 2 ? n.ev_b : n.ev_a;
    ASSERT_FALSE(peer_ev.empty());
    EXPECT_EQ(peer_ev.back().ev.type, EventType::kRejected);
    EXPECT_EQ(peer_ev.back().ev.status, kRejConsumerDefined);
  }
}

TEST(CmStateDestroy, RepSentSendsRej28AndWaitsInTimewait) {
  BackToBack n;
  n.fate = [](const Sent& s) { return attr_of(s.mad.body) == AttrId::kRep ? Fate::kDrop : Fate::kDeliver; };
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kTcp7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kTcp7471), &ia), 0);
  n.run_for(2 * kMs);
  const CmId ib = n.ev_b.at(0).ev.id;
  ASSERT_EQ(n.b.accept(ib, {}), 0);
  n.run_for(0);
  const size_t before = n.sent.size();
  ASSERT_EQ(n.b.destroy(ib), 0);
  EXPECT_EQ(n.b.state(ib), CmState::kIdle);  // gone for the consumer
  n.run_for(2 * kMs);
  const auto out = sent_since(n, before, false);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::get<Rej>(out[0].mad.body).reason, kRejConsumerDefined);
  EXPECT_EQ(n.ev_a.back().ev.type, EventType::kRejected);
  EXPECT_EQ(n.b.connections(), 2u);  // listener + the connection in timewait
  n.run_for(2100 * kMs);
  EXPECT_EQ(n.b.connections(), 1u);
  EXPECT_EQ(n.ev_b.size(), 1u);  // no TIMEWAIT_EXIT for a destroyed id
}

TEST(CmStateDestroy, EstablishedSendsDreqOnce) {
  BackToBack n;
  CmId ia, ib;
  establish(n, &ia, &ib);
  const size_t before = n.sent.size(), ea = n.ev_a.size();
  ASSERT_EQ(n.a.destroy(ia), 0);
  n.run_for(2 * kMs);
  const auto out = sent_since(n, before, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(attr_of(out[0].mad.body), AttrId::kDreq);
  EXPECT_EQ(n.ev_b.back().ev.type, EventType::kDisconnected);
  // b's DREP finds a's connection in timewait; a reports nothing any more.
  ASSERT_EQ(n.b.disconnect(ib), 0);
  n.run_for(100'000 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kDreq).size(), 1u);
  EXPECT_EQ(n.ev_a.size(), ea);
  EXPECT_EQ(n.a.connections(), 0u);
}

TEST(CmStateDestroy, DreqSentDreqRcvdAndTimewait) {
  BackToBack n;
  CmId ia, ib;
  establish(n, &ia, &ib);
  ASSERT_EQ(n.a.disconnect(ia), 0);
  n.run_for(2 * kMs);
  ASSERT_EQ(n.b.state(ib), CmState::kDreqRcvd);
  // DREQ_RCVD: the DREP goes out.
  size_t before = n.sent.size();
  ASSERT_EQ(n.b.destroy(ib), 0);
  n.run_for(2 * kMs);
  auto out = sent_since(n, before, false);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(attr_of(out[0].mad.body), AttrId::kDrep);
  EXPECT_EQ(n.a.state(ia), CmState::kTimewait);
  // TIMEWAIT: nothing is sent, and no TIMEWAIT_EXIT is reported.
  const size_t ea = n.ev_a.size();
  before = n.sent.size();
  ASSERT_EQ(n.a.destroy(ia), 0);
  n.run_for(3000 * kMs);
  EXPECT_TRUE(sent_since(n, before, true).empty());
  EXPECT_EQ(n.ev_a.size(), ea);
  EXPECT_EQ(n.a.connections(), 0u);

  // DREQ_SENT: nothing more is sent, no retries.
  BackToBack m;
  m.fate = [](const Sent& s) { return attr_of(s.mad.body) == AttrId::kDreq ? Fate::kDrop : Fate::kDeliver; };
  establish(m, &ia, &ib);
  ASSERT_EQ(m.a.disconnect(ia), 0);
  m.run_for(0);
  before = m.sent.size();
  ASSERT_EQ(m.a.destroy(ia), 0);
  m.run_for(100'000 * kMs);
  EXPECT_EQ(sent_since(m, before, true).size(), 0u);
  EXPECT_EQ(m.a.connections(), 0u);
}

TEST(CmStateDestroy, SidrStates) {
  BackToBack n;
  CmId l, ia;
  ASSERT_EQ(n.b.listen({kUdp7174, {}, true}, &l), 0);
  ConnectParams p = n.params(kUdp7174);
  p.ud = true;
  ASSERT_EQ(n.a.connect(p, &ia), 0);
  n.run_for(2 * kMs);
  // SIDR_REQ_RCVD: SIDR_REP status 2 (reject).
  ASSERT_EQ(n.b.destroy(n.ev_b.at(0).ev.id), 0);
  n.run_for(2 * kMs);
  ASSERT_EQ(n.ev_a.size(), 1u);
  EXPECT_EQ(n.ev_a[0].ev.type, EventType::kUnreachable);
  EXPECT_EQ(n.ev_a[0].ev.status, kSidrReject);
  ASSERT_EQ(n.a.destroy(ia), 0);  // IDLE
  // SIDR_REQ_SENT: nothing is sent, no retries.
  n.fate = [](const Sent& s) { return s.from_a ? Fate::kDrop : Fate::kDeliver; };
  ASSERT_EQ(n.a.connect(p, &ia), 0);
  n.run_for(0);
  const size_t reqs = n.sent_of(AttrId::kSidrReq).size();
  ASSERT_EQ(n.a.destroy(ia), 0);
  n.run_for(100'000 * kMs);
  EXPECT_EQ(n.sent_of(AttrId::kSidrReq).size(), reqs);
  EXPECT_EQ(n.a.connections(), 0u);
}

}  // namespace
}  // namespace uroce::cm
