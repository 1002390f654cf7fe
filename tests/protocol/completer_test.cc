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

}  // namespace
}  // namespace uroce
