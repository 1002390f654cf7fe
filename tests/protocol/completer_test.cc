// Completer (IBA 9.7.5.2, 9.7.6): ACKs complete every request up to their PSN in posting order; READ
// responses and ATOMIC ACKs deliver data; a sequence-error NAK or an implicit NAK (an acknowledgement past
// an unanswered READ) makes the requester go back N; stale and ghost responses change nothing.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;

class Completer : public ::testing::Test {
 protected:
  Completer() { env.unlimited_credits(); }

  std::vector<uint32_t> psns(const std::vector<Emitted>& f) {
    std::vector<uint32_t> out;
    for (const Emitted& e : f) out.push_back(e.psn());
    return out;
  }

  ProtoEnv env;
  const uint32_t p = env.opt.sq_psn;
};

TEST_F(Completer, AcksCompleteInPostingOrderAndSkipUnsignaled) {
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kSend, 0, 8, 3, 0, 0, 0), 0);  // unsignaled
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, 4, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 4u);
  env.inject_ack(p + 1);
  env.run();
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kRdmaWrite);
  env.inject_ack(p + 3);
  env.run();
  wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 4u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST_F(Completer, ReadResponsesAreScatteredAndCompleteTheRead) {
  const Sge s[2] = {env.sge(8192, 1000), env.sge(12288, 1500)};
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = WrOpcode::kRdmaRead;
  wr.sg_list = s;
  wr.num_sge = 2;
  wr.send_flags = kSendSignaled;
  wr.remote_addr = 0x10000;
  wr.rkey = 5;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  ASSERT_EQ(env.run().size(), 1u);
  const std::vector<uint8_t> data = pattern(2500, 3);
  const std::span<const uint8_t> d(data);
  env.inject_read_resp(op::kRcReadRespFirst, p, d.subspan(0, 1024), 1);
  env.inject_read_resp(op::kRcReadRespMiddle, p + 1, d.subspan(1024, 1024));
  EXPECT_TRUE(env.run().empty());
  EXPECT_TRUE(env.poll().empty());
  env.inject_read_resp(op::kRcReadRespLast, p + 2, d.subspan(2048), 1);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wc[0].byte_len, 2500u);
  EXPECT_EQ(env.bytes(8192, 1000), std::vector<uint8_t>(data.begin(), data.begin() + 1000));
  EXPECT_EQ(env.bytes(12288, 1500), std::vector<uint8_t>(data.begin() + 1000, data.end()));
}

TEST_F(Completer, AtomicAckDeliversTheOriginalValue) {
  ASSERT_EQ(env.post(WrOpcode::kAtomicFetchAndAdd, 64, 8, 1, 0x2000, 3), 0);
  ASSERT_EQ(env.post(WrOpcode::kAtomicCmpAndSwp, 72, 8, 2, 0x2000, 3), 0);
  ASSERT_EQ(env.run().size(), 2u);
  env.inject_atomic_ack(p, 0x1122334455667788ull, 1);
  env.inject_atomic_ack(p + 1, 42, 2);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kFetchAdd);
  EXPECT_EQ(wc[0].byte_len, 8u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kCompSwap);
  EXPECT_EQ(env.u64(64), 0x1122334455667788ull);
  EXPECT_EQ(env.u64(72), 42u);
}

TEST_F(Completer, SequenceNakGoesBackToItsPsn) {
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 0, 8, i, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 3u);
  env.inject_ack(p + 1, AethKind::kNak, 0);  // PSN sequence error: p + 1 never arrived
  const std::vector<Emitted> f = env.run();
  EXPECT_EQ(psns(f), (std::vector<uint32_t>{p + 1, p + 2}));
  EXPECT_EQ(env.dev->counters()[Counter::kRetransmits], 2u);
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u) << "the NAK acknowledges what precedes its PSN";
  EXPECT_EQ(wc[0].wr_id, 0u);
  env.inject_ack(p + 2);
  env.run();
  EXPECT_EQ(env.poll().size(), 2u);
  EXPECT_EQ(env.qp->state(), QpState::kRts);
}

TEST_F(Completer, AckPastAnUnansweredReadAsksForTheReadAgain) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 100, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.post(WrOpcode::kRdmaWrite, 128, 8, 2, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 2u);
  env.inject_ack(p + 1);  // the READ response at p was lost
  std::vector<Emitted> f = env.run();
  ASSERT_GE(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRequest);
  EXPECT_EQ(f[0].psn(), p);
  EXPECT_TRUE(env.poll().empty()) << "nothing completes past the missing READ response";
  env.inject_read_resp(op::kRcReadRespOnly, p, pattern(100, 4), 1);
  env.inject_ack(p + 1);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(env.bytes(0, 100), pattern(100, 4));
}

