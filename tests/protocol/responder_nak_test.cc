// Responder NAKs (IBA 9.7.5.1, table 43 / 9.9.3 error classes): PSN sequence error once per gap, RNR NAK
// with the QP's min_rnr_timer, and the fatal ones (remote access, invalid request, remote operational
// error) that end the QP with the matching receive completion and affiliated async event.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

constexpr uint32_t kPsn = 0x500;
constexpr uint8_t kNakSeq = 0, kNakInvReq = 1, kNakRemAccess = 2, kNakRemOp = 3;

PacketHeaders req(const ProtoEnv& env, uint8_t opcode, uint32_t psn, bool ackreq = true) {
  PacketHeaders h = env.peer_headers(opcode, psn);
  h.bth.ackreq = ackreq;
  return h;
}

void expect_nak(const Emitted& f, AethKind kind, uint8_t value, uint32_t psn, uint32_t msn) {
  EXPECT_EQ(f.opcode(), op::kRcAck);
  EXPECT_EQ(f.aeth_kind(), kind);
  EXPECT_EQ(f.aeth_value(), value);
  EXPECT_EQ(f.psn(), psn);
  EXPECT_EQ(f.msn(), msn);
}

// The QP went to ERR after a fatal NAK: it raised `ev` for itself and later requests are dropped.
void expect_dead(ProtoEnv& env, EventType ev) {
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<AsyncEvent> evs = env.events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].type, ev);
  EXPECT_EQ(evs[0].element, env.qp->qpn());
  env.inject(req(env, op::kRcSendOnly, kPsn + 1), pattern(4, 1));
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.dev->counters()[Counter::kDropQpState], 1u);
}

TEST(ResponderNak, PsnSequenceErrorIsNakedOncePerGap) {
  ProtoEnv env;
  for (uint64_t i = 0; i < 8; ++i) ASSERT_EQ(env.post_recv(i * 64, 64, i), 0);
  for (uint32_t i = 2; i < 5; ++i) env.inject(req(env, op::kRcSendOnly, kPsn + i), pattern(4, 1));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "one NAK for the gap, the rest of the round dropped silently";
  expect_nak(f[0], AethKind::kNak, kNakSeq, kPsn, 0);
  EXPECT_TRUE(env.poll().empty());

  // The requester goes back to kPsn: the gap closes and execution resumes.
  for (uint32_t i = 0; i < 2; ++i) env.inject(req(env, op::kRcSendOnly, kPsn + i, i == 1), pattern(4, 1));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_nak(f[0], AethKind::kAck, 5, kPsn + 1, 2);  // six receive WQEs left: credit code 5 (6)
  EXPECT_EQ(env.poll().size(), 2u);

  // A new gap gets its own NAK.
  env.inject(req(env, op::kRcSendOnly, kPsn + 4), pattern(4, 1));
  env.inject(req(env, op::kRcSendOnly, kPsn + 5), pattern(4, 1));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_nak(f[0], AethKind::kNak, kNakSeq, kPsn + 2, 2);
  EXPECT_EQ(env.qp->state(), QpState::kRts);
  EXPECT_EQ(env.dev->counters()[Counter::kSeqNakSent], 2u);
}

TEST(ResponderNak, RnrNakWhenNoReceiveWqeCarriesMinRnrTimer) {
  ProtoOptions o;
  o.min_rnr_timer = 14;
  ProtoEnv env(o);
  env.inject(req(env, op::kRcSendOnly, kPsn), pattern(16, 1));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_nak(f[0], AethKind::kRnrNak, 14, kPsn, 0);
  EXPECT_EQ(env.qp->state(), QpState::kRts) << "RNR is not an error";
  EXPECT_TRUE(env.events().empty());

  // The retried request executes once a receive is posted.
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  env.inject(req(env, op::kRcSendOnly, kPsn), pattern(16, 1));
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_nak(f[0], AethKind::kAck, 0, kPsn, 1);
  ASSERT_EQ(env.poll().size(), 1u);
  EXPECT_EQ(env.bytes(0, 16), pattern(16, 1));
}

TEST(ResponderNak, RnrNakOnWriteWithImmediate) {
  ProtoEnv env;
  PacketHeaders h = req(env, op::kRcWriteOnlyImm, kPsn);
  h.reth = {env.addr(0), env.mr->rkey, 8};
  env.inject(h, pattern(8, 1));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_nak(f[0], AethKind::kRnrNak, env.opt.min_rnr_timer, kPsn, 0);
}

// Remote access errors: each case is one request the responder must refuse with NAK code 2.
enum class Access {
  kWriteBadRkey,
  kWriteOutOfBounds,
  kWriteMrNoRemoteWrite,
  kWriteQpNoRemoteWrite,
  kWriteOtherPd,
  kReadBadRkey,
  kReadOutOfBounds,
  kReadMrNoRemoteRead,
  kReadQpNoRemoteRead,
  kAtomicBadRkey,
  kAtomicOutOfBounds,
  kAtomicMrNoAtomic,
  kAtomicQpNoAtomic,
};

class ResponderAccessNak : public ::testing::TestWithParam<Access> {};

