// ATOMIC WRITE (IBA 1.5, RC): the requester sends opcode 0x1D with a RETH and exactly 8 payload bytes and
// completes on the ACK; the responder places the 8 bytes as one aligned 64-bit store, refuses bad keys,
// misaligned targets and lengths other than 8 with the NAKs Linux rxe sends, and acknowledges a duplicate
// without writing again, as for a WRITE.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

constexpr uint32_t kPsn = 0x500;  // the first PSN the responder expects (ProtoOptions::rq_psn)
constexpr uint8_t kNakInvReq = 1, kNakRemAccess = 2;
constexpr uint64_t kValue = 0x1122334455667788ull;

std::vector<uint8_t> le_bytes(uint64_t v) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

SendWr atomic_write(const Sge* s, uint32_t n, uint64_t raddr, uint32_t rkey, uint32_t flags = kSendSignaled) {
  SendWr wr;
  wr.wr_id = 42;
  wr.opcode = WrOpcode::kAtomicWrite;
  wr.sg_list = s;
  wr.num_sge = n;
  wr.send_flags = flags;
  wr.remote_addr = raddr;
  wr.rkey = rkey;
  return wr;
}

TEST(AtomicWriteRequester, EncodesOpcodeRethAndEightBytesAndCompletesOnTheAck) {
  ProtoEnv env;
  env.set_u64(64, kValue);
  const Sge s = env.sge(64, 8);
  ASSERT_EQ(env.qp->post_send(atomic_write(&s, 1, 0x7000'0000'1008ull, 0xABCD12)), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, RxDrop::kNone);
  EXPECT_EQ(f[0].opcode(), 0x1D);
  EXPECT_STREQ(op_name(f[0].opcode()), "RC_ATOMIC_WRITE");
  EXPECT_EQ(f[0].psn(), env.opt.sq_psn);
  EXPECT_TRUE(f[0].h.bth.ackreq);
  EXPECT_TRUE(f[0].has(kHasReth));
  EXPECT_FALSE(f[0].has(kHasAtomicEth));
  EXPECT_EQ(f[0].h.reth.va, 0x7000'0000'1008ull);
  EXPECT_EQ(f[0].h.reth.rkey, 0xABCD12u);
  EXPECT_EQ(f[0].h.reth.dma_len, 8u);
  EXPECT_EQ(f[0].payload, le_bytes(kValue));
  EXPECT_EQ(op_info(f[0].opcode()).hdr_len, 12 + 16) << "BTH and RETH, then the 8 bytes";
  EXPECT_TRUE(env.poll().empty()) << "RC completes on the ACK";

  env.inject_ack(env.opt.sq_psn);
  EXPECT_TRUE(env.run().empty());
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kAtomicWrite);
  EXPECT_EQ(wc[0].byte_len, 8u);
  EXPECT_EQ(wc[0].wr_id, 42u);
}

TEST(AtomicWriteRequester, InlineAndSplitSourcesAndWhatIsRefused) {
  ProtoOptions o;
  o.max_inline = 0;  // the 8 bytes travel in the WQE: no inline buffer is needed
  ProtoEnv env(o);
  const uint64_t v = 0xCAFEF00DDEADBEEFull;
  uint8_t local[8];
  std::memcpy(local, &v, 8);
  const Sge in{reinterpret_cast<uint64_t>(local), 8, 0};
  ASSERT_EQ(env.qp->post_send(atomic_write(&in, 1, 0x1000, 7, kSendSignaled | kSendInline)), 0);
  std::memset(local, 0, 8);  // inline data is taken at post time
  // Two SGEs of 4 bytes each make one 8-byte value.
  env.set_u64(0, kValue);
  const Sge two[2] = {env.sge(0, 4), env.sge(4, 4)};
  ASSERT_EQ(env.qp->post_send(atomic_write(two, 2, 0x2000, 7)), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].payload, le_bytes(v));
  EXPECT_EQ(f[1].payload, le_bytes(kValue));
  EXPECT_EQ(f[1].psn(), env.opt.sq_psn + 1);

  const Sge four = env.sge(0, 4), sixteen = env.sge(0, 16);
  EXPECT_EQ(env.qp->post_send(atomic_write(&four, 1, 0x1000, 7)), EINVAL);
  EXPECT_EQ(env.qp->post_send(atomic_write(&sixteen, 1, 0x1000, 7)), EINVAL);
  EXPECT_EQ(env.qp->post_send(atomic_write(nullptr, 0, 0x1000, 7)), EINVAL);
}

TEST(AtomicWriteRequester, OnlyRcQpsMayPostIt) {
  for (QpType t : {QpType::kUc, QpType::kUd}) {
    ProtoOptions o;
    o.type = t;
    ProtoEnv env(o);
    const Sge s = env.sge(0, 8);
    SendWr wr = atomic_write(&s, 1, 0x1000, 7);
    AddressVector av;
    if (t == QpType::kUd) wr.ah = &av;
    EXPECT_EQ(env.qp->post_send(wr), EINVAL) << static_cast<int>(t);
  }
}

TEST(AtomicWriteRequester, RetransmitsTheSameValueAfterTheAckTimeout) {
  ProtoEnv env;
  env.set_u64(0, kValue);
  const Sge s = env.sge(0, 8);
  ASSERT_EQ(env.qp->post_send(atomic_write(&s, 1, 0x1000, 7)), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.set_u64(0, 0);  // the source changes after the request started: the retry still carries the value
  const std::vector<Emitted> again = env.next();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].opcode(), 0x1D);
  EXPECT_EQ(again[0].psn(), env.opt.sq_psn);
  EXPECT_EQ(again[0].payload, le_bytes(kValue));
  env.inject_ack(env.opt.sq_psn);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

