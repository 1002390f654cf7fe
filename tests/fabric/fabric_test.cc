// The switch model of sim/ (docs/fabric.md): RED marking, CE marking, PFC frames and lossless
// pause/resume, credit flow control, ECMP hashing and polarization, INT stamping. Raw frames, no transport.
#include <gtest/gtest.h>

#include <algorithm>

#include "fabric/fabric.h"
#include "tests/fabric/fabric_util.h"
#include "transport/wire/headers.h"

namespace uroce::test {
namespace {

using fabric::FabricConfig;
using fabric::FlowControl;

constexpr uint64_t kMacBase = 0x020000000000ULL;

TEST(RedTest, ProbabilityAtKminMidpointKmaxAndAbove) {
  fabric::EcnConfig e;
  e.enabled = true;
  e.kmin_bytes = 100'000;
  e.kmax_bytes = 400'000;
  e.pmax = 0.2;
  EXPECT_EQ(fabric::red_mark_probability(e, 0), 0);
  EXPECT_EQ(fabric::red_mark_probability(e, 100'000), 0);
  EXPECT_DOUBLE_EQ(fabric::red_mark_probability(e, 250'000), 0.1);
  EXPECT_DOUBLE_EQ(fabric::red_mark_probability(e, 400'000), 0.2);
  EXPECT_EQ(fabric::red_mark_probability(e, 400'001), 1);
  e.enabled = false;
  EXPECT_EQ(fabric::red_mark_probability(e, 1'000'000), 0);
}

TEST(RedTest, SeededDrawsMatchTheProbability) {
  fabric::Rng a(7), b(7);
  int marks = 0;
  for (int i = 0; i < 100'000; ++i) {
    const bool m = a.chance(0.1);
    ASSERT_EQ(m, b.chance(0.1));  // one seed, one sequence
    marks += m;
  }
  EXPECT_NEAR(marks / 100'000.0, 0.1, 0.005);
}

TEST(EcnMarkTest, SetsCeKeepsIpv4ChecksumAndIcrcValid) {
  RawFlow f;
  std::vector<uint8_t> frame = roce_frame(f);
  const fabric::FrameClass c = fabric::classify(frame.data(), static_cast<uint16_t>(frame.size()), 0);
  EXPECT_TRUE(c.ipv4 && c.roce && c.roce_request);
  EXPECT_EQ(c.prio, 3);
  ASSERT_TRUE(fabric::mark_ce(frame.data(), c));
  wire::ParsedPacket p;
  ASSERT_EQ(wire::parse_frame(frame.data(), frame.size(), &p), wire::RxDrop::kNone);
  EXPECT_EQ(p.ecn(), wire::Ecn::kCe);

  f.tclass = 26 << 2;  // not ECT: never marked
  std::vector<uint8_t> plain = roce_frame(f);
  EXPECT_FALSE(
      fabric::mark_ce(plain.data(), fabric::classify(plain.data(), static_cast<uint16_t>(plain.size()), 0)));
}

TEST(EcnMarkTest, Ipv6TrafficClass) {
  wire::PacketHeaders h;
  h.ip.ipv6 = true;
  h.ip.src[15] = 1;
  h.ip.dst[15] = 2;
  h.ip.tclass = (26 << 2) | 1;  // ECT(1)
  h.bth.opcode = 0x04;          // RC SEND ONLY
  std::vector<uint8_t> payload(64);
  std::vector<uint8_t> frame(wire::headers_len(h) + payload.size() + wire::trailer_len(payload.size()));
  frame.resize(wire::build_frame(h, {payload.data(), payload.size()}, frame.data()));
  ASSERT_TRUE(
      fabric::mark_ce(frame.data(), fabric::classify(frame.data(), static_cast<uint16_t>(frame.size()), 0)));
  wire::ParsedPacket p;
  ASSERT_EQ(wire::parse_frame(frame.data(), frame.size(), &p), wire::RxDrop::kNone);
  EXPECT_EQ(p.ecn(), wire::Ecn::kCe);
}

TEST(PfcFrameTest, WireFormat) {
  fabric::PfcFrame p;
  p.enable = 1 << 3;
  p.quanta[3] = 0xFFFF;
  uint8_t buf[64];
  ASSERT_EQ(fabric::build_pfc(buf, 0x02AABBCCDDEEULL, p), 60);
  const uint8_t head[] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0xAA, 0xBB,
                          0xCC, 0xDD, 0xEE, 0x88, 0x08, 0x01, 0x01, 0x00, 0x08};
  EXPECT_TRUE(std::equal(head, head + sizeof head, buf));
  EXPECT_EQ(buf[18 + 6], 0xFF);  // time[3]
  EXPECT_EQ(buf[18 + 7], 0xFF);
  fabric::PfcFrame q;
  ASSERT_TRUE(fabric::parse_pfc(buf, 60, &q));
  EXPECT_EQ(q.enable, 1 << 3);
  EXPECT_EQ(q.quanta[3], 0xFFFF);
  EXPECT_EQ(q.quanta[0], 0);
  EXPECT_EQ(fabric::pfc_quanta_ns(0xFFFF, 100'000'000'000ULL), 335'539u);  // 65535 * 512 bits at 100 Gb/s
}

// n senders -> host 0 through one fabric switch, each pumping `frames` 4 KiB WRITE frames.
struct Incast {
  sim::SimNetwork net{3};
  sim::SimSwitch* sw;
  std::vector<sim::SimPort*> ports;
  std::vector<std::unique_ptr<Pump>> pumps;
  std::unique_ptr<Sink> sink;
  uint64_t max_ingress = 0;

  Incast(uint32_t n, uint64_t frames, const FabricConfig& fc) {
    sim::SwitchConfig sc;
    sc.fabric = fc;
    sw = &net.add_switch(sc);
    sim::LinkConfig lc;
    for (uint32_t i = 0; i <= n; ++i) {
      sim::PortConfig pc;
      pc.mac = kMacBase + i + 1;
      pc.pool_frames = 256;
      pc.tx_ring_frames = 32;
      ports.push_back(&net.add_port(pc));
      net.attach(*ports.back(), *sw, lc);
    }
    net.compute_routes();
    sink = std::make_unique<Sink>(net, *ports[0]);
    for (uint32_t i = 1; i <= n; ++i) {
      RawFlow f;
      f.src_mac = kMacBase + i + 1;
      f.dst_mac = kMacBase + 1;
      f.src_ip = 0x0A000001 + i;
      pumps.push_back(std::make_unique<Pump>(net, *ports[i], f, frames));
    }
  }
  uint64_t expected() const {
    uint64_t n = 0;
    for (const auto& p : pumps) n += p->sent();
    return n;
  }
  void run() {
    net.run_until(
        [this] {
          for (uint32_t p = 1; p < sw->port_count(); ++p)
            max_ingress = std::max(max_ingress, sw->ingress_bytes(p, 3));
          return false;
        },
        net.now_ns() + 50'000'000);
  }
  uint64_t sum(uint64_t sim::SwitchPortCounters::*field) const {
    uint64_t s = 0;
    for (uint32_t p = 0; p < sw->port_count(); ++p) s += sw->port_counters(p).*field;
    return s;
  }
};

FabricConfig fabric(FlowControl fc) {
  FabricConfig f;
  f.enabled = true;
  f.flow_control = fc;
  f.buffer_bytes = 1 << 20;
  f.credit_bytes = 32 * 1024;
  return f;
}

TEST(PfcTest, PausesAndResumesAndLosesNothing) {
  const FabricConfig fc = fabric(FlowControl::kPfc);
  Incast t(8, 1000, fc);
  t.run();
  EXPECT_EQ(t.sink->frames, 8000u);
  EXPECT_EQ(t.sum(&sim::SwitchPortCounters::drop_buffer) + t.sum(&sim::SwitchPortCounters::drop_headroom) +
                t.sum(&sim::SwitchPortCounters::drop_threshold),
            0u);
  EXPECT_GT(t.sum(&sim::SwitchPortCounters::pfc_xoff_sent), 0u);
  EXPECT_GT(t.sum(&sim::SwitchPortCounters::pfc_xon_sent), 0u);
  for (uint32_t i = 1; i <= 8; ++i) {
    EXPECT_GT(t.ports[i]->counters().pfc_rx, 0u) << "sender " << i << " was never paused";
    EXPECT_GT(static_cast<const sim::FabricQueue&>(t.ports[i]->uplink()->queue()).stats().paused_ns, 0u);
  }
  EXPECT_GE(t.max_ingress, fc.pfc_xoff_bytes);
  EXPECT_LE(t.max_ingress, uint64_t{fc.pfc_xoff_bytes} + fc.pfc_headroom_bytes);
  // Nothing held once drained, and every XOFF was followed by an XON.
  EXPECT_EQ(t.sw->buffer_used(), 0u);
  for (uint32_t p = 0; p < t.sw->port_count(); ++p) EXPECT_FALSE(t.sw->xoff(p, 3));
}

TEST(PfcTest, WithoutFlowControlTheSharedBufferDrops) {
  FabricConfig fc = fabric(FlowControl::kNone);
  fc.buffer_bytes = 256 * 1024;
  Incast t(8, 1000, fc);
  t.run();
  EXPECT_LT(t.sink->frames, 8000u);
  EXPECT_GT(t.sum(&sim::SwitchPortCounters::drop_threshold) + t.sum(&sim::SwitchPortCounters::drop_buffer),
            0u);
  EXPECT_EQ(t.sum(&sim::SwitchPortCounters::pfc_xoff_sent), 0u);
}

TEST(CreditTest, SendersNeverOverrunTheAdvertisedBuffer) {
  const FabricConfig fc = fabric(FlowControl::kCredit);
  Incast t(8, 1000, fc);
  t.run();
  EXPECT_EQ(t.sink->frames, 8000u);
  EXPECT_EQ(t.sum(&sim::SwitchPortCounters::drop_credit), 0u);
  EXPECT_EQ(t.sum(&sim::SwitchPortCounters::pfc_xoff_sent), 0u);
  EXPECT_GT(t.max_ingress, fc.credit_bytes / 2);  // the credits were the limit...
  EXPECT_LE(t.max_ingress, fc.credit_bytes);      // ...and never exceeded
  for (uint32_t i = 1; i <= 8; ++i) {
    const auto& q = static_cast<const sim::FabricQueue&>(t.ports[i]->uplink()->queue());
    EXPECT_GT(q.stats().credit_stall, 0u);
    EXPECT_EQ(q.credits(3), q.credit_limit());  // all returned once drained
  }
}

// Host a on leaf 0, host b on leaf 1, `spines` spines; `sports` distinct UDP source ports.
std::vector<uint64_t> uplink_frames(uint16_t sports) {
  sim::SimNetwork net(5);
  sim::SwitchConfig sc;
  sc.fabric = fabric(FlowControl::kPfc);
  sim::SimSwitch& l0 = net.add_switch(sc);
  sim::SimSwitch& l1 = net.add_switch(sc);
  sim::LinkConfig lc;
  std::vector<uint32_t> up;
  for (int s = 0; s < 4; ++s) {
    sim::SimSwitch& sp = net.add_switch(sc);
    up.push_back(net.connect(l0, sp, lc).first);
    net.connect(l1, sp, lc);
  }
  sim::PortConfig pa, pb;
  pa.mac = kMacBase + 1;
  pb.mac = kMacBase + 2;
  pa.tx_ring_frames = 32;
  sim::SimPort& a = net.add_port(pa);
  sim::SimPort& b = net.add_port(pb);
  net.attach(a, l0, lc);
  net.attach(b, l1, lc);
  net.compute_routes();
  RawFlow f;
  f.src_mac = pa.mac;
  f.dst_mac = pb.mac;
  f.sports = sports;
  f.payload = 256;
  Pump pump(net, a, f, 4096);
  Sink sink(net, b);
  net.run_until(nullptr, 10'000'000);
  EXPECT_EQ(sink.frames, 4096u);
  std::vector<uint64_t> n;
  for (uint32_t p : up) n.push_back(l0.egress(p).counters().sent_frames);
  return n;
}

TEST(EcmpTest, VaryingSourcePortsSpreadOverAllUplinks) {
  const std::vector<uint64_t> n = uplink_frames(64);
  for (uint64_t x : n) {
    EXPECT_GT(x, 4096u / 4 / 2);
    EXPECT_LT(x, 4096u / 4 * 2);
  }
}

TEST(EcmpTest, FixedSourcePortPolarizesOntoOneUplink) {
  const std::vector<uint64_t> n = uplink_frames(1);
  EXPECT_EQ(*std::max_element(n.begin(), n.end()), 4096u);
  EXPECT_EQ(std::count(n.begin(), n.end(), 0u), 3);
}

TEST(EcmpTest, RoutesFollowShortestPaths) {
  sim::SimNetwork net(1);
  sim::SwitchConfig sc;
  sc.fabric = fabric(FlowControl::kNone);
  sim::SimSwitch& l0 = net.add_switch(sc);
  sim::SimSwitch& l1 = net.add_switch(sc);
  sim::SimSwitch& s0 = net.add_switch(sc);
  sim::SimSwitch& s1 = net.add_switch(sc);
  const auto a0 = net.connect(l0, s0, {}), a1 = net.connect(l0, s1, {});
  const auto b0 = net.connect(l1, s0, {});
  net.connect(l1, s1, {});
  sim::PortConfig pc;
  pc.mac = kMacBase + 9;
  sim::SimPort& h = net.add_port(pc);
  const uint32_t hp = net.attach(h, l1, {});
  net.compute_routes();
  EXPECT_EQ(*l1.route(pc.mac), std::vector<uint32_t>{hp});
  EXPECT_EQ(*l0.route(pc.mac), (std::vector<uint32_t>{a0.first, a1.first}));
  EXPECT_EQ(*s0.route(pc.mac), std::vector<uint32_t>{b0.second});
}

TEST(IntTest, EachSwitchStampsRequestsNotAcks) {
  sim::SimNetwork net(2);
  sim::SwitchConfig sc;
  sc.fabric = fabric(FlowControl::kPfc);
  sc.fabric.int_enabled = true;
  sim::SimSwitch& s0 = net.add_switch(sc);
  sim::SimSwitch& s1 = net.add_switch(sc);
  sim::LinkConfig fast, slow;
  slow.rate_bps = 25'000'000'000;
  net.connect(s0, s1, fast);
  sim::PortConfig pa, pb;
  pa.mac = kMacBase + 1;
  pb.mac = kMacBase + 2;
  sim::SimPort& a = net.add_port(pa);
  sim::SimPort& b = net.add_port(pb);
  net.attach(a, s0, fast);
  net.attach(b, s1, slow);
  net.compute_routes();
  RawFlow f;
  f.src_mac = pa.mac;
  f.dst_mac = pb.mac;
  Pump data(net, a, f, 4);
  Sink sink(net, b);
  net.run_until(nullptr, 1'000'000);
  ASSERT_EQ(sink.stacks.size(), 4u);
  const uint32_t len = static_cast<uint32_t>(roce_frame(f).size());
  for (size_t i = 0; i < 4; ++i) {
    const cc::IntStack& st = sink.stacks[i];
    ASSERT_EQ(st.hops, 2);
    EXPECT_EQ(st.hop[0].line_rate_bps, fast.rate_bps);
    EXPECT_EQ(st.hop[1].line_rate_bps, slow.rate_bps);
    EXPECT_GT(st.hop[1].ts_ns, st.hop[0].ts_ns);
    EXPECT_EQ(st.hop[0].tx_bytes, (i + 1) * len);  // cumulative, this frame included
    EXPECT_EQ(st.hop[1].tx_bytes, (i + 1) * len);
  }
  // The slow last hop queues the back-to-back frames: the first leaves nothing behind, later ones do.
  EXPECT_EQ(sink.stacks[0].hop[1].qlen_bytes, 0u);
  EXPECT_GT(sink.stacks[1].hop[1].qlen_bytes, 0u);

  RawFlow ack = f;
  ack.opcode = 0x11;  // RC ACK: a response, carries the echo, never stamped
  Pump acks(net, a, ack, 2);
  Sink* s = &sink;
  s->stacks.clear();
  net.run_until(nullptr, net.now_ns() + 1'000'000);
  ASSERT_EQ(sink.stacks.size(), 2u);
  EXPECT_EQ(sink.stacks[0].hops, 0);
}

}  // namespace
}  // namespace uroce::test
