// What a peer, honest and racing the application or hostile, can and cannot make the responder do: every
// packet of a message lands only where a live registration with the right key and access allows (ibv_dereg_mr
// and ibv_rereg_mr between the packets of a WRITE, or while a READ is answered, end in NAK Remote Access
// Error); READ/ATOMIC requests beyond max_dest_rd_atomic are NAKed, not dropped; a connected QP takes packets
// only from the far end of its path; keys and QP numbers are random in a seeded device.
#include <gtest/gtest.h>

#include <set>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

constexpr uint32_t kPsn = 0x500;
constexpr uint8_t kNakInvReq = 1, kNakRemAccess = 2;

PacketHeaders write_first(const ProtoEnv& env, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len) {
  PacketHeaders h = env.peer_headers(op::kRcWriteFirst, psn);
  h.reth = {va, rkey, len};
  return h;
}

PacketHeaders read_req(const ProtoEnv& env, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len) {
  PacketHeaders h = env.peer_headers(op::kRcReadRequest, psn);
  h.reth = {va, rkey, len};
  h.bth.ackreq = true;
  return h;
}

bool is_nak(const Emitted& f, uint8_t code, uint32_t psn) {
  return f.opcode() == op::kRcAck && f.aeth_kind() == AethKind::kNak && f.aeth_value() == code &&
         f.psn() == psn;
}

void expect_access_error(ProtoEnv& env) {
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<AsyncEvent> evs = env.events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].type, EventType::kQpAccessErr);
}

TEST(ResponderSafety, WriteAfterDeregBetweenItsPacketsIsNakedAndWritesNothing) {
  ProtoEnv env;
  const uint32_t rkey = env.mr->rkey;
  env.fill(0, 2048, 7);
  const std::vector<uint8_t> before = env.bytes(0, 2048);
  env.inject(write_first(env, kPsn, env.addr(0), rkey, 2048), pattern(1024, 1));
  env.run();
  EXPECT_EQ(env.bytes(0, 1024), pattern(1024, 1));
  ASSERT_EQ(env.dev->dereg_mr(env.mr), 0);
  env.mr = nullptr;
  PacketHeaders last = env.peer_headers(op::kRcWriteLast, kPsn + 1);
  last.bth.ackreq = true;
  env.inject(last, pattern(1024, 2));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn + 1));
  EXPECT_EQ(env.bytes(1024, 1024), std::vector<uint8_t>(before.begin() + 1024, before.end()))
      << "nothing may land in a region that is no longer registered";
  EXPECT_EQ(env.dev->counters()[Counter::kRemAccessNakSent], 1u);
  expect_access_error(env);
}

TEST(ResponderSafety, WriteAfterReregBetweenItsPacketsIsNakedTheOldKeyIsDead) {
  ProtoEnv env;
  const uint32_t old_rkey = env.mr->rkey;
  env.fill(0, 3072, 3);
  const std::vector<uint8_t> before = env.bytes(0, 3072);
  env.inject(write_first(env, kPsn, env.addr(0), old_rkey, 3072), pattern(1024, 1));
  env.run();
  ASSERT_EQ(env.dev->rereg_mr(env.mr, env.pd, env.at(0), env.mem.size(),
                              kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead),
            0);
  ASSERT_NE(env.mr->rkey, old_rkey);
  env.inject(env.peer_headers(op::kRcWriteMiddle, kPsn + 1), pattern(1024, 2));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn + 1));
  EXPECT_EQ(env.bytes(1024, 2048), std::vector<uint8_t>(before.begin() + 1024, before.end()));
  expect_access_error(env);
}

TEST(ResponderSafety, ReadStopsWithANakWhenItsRegionGoesWhileAnswered) {
  ProtoOptions o;
  o.mem_bytes = 1 << 17;
  ProtoEnv env(o);
  constexpr uint32_t kLen = 96 * 1024;  // 96 responses at MTU 1024: more than one engine pass sends
  env.inject(read_req(env, kPsn, env.addr(0), env.mr->rkey, kLen));
  env.dev->progress();
  const size_t first = env.port.take().size();
  ASSERT_GT(first, 0u);
  ASSERT_LT(first, 96u) << "the test needs the READ still being answered";
  ASSERT_EQ(env.dev->dereg_mr(env.mr), 0);
  env.mr = nullptr;
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "no byte more is read: the next response is replaced by a NAK";
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn + static_cast<uint32_t>(first)));
  EXPECT_EQ(env.dev->counters()[Counter::kRemAccessNakSent], 1u);
  expect_access_error(env);
}

TEST(ResponderSafety, DuplicateReadOfADeregisteredRegionIsNaked) {
  ProtoEnv env;
  env.inject(read_req(env, kPsn, env.addr(0), env.mr->rkey, 512));
  ASSERT_EQ(env.run().size(), 1u);
  const uint32_t rkey = env.mr->rkey;
  ASSERT_EQ(env.dev->dereg_mr(env.mr), 0);
  env.mr = nullptr;
  env.inject(read_req(env, kPsn, env.addr(0), rkey, 512));  // the requester lost the response and re-sent
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn));
  expect_access_error(env);
}

