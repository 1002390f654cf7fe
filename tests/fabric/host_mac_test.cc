// A host NIC's MAC (fabric/host_mac.h): PFC, PAUSE and link credits on an in-memory port, manual clock.
#include "fabric/host_mac.h"

#include <gtest/gtest.h>

#include "fabric/fabric.h"
#include "tests/support/fake_port.h"

namespace uroce::fabric {
namespace {

using test::FakePort;

constexpr std::array<uint8_t, 6> kA{0x02, 0, 0x7f, 1, 0, 1}, kB{0x02, 0, 0x7f, 1, 0, 2};
constexpr uint64_t kRate = kRealTimeLineRateBps;
constexpr uint64_t kMac = 0x02007f010001;
constexpr uint8_t kTosPrio3 = 0x68, kTosPrio0 = 0x00;

std::vector<uint8_t> pfc_frame(uint8_t enable, uint16_t quanta) {
  PfcFrame p;
  p.enable = enable;
  for (int i = 0; i < kPriorities; ++i)
    if (enable >> i & 1) p.quanta[i] = quanta;
  std::vector<uint8_t> f(kPfcFrameLen);
  f.resize(build_pfc(f.data(), 0x02007f010009, p));
  return f;
}

// Sends frames of `len` bytes (a length tells them apart) at the given TOS through the endpoint.
uint16_t send(HostMac& ep, FakePort& port, std::initializer_list<uint32_t> lens, uint8_t tos) {
  std::vector<PktBuf*> bufs(lens.size());
  EXPECT_EQ(port.alloc_burst(bufs.data(), static_cast<uint16_t>(bufs.size())), bufs.size());
  size_t i = 0;
  for (uint32_t len : lens) {
    const auto f = test::frame(kB, kA, len, 0, tos);
    std::memcpy(bufs[i]->data, f.data(), f.size());
    bufs[i++]->len = static_cast<uint16_t>(f.size());
  }
  const uint16_t k = ep.tx_burst(bufs.data(), static_cast<uint16_t>(bufs.size()));
  port.free_burst(bufs.data() + k, static_cast<uint16_t>(bufs.size() - k));
  return k;
}

// Receives whatever the port has; returns how many frames reached the caller (control frames do not).
uint16_t receive(HostMac& ep) {
  PktBuf* bufs[kBurst];
  const uint16_t k = ep.rx_burst(bufs, kBurst);
  ep.free_burst(bufs, k);
  return k;
}

std::vector<size_t> sent_lengths(const FakePort& p) {
  std::vector<size_t> v;
  for (const auto& f : p.sent) v.push_back(f.size());
  return v;
}

TEST(HostMac, WithoutPauseFramesGoStraightThrough) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac);
  EXPECT_EQ(send(ep, port, {100, 200}, kTosPrio3), 2);
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{100, 200}));
  EXPECT_EQ(ep.held_frames(), 0u);
  EXPECT_EQ(ep.next_deadline(), kNever);
}

TEST(HostMac, XoffHoldsOnlyItsPriorityAndXonReleasesInOrder) {
  FakePort port;
  ManualClock clock;
  clock.set(1000);
  HostMac ep(&port, &clock, kRate, kMac);
  port.inject(pfc_frame(1u << 3, 0xFFFF));
  EXPECT_EQ(receive(ep), 0);  // the MAC consumes it
  EXPECT_EQ(ep.counters().pfc_rx, 1u);
  EXPECT_TRUE(ep.paused(3));
  EXPECT_FALSE(ep.paused(0));

  EXPECT_EQ(send(ep, port, {101, 102, 103}, kTosPrio3), 3);  // accepted, held in the NIC
  EXPECT_EQ(send(ep, port, {64}, kTosPrio0), 1);             // another priority passes
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{64}));
  EXPECT_EQ(ep.held_frames(), 3u);
  EXPECT_EQ(ep.counters().tx_held, 3u);
  EXPECT_EQ(ep.next_deadline(), 1000 + pfc_quanta_ns(0xFFFF, kRate));

  clock.advance(5000);
  port.inject(pfc_frame(1u << 3, 0));  // XON
  EXPECT_EQ(receive(ep), 0);
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{64, 101, 102, 103}));
  EXPECT_EQ(ep.held_frames(), 0u);
  EXPECT_EQ(ep.queue_stats().paused_ns, 5000u);
  EXPECT_EQ(ep.next_deadline(), kNever);
}

