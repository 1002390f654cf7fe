// QP state machine (IBA 10.3.1, 11.2.4.2): which transitions modify_qp accepts with which attribute masks.
// The expected table is written out here independently of the engine's, from the IBA attribute tables as
// Linux's ib_modify_qp_is_ok encodes them, for RC, UC and UD: every required attribute missing and every
// attribute not allowed must give EINVAL and leave the state alone; out-of-range values too.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using test::ProtoEnv;
using test::ProtoOptions;
using S = QpState;

// Every attribute bit modify_qp knows except the state itself. Rate limit is left out: uroce accepts it
// wherever a QP has a send queue to pace (Linux now does the same for every transition).
constexpr uint32_t kEveryAttr = kQpCurState | kQpEnSqdAsyncNotify | kQpAccessFlags | kQpPkeyIndex | kQpPort |
                                kQpQkey | kQpAv | kQpPathMtu | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                kQpRqPsn | kQpMaxQpRdAtomic | kQpAltPath | kQpMinRnrTimer | kQpSqPsn |
                                kQpMaxDestRdAtomic | kQpPathMigState | kQpCap | kQpDestQpn;

struct Transition {
  S from, to;
  uint32_t req[3];  // RC, UC, UD
  uint32_t opt[3];
};

constexpr uint32_t kMig = kQpAltPath | kQpPathMigState;
const Transition kTable[] = {
    {S::kReset,
     S::kInit,
     {kQpPkeyIndex | kQpPort | kQpAccessFlags, kQpPkeyIndex | kQpPort | kQpAccessFlags,
      kQpPkeyIndex | kQpPort | kQpQkey},
     {0, 0, 0}},
    {S::kInit,
     S::kInit,
     {0, 0, 0},
     {kQpPkeyIndex | kQpPort | kQpAccessFlags, kQpPkeyIndex | kQpPort | kQpAccessFlags,
      kQpPkeyIndex | kQpPort | kQpQkey}},
    {S::kInit,
     S::kRtr,
     {kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer,
      kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn, 0},
     {kQpAltPath | kQpAccessFlags | kQpPkeyIndex, kQpAltPath | kQpAccessFlags | kQpPkeyIndex,
      kQpPkeyIndex | kQpQkey}},
    {S::kRtr,
     S::kRts,
     {kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpSqPsn | kQpMaxQpRdAtomic, kQpSqPsn, kQpSqPsn},
     {kQpCurState | kMig | kQpAccessFlags | kQpMinRnrTimer, kQpCurState | kMig | kQpAccessFlags,
      kQpCurState | kQpQkey}},
    {S::kRts,
     S::kRts,
     {0, 0, 0},
     {kQpCurState | kQpAccessFlags | kMig | kQpMinRnrTimer, kQpCurState | kQpAccessFlags | kMig,
      kQpCurState | kQpQkey}},
    {S::kRts, S::kSqd, {0, 0, 0}, {kQpEnSqdAsyncNotify, kQpEnSqdAsyncNotify, kQpEnSqdAsyncNotify}},
    {S::kSqd,
     S::kRts,
     {0, 0, 0},
     {kQpCurState | kMig | kQpAccessFlags | kQpMinRnrTimer, kQpCurState | kMig | kQpAccessFlags,
      kQpCurState | kQpQkey}},
    {S::kSqd,
     S::kSqd,
     {0, 0, 0},
     {kQpPort | kQpAv | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic | kQpMaxDestRdAtomic |
          kMig | kQpAccessFlags | kQpPkeyIndex | kQpMinRnrTimer,
      kQpAv | kMig | kQpAccessFlags | kQpPkeyIndex, kQpPkeyIndex | kQpQkey}},
};

// Attribute values that are all in range, for a transition from `cur` to `next`.
QpAttr good_attr(S next, S cur = S::kReset) {
  QpAttr a;
  a.qp_state = next;
  a.cur_qp_state = cur;
  a.port_num = 1;
  a.qkey = 0x1234;
  a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead;
  a.ah.dgid = ProtoEnv::peer_gid();
  a.path_mtu = Mtu::k1024;
  a.dest_qp_num = 0x5A5;
  a.rq_psn = 0x500;
  a.sq_psn = 0x100;
  a.max_dest_rd_atomic = 4;
  a.max_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.en_sqd_async_notify = true;
  return a;
}