TEST(ResponderSafety, ReadBeyondMaxDestRdAtomicIsAnInvalidRequestNak) {
  ProtoOptions o;
  o.max_dest_rd_atomic = 1;
  ProtoEnv env(o);
  env.inject(read_req(env, kPsn, env.addr(0), env.mr->rkey, 256));
  env.inject(read_req(env, kPsn + 1, env.addr(256), env.mr->rkey, 256));
  const std::vector<Emitted> f = env.run();
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(is_nak(f.back(), kNakInvReq, kPsn + 1));
  EXPECT_EQ(env.dev->counters()[Counter::kRdAtomicOverLimit], 1u);
  EXPECT_EQ(env.qp->state(), QpState::kErr);
}

TEST(ResponderSafety, ReadWithMaxDestRdAtomicZeroIsAnInvalidRequestNak) {
  ProtoOptions o;
  o.max_dest_rd_atomic = 0;
  ProtoEnv env(o);
  env.inject(read_req(env, kPsn, env.addr(0), env.mr->rkey, 256));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakInvReq, kPsn));
  EXPECT_EQ(env.dev->counters()[Counter::kRdAtomicOverLimit], 1u);
}

// A WRITE that would change memory, spoofed one way; the frame is dropped and counted under `why`, memory
// is untouched, and the QP goes on with the honest peer.
void expect_spoof_dropped(void (*spoof)(PacketHeaders*), Counter why, RxDrop frame_why = RxDrop::kNone) {
  ProtoEnv env;
  env.fill(0, 64, 9);
  const std::vector<uint8_t> before = env.bytes(0, 64);
  PacketHeaders h = env.peer_headers(op::kRcWriteOnly, kPsn);
  h.reth = {env.addr(0), env.mr->rkey, 64};
  h.bth.ackreq = true;
  PacketHeaders bad = h;
  spoof(&bad);
  env.inject(bad, pattern(64, 5));
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.bytes(0, 64), before);
  if (frame_why != RxDrop::kNone) {
    EXPECT_EQ(env.dev->rx_drops()[frame_why], 1u) << rx_drop_name(frame_why);
  } else {
    EXPECT_EQ(env.dev->counters()[why], 1u) << counter_name(why);
  }
  EXPECT_EQ(env.qp->state(), QpState::kRts);
  env.inject(h, pattern(64, 6));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(env.bytes(0, 64), pattern(64, 6));
}

TEST(ResponderSafety, SpoofedSourceIpIsDropped) {
  expect_spoof_dropped([](PacketHeaders* h) { h->ip.src = ipv4_mapped(0x0A000003); }, Counter::kDropSrcAddr);
}

TEST(ResponderSafety, SpoofedSourceMacIsDropped) {
  expect_spoof_dropped([](PacketHeaders* h) { h->eth.src = {0x02, 0, 0x0A, 0, 0, 0x63}; },
                       Counter::kDropSrcMac);
}

TEST(ResponderSafety, FrameForAnotherStationIsDropped) {
  expect_spoof_dropped([](PacketHeaders* h) { h->eth.dst = {0x02, 0, 0x0A, 0, 0, 0x63}; },
                       Counter::kDropDstMac);
}

TEST(ResponderSafety, FrameOnAnotherVlanIsDropped) {
  expect_spoof_dropped(
      [](PacketHeaders* h) {
        h->eth.vlan = true;
        h->eth.vid = 5;
      },
      Counter::kDropVlan);
}

