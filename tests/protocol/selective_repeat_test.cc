// Selective repeat, with the test playing the remote peer. Responder: requests ahead of a gap are held, the
// NAK names what is held (op::kUroceSrNak, only to a requester that marks its requests), the held packets
// execute in PSN order once the gap fills, and a go-back-N requester's re-sends of them are duplicates.
// Requester: an SR NAK makes it re-send only what the bitmap lacks, a plain NAK makes it go back N.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"
#include "transport/params.h"
#include "transport/psn.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

constexpr uint32_t kPsn = 0x500;  // the PSN our responder expects first (ProtoOptions::rq_psn)

ProtoOptions sr_options() {
  ProtoOptions o;
  o.selective_repeat = true;
  return o;
}

// A SEND ONLY of 4 bytes at `psn` from a requester that does (`sr`) or does not read SR NAKs.
void send_only(ProtoEnv& env, uint32_t psn, bool sr, bool ackreq = true) {
  PacketHeaders h = env.peer_headers(op::kRcSendOnly, psn);
  h.bth.ackreq = ackreq;
  if (sr) h.bth.resv7 = kBthResv7SelectiveRepeat;
  env.inject(h, pattern(4, static_cast<uint8_t>(psn)));
}

bool bit(const Emitted& f, uint32_t i) { return (f.payload[i / 8] >> (i % 8)) & 1; }

uint32_t highest(const Emitted& f) {
  uint32_t v = 0;
  for (uint32_t i = 0; i < 4; ++i) v = v << 8 | f.payload[kSrNakBitmapBytes + i];
  return v & 0xFFFFFF;
}

TEST(SelectiveRepeatResponder, HoldsPacketsAheadOfAGapNaksWithTheBitmapAndReleasesThemInOrder) {
  ProtoEnv env(sr_options());
  ASSERT_TRUE(env.qp->selective_repeat());
  for (uint64_t i = 0; i < 8; ++i) ASSERT_EQ(env.post_recv(i * 64, 64, i), 0);
  // kPsn is lost; kPsn+1, +2 and +4 arrive (+3 is lost too).
  for (uint32_t d : {1u, 2u, 4u}) send_only(env, kPsn + d, true);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "one NAK for the gap";
  EXPECT_EQ(f[0].verdict, RxDrop::kNone);
  EXPECT_EQ(f[0].opcode(), op::kUroceSrNak);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kNak);
  EXPECT_EQ(f[0].aeth_value(), kNakPsnSeq);
  EXPECT_EQ(f[0].psn(), kPsn);
  ASSERT_EQ(f[0].payload.size(), kSrNakPayloadBytes);
  // Built when it leaves: it shows everything held by then.
  EXPECT_FALSE(bit(f[0], 0));
  EXPECT_TRUE(bit(f[0], 1));
  EXPECT_TRUE(bit(f[0], 2));
  EXPECT_FALSE(bit(f[0], 3));
  EXPECT_TRUE(bit(f[0], 4));
  EXPECT_EQ(highest(f[0]), kPsn + 4);
  EXPECT_EQ(env.dev->counters()[Counter::kSrHeld], 3u);
  EXPECT_TRUE(env.poll().empty()) << "nothing executes before the gap fills";

  // A copy of a held packet is a duplicate, not held again. Its PSN falls back below the latest one ahead,
  // which (as without selective repeat) means the requester's re-sending has begun: the gap is NAKed again.
  send_only(env, kPsn + 2, true);
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kUroceSrNak);
  EXPECT_EQ(f[0].psn(), kPsn);
  EXPECT_EQ(env.dev->counters()[Counter::kSrHeld], 3u);
  EXPECT_EQ(env.dev->counters()[Counter::kDuplicateRequest], 1u);

  // The re-sent kPsn fills the gap: it and the held kPsn+1, +2 execute in order; +3 is still missing, so
  // the new gap gets its NAK, whose bitmap shows +4 held and everything before +3 arrived.
  send_only(env, kPsn, true);
  f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f[0].psn(), kPsn + 2);
  EXPECT_EQ(f[1].opcode(), op::kUroceSrNak);
  EXPECT_EQ(f[1].psn(), kPsn + 3);
  EXPECT_FALSE(bit(f[1], 0));
  EXPECT_TRUE(bit(f[1], 1));
  for (uint32_t i = 2; i < kSrNakBitmapBytes * 8; ++i) EXPECT_FALSE(bit(f[1], i)) << i;
  EXPECT_EQ(highest(f[1]), kPsn + 4);
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(wc[i].wr_id, i) << "receive WQEs consumed in PSN order";
    EXPECT_EQ(env.bytes(i * 64, 4), pattern(4, static_cast<uint8_t>(kPsn + i)));
  }

  send_only(env, kPsn + 3, true);
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck);
  EXPECT_EQ(f[0].psn(), kPsn + 4);
  wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 3u);
  EXPECT_EQ(wc[1].wr_id, 4u);
  EXPECT_EQ(env.bytes(4 * 64, 4), pattern(4, static_cast<uint8_t>(kPsn + 4)));
  EXPECT_EQ(env.dev->counters()[Counter::kSrReleased], 3u);
  EXPECT_EQ(env.dev->counters()[Counter::kSrNakSent], 3u);
}