class QpStateMachine : public ::testing::TestWithParam<QpType> {
 protected:
  int type_index() const { return GetParam() == QpType::kRc ? 0 : GetParam() == QpType::kUc ? 1 : 2; }

  // A new QP of the parameter's type, moved from RESET to `s` with valid attributes.
  Qp* qp_in(S s) {
    QpInitAttr init;
    init.type = GetParam();
    init.send_cq = init.recv_cq = env.cq;
    init.cap = QpCap{16, 16, 1, 1, 0};
    Qp* q = nullptr;
    EXPECT_EQ(env.dev->create_qp(env.pd, init, &q), 0);
    const S path[] = {S::kInit, S::kRtr, S::kRts, S::kSqd};
    for (const Transition& t : kTable) {
      if (q->state() == s) break;
      if (t.from != q->state() || t.to == t.from ||
          std::find(std::begin(path), std::end(path), t.to) == std::end(path))
        continue;
      EXPECT_EQ(q->modify(good_attr(t.to), kQpState | t.req[type_index()]), 0);
    }
    if (s == S::kErr) {
      EXPECT_EQ(q->modify(good_attr(S::kErr), kQpState), 0);
    }
    EXPECT_EQ(q->state(), s);
    return q;
  }

  ProtoEnv env{[] {
    ProtoOptions o;
    o.to_rts = false;
    return o;
  }()};
};

TEST_P(QpStateMachine, RequiredAndOptionalAttributesPerTransition) {
  const int ti = type_index();
  for (const Transition& t : kTable) {
    SCOPED_TRACE(std::string(qp_state_name(t.from)) + "->" + qp_state_name(t.to));
    const uint32_t req = t.req[ti], opt = t.opt[ti];
    const QpAttr a = good_attr(t.to, t.from);
    EXPECT_EQ(qp_in(t.from)->modify(a, kQpState | req), 0);
    Qp* q = qp_in(t.from);
    EXPECT_EQ(q->modify(a, kQpState | req | opt), 0);
    EXPECT_EQ(q->state(), t.to);
    for (uint32_t bit = 1; bit; bit <<= 1) {
      if (req & bit) {
        Qp* m = qp_in(t.from);
        EXPECT_EQ(m->modify(a, kQpState | (req & ~bit)), EINVAL) << "missing 0x" << std::hex << bit;
        EXPECT_EQ(m->state(), t.from);
      } else if ((kEveryAttr & bit) && !(opt & bit)) {
        Qp* x = qp_in(t.from);
        EXPECT_EQ(x->modify(a, kQpState | req | bit), EINVAL) << "extra 0x" << std::hex << bit;
        EXPECT_EQ(x->state(), t.from);
      }
    }
  }
}

TEST_P(QpStateMachine, EveryStateGoesToErrAndReset) {
  for (S from : {S::kReset, S::kInit, S::kRtr, S::kRts, S::kSqd, S::kErr}) {
    SCOPED_TRACE(qp_state_name(from));
    EXPECT_EQ(qp_in(from)->modify(good_attr(S::kErr), kQpState), 0);
    EXPECT_EQ(qp_in(from)->modify(good_attr(S::kReset), kQpState), 0);
    EXPECT_EQ(qp_in(from)->modify(good_attr(S::kErr), kQpState | kQpQkey), EINVAL) << "no attribute allowed";
  }
}