TEST(ResponderSafety, Ipv6FrameForAnIpv4PathIsDropped) {
  expect_spoof_dropped(
      [](PacketHeaders* h) {
        h->ip.ipv6 = true;
        h->ip.src = Ipv6Addr{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
      },
      Counter::kDropIpFamily);
}

TEST(ResponderSafety, PriorityTaggedFrameIsTakenOnAnUntaggedDevice) {
  ProtoEnv env;
  PacketHeaders h = env.peer_headers(op::kRcWriteOnly, kPsn);
  h.reth = {env.addr(0), env.mr->rkey, 64};
  h.bth.ackreq = true;
  h.eth.vlan = true;  // VLAN 0: only the PCP, as PFC deployments tag
  h.eth.pcp = 3;
  env.inject(h, pattern(64, 4));
  ASSERT_EQ(env.run().size(), 1u);
  EXPECT_EQ(env.bytes(0, 64), pattern(64, 4));
}

TEST(ResponderSafety, Ipv4WithoutDontFragmentIsDroppedAsAFragment) {
  // What af_packet hands over after the kernel reassembled a fragmented datagram.
  expect_spoof_dropped([](PacketHeaders* h) { h->ip.ipv4_flags_frag = 0; }, Counter::kCount,
                       RxDrop::kIpv4Fragment);
}

TEST(ResponderSafety, ForgedNakFromAnotherSourceDoesNotKillTheQp) {
  ProtoEnv env;
  env.unlimited_credits();
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 64, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  PacketHeaders nak = env.peer_headers(op::kRcAck, 0x100);
  nak.aeth = {aeth_syndrome(AethKind::kNak, kNakRemAccess), 0};
  nak.ip.src = ipv4_mapped(0x0A000063);
  env.inject(nak);
  env.run();
  EXPECT_EQ(env.qp->state(), QpState::kRts);
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(env.dev->counters()[Counter::kDropSrcAddr], 1u);
  env.inject_ack(0x100);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST(ResponderAcks, DestroyingAQpSendsTheAcksItStillHolds) {
  ProtoEnv env;
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  ASSERT_EQ(env.post_recv(64, 64, 2), 0);
  env.port.refuse_tx = true;  // a full transmit ring: the first ACK stays in the device's queue
  PacketHeaders h = env.peer_headers(op::kRcSendOnly, kPsn);
  h.bth.ackreq = true;
  env.inject(h, pattern(16, 1));
  env.dev->progress();
  h.bth.psn = kPsn + 1;  // the second one's ACK stays with the QP: a blocked port builds nothing new
  env.inject(h, pattern(16, 2));
  env.dev->progress();
  ASSERT_EQ(env.poll().size(), 2u) << "the application has seen both messages";
  EXPECT_TRUE(env.port.sent().empty());
  const uint64_t full = env.dev->counters()[Counter::kTxRingFull];
  EXPECT_GE(full, 2u) << "each pass that left a frame behind counts";
  env.port.refuse_tx = false;
  ASSERT_EQ(env.dev->destroy_qp(env.qp), 0);
  env.qp = nullptr;
  EXPECT_EQ(env.dev->counters()[Counter::kTxRingFull], full) << "a flush that sent everything does not";
  const std::vector<Emitted> f = env.port.take();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(f[1].psn(), kPsn + 1);
  for (const Emitted& e : f) EXPECT_EQ(e.aeth_kind(), AethKind::kAck);
}

struct Ids {
  std::vector<uint32_t> keys, qpns;
};

Ids ids_of(uint64_t seed) {
  ManualClock clock;
  test::CapturePort port(&clock);
  DeviceConfig cfg;
  cfg.id_seed = seed;
  Device dev(cfg, &port, &clock);
  Pd* pd;
  Cq* cq;
  EXPECT_EQ(dev.alloc_pd(&pd), 0);
  EXPECT_EQ(dev.create_cq(16, &cq), 0);
  static uint8_t buf[4096];
  Ids out;
  for (int i = 0; i < 8; ++i) {
    Mr* mr;
    EXPECT_EQ(dev.reg_mr(pd, buf, sizeof buf, kAccessLocalWrite, &mr), 0);
    out.keys.push_back(mr->rkey);
    QpInitAttr init;
    init.send_cq = init.recv_cq = cq;
    init.cap = QpCap{4, 4, 1, 1, 0};
    Qp* qp;
    EXPECT_EQ(dev.create_qp(pd, init, &qp), 0);
    out.qpns.push_back(qp->qpn());
  }
  return out;
}

TEST(Identifiers, SeededDevicesHandOutDifferentRandomKeysAndQpns) {
  const Ids a = ids_of(0x1234), b = ids_of(0x9876);
  EXPECT_NE(a.keys, b.keys);
  EXPECT_NE(a.qpns, b.qpns);
  for (const Ids* ids : {&a, &b}) {
    for (uint32_t q : ids->qpns) {
      EXPECT_GE(q, 0x11u);
      EXPECT_LT(q, 0xFFFFFFu);
    }
    for (uint32_t k : ids->keys) EXPECT_NE(k, 0u);
    EXPECT_EQ(std::set<uint32_t>(ids->keys.begin(), ids->keys.end()).size(), ids->keys.size());
  }
  bool sequential = true;
  for (size_t i = 1; i < a.qpns.size(); ++i) sequential &= a.qpns[i] == a.qpns[i - 1] + 1;
  EXPECT_FALSE(sequential);
}

TEST(Identifiers, UnseededDevicesStaySequentialForReproducibleSimulations) {
  const Ids a = ids_of(0), b = ids_of(0);
  EXPECT_EQ(a.keys, b.keys);
  EXPECT_EQ(a.qpns, b.qpns);
  EXPECT_EQ(a.qpns[0], 0x11u);
}

TEST(Identifiers, AStaleKeyMissesAfterItsSlotIsReused) {
  MrTable t;
  t.seed(42);
  Pd pd;
  Mr* mr;
  for (int round = 0; round < 300; ++round) {
    ASSERT_EQ(t.reg(&pd, 0x1000, 64, kAccessLocalWrite, &mr), 0);
    const uint32_t key = mr->lkey;
    EXPECT_EQ(t.lookup(key), mr);
    t.dereg(mr);
    EXPECT_EQ(t.lookup(key), nullptr);
    ASSERT_EQ(t.reg(&pd, 0x1000, 64, kAccessLocalWrite, &mr), 0);
    EXPECT_NE(mr->lkey, key) << "the reused slot must not hand out the dead key again";
    EXPECT_EQ(t.lookup(key), nullptr);
    t.dereg(mr);
  }
}

}  // namespace
}  // namespace uroce
