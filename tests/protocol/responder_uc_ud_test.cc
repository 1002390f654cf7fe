// Responder, UC and UD: no acknowledgements ever; UC drops a message that lost a packet or cannot be
// executed (IBA 9.8.3), UD checks the Q_Key and delivers the GRH in front of the data (IBA 11.4.1.1).
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

ProtoOptions with_type(QpType t) {
  ProtoOptions o;
  o.type = t;
  o.mem_bytes = 16384;
  return o;
}

constexpr uint32_t kPsn = 0x500;

TEST(ResponderUc, SendAndWriteAreExecutedWithoutAcks) {
  ProtoEnv env(with_type(QpType::kUc));
  ASSERT_EQ(env.post_recv(0, 2048, 1), 0);
  ASSERT_EQ(env.post_recv(2048, 64, 2), 0);
  const std::vector<uint8_t> data = pattern(1100, 1);
  const std::span<const uint8_t> d(data);
  env.inject(env.peer_headers(op::kUcSendFirst, kPsn), d.subspan(0, 1024));
  env.inject(env.peer_headers(op::kUcSendLast, kPsn + 1), d.subspan(1024));
  PacketHeaders w = env.peer_headers(op::kUcWriteOnlyImm, kPsn + 2);
  w.reth = {env.addr(8192), env.mr->rkey, 100};
  w.imm_be = 0x99;
  env.inject(w, d.subspan(0, 100));
  EXPECT_TRUE(env.run().empty()) << "UC never acknowledges";
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].byte_len, 1100u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(wc[1].imm_data_be, 0x99u);
  EXPECT_EQ(env.bytes(0, 1100), data);
  EXPECT_EQ(env.bytes(8192, 100), env.bytes(0, 100));
}

TEST(ResponderUc, AMessageThatLostAPacketIsDroppedAndItsWqeReused) {
  ProtoEnv env(with_type(QpType::kUc));
  ASSERT_EQ(env.post_recv(0, 4096, 1), 0);
  const std::vector<uint8_t> data = pattern(1024, 2);
  env.inject(env.peer_headers(op::kUcSendFirst, kPsn), data);
  env.inject(env.peer_headers(op::kUcSendLast, kPsn + 2), pattern(10, 3));  // kPsn + 1 was lost
  EXPECT_TRUE(env.run().empty());
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(env.dev->counters()[Counter::kDropUcMessage], 1u);
  env.inject(env.peer_headers(op::kUcSendOnly, kPsn + 3), pattern(50, 4));
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].byte_len, 50u);
  EXPECT_EQ(env.bytes(0, 50), pattern(50, 4));
  EXPECT_EQ(env.qp->state(), QpState::kRts);
}

TEST(ResponderUc, NoReceiveWqeOrBadRkeyDropsTheMessageSilently) {
  ProtoEnv env(with_type(QpType::kUc));
  env.inject(env.peer_headers(op::kUcSendOnly, kPsn), pattern(8, 1));
  PacketHeaders w = env.peer_headers(op::kUcWriteOnly, kPsn + 1);
  w.reth = {env.addr(0), env.mr->rkey + 1, 8};
  env.inject(w, pattern(8, 1));
  EXPECT_TRUE(env.run().empty()) << "no RNR NAK and no NAK on UC";
  EXPECT_EQ(env.qp->state(), QpState::kRts);
  EXPECT_EQ(env.dev->counters()[Counter::kDropUcMessage], 2u);
  ASSERT_EQ(env.post_recv(0, 64, 1), 0);
  env.inject(env.peer_headers(op::kUcSendOnly, kPsn + 2), pattern(8, 2));
  env.run();
  EXPECT_EQ(env.poll().size(), 1u);
}

TEST(ResponderUd, DeliversTheGrhSourceQpAndImmediate) {
  ProtoEnv env(with_type(QpType::kUd));
  ASSERT_EQ(env.post_recv(0, 1024, 1), 0);
  ASSERT_EQ(env.post_recv(1024, 1024, 2), 0);
  const std::vector<uint8_t> data = pattern(200, 5);
  env.inject(env.peer_headers(op::kUdSendOnly, 7), data);
  PacketHeaders h = env.peer_headers(op::kUdSendOnlyImm, 8);
  h.imm_be = 0xA1B2C3D4;
  env.inject(h, data);
  EXPECT_TRUE(env.run().empty());
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].byte_len, 40u + 200u);
  EXPECT_EQ(wc[0].wc_flags, uint32_t{kWcGrh});
  EXPECT_EQ(wc[0].src_qp, env.opt.peer_qpn);
  EXPECT_EQ(wc[1].wc_flags, uint32_t{kWcGrh | kWcWithImm});
  EXPECT_EQ(wc[1].imm_data_be, 0xA1B2C3D4u);
  // RoCEv2 over IPv4: 20 zero bytes, then the IPv4 header, then the data.
  EXPECT_EQ(env.bytes(0, 20), std::vector<uint8_t>(20, 0));
  EXPECT_EQ(*env.at(20), 0x45);
  EXPECT_EQ(env.bytes(20 + 12, 4), (std::vector<uint8_t>{10, 0, 0, 2}));
  EXPECT_EQ(env.bytes(40, 200), data);
}

TEST(ResponderUd, WrongQkeyOrNoReceiveIsDropped) {
  ProtoEnv env(with_type(QpType::kUd));
  PacketHeaders h = env.peer_headers(op::kUdSendOnly, 0);
  h.deth.qkey = env.opt.qkey + 1;
  ASSERT_EQ(env.post_recv(0, 1024, 1), 0);
  env.inject(h, pattern(8, 1));
  env.run();
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(env.dev->counters()[Counter::kDropQkey], 1u);
  env.inject(env.peer_headers(op::kUdSendOnly, 1), pattern(8, 1));
  env.inject(env.peer_headers(op::kUdSendOnly, 2), pattern(8, 1));
  env.run();
  EXPECT_EQ(env.poll().size(), 1u);
  EXPECT_EQ(env.dev->counters()[Counter::kDropUdNoWqe], 1u);
}

TEST(ResponderUd, ReceiveBufferTooSmallCompletesWithLocalLengthError) {
  ProtoEnv env(with_type(QpType::kUd));
  ASSERT_EQ(env.post_recv(0, 100, 1), 0);  // 40 bytes of GRH + 60 of data
  env.inject(env.peer_headers(op::kUdSendOnly, 0), pattern(61, 1));
  EXPECT_TRUE(env.run().empty());
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(wc[0].wr_id, 1u);
}

}  // namespace
}  // namespace uroce