TEST_P(QpStateMachine, TransitionsOutsideTheDiagramAreRefused) {
  const S all[] = {S::kReset, S::kInit, S::kRtr, S::kRts, S::kSqd, S::kSqe, S::kErr};
  for (S from : {S::kReset, S::kInit, S::kRtr, S::kRts, S::kSqd, S::kErr}) {
    for (S to : all) {
      const bool valid = to == S::kReset || to == S::kErr ||
                         std::any_of(std::begin(kTable), std::end(kTable),
                                     [&](const Transition& t) { return t.from == from && t.to == to; });
      if (valid) continue;
      SCOPED_TRACE(std::string(qp_state_name(from)) + "->" + qp_state_name(to));
      Qp* q = qp_in(from);
      EXPECT_EQ(q->modify(good_attr(to), kQpState), EINVAL);
      EXPECT_EQ(q->modify(good_attr(to), kQpState | kEveryAttr), EINVAL);
      EXPECT_EQ(q->state(), from);
    }
  }
  QpAttr bogus = good_attr(S::kInit);
  bogus.qp_state = static_cast<S>(7);
  EXPECT_EQ(qp_in(S::kReset)->modify(bogus, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags | kQpQkey),
            EINVAL);
}

TEST_P(QpStateMachine, CurrentStateMustMatch) {
  QpAttr a = good_attr(S::kRts);
  a.cur_qp_state = S::kInit;
  const uint32_t req = kTable[3].req[type_index()];
  EXPECT_EQ(qp_in(S::kRtr)->modify(a, kQpState | kQpCurState | req), EINVAL);
  a.cur_qp_state = S::kRtr;
  EXPECT_EQ(qp_in(S::kRtr)->modify(a, kQpState | kQpCurState | req), 0);
}

TEST_P(QpStateMachine, PostSendBeforeRtsAndPostRecvInResetAreRefused) {
  const Sge s = env.sge(0, 8);
  SendWr wr;
  wr.sg_list = &s;
  wr.num_sge = 1;
  AddressVector av;
  av.dgid = ProtoEnv::peer_gid();
  wr.ah = &av;
  for (S st : {S::kReset, S::kInit, S::kRtr})
    EXPECT_EQ(qp_in(st)->post_send(wr), EINVAL) << qp_state_name(st);
  EXPECT_EQ(qp_in(S::kRts)->post_send(wr), 0);
  EXPECT_EQ(qp_in(S::kReset)->post_recv(RecvWr{1, &s, 1}), EINVAL);
  for (S st : {S::kInit, S::kRtr, S::kRts}) EXPECT_EQ(qp_in(st)->post_recv(RecvWr{1, &s, 1}), 0);
}

INSTANTIATE_TEST_SUITE_P(Types, QpStateMachine, ::testing::Values(QpType::kRc, QpType::kUc, QpType::kUd),
                         [](const ::testing::TestParamInfo<QpType>& i) {
                           return std::string(i.param == QpType::kRc   ? "RC"
                                              : i.param == QpType::kUc ? "UC"
                                                                       : "UD");
                         });

