// uroced's forwarding core without DPDK: in-memory ports, virtual time.
#include "tools/uroced/switch_core.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "fabric/fabric.h"
#include "fabric/host_mac.h"
#include "tests/support/fake_port.h"
#include "transport/wire/headers.h"

namespace uroce::uroced {
namespace {

Mac mac(uint8_t last) { return {0x02, 0x00, 0x7f, 0x01, 0x00, last}; }

using test::FakePort;
using test::frame;

const wire::Ipv4Hdr& ip_of(const std::vector<uint8_t>& f) {
  return *reinterpret_cast<const wire::Ipv4Hdr*>(f.data() + sizeof(wire::EthHdr));
}

TEST(Switch, ForwardsByStaticMacAndLearnsSourceMacs) {
  FakePort a, b, c;
  Switch sw;
  const int ia = sw.add_port(&a, "a", {}, 0), ib = sw.add_port(&b, "b", {}, 0);
  sw.add_static_mac(mac(1), ia);
  sw.add_static_mac(mac(2), ib);
  const int ic = sw.add_port(&c, "c", {}, 0);
  b.inject(frame(mac(1), mac(2)));
  c.inject(frame(mac(2), mac(3)));  // teaches the switch that mac(3) is behind c
  sw.poll(0);
  ASSERT_EQ(a.sent.size(), 1u);
  ASSERT_EQ(b.sent.size(), 1u);
  EXPECT_TRUE(c.sent.empty());
  a.inject(frame(mac(3), mac(1)));
  sw.poll(1);
  EXPECT_EQ(c.sent.size(), 1u);
  EXPECT_EQ(sw.counters(ia).rx_frames, 1u);
  EXPECT_EQ(sw.counters(ic).tx_frames, 1u);
  EXPECT_EQ(sw.counters(ic).tx_bytes, 1000u);
}

TEST(Switch, UnknownUnicastIsDroppedAndCountedOrSentToTheDefaultPort) {
  FakePort a, b, up;
  Switch sw;
  const int ia = sw.add_port(&a, "a", {}, 0);
  sw.add_port(&b, "b", {}, 0);
  a.inject(frame(mac(9), mac(1)));
  sw.poll(0);
  EXPECT_EQ(sw.counters(ia).drop_unknown, 1u);
  EXPECT_TRUE(b.sent.empty());
  EXPECT_EQ(a.home(), a.total());

  const int iu = sw.add_port(&up, "uplink", {}, 0);
  sw.set_default_port(iu);
  a.inject(frame(mac(9), mac(1)));
  sw.poll(1);
  EXPECT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(sw.counters(ia).unknown_to_uplink, 1u);
  up.inject(frame(mac(8), mac(9)));  // unknown from the uplink itself: dropped, not sent back
  sw.poll(2);
  EXPECT_EQ(sw.counters(iu).drop_filtered + sw.counters(iu).drop_unknown, 1u);
}

TEST(Switch, BroadcastAndMulticastFloodToEveryOtherPort) {
  FakePort a, b, c;
  Switch sw;
  const int ia = sw.add_port(&a, "a", {}, 0);
  sw.add_port(&b, "b", {}, 0);
  sw.add_port(&c, "c", {}, 0);
  a.inject(frame({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, mac(1), 300));
  a.inject(frame({0x01, 0x00, 0x5e, 0, 0, 1}, mac(1), 200));
  sw.poll(0);
  EXPECT_TRUE(a.sent.empty());
  ASSERT_EQ(b.sent.size(), 2u);
  ASSERT_EQ(c.sent.size(), 2u);
  EXPECT_EQ(b.sent[0], c.sent[0]);
  EXPECT_EQ(b.sent[1].size(), 200u);
  EXPECT_EQ(sw.counters(ia).flooded, 2u);
  EXPECT_EQ(a.home(), a.total());
}

TEST(Switch, FrameBackToItsOwnPortIsFiltered) {
  FakePort a, b;
  Switch sw;
  const int ia = sw.add_port(&a, "a", {}, 0);
  sw.add_port(&b, "b", {}, 0);
  sw.add_static_mac(mac(1), ia);
  a.inject(frame(mac(1), mac(5)));
  sw.poll(0);
  EXPECT_EQ(sw.counters(ia).drop_filtered, 1u);
  EXPECT_TRUE(a.sent.empty());
}

TEST(Switch, LearnedEntriesNeverOverrideStaticOnesAndAgeOut) {
  FakePort a, b, c;
  Switch sw;
  const int ia = sw.add_port(&a, "a", {}, 0), ib = sw.add_port(&b, "b", {}, 0);
  sw.add_port(&c, "c", {}, 0);
  sw.add_static_mac(mac(1), ia);
  b.inject(frame(mac(7), mac(1)));  // spoofs a's MAC
  c.inject(frame(mac(1), mac(3)));
  sw.poll(0);
  EXPECT_EQ(a.sent.size(), 1u);  // still a
  EXPECT_TRUE(b.sent.empty());
  EXPECT_EQ(sw.counters(ib).drop_unknown, 1u);
  // mac(3) was learned behind c; after the age-out it is unknown again.
  a.inject(frame(mac(3), mac(1)));
  sw.poll(1);
  EXPECT_EQ(c.sent.size(), 1u);
  sw.poll(kLearnAgeNs + 2'000'000'000);
  a.inject(frame(mac(3), mac(1)));
  sw.poll(kLearnAgeNs + 3'000'000'000);
  EXPECT_EQ(c.sent.size(), 1u);
  EXPECT_EQ(sw.counters(ia).drop_unknown, 1u);
}

TEST(Switch, BackpressuredFramesWaitAndRemovingAPortReturnsEveryBuffer) {
  FakePort a, b;
  Switch sw;
  const int ia = sw.add_port(&a, "a", {}, 0), ib = sw.add_port(&b, "b", {}, 0);
  sw.add_static_mac(mac(2), ib);
  b.tx_room = 0;
  for (int i = 0; i < 10; ++i) a.inject(frame(mac(2), mac(1)));
  sw.poll(0);
  EXPECT_EQ(sw.counters(ib).queue_frames, 10u);
  EXPECT_EQ(sw.counters(ia).held_bytes, 10'000u);
  b.tx_room = 4;
  sw.poll(1);
  EXPECT_EQ(b.sent.size(), 4u);
  EXPECT_EQ(sw.counters(ib).queue_frames, 6u);
  EXPECT_EQ(sw.counters(ia).held_bytes, 6'000u);
  // a goes away while 6 of its frames wait at b: they are freed before a's PacketIo can go.
  sw.remove_port(ia);
  EXPECT_EQ(sw.counters(ib).queue_frames, 0u);
  EXPECT_EQ(sw.counters(ib).queue_bytes, 0u);
  EXPECT_EQ(a.home(), a.total());
  EXPECT_FALSE(sw.has_queued());
}

TEST(Switch, RemovedPortSlotIsReusedAndItsMacsForgotten) {
  FakePort a, b, c;
  Switch sw;
  const int ia = sw.add_port(&a, "a", {}, 0), ib = sw.add_port(&b, "b", {}, 0);
  sw.add_static_mac(mac(2), ib);
  sw.remove_port(ib);
  a.inject(frame(mac(2), mac(1)));
  sw.poll(0);
  EXPECT_EQ(sw.counters(ia).drop_unknown, 1u);
  EXPECT_EQ(sw.add_port(&c, "c", {}, 0), ib);
  EXPECT_EQ(sw.counters(ib).rx_frames, 0u);
}

TEST(Switch, TailDropAtTheBufferLimitWithoutPause) {
  FakePort a, b;
  Switch sw;
  PortConfig cfg;
  cfg.buffer_bytes = 5000;
  cfg.pause_bytes = 0;
  sw.add_port(&a, "a", cfg, 0);
  const int ib = sw.add_port(&b, "b", cfg, 0);
  sw.add_static_mac(mac(2), ib);
  b.tx_room = 0;
  for (int i = 0; i < 8; ++i) a.inject(frame(mac(2), mac(1)));
  sw.poll(0);
  EXPECT_EQ(sw.counters(ib).queue_frames, 5u);
  EXPECT_EQ(sw.counters(ib).drop_queue_full, 3u);
  EXPECT_EQ(sw.counters(ib).queue_max_bytes, 5000u);
}

TEST(Switch, IngressPausesWhileItsFramesHoldPauseBytesThenResumes) {
  FakePort a, b;
  Switch sw;
  PortConfig cfg;
  cfg.pause_bytes = 4224;
  const int ia = sw.add_port(&a, "a", cfg, 0), ib = sw.add_port(&b, "b", cfg, 0);
  sw.add_static_mac(mac(2), ib);
  b.tx_room = 0;
  for (int i = 0; i < 40; ++i) a.inject(frame(mac(2), mac(1)));
  sw.poll(0);  // reads a burst of 32 (the check is per burst), queues them all
  sw.poll(1);  // a is paused: nothing more read, nothing dropped
  EXPECT_EQ(a.rx.size(), 8u);
  EXPECT_EQ(sw.counters(ia).pauses, 1u);
  EXPECT_EQ(sw.counters(ib).drop_queue_full, 0u);
  b.tx_room = UINT32_MAX;
  sw.poll(2);  // drains b; a is read again on the next pass
  sw.poll(3);
  sw.poll(4);
  EXPECT_EQ(b.sent.size(), 40u);
  EXPECT_TRUE(a.rx.empty());
}

TEST(Switch, TokenBucketPacesEgressAtTheConfiguredRate) {
  FakePort a, b;
  Switch sw;
  PortConfig cfg;
  cfg.rate_bps = 8'000'000;  // 1 byte per microsecond
  cfg.burst_bytes = 4224;
  sw.add_port(&a, "a", {}, 0);
  const int ib = sw.add_port(&b, "b", cfg, 0);
  sw.add_static_mac(mac(2), ib);
  for (int i = 0; i < 20; ++i) a.inject(frame(mac(2), mac(1), 1000));
  uint64_t t = 0;
  sw.poll(t);
  EXPECT_EQ(b.sent.size(), 4u);  // the full bucket: 4 x 1000 bytes
  EXPECT_GT(sw.next_ready_ns(), t);
  // 10 ms later: 10,000 bytes earned, but the bucket holds at most 4224.
  t += 10'000'000;
  sw.poll(t);
  EXPECT_EQ(b.sent.size(), 8u);
  // Then one frame per 1000 us, and next_ready_ns() says when.
  for (int i = 0; i < 12; ++i) {
    t = sw.next_ready_ns();
    ASSERT_NE(t, UINT64_MAX);
    sw.poll(t);
  }
  EXPECT_EQ(b.sent.size(), 20u);
  EXPECT_LE(t, 10'000'000u + 12 * 1'000'000u + 1000);
  EXPECT_GE(t, 10'000'000u + 12 * 1'000'000u - 300'000);
}

TEST(Switch, RedMarksEctFramesAboveKmaxAndLeavesOthersUnmarked) {
  FakePort a, b;
  Switch sw;
  PortConfig cfg;
  cfg.red = {true, 2000, 4000, 0.5};
  cfg.pause_bytes = 0;
  sw.add_port(&a, "a", {}, 0);
  const int ib = sw.add_port(&b, "b", cfg, 0);
  sw.add_static_mac(mac(2), ib);
  b.tx_room = 0;
  for (int i = 0; i < 6; ++i) a.inject(frame(mac(2), mac(1), 1000, 0x2));  // ECT(0)
  a.inject(frame(mac(2), mac(1), 1000, 0x0));                              // Not-ECT at depth 6000
  a.inject(frame(mac(2), mac(1), 1000, 0x3));                              // CE already
  sw.poll(0);
  b.tx_room = UINT32_MAX;
  sw.poll(1);
  ASSERT_EQ(b.sent.size(), 8u);
  // Depths 0 and 1000 are below kmin: never marked. Depths 4000 and 5000 are at/above kmax: always.
  EXPECT_EQ(ip_of(b.sent[0]).tos & 3, 2);
  EXPECT_EQ(ip_of(b.sent[1]).tos & 3, 2);
  EXPECT_EQ(ip_of(b.sent[4]).tos & 3, 3);
  EXPECT_EQ(ip_of(b.sent[5]).tos & 3, 3);
  EXPECT_EQ(ip_of(b.sent[6]).tos & 3, 0);
  for (const auto& f : b.sent) {
    EXPECT_EQ(wire::ipv4_checksum(ip_of(f)), 0) << "IPv4 checksum must stay valid";
    EXPECT_EQ(ip_of(f).tos & 0xFC, 0x68) << "DSCP untouched";
  }
  const auto& c = sw.counters(ib);
  EXPECT_GE(c.ecn_marked, 2u);
  EXPECT_LE(c.ecn_marked, 4u);
  EXPECT_EQ(c.ecn_not_ect, 1u);
  EXPECT_EQ(c.ecn_already_ce, 1u);
}

// The simulator's switch model in real time: with PFC frames on, an incast makes uroced send each sender a
// real 802.1Qbb XOFF and, once drained, an XON; ECN marks at departure as the simulator's switches do; a
// PFC frame a process sends pauses that port's egress until its XON.
std::vector<fabric::PfcFrame> pfc_frames(const FakePort& p) {
  std::vector<fabric::PfcFrame> out;
  for (const auto& f : p.sent) {
    fabric::PfcFrame pfc;
    if (fabric::parse_pfc(f.data(), static_cast<uint16_t>(f.size()), &pfc)) out.push_back(pfc);
  }
  return out;
}

TEST(Switch, TheFabricModelSendsPfcAndMarksAtDepartureInRealTime) {
  FakePort a, b, c;
  Switch sw;
  PortConfig cfg;
  cfg.pause_bytes = 16000;  // XOFF at 8000 bytes held, XON below 4000
  cfg.pfc_frames = true;
  cfg.red = {true, 5000, 20000, 1.0};
  cfg.ecn_at = fabric::EcnAt::kDeparture;
  const int ia = sw.add_port(&a, "a", cfg, 0), ib = sw.add_port(&b, "b", cfg, 0);
  const int ic = sw.add_port(&c, "c", cfg, 0);
  sw.add_static_mac(mac(3), ic);
  c.tx_room = 0;
  for (int i = 0; i < 20; ++i) {
    a.inject(frame(mac(3), mac(1), 1000, 0x2));
    b.inject(frame(mac(3), mac(2), 1000, 0x2));
  }
  sw.poll(0);
  for (const FakePort* p : {&a, &b}) {
    const auto pfc = pfc_frames(*p);
    ASSERT_EQ(pfc.size(), 1u) << "one XOFF per sender";
    EXPECT_EQ(pfc[0].enable, 1u << 3);  // DSCP 26: priority 3
    EXPECT_EQ(pfc[0].quanta[3], 0xFFFF);
  }
  EXPECT_EQ(sw.counters(ia).pfc_xoff_sent, 1u);
  EXPECT_EQ(sw.counters(ib).held_bytes, 20000u);
  c.tx_room = UINT32_MAX;
  for (uint64_t t = 1; t < 5; ++t) sw.poll(t);
  ASSERT_EQ(c.sent.size(), 40u);
  for (const FakePort* p : {&a, &b}) {
    const auto pfc = pfc_frames(*p);
    ASSERT_EQ(pfc.size(), 2u) << "XON once drained";
    EXPECT_EQ(pfc[1].quanta[3], 0);
  }
  // Marked as they left with more than kmax behind them, never the last ones out.
  const auto& cc = sw.counters(ic);
  EXPECT_GT(cc.ecn_marked, 0u);
  EXPECT_LT(cc.ecn_marked, 40u);
  EXPECT_EQ(ip_of(c.sent.back()).tos & 3, 2);
  EXPECT_EQ(sw.counters(ia).drop_queue_full + sw.counters(ib).drop_queue_full + cc.drop_queue_full, 0u);

  // c's process pauses priority 3 of its port: frames to it wait until it resumes.
  std::vector<uint8_t> pause(fabric::kPfcFrameLen);
  fabric::PfcFrame xoff;
  xoff.enable = 1u << 3;
  xoff.quanta[3] = 0xFFFF;
  fabric::build_pfc(pause.data(), 0x020000000003ULL, xoff);
  c.inject(pause);
  sw.poll(10);
  a.inject(frame(mac(3), mac(1), 1000, 0x2));
  sw.poll(11);
  EXPECT_EQ(c.sent.size(), 40u);
  EXPECT_EQ(sw.counters(ic).pfc_rx, 1u);
  fabric::PfcFrame xon;
  xon.enable = 1u << 3;
  fabric::build_pfc(pause.data(), 0x020000000003ULL, xon);
  c.inject(pause);
  sw.poll(12);
  sw.poll(13);
  EXPECT_EQ(c.sent.size(), 41u);
}

// One end of a cable: what it transmits is copied into the other end's receive queue (its own pool).
class CableEnd final : public FakePort {
 public:
  CableEnd* peer = nullptr;
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) {
      peer->inject(std::vector<uint8_t>(bufs[i]->data, bufs[i]->data + bufs[i]->len));
      free_burst(&bufs[i], 1);
    }
    return n;
  }
};

// A process: its MAC (the same HostMac the provider puts under the transport) on a cable to a switch port.
struct Host {
  Host(const ManualClock* clock) : mac(&nic, clock, fabric::kRealTimeLineRateBps, 0x02007f010000) {
    nic.peer = &sw_side;
    sw_side.peer = &nic;
  }
  CableEnd nic, sw_side;
  fabric::HostMac mac;
  uint32_t received = 0;
  void send(const std::vector<uint8_t>& f) {
    PktBuf* b = nullptr;
    ASSERT_EQ(mac.alloc_burst(&b, 1), 1);
    std::memcpy(b->data, f.data(), f.size());
    b->len = static_cast<uint16_t>(f.size());
    if (mac.tx_burst(&b, 1) != 1) mac.free_burst(&b, 1);
  }
  void poll() {
    PktBuf* bufs[kBurst];
    while (!nic.rx.empty()) {
      const uint16_t n = mac.rx_burst(bufs, kBurst);
      received += n;
      mac.free_burst(bufs, n);
    }
    mac.flush();
  }
};

// Credit flow control end to end in virtual time: two processes' MACs send 2:1 through a 1 Gb/s port of
// uroced's switch with 16 KiB of credit to a receiver that reads every 2 ms (its MAC grants 128 KiB). Credits
// alone keep it lossless: the senders wait for credit (they never overrun what the switch granted), the
// port's egress waits for the receiver's credit, updates flow both ways, no PFC frame is sent and every frame
// arrives.
TEST(Switch, CreditsBetweenTheSwitchAndProcessMacsKeepAnIncastLossless) {
  ManualClock clock;
  Switch sw(1, 16 * 1024);
  PortConfig cfg;
  cfg.rate_bps = 1'000'000'000;
  cfg.burst_bytes = 8000;
  Host a(&clock), b(&clock), c(&clock);
  const int ia = sw.add_port(&a.sw_side, "a", cfg, 0), ib = sw.add_port(&b.sw_side, "b", cfg, 0);
  const int ic = sw.add_port(&c.sw_side, "c", cfg, 0);
  sw.add_static_mac(mac(3), ic);
  sw.poll(0);  // the link comes up: the switch's first credit update reaches each process
  for (Host* h : {&a, &b, &c}) h->poll();
  ASSERT_TRUE(a.mac.credits_on() && c.mac.credits_on());
  constexpr int kFrames = 200;
  int sent = 0;
  for (uint64_t t = 1000; t < 50'000'000 && c.received < 2 * kFrames; t += 1000) {
    clock.set(t);
    for (; sent < kFrames && a.mac.held_frames() < 8; ++sent) {  // the transport offers what the MAC takes
      a.send(frame(mac(3), mac(1), 1000));
      b.send(frame(mac(3), mac(2), 1000));
    }
    sw.poll(t);
    a.poll();
    b.poll();
    if (t % 2'000'000 == 0) c.poll();  // a slow receiver: its credit comes back late
  }
  EXPECT_EQ(c.received, 2u * kFrames);
  for (const int i : {ia, ib, ic}) {
    const PortCounters& k = sw.counters(i);
    EXPECT_EQ(k.drop_credit + k.drop_queue_full, 0u);
    EXPECT_EQ(k.pfc_xoff_sent, 0u);
  }
  EXPECT_GT(sw.counters(ia).credit_tx, 1u) << "the switch gave a sender credit back";
  EXPECT_GT(sw.counters(ic).credit_rx, 1u) << "the receiver gave credit back";
  EXPECT_GT(sw.counters(ic).credit_stall, 0u) << "the switch waited for the receiver's credit";
  EXPECT_GT(a.mac.queue_stats().credit_stall, 0u) << "a sender waited for the switch's credit";
  // Never more in the switch from one sender than the credit it was granted.
  EXPECT_LE(sw.counters(ia).queue_max_bytes + sw.counters(ib).queue_max_bytes, 0u + 3 * 16 * 1024);
}

// The model's PFC watchdog in real time: a process that keeps its port's priority paused with refreshed XOFFs
// (a stuck receiver) is obeyed for the detection time, then its port drains to it and its XOFFs are ignored;
// without the watchdog the frames for it stay queued.
TEST(Switch, ThePfcWatchdogDrainsAPortWhoseProcessNeverStopsPausing) {
  for (const uint64_t watchdog_ns : {uint64_t{0}, uint64_t{200'000}}) {
    FakePort a, x;
    Switch sw(1, 0, watchdog_ns);
    const int ia = sw.add_port(&a, "a", {}, 0), ix = sw.add_port(&x, "x", {}, 0);
    sw.add_static_mac(mac(9), ix);
    std::vector<uint8_t> xoff(fabric::kPfcFrameLen);
    fabric::PfcFrame p;
    p.enable = 1u << 3;
    p.quanta[3] = 0xFFFF;  // 335 us at 100 Gb/s, refreshed every 100 us
    fabric::build_pfc(xoff.data(), 0x020000000009ULL, p);
    for (uint64_t t = 0; t <= 1'000'000; t += 10'000) {
      if (t % 100'000 == 0) x.inject(xoff);
      if (t == 50'000)
        for (int i = 0; i < 5; ++i) a.inject(frame(mac(9), mac(1), 1000));
      sw.poll(t);
    }
    const PortCounters& c = sw.counters(ix);
    if (watchdog_ns == 0) {
      EXPECT_TRUE(x.sent.empty()) << "paused for good";
      EXPECT_EQ(c.pfc_storms, 0u);
    } else {
      EXPECT_EQ(x.sent.size(), 5u) << "drained once the watchdog found the storm";
      EXPECT_EQ(c.pfc_storms, 1u);
      EXPECT_GT(c.pfc_ignored, 5u);
    }
    EXPECT_EQ(sw.counters(ia).drop_queue_full, 0u);
  }
}

}  // namespace
}  // namespace uroce::uroced