TEST_F(Completer, GhostStaleAndMalformedResponsesChangeNothing) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 2000, 1, 0x1000, 1), 0);
  ASSERT_EQ(env.run().size(), 1u);
  env.inject_ack(p + 5);                                            // a PSN never sent
  env.inject_read_resp(op::kRcReadRespOnly, p, pattern(1000, 1));   // ONLY for a 2-packet READ
  env.inject_read_resp(op::kRcReadRespFirst, p, pattern(1000, 1));  // FIRST shorter than the MTU
  EXPECT_TRUE(env.run().empty());
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(env.dev->counters()[Counter::kGhostResponse], 1u);
  EXPECT_EQ(env.dev->counters()[Counter::kDropMalformed], 2u);
  // A response to a READ already completed is stale.
  env.inject_read_resp(op::kRcReadRespFirst, p, pattern(1024, 1));
  env.inject_read_resp(op::kRcReadRespLast, p + 1, pattern(976, 1));
  env.run();
  ASSERT_EQ(env.poll().size(), 1u);
  env.inject_read_resp(op::kRcReadRespLast, p + 1, pattern(976, 2));
  EXPECT_TRUE(env.run().empty());
  EXPECT_EQ(env.dev->counters()[Counter::kDuplicateResponse], 1u);
  EXPECT_EQ(env.bytes(1024, 976), pattern(976, 1));
  EXPECT_EQ(env.qp->state(), QpState::kRts);
}

// A READ answered while an older one is still missing is done, but it has not retired: the responder keeps
// one saved resource per outstanding READ/ATOMIC (max_dest_rd_atomic of them, reused in turn), and the
// older READ may still be asked again. So a newer READ may not go out until the older ones complete in
// order; otherwise its resource would replace the older READ's and every retry of that would be dropped,
// ending in RETRY_EXC_ERR with the responder holding all the data.
TEST(CompleterRdAtomic, ANewReadWaitsUntilAnAnsweredOneRetiresInOrder) {
  test::ProtoOptions o;
  o.max_rd_atomic = 2;
  ProtoEnv env(o);
  env.unlimited_credits();
  const uint32_t p = env.opt.sq_psn;
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 2048, 1, 0x10000, 5), 0);  // A: PSNs p, p+1
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 4096, 8, 2, 0x20000, 5), 0);  // B: p+2
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 8192, 8, 3, 0x30000, 5), 0);  // C: p+3, over the limit of 2
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  // B is answered; A's responses were lost.
  const std::vector<uint8_t> data = pattern(8, 1);
  env.inject_read_resp(op::kRcReadRespOnly, p + 2, data, 1);
  f = env.run();
  for (const Emitted& e : f)
    EXPECT_NE(e.psn(), p + 3)
        << "C went out while A (answered later, in order) still held a responder resource";
  // A is answered now (re-asked or not): A and B complete, then C goes out.
  const std::vector<uint8_t> a = pattern(2048, 2);
  const std::span<const uint8_t> ad(a);
  env.inject_read_resp(op::kRcReadRespFirst, p, ad.subspan(0, 1024), 1);
  env.inject_read_resp(op::kRcReadRespLast, p + 1, ad.subspan(1024), 1);
  f = env.run();
  bool c_sent = false;
  for (const Emitted& e : f) c_sent = c_sent || (e.psn() == p + 3 && e.opcode() == op::kRcReadRequest);
  EXPECT_TRUE(c_sent) << "C never went out after A and B completed";
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[1].wr_id, 2u);
}

// The local ACK timeout re-sends a READ from its first missing packet while the responder is still sending
// the original stream (it was slow, not lost): the rest of that stream (MIDDLE, LAST) is accepted, since a
// responder need not answer a duplicate READ its running stream will cover anyway.
TEST_F(Completer, AReadReSentWhileItsFirstStreamIsStillComingTakesThatStream) {
  ASSERT_EQ(env.post(WrOpcode::kRdmaRead, 0, 2500, 7, 0x10000, 5), 0);  // 3 packets: p, p+1, p+2
  ASSERT_EQ(env.run().size(), 1u);
  const std::vector<uint8_t> data = pattern(2500, 4);
  const std::span<const uint8_t> d(data);
  env.inject_read_resp(op::kRcReadRespFirst, p, d.subspan(0, 1024), 1);
  env.run();
  // No more responses for a local ACK timeout: the READ is asked again from packet 1.
  const std::vector<Emitted> again = env.next();
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again[0].opcode(), op::kRcReadRequest);
  EXPECT_EQ(again[0].psn(), p + 1);
  // The original stream goes on.
  env.inject_read_resp(op::kRcReadRespMiddle, p + 1, d.subspan(1024, 1024));
  env.inject_read_resp(op::kRcReadRespLast, p + 2, d.subspan(2048), 1);
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(env.bytes(0, 2500), data);
}

}  // namespace
}  // namespace uroce