TEST(HostMac, APauseEndsWhenItsQuantaRunOutAndARefreshExtendsIt) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac);
  const uint64_t t = pfc_quanta_ns(1000, kRate);  // 5.12 us at 100 Gb/s
  ASSERT_EQ(t, 5120u);
  port.inject(pfc_frame(1u << 3, 1000));
  receive(ep);
  send(ep, port, {300}, kTosPrio3);
  clock.set(t / 2);
  port.inject(pfc_frame(1u << 3, 1000));  // refresh: paused until t/2 + t
  receive(ep);
  clock.set(t + 1);
  EXPECT_EQ(ep.flush(), 0u);
  EXPECT_EQ(ep.next_deadline(), t / 2 + t);
  clock.set(t / 2 + t);
  EXPECT_EQ(ep.flush(), 1u);
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{300}));
}

TEST(HostMac, An8023xPauseStopsEveryPriority) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac);
  std::vector<uint8_t> pause(60, 0);
  const uint8_t hdr[] = {0x01, 0x80, 0xc2, 0,    0,    0x01, 0x02, 0,    0,
                         0,    0,    9,    0x88, 0x08, 0x00, 0x01, 0x01, 0x00};
  std::copy(std::begin(hdr), std::end(hdr), pause.begin());
  port.inject(pause);
  std::vector<uint8_t> other = pause;
  other[15] = 0x03;  // a MAC control opcode the NIC does not act on: dropped, counted
  port.inject(other);
  EXPECT_EQ(receive(ep), 0);
  EXPECT_EQ(ep.counters().pause_rx, 1u);
  EXPECT_EQ(ep.counters().mac_control_rx, 1u);
  EXPECT_EQ(send(ep, port, {100}, kTosPrio0), 1);
  EXPECT_EQ(send(ep, port, {200}, kTosPrio3), 1);
  EXPECT_TRUE(port.sent.empty());
  clock.set(pfc_quanta_ns(256, kRate));
  EXPECT_EQ(ep.flush(), 2u);
}

TEST(HostMac, AFullHoldQueueRefusesAndAFullPortIsRetried) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac, /*credit_link=*/true, /*hold_limit=*/4);
  port.inject(pfc_frame(0xFF, 0xFFFF));
  receive(ep);
  EXPECT_EQ(send(ep, port, {101, 102, 103, 104, 105, 106}, kTosPrio3), 4);
  EXPECT_EQ(ep.counters().tx_refused, 2u);
  port.tx_room = 1;  // the port takes one frame, then is full
  port.inject(pfc_frame(0xFF, 0));
  receive(ep);
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{101}));
  EXPECT_EQ(ep.held_frames(), 3u);
  EXPECT_EQ(ep.next_deadline(), clock.now_ns() + 10'000);
  port.tx_room = 100;
  EXPECT_EQ(ep.flush(), 3u);
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{101, 102, 103, 104}));
}

TEST(HostMac, HeldFramesGoHomeWhenItIsDestroyed) {
  FakePort port;
  ManualClock clock;
  {
    HostMac ep(&port, &clock, kRate, kMac);
    port.inject(pfc_frame(1u << 3, 0xFFFF));
    receive(ep);
    send(ep, port, {101, 102}, kTosPrio3);
    EXPECT_EQ(ep.held_frames(), 2u);
  }
  EXPECT_EQ(port.home(), port.total());
}

std::vector<uint8_t> credit_frame(uint8_t vl_mask, uint32_t fccl, uint32_t fctbs = 0) {
  CreditFrame c;
  c.vl_mask = vl_mask;
  for (int i = 0; i < kPriorities; ++i)
    if (vl_mask >> i & 1) {
      c.fccl[i] = fccl;
      c.fctbs[i] = fctbs;
    }
  std::vector<uint8_t> f(kCreditFrameLen);
  f.resize(build_credit(f.data(), 0x02007f010009, c));
  return f;
}

// The credit updates the MAC sent (and removes them from port.sent).
std::vector<CreditFrame> credits_sent(FakePort& port) {
  std::vector<CreditFrame> out;
  std::erase_if(port.sent, [&](const std::vector<uint8_t>& f) {
    CreditFrame c;
    if (!parse_credit(f.data(), static_cast<uint16_t>(f.size()), &c)) return false;
    out.push_back(c);
    return true;
  });
  return out;
}