TEST(SelectiveRepeatResponder, AGoBackNRequesterGetsPlainNaksAndItsResendsOfHeldPacketsAreDuplicates) {
  ProtoEnv env(sr_options());
  for (uint64_t i = 0; i < 8; ++i) ASSERT_EQ(env.post_recv(i * 64, 64, i), 0);
  for (uint32_t d : {1u, 2u}) send_only(env, kPsn + d, false);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck) << "a standard NAK: this requester does not mark its requests";
  EXPECT_EQ(f[0].aeth_kind(), AethKind::kNak);
  EXPECT_EQ(f[0].psn(), kPsn);
  // It goes back N: kPsn, then kPsn+1 and +2 again, which executed from the reorder buffer already.
  for (uint32_t d = 0; d < 3; ++d) send_only(env, kPsn + d, false);
  f = env.run();
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.back().opcode(), op::kRcAck);
  EXPECT_EQ(f.back().aeth_kind(), AethKind::kAck);
  EXPECT_EQ(f.back().psn(), kPsn + 2);
  EXPECT_EQ(env.poll().size(), 3u) << "each message completes once";
  EXPECT_EQ(env.dev->counters()[Counter::kDuplicateRequest], 2u);
  EXPECT_EQ(env.dev->counters()[Counter::kSrNakSent], 0u);
}

TEST(SelectiveRepeatResponder, BeyondTheWindowIsDroppedAndOffByDefault) {
  ProtoEnv env(sr_options());
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(env.post_recv(i * 64, 64, i), 0);
  send_only(env, kPsn + params::kSrWindow, true);
  EXPECT_EQ(env.run().size(), 1u);  // NAK
  EXPECT_EQ(env.dev->counters()[Counter::kSrHeld], 0u);

  EXPECT_FALSE(DeviceConfig{}.selective_repeat) << "off unless asked for";
  ProtoEnv plain;
  EXPECT_FALSE(plain.qp->selective_repeat());
  send_only(plain, kPsn + 1, true);
  const std::vector<Emitted> f = plain.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAck) << "without selective repeat the NAK is the standard one";
  EXPECT_EQ(plain.dev->counters()[Counter::kSrHeld], 0u);
}

// The requester side: our QP sends six 1-packet WRITEs; the peer's NAK says which arrived.
struct SrRequesterEnv {
  explicit SrRequesterEnv(bool sr)
      : env([sr] {
          ProtoOptions o;
          o.selective_repeat = sr;
          return o;
        }()) {
    env.unlimited_credits();
    for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(env.post(WrOpcode::kRdmaWrite, i * 64, 64, i, 0x1000, 7), 0);
    sent = env.run();
  }
  ProtoEnv env;
  std::vector<Emitted> sent;
};

void inject_sr_nak(ProtoEnv& env, uint32_t psn, std::initializer_list<uint32_t> held, uint32_t top) {
  PacketHeaders h = env.peer_headers(op::kUroceSrNak, psn);
  h.aeth.syndrome = aeth_syndrome(AethKind::kNak, kNakPsnSeq);
  std::vector<uint8_t> body(kSrNakPayloadBytes, 0);
  for (uint32_t i : held) body[i / 8] = static_cast<uint8_t>(body[i / 8] | (1u << (i % 8)));
  for (uint32_t i = 0; i < 4; ++i) body[kSrNakBitmapBytes + i] = static_cast<uint8_t>(top >> (24 - 8 * i));
  env.inject(h, body);
}

TEST(SelectiveRepeatRequester, ResendsOnlyWhatTheBitmapLacksThenCompletesEverything) {
  SrRequesterEnv t(true);
  ProtoEnv& env = t.env;
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(t.sent.size(), 6u);
  for (const Emitted& f : t.sent) EXPECT_EQ(f.h.bth.resv7, kBthResv7SelectiveRepeat) << "marks its requests";
  // p+1 and p+4 were lost; the peer holds p+2, p+3 and p+5 (it has p, acknowledged by the NAK).
  inject_sr_nak(env, psn_add(p, 1), {1, 2, 4}, psn_add(p, 5));
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u) << "the two missing packets only";
  EXPECT_EQ(f[0].psn(), psn_add(p, 1));
  EXPECT_EQ(f[1].psn(), psn_add(p, 4));
  EXPECT_EQ(env.dev->counters()[Counter::kSrRetransmits], 2u);
  ASSERT_EQ(env.poll().size(), 1u) << "the WRITE before the gap completes";
  env.inject_ack(psn_add(p, 5));
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.poll().size(), 5u);
}

TEST(SelectiveRepeatRequester, APlainNakFromAGoBackNResponderGoesBackN) {
  SrRequesterEnv t(true);
  ProtoEnv& env = t.env;
  const uint32_t p = env.opt.sq_psn;
  env.inject_ack(psn_add(p, 1), AethKind::kNak, kNakPsnSeq);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 5u) << "everything from the NAKed PSN on";
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(f[i].psn(), psn_add(p, 1 + i));
  EXPECT_EQ(env.dev->counters()[Counter::kSrRetransmits], 0u);
}

TEST(SelectiveRepeatRequester, OffItNeitherMarksItsRequestsNorProbes) {
  SrRequesterEnv t(false);
  ASSERT_EQ(t.sent.size(), 6u);
  for (const Emitted& f : t.sent) EXPECT_EQ(f.h.bth.resv7, 0);
  EXPECT_EQ(t.env.qp->set_selective_repeat(true), EINVAL) << "settable in RESET only";
  // Nothing is acknowledged: the first retransmission is the local ACK timeout's go-back-N (~67 ms).
  const std::vector<Emitted> f = t.env.next();
  ASSERT_EQ(f.size(), 6u);
  EXPECT_GE(t.env.now(), 60'000'000u);
}

TEST(SelectiveRepeatRequester, WithoutANakTheProbeResendsTheOldestPacketAlone) {
  SrRequesterEnv t(true);
  ProtoEnv& env = t.env;
  const std::vector<Emitted> f = env.next();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), env.opt.sq_psn);
  EXPECT_LT(env.now(), 1'000'000u) << "long before the local ACK timeout";
}

}  // namespace
}  // namespace uroce
