// Simulator tests: exact virtual timing, impairment rates and seed reproducibility, queue limits, buffer
// ownership, switch forwarding, and the run loop's statuses. Every test prints its seed on failure;
// UROCE_SIM_SEED=<n> reruns with another one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "sim/sim_network.h"
#include "transport/wire/address.h"

namespace uroce::sim {
namespace {

constexpr uint16_t kEtherTypeExperimental = 0x88B5;
constexpr uint16_t kHdrLen = 14 + 4 + 8;   // Ethernet, sender id, sequence number
constexpr uint16_t kMinLen = kHdrLen + 4;  // + FNV-1a trailer over everything before it

uint64_t test_seed() {
  const char* s = std::getenv("UROCE_SIM_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 0) : 0x5eed;
}

#define SEED_TRACE(seed) \
  SCOPED_TRACE(testing::Message() << "seed=" << (seed) << " (rerun: UROCE_SIM_SEED=" << (seed) << ")")

uint64_t mac_of(uint32_t i) { return 0x020000000000ULL | (i + 1); }  // locally administered unicast

// A single bit flip anywhere in the frame always changes the FNV-1a value (each step is a bijection).
uint32_t fnv1a(const uint8_t* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

struct Rx {
  uint32_t src;
  uint64_t seq;
  uint64_t dst;
  uint64_t time;
  bool intact;
  bool operator==(const Rx&) const = default;
};

// Sends numbered frames along a plan and records what it receives. Sequence number = index in the plan.
class TestNode final : public SimNode {
 public:
  TestNode(SimNetwork& net, SimPort& port, uint32_t id) : net_(net), port_(port), id_(id), mac_(port.mac()) {
    net.add_node(*this, {&port});
  }

  void plan(uint64_t dst, uint64_t count, uint16_t len) {
    for (uint64_t i = 0; i < count; ++i) plan_.push_back({dst, len});
  }
  void pace(uint64_t start_ns, uint64_t gap_ns) { next_tx_ = start_ns, gap_ = gap_ns; }
  ~TestNode() override { port_.free_burst(stash_, stashed_); }
  void set_src_mac(uint64_t mac) { mac_ = mac; }
  bool done_sending() const { return next_ == plan_.size(); }
  void release_held() {
    for (PktBuf* b : held) port_.free_burst(&b, 1);
    held.clear();
  }

  void poll() override {
    receive();
    transmit();
  }
  uint64_t next_deadline_ns() const override { return done_sending() || blocked_ ? kNever : next_tx_; }

  std::vector<Rx> rx;
  bool hold_rx = false;  // keep received buffers (to exhaust the pool) instead of freeing them
  std::vector<PktBuf*> held;

 private:
  struct Planned {
    uint64_t dst;
    uint16_t len;
  };

  void fill(PktBuf* b, uint64_t seq) {
    const Planned& p = plan_[seq];
    b->len = std::max(p.len, kMinLen);
    wire::mac_from_u64(b->data, p.dst);
    wire::mac_from_u64(b->data + 6, mac_);
    b->data[12] = kEtherTypeExperimental >> 8;
    b->data[13] = kEtherTypeExperimental & 0xff;
    std::memcpy(b->data + 14, &id_, 4);
    std::memcpy(b->data + 18, &seq, 8);
    for (uint16_t i = kHdrLen; i < b->len - 4; ++i) b->data[i] = static_cast<uint8_t>(seq + i);
    const uint32_t h = fnv1a(b->data, b->len - 4);
    std::memcpy(b->data + b->len - 4, &h, 4);
  }

  // Frames tx_burst refused stay filled in stash_ and go first next time, as an engine would retry them.
  void transmit() {
    blocked_ = false;
    const uint64_t now = net_.now_ns();
    while (!done_sending() && next_tx_ <= now) {
      uint16_t n = stashed_;
      if (n == 0) {
        const auto left = static_cast<uint16_t>(std::min<uint64_t>(kBurst, plan_.size() - next_));
        n = port_.alloc_burst(stash_, gap_ != 0 ? 1 : left);
        if (n == 0) {  // pool empty: buffers come back as frames land; retry soon
          next_tx_ = now + 1000;
          return;
        }
        for (uint16_t i = 0; i < n; ++i) fill(stash_[i], next_ + i);
      }
      const uint16_t k = port_.tx_burst(stash_, n);
      next_ += k;
      stashed_ = n - k;
      if (stashed_ != 0) {  // ring full: the network wakes us when there is room
        std::memmove(stash_, stash_ + k, stashed_ * sizeof(PktBuf*));
        blocked_ = true;
        return;
      }
      if (gap_ != 0) next_tx_ += gap_;
    }
  }

  void receive() {
    PktBuf* b[kBurst];
    uint16_t n;
    while ((n = port_.rx_burst(b, kBurst)) > 0) {
      for (uint16_t i = 0; i < n; ++i) {
        Rx r{};
        r.time = net_.now_ns();
        r.dst = wire::mac_to_u64(b[i]->data);
        std::memcpy(&r.src, b[i]->data + 14, 4);
        std::memcpy(&r.seq, b[i]->data + 18, 8);
        uint32_t h;
        std::memcpy(&h, b[i]->data + b[i]->len - 4, 4);
        r.intact = b[i]->len >= kMinLen && h == fnv1a(b[i]->data, b[i]->len - 4);
        rx.push_back(r);
      }
      if (hold_rx) {
        held.insert(held.end(), b, b + n);
      } else {
        port_.free_burst(b, n);
      }
    }
  }

  SimNetwork& net_;
  SimPort& port_;
  uint32_t id_;
  uint64_t mac_;
  std::vector<Planned> plan_;
  uint64_t next_ = 0;     // next plan index to send
  uint64_t next_tx_ = 0;  // earliest time of the next transmission
  uint64_t gap_ = 0;
  bool blocked_ = false;
  PktBuf* stash_[kBurst];
  uint16_t stashed_ = 0;
};

// Every buffer is back in its pool and nothing is in flight.
void expect_all_returned(const SimNetwork& net) {
  for (const auto& p : net.ports()) EXPECT_EQ(p->pool().available(), p->pool().size()) << "port " << p->id();
  for (const auto& s : net.switches())
    EXPECT_EQ(s->pool().available(), s->pool().size()) << "switch " << s->id();
  for (const auto& l : net.links()) EXPECT_EQ(l->queue().frames(), 0u);
}

std::vector<uint64_t> times(const TestNode& n) {
  std::vector<uint64_t> t;
  for (const Rx& r : n.rx) t.push_back(r.time);
  return t;
}

struct Pair {
  SimNetwork net;
  SimPort& pa;
  SimPort& pb;
  Link& ab;
  TestNode a;
  TestNode b;
  Pair(uint64_t seed, const LinkConfig& lc, PortConfig ca = {}, PortConfig cb = {})
      : net(seed),
        pa(net.add_port(with_mac(ca, 0))),
        pb(net.add_port(with_mac(cb, 1))),
        ab(net.connect(pa, pb, lc)),
        a(net, pa, 0),
        b(net, pb, 1) {}
  static PortConfig with_mac(PortConfig c, uint32_t i) {
    c.mac = mac_of(i);
    return c;
  }
  RunStatus run_until_rx(size_t n) {
    return net.run_until([&] { return b.rx.size() >= n; }, 1'000'000'000'000);
  }
};

TEST(SimTiming, SerializationQueueingAndPropagationAreExact) {
  LinkConfig lc;
  lc.rate_bps = 10'000'000'000;  // 1250 bytes = 1000 ns
  lc.delay_ns = 1000;
  Pair t(test_seed(), lc);
  t.a.plan(mac_of(1), 3, 1250);
  EXPECT_EQ(t.run_until_rx(3), RunStatus::kDone);
  EXPECT_EQ(times(t.b), (std::vector<uint64_t>{2000, 3000, 4000}));

  t.a.plan(mac_of(1), 1, 1250);
  t.a.pace(10'000, 0);
  EXPECT_EQ(t.run_until_rx(4), RunStatus::kDone);
  EXPECT_EQ(t.b.rx.back().time, 12'000u);
  EXPECT_EQ(t.net.now_ns(), 12'000u);
  expect_all_returned(t.net);
}

TEST(SimTiming, FractionalNanosecondsCarryOverBackToBackFrames) {
  LinkConfig lc;
  lc.rate_bps = 3'000'000'000;  // 1000 bytes = 2666.67 ns
  lc.delay_ns = 0;
  Pair t(test_seed(), lc);
  t.a.plan(mac_of(1), 3, 1000);
  EXPECT_EQ(t.run_until_rx(3), RunStatus::kDone);
  EXPECT_EQ(times(t.b), (std::vector<uint64_t>{2666, 5333, 8000}));
  t.a.plan(mac_of(1), 1, 1000);  // after an idle gap the remainder starts from zero again
  t.a.pace(100'000, 0);
  EXPECT_EQ(t.run_until_rx(4), RunStatus::kDone);
  EXPECT_EQ(t.b.rx.back().time, 102'666u);
}

TEST(SimTiming, SwitchIsStoreAndForwardWithAnOutputQueue) {
  SimNetwork net(test_seed());
  SimSwitch& sw = net.add_switch();
  SimPort& pa = net.add_port({.mac = mac_of(0)});
  SimPort& pb = net.add_port({.mac = mac_of(1)});
  LinkConfig fast{.rate_bps = 10'000'000'000, .delay_ns = 500};
  LinkConfig slow{.rate_bps = 5'000'000'000, .delay_ns = 500};
  net.attach(pa, sw, fast);
  net.attach(pb, sw, fast, slow);  // the switch -> B direction is the bottleneck
  TestNode a(net, pa, 0), b(net, pb, 1);
  a.plan(mac_of(1), 3, 1250);
  // A: serialized by 1000/2000/3000, at the switch 1500/2500/3500; to B 2000 ns each, back to back
  // from 1500: done 3500/5500/7500, at B 4000/6000/8000.
  EXPECT_EQ(net.run_until([&] { return b.rx.size() == 3; }), RunStatus::kDone);
  EXPECT_EQ(times(b), (std::vector<uint64_t>{4000, 6000, 8000}));
  EXPECT_EQ(sw.counters().forwarded, 3u);
  expect_all_returned(net);
}

TEST(SimRun, StepMovesTheClockEventByEvent) {
  Pair t(test_seed(), LinkConfig{.rate_bps = 10'000'000'000, .delay_ns = 1000});
  t.a.plan(mac_of(1), 2, 1250);
  std::vector<uint64_t> clock;
  while (t.net.step()) clock.push_back(t.net.now_ns());
  // tx done 1000, 2000 (first arrival at 2000 too), second arrival 3000.
  EXPECT_EQ(clock, (std::vector<uint64_t>{1000, 2000, 3000}));
  EXPECT_EQ(times(t.b), (std::vector<uint64_t>{2000, 3000}));
}

class Spinner final : public SimNode {
 public:
  explicit Spinner(const SimNetwork& net) : net_(net) {}
  void poll() override { ++polls; }
  uint64_t next_deadline_ns() const override { return net_.now_ns(); }  // never makes progress
  uint64_t polls = 0;

 private:
  const SimNetwork& net_;
};

TEST(SimRun, ReportsIdleTimeLimitAndLivelock) {
  {
    SimNetwork net(test_seed());
    EXPECT_EQ(net.run_until({}, 1000), RunStatus::kIdle);
  }
  {
    Pair t(test_seed(), LinkConfig{});
    t.a.plan(mac_of(1), 100, 100);
    t.a.pace(0, 1000);
    EXPECT_EQ(t.net.run_until({}, 5500), RunStatus::kTimeLimit);
    EXPECT_EQ(t.net.now_ns(), 5500u);
    EXPECT_EQ(t.b.rx.size(), 5u);  // sent at 0..4000, each 8 ns + 1000 ns later
    EXPECT_EQ(t.net.run_until({}), RunStatus::kIdle);
    EXPECT_EQ(t.b.rx.size(), 100u);
  }
  {
    SimNetwork net(test_seed());
    Spinner s(net);
    net.add_node(s);
    net.set_spin_limit(1000);
    EXPECT_EQ(net.run_until({}, 1'000'000), RunStatus::kLivelock);
    EXPECT_EQ(net.now_ns(), 0u);
    EXPECT_EQ(s.polls, 1000u);
  }
}

// binomial(n, p) within 6 standard deviations (plus slack for tiny n*p).
void expect_rate(uint64_t observed, uint64_t n, double p, const char* what) {
  const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(observed), mean, 6 * sd + 5) << what << " over " << n;
}

LinkConfig lossy_link() {
  return LinkConfig{.rate_bps = 100'000'000'000,
                    .delay_ns = 1000,
                    .loss = 0.01,
                    .duplicate = 0.02,
                    .reorder = 0.05,
                    .reorder_window_ns = 2000,
                    .corrupt = 0.01};
}

std::vector<Rx> run_lossy(uint64_t seed, uint64_t frames, LinkCounters* counters = nullptr) {
  Pair t(seed, lossy_link(), PortConfig{.tx_ring_frames = 64});
  t.a.plan(mac_of(1), frames, 100);
  EXPECT_EQ(t.net.run_until({}), RunStatus::kIdle);
  EXPECT_TRUE(t.a.done_sending());
  EXPECT_EQ(t.pb.counters().rx_no_buffer, 0u);
  expect_all_returned(t.net);
  if (counters != nullptr) *counters = t.ab.counters();
  return t.b.rx;
}

TEST(SimImpairments, RatesMatchConfigAndCountersAddUp) {
  const uint64_t seed = test_seed();
  SEED_TRACE(seed);
  constexpr uint64_t kFrames = 100'000;
  LinkCounters c;
  const std::vector<Rx> rx = run_lossy(seed, kFrames, &c);
  const LinkConfig lc = lossy_link();
  EXPECT_EQ(c.sent_frames, kFrames);
  EXPECT_EQ(c.delivered_frames, c.sent_frames - c.lost + c.duplicated);
  EXPECT_EQ(rx.size(), c.delivered_frames);
  expect_rate(c.lost, kFrames, lc.loss, "lost");
  expect_rate(c.duplicated, kFrames - c.lost, lc.duplicate, "duplicated");
  expect_rate(c.corrupted, c.delivered_frames, lc.corrupt, "corrupted");
  expect_rate(c.reordered, c.delivered_frames, lc.reorder, "reordered");

  // Each flipped bit is seen by the receiver; intact frames identify themselves.
  const auto damaged =
      static_cast<uint64_t>(std::count_if(rx.begin(), rx.end(), [](const Rx& r) { return !r.intact; }));
  EXPECT_EQ(damaged, c.corrupted);
  std::map<uint64_t, int> copies;
  uint64_t overtaken = 0, highest = 0;
  for (const Rx& r : rx) {
    if (!r.intact) continue;
    ASSERT_LT(r.seq, kFrames);
    ++copies[r.seq];
    if (r.seq < highest) ++overtaken;
    highest = std::max(highest, r.seq);
  }
  EXPECT_GT(overtaken, c.reordered / 2);
  for (const auto& [seq, n] : copies) EXPECT_LE(n, 2) << "seq " << seq;
}

TEST(SimImpairments, SameSeedSameRunOtherSeedOtherRun) {
  const uint64_t seed = test_seed();
  SEED_TRACE(seed);
  const std::vector<Rx> first = run_lossy(seed, 20'000);
  const std::vector<Rx> again = run_lossy(seed, 20'000);
  const std::vector<Rx> other = run_lossy(seed + 1, 20'000);
  EXPECT_TRUE(first == again);
  EXPECT_FALSE(first == other);
}

TEST(SimQueue, TailDropsBeyondTheByteLimit) {
  // The first frame goes straight onto the wire; three more fit in 3000 bytes; six are dropped.
  Pair t(test_seed(), LinkConfig{.rate_bps = 10'000'000'000, .delay_ns = 100, .queue_limit_bytes = 3000});
  t.a.plan(mac_of(1), 10, 1000);
  EXPECT_EQ(t.net.run_until({}), RunStatus::kIdle);
  EXPECT_EQ(t.ab.counters().queue_dropped, 6u);
  ASSERT_EQ(t.b.rx.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(t.b.rx[i].seq, i);
  expect_all_returned(t.net);
}

TEST(SimQueue, TxRingRefusesAndWakesTheSender) {
  Pair t(test_seed(), LinkConfig{}, PortConfig{.tx_ring_frames = 4});
  PktBuf* b[10];
  ASSERT_EQ(t.pa.alloc_burst(b, 10), 10);
  for (PktBuf* x : b) x->len = 64;
  EXPECT_EQ(t.pa.tx_burst(b, 10), 5);  // one on the wire, four waiting
  t.pa.free_burst(b + 5, 5);
  t.a.plan(mac_of(1), 1000, 200);  // now let the node push through the small ring
  EXPECT_EQ(t.net.run_until({}), RunStatus::kIdle);
  EXPECT_TRUE(t.a.done_sending());
  EXPECT_EQ(t.b.rx.size(), 1005u);
  EXPECT_GT(t.pa.counters().tx_refused, 5u);
  expect_all_returned(t.net);
}

TEST(SimOwnership, PoolExhaustionAndReturn) {
  SimNetwork net(test_seed());
  SimPort& p = net.add_port({.mac = mac_of(0), .pool_frames = 10});
  PktBuf* b[kBurst];
  EXPECT_EQ(p.alloc_burst(b, kBurst), 10);
  EXPECT_EQ(p.alloc_burst(b + 10, 1), 0);
  EXPECT_EQ(p.tx_burst(b, 10), 0);  // not wired: the caller keeps them
  p.free_burst(b, 10);
  EXPECT_EQ(p.pool().available(), 10u);
  EXPECT_DEATH(
      {
        p.alloc_burst(b, 1);
        p.free_burst(b, 1);
        p.free_burst(b, 1);
      },
      "double free");
}

TEST(SimOwnership, ReceiverWithoutBuffersDropsAndRecovers) {
  Pair t(test_seed(), LinkConfig{}, PortConfig{}, PortConfig{.pool_frames = 8});
  t.b.hold_rx = true;
  t.a.plan(mac_of(1), 20, 100);
  EXPECT_EQ(t.net.run_until({}), RunStatus::kIdle);
  EXPECT_EQ(t.b.rx.size(), 8u);
  EXPECT_EQ(t.pb.counters().rx_no_buffer, 12u);
  t.b.release_held();
  expect_all_returned(t.net);
}

struct Star {
  SimNetwork net;
  SimSwitch& sw;
  std::vector<std::unique_ptr<TestNode>> nodes;
  Star(uint64_t seed, size_t n, const LinkConfig& lc) : net(seed), sw(net.add_switch()) {
    for (uint32_t i = 0; i < n; ++i) {
      SimPort& p = net.add_port({.mac = mac_of(i)});
      net.attach(p, sw, lc);
      nodes.push_back(std::make_unique<TestNode>(net, p, i));
    }
  }
};

TEST(SimSwitchTest, ForwardsByMacAmongFourNodes) {
  constexpr uint32_t kNodes = 4, kEach = 50;
  Star s(test_seed(), kNodes, LinkConfig{.rate_bps = 25'000'000'000, .delay_ns = 300});
  for (uint32_t i = 0; i < kNodes; ++i)
    for (uint32_t k = 0; k < kEach; ++k)
      for (uint32_t j = 0; j < kNodes; ++j)
        if (j != i) s.nodes[i]->plan(mac_of(j), 1, static_cast<uint16_t>(64 + 100 * j));
  EXPECT_EQ(s.net.run_until({}), RunStatus::kIdle);
  EXPECT_EQ(s.sw.counters().forwarded, kNodes * (kNodes - 1) * kEach);
  for (uint32_t j = 0; j < kNodes; ++j) {
    const TestNode& n = *s.nodes[j];
    ASSERT_EQ(n.rx.size(), (kNodes - 1) * kEach) << "node " << j;
    std::map<uint32_t, std::vector<uint64_t>> by_src;
    for (const Rx& r : n.rx) {
      EXPECT_TRUE(r.intact);
      EXPECT_EQ(r.dst, mac_of(j));
      by_src[r.src].push_back(r.seq);
    }
    EXPECT_EQ(by_src.count(j), 0u);
    for (const auto& [src, seqs] : by_src) {
      EXPECT_EQ(seqs.size(), kEach) << "from " << src;
      EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end())) << "FIFO per path";
    }
  }
  expect_all_returned(s.net);
}

TEST(SimSwitchTest, FloodsBroadcastDropsUnknownAndLearns) {
  Star s(test_seed(), 3, LinkConfig{});
  SimPort& quiet = s.net.add_port({});  // MAC unknown to the switch until it sends
  s.net.attach(quiet, s.sw, LinkConfig{});
  TestNode q(s.net, quiet, 3);
  q.set_src_mac(mac_of(3));
  s.nodes[0]->plan(0xffffffffffffULL, 1, 64);
  s.nodes[0]->plan(mac_of(3), 1, 64);  // unknown yet: dropped
  EXPECT_EQ(s.net.run_until({}), RunStatus::kIdle);
  EXPECT_EQ(s.sw.counters().flooded, 1u);
  EXPECT_EQ(s.sw.counters().unknown_dst, 1u);
  EXPECT_EQ(s.nodes[1]->rx.size(), 1u);
  EXPECT_EQ(s.nodes[2]->rx.size(), 1u);
  EXPECT_EQ(q.rx.size(), 1u);  // the broadcast
  q.plan(mac_of(0), 1, 64);    // teaches the switch mac_of(3)
  s.nodes[0]->plan(mac_of(3), 1, 64);
  s.nodes[0]->pace(s.net.now_ns() + 10'000, 0);
  EXPECT_EQ(s.net.run_until({}), RunStatus::kIdle);
  EXPECT_EQ(q.rx.size(), 2u);
  EXPECT_EQ(s.sw.counters().unknown_dst, 1u);
  expect_all_returned(s.net);
}

TEST(SimOwnership, EverythingReturnsAfterImpairedSwitchedTraffic) {
  const uint64_t seed = test_seed();
  SEED_TRACE(seed);
  LinkConfig lc = lossy_link();
  lc.queue_limit_bytes = 20'000;
  Star s(seed, 3, lc);
  for (uint32_t i = 0; i < 3; ++i) {  // 1 and 2 both send to 0: its egress queue overflows
    s.nodes[i]->plan(mac_of(i == 0 ? 1 : 0), 2000, 500);
    s.nodes[i]->plan(0xffffffffffffULL, 50, 64);
  }
  EXPECT_EQ(s.net.run_until({}), RunStatus::kIdle);
  uint64_t dropped = 0;
  for (const auto& l : s.net.links()) dropped += l->counters().queue_dropped;
  EXPECT_GT(dropped, 0u);
  expect_all_returned(s.net);
  EXPECT_EQ(s.net.events().size(), 0u);
}

}  // namespace
}  // namespace uroce::sim