PacketHeaders aw_req(const ProtoEnv& env, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t dma_len = 8) {
  PacketHeaders h = env.peer_headers(op::kRcAtomicWrite, psn);
  h.bth.ackreq = true;
  h.reth = {va, rkey, dma_len};
  return h;
}

TEST(AtomicWriteResponder, StoresTheValueAndAcks) {
  ProtoEnv env;
  env.set_u64(16, 0);
  env.inject(aw_req(env, kPsn, env.addr(16), env.mr->rkey), le_bytes(kValue));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(f[0].msn(), 1u);
  EXPECT_EQ(env.u64(16), kValue);
  EXPECT_EQ(env.u64(8), 0u);
  EXPECT_EQ(env.u64(24), 0u);
  EXPECT_TRUE(env.poll().empty()) << "no receive completion";
  EXPECT_EQ(env.qp->state(), QpState::kRts);
}

TEST(AtomicWriteResponder, ADuplicateIsAckedAndNotWrittenAgain) {
  ProtoEnv env;
  env.inject(aw_req(env, kPsn, env.addr(16), env.mr->rkey), le_bytes(kValue));
  ASSERT_EQ(env.run().size(), 1u);
  ASSERT_EQ(env.u64(16), kValue);
  env.set_u64(16, 5);  // a local store after the remote one: a replay must not undo it
  env.inject(aw_req(env, kPsn, env.addr(16), env.mr->rkey), le_bytes(kValue));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(f[0].msn(), 1u);
  EXPECT_EQ(env.u64(16), 5u);
  EXPECT_EQ(env.dev->counters()[Counter::kDuplicateRequest], 1u);
}

enum class Bad { kRkey, kOutOfBounds, kMrNoRemoteWrite, kQpNoRemoteWrite, kMisaligned, kDmaLen16, kPayload4 };

class AtomicWriteNak : public ::testing::TestWithParam<Bad> {};

TEST_P(AtomicWriteNak, RefusesTheRequestAndEndsTheQp) {
  ProtoEnv env;
  Mr* ro = nullptr;
  ASSERT_EQ(env.dev->reg_mr(env.pd, env.at(0), 4096,
                            kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteAtomic, &ro),
            0);
  uint64_t va = env.addr(16);
  uint32_t rkey = env.mr->rkey, dma_len = 8;
  std::vector<uint8_t> payload = le_bytes(kValue);
  uint8_t nak = kNakRemAccess;
  EventType ev = EventType::kQpAccessErr;
  switch (GetParam()) {
    case Bad::kRkey:
      rkey = 0xDEAD00;
      break;
    case Bad::kOutOfBounds:
      va = env.addr(env.opt.mem_bytes - 4);
      break;
    case Bad::kMrNoRemoteWrite:
      rkey = ro->rkey;
      break;
    case Bad::kQpNoRemoteWrite: {
      // Remote atomics alone do not allow it: ATOMIC WRITE needs remote write access, as in Linux rxe.
      QpAttr a;
      a.qp_access_flags = kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteAtomic;
      ASSERT_EQ(env.qp->modify(a, kQpAccessFlags), 0);
      break;
    }
    case Bad::kMisaligned:
      va = env.addr(20);
      nak = kNakInvReq;
      ev = EventType::kQpReqErr;
      break;
    case Bad::kDmaLen16:
      dma_len = 16;
      payload = pattern(16, 3);
      nak = kNakInvReq;
      ev = EventType::kQpReqErr;
      break;
    case Bad::kPayload4:
      payload.resize(4);
      nak = kNakInvReq;
      ev = EventType::kQpReqErr;
      break;
  }
  env.set_u64(16, 0);
  env.set_u64(24, 0);
  env.inject(aw_req(env, kPsn, va, rkey, dma_len), payload);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kNak);
  EXPECT_EQ(f[0].aeth_value(), nak);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(env.u64(16), 0u) << "nothing written";
  EXPECT_EQ(env.u64(24), 0u) << "nothing written";
  EXPECT_EQ(env.qp->state(), QpState::kErr);
  const std::vector<AsyncEvent> evs = env.events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].type, ev);
}

std::string bad_name(const ::testing::TestParamInfo<Bad>& i) {
  static const char* const kNames[] = {"BadRkey",    "OutOfBounds", "MrNoRemoteWrite", "QpNoRemoteWrite",
                                       "Misaligned", "DmaLength16", "Payload4"};
  return kNames[static_cast<int>(i.param)];
}

INSTANTIATE_TEST_SUITE_P(AllCases, AtomicWriteNak,
                         ::testing::Values(Bad::kRkey, Bad::kOutOfBounds, Bad::kMrNoRemoteWrite,
                                           Bad::kQpNoRemoteWrite, Bad::kMisaligned, Bad::kDmaLen16,
                                           Bad::kPayload4),
                         bad_name);

TEST(AtomicWriteCompleter, RemoteErrorsCompleteTheWr) {
  for (const auto& [code, status] :
       {std::pair{kNakRemAccess, WcStatus::kRemAccessErr}, std::pair{kNakInvReq, WcStatus::kRemInvReqErr}}) {
    ProtoEnv env;
    const Sge s = env.sge(0, 8);
    ASSERT_EQ(env.qp->post_send(atomic_write(&s, 1, 0x1001, 7)), 0);
    ASSERT_EQ(env.run().size(), 1u);
    env.inject_ack(env.opt.sq_psn, AethKind::kNak, code);
    env.run();
    const std::vector<Wc> wc = env.poll();
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, status);
    EXPECT_EQ(wc[0].opcode, WcOpcode::kAtomicWrite);
  }
}

}  // namespace
}  // namespace uroce