// Out-of-range values are refused even with a valid mask (ibv_modify_qp(3) EINVAL).
TEST(QpAttributeValues, OutOfRangeValuesAreRefused) {
  ProtoOptions o;
  o.to_rts = false;
  ProtoEnv env(o);
  struct Bad {
    const char* what;
    S from, to;
    void (*spoil)(QpAttr&);
  };
  const Bad bad[] = {
      {"port_num 2", S::kReset, S::kInit, [](QpAttr& a) { a.port_num = 2; }},
      {"pkey_index 1", S::kReset, S::kInit, [](QpAttr& a) { a.pkey_index = 1; }},
      {"unknown access bit", S::kReset, S::kInit, [](QpAttr& a) { a.qp_access_flags |= 1u << 12; }},
      {"path_mtu 0", S::kInit, S::kRtr, [](QpAttr& a) { a.path_mtu = static_cast<Mtu>(0); }},
      {"path_mtu 8192", S::kInit, S::kRtr, [](QpAttr& a) { a.path_mtu = static_cast<Mtu>(6); }},
      {"dest_qp_num 2^24", S::kInit, S::kRtr, [](QpAttr& a) { a.dest_qp_num = 1u << 24; }},
      {"min_rnr_timer 32", S::kInit, S::kRtr, [](QpAttr& a) { a.min_rnr_timer = 32; }},
      {"max_dest_rd_atomic 129", S::kInit, S::kRtr, [](QpAttr& a) { a.max_dest_rd_atomic = 129; }},
      {"sgid_index 1", S::kInit, S::kRtr, [](QpAttr& a) { a.ah.sgid_index = 1; }},
      {"timeout 32", S::kRtr, S::kRts, [](QpAttr& a) { a.timeout = 32; }},
      {"retry_cnt 8", S::kRtr, S::kRts, [](QpAttr& a) { a.retry_cnt = 8; }},
      {"rnr_retry 8", S::kRtr, S::kRts, [](QpAttr& a) { a.rnr_retry = 8; }},
      {"max_rd_atomic 129", S::kRtr, S::kRts, [](QpAttr& a) { a.max_rd_atomic = 129; }},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    const Transition& t = *std::find_if(std::begin(kTable), std::end(kTable), [&](const Transition& x) {
      return x.from == b.from && x.to == b.to;
    });
    Qp* q = env.qp;
    ASSERT_EQ(q->modify(good_attr(S::kReset), kQpState), 0);
    for (const Transition& step : {kTable[0], kTable[2], kTable[3]}) {
      if (step.from == b.from) break;
      ASSERT_EQ(q->modify(good_attr(step.to), kQpState | step.req[0]), 0);
    }
    QpAttr a = good_attr(t.to);
    b.spoil(a);
    EXPECT_EQ(q->modify(a, kQpState | t.req[0]), EINVAL);
    EXPECT_EQ(q->state(), b.from);
  }
}

// A device bound to a netdev has more than one GID (Device::set_gid): a QP sends from the slot its address
// vector names, which must be filled and of the destination's family, and frames to any GID of the table are
// the device's.
TEST(QpAttributeValues, SourceGidIndexNamesAFilledSlotOfTheDestinationsFamily) {
  ProtoOptions o;
  o.to_rts = false;
  ProtoEnv env(o);
  Gid v4 = ProtoEnv::local_gid();
  v4[15] = 9;  // ::ffff:10.0.0.9
  Gid v6{};
  v6[0] = 0xfd;
  v6[15] = 1;  // fd00::1
  env.dev->set_gid(2, v4);
  env.dev->set_gid(3, v6);
  ASSERT_NE(env.dev->gid(2), nullptr);
  EXPECT_EQ(env.dev->gid(1), nullptr);
  EXPECT_EQ(env.dev->gid(params::kGidTableLen), nullptr);

  Qp* q = env.qp;
  ASSERT_EQ(q->modify(good_attr(S::kInit), kQpState | kTable[0].req[0]), 0);
  for (uint8_t index : {1, 3, 200}) {  // empty, IPv6 towards an IPv4 peer, out of range
    QpAttr a = good_attr(S::kRtr);
    a.ah.sgid_index = index;
    EXPECT_EQ(q->modify(a, kQpState | kTable[2].req[0]), EINVAL) << int(index);
  }
  QpAttr a = good_attr(S::kRtr);
  a.ah.sgid_index = 2;
  ASSERT_EQ(q->modify(a, kQpState | kTable[2].req[0]), 0);
  ASSERT_EQ(q->modify(good_attr(S::kRts), kQpState | kTable[3].req[0]), 0);
  env.unlimited_credits();
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  const auto sent = env.run();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].h.ip.src, v4);

  // The peer's answer to GID 2 is taken (its ACK completes the send); once the slot is emptied, it is not.
  auto ack = env.peer_headers(wire::op::kRcAck, sent[0].psn());
  ack.ip.dst = v4;
  ack.aeth = {wire::aeth_syndrome(wire::AethKind::kAck, 31), 1};
  env.inject(ack);
  env.run();
  const auto wcs = env.poll();
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
  const auto drops = [&] { return env.dev->counters().n[static_cast<size_t>(Counter::kDropDstGid)]; };
  EXPECT_EQ(drops(), 0u);
  env.dev->set_gid(2, Gid{});
  env.inject(ack);
  env.run();
  EXPECT_EQ(drops(), 1u);
}

}  // namespace
}  // namespace uroce