TEST_P(ResponderAccessNak, NaksRemoteAccessErrorAndEndsTheQp) {
  ProtoEnv env;
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  const size_t n = env.opt.mem_bytes;
  Mr* ro = nullptr;  // remote read only
  Mr* wo = nullptr;  // remote write only
  Pd* other = nullptr;
  Mr* foreign = nullptr;
  ASSERT_EQ(env.dev->reg_mr(env.pd, env.at(0), 4096, kAccessRemoteRead, &ro), 0);
  ASSERT_EQ(env.dev->reg_mr(env.pd, env.at(0), 4096, kAccessLocalWrite | kAccessRemoteWrite, &wo), 0);
  ASSERT_EQ(env.dev->alloc_pd(&other), 0);
  ASSERT_EQ(env.dev->reg_mr(other, env.at(0), 4096, kAccessLocalWrite | kAccessRemoteWrite, &foreign), 0);
  auto qp_access = [&env](uint32_t flags) {
    QpAttr a;
    a.qp_access_flags = flags;
    ASSERT_EQ(env.qp->modify(a, kQpAccessFlags), 0);
  };
  const uint32_t all = env.opt.access;
  const uint32_t good = env.mr->rkey, bad = 0xDEAD00;
  PacketHeaders w = req(env, op::kRcWriteOnly, kPsn);
  PacketHeaders r = req(env, op::kRcReadRequest, kPsn, false);
  PacketHeaders a = req(env, op::kRcFetchAdd, kPsn, false);
  PacketHeaders* h = &w;
  switch (GetParam()) {
    case Access::kWriteBadRkey:
      w.reth = {env.addr(0), bad, 8};
      break;
    case Access::kWriteOutOfBounds:
      w.reth = {env.addr(n - 4), good, 8};
      break;
    case Access::kWriteMrNoRemoteWrite:
      w.reth = {env.addr(0), ro->rkey, 8};
      break;
    case Access::kWriteQpNoRemoteWrite:
      w.reth = {env.addr(0), good, 8};
      qp_access(all & ~kAccessRemoteWrite);
      break;
    case Access::kWriteOtherPd:
      w.reth = {env.addr(0), foreign->rkey, 8};
      break;
    case Access::kReadBadRkey:
      r.reth = {env.addr(0), bad, 8};
      h = &r;
      break;
    case Access::kReadOutOfBounds:
      r.reth = {env.addr(n - 100), good, 200};
      h = &r;
      break;
    case Access::kReadMrNoRemoteRead:
      r.reth = {env.addr(0), wo->rkey, 8};
      h = &r;
      break;
    case Access::kReadQpNoRemoteRead:
      r.reth = {env.addr(0), good, 8};
      qp_access(all & ~kAccessRemoteRead);
      h = &r;
      break;
    case Access::kAtomicBadRkey:
      a.atomic = {env.addr(0), bad, 1, 0};
      h = &a;
      break;
    case Access::kAtomicOutOfBounds:
      a.atomic = {env.addr(n), good, 1, 0};
      h = &a;
      break;
    case Access::kAtomicMrNoAtomic:
      a.atomic = {env.addr(0), wo->rkey, 1, 0};
      h = &a;
      break;
    case Access::kAtomicQpNoAtomic:
      a.atomic = {env.addr(0), good, 1, 0};
      qp_access(all & ~kAccessRemoteAtomic);
      h = &a;
      break;
  }
  env.set_u64(0, 0);
  const std::vector<uint8_t> data = h == &w ? pattern(8, 1) : std::vector<uint8_t>{};
  env.inject(*h, data);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_nak(f[0], AethKind::kNak, kNakRemAccess, kPsn, 0);
  EXPECT_EQ(env.u64(0), 0u) << "nothing was written";
  EXPECT_EQ(env.dev->counters()[Counter::kRemAccessNakSent], 1u);
  // The posted receive is flushed as the QP enters ERR.
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kWrFlushErr);
  expect_dead(env, EventType::kQpAccessErr);
}

INSTANTIATE_TEST_SUITE_P(Cases, ResponderAccessNak,
                         ::testing::Values(Access::kWriteBadRkey, Access::kWriteOutOfBounds,
                                           Access::kWriteMrNoRemoteWrite, Access::kWriteQpNoRemoteWrite,
                                           Access::kWriteOtherPd, Access::kReadBadRkey,
                                           Access::kReadOutOfBounds, Access::kReadMrNoRemoteRead,
                                           Access::kReadQpNoRemoteRead, Access::kAtomicBadRkey,
                                           Access::kAtomicOutOfBounds, Access::kAtomicMrNoAtomic,
                                           Access::kAtomicQpNoAtomic));

TEST(ResponderNak, ReceiveWqeWithBadLkeyIsARemoteOperationalError) {
  ProtoEnv env;
  const Sge s{env.addr(0), 64, 0xDEAD00};
  ASSERT_EQ(env.qp->post_recv(RecvWr{1, &s, 1}), 0);
  ASSERT_EQ(env.post_recv(64, 64, 2), 0);
  env.inject(req(env, op::kRcSendOnly, kPsn), pattern(16, 1));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  expect_nak(f[0], AethKind::kNak, kNakRemOp, kPsn, 0);
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  expect_dead(env, EventType::kQpFatal);
}

}  // namespace
}  // namespace uroce