TEST(CreditFrameTest, RoundTripsAndIsNotAPfcFrame) {
  const auto f = credit_frame(1u << 3, 0xFFFFFFF0u, 7);
  ASSERT_EQ(f.size(), kCreditFrameLen);
  EXPECT_EQ(f[0], 0x01);  // link-local group address: no bridge forwards it
  CreditFrame c;
  ASSERT_TRUE(parse_credit(f.data(), kCreditFrameLen, &c));
  EXPECT_EQ(c.vl_mask, 1u << 3);
  EXPECT_EQ(c.fccl[3], 0xFFFFFFF0u);
  EXPECT_EQ(c.fctbs[3], 7u);
  PfcFrame p;
  EXPECT_FALSE(parse_pfc(f.data(), kCreditFrameLen, &p));
  EXPECT_FALSE(parse_credit(f.data(), kCreditFrameLen - 1, &c));
  // Limits and counts wrap: credit is their signed difference.
  EXPECT_EQ(credit_left(5, 0xFFFFFFFEu), 7u);
  EXPECT_EQ(credit_left(0xFFFFFFFEu, 5), 0u);
}

TEST(HostMacCredits, BeginWithTheFirstUpdateAndLimitWhatLeaves) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac);
  EXPECT_EQ(send(ep, port, {256}, kTosPrio3), 1);  // no credit flow control until the link says so...
  EXPECT_FALSE(ep.credits_on());
  port.inject(credit_frame(1u << 3, 12));  // ...but counted: 4 of these 12 blocks are used
  EXPECT_EQ(receive(ep), 0);
  EXPECT_TRUE(ep.credits_on());
  EXPECT_EQ(ep.credits(3), 8u);
  // It answers with what it sent and grants: nothing received yet, plus its buffer.
  auto back = credits_sent(port);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].vl_mask, 1u << 3);
  EXPECT_EQ(back[0].fctbs[3], 4u);
  EXPECT_EQ(back[0].fccl[3], kHostCreditBytes / kCreditBlock);

  EXPECT_EQ(send(ep, port, {250, 251, 252}, kTosPrio3), 3);  // 4 blocks each: two fit
  EXPECT_EQ(send(ep, port, {100}, kTosPrio0), 1);            // priority 0 is not under credit
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{256, 250, 251, 100}));
  EXPECT_EQ(ep.held_frames(), 1u);
  EXPECT_GT(ep.queue_stats().credit_stall, 0u);
  port.inject(credit_frame(1u << 3, 12));  // a repeated limit adds nothing
  receive(ep);
  EXPECT_EQ(ep.held_frames(), 1u);
  port.inject(credit_frame(1u << 3, 16));  // four more blocks: the last frame goes
  receive(ep);
  EXPECT_EQ(credits_sent(port).size(), 2u);  // it answers every update
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{256, 250, 251, 100, 252}));
  EXPECT_EQ(ep.counters().credit_rx, 3u);
}

TEST(HostMacCredits, ReceivedFramesGiveTheirBlocksBack) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac);
  port.inject(credit_frame(1u << 3, 2048));
  receive(ep);
  credits_sent(port);
  port.inject(test::frame(kA, kB, 1000, 0, kTosPrio3));  // 16 blocks
  port.inject(test::frame(kA, kB, 1001, 0, kTosPrio3));  // 16 blocks
  port.inject(test::frame(kA, kB, 1000, 0, kTosPrio0));  // another VL: no credit
  EXPECT_EQ(receive(ep), 3);
  auto back = credits_sent(port);
  ASSERT_EQ(back.size(), 1u) << "one update per receive burst";
  EXPECT_EQ(back[0].fccl[3], 32u + kHostCreditBytes / kCreditBlock);
  // The peer says it sent 40 blocks: the 8 that did not come are lost, and not waited for.
  port.inject(credit_frame(1u << 3, 2048, 40));
  receive(ep);
  back = credits_sent(port);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].fccl[3], 40u + kHostCreditBytes / kCreditBlock);
}

TEST(HostMacCredits, APortThatIsNoCreditLinkIgnoresUpdates) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac, /*credit_link=*/false);
  port.inject(credit_frame(0xFF, 0));  // would stop every priority
  EXPECT_EQ(receive(ep), 0);
  EXPECT_FALSE(ep.credits_on());
  EXPECT_EQ(ep.counters().credit_ignored, 1u);
  EXPECT_EQ(send(ep, port, {100}, kTosPrio3), 1);
  EXPECT_EQ(sent_lengths(port), (std::vector<size_t>{100}));
}

TEST(HostMacCredits, ATruncatedUpdateIsDroppedAndCounted) {
  FakePort port;
  ManualClock clock;
  HostMac ep(&port, &clock, kRate, kMac);
  auto f = credit_frame(1u << 3, 12);
  f.resize(kCreditFrameLen - 1);
  port.inject(f);
  EXPECT_EQ(receive(ep), 0);
  EXPECT_FALSE(ep.credits_on());
  EXPECT_EQ(ep.counters().credit_malformed, 1u);
  EXPECT_EQ(ep.counters().credit_rx, 0u);
}

}  // namespace
}  // namespace uroce::fabric
