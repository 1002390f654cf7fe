// uroced's random-loss knob (loss=P): the per-frame Bernoulli drop, its seeded stream, its config key and
// its own counter in the switch, without DPDK.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "tools/uroced/config.h"
#include "tools/uroced/egress.h"
#include "tools/uroced/switch_core.h"

namespace uroce::uroced {
namespace {

TEST(Loss, DropsAboutTheConfiguredFraction) {
  Loss loss(7);
  loss.configure(0.01);
  constexpr int kTrials = 200'000;
  int dropped = 0;
  for (int i = 0; i < kTrials; ++i) dropped += loss.drop();
  EXPECT_NEAR(dropped / double(kTrials), 0.01, 0.001);
}

TEST(Loss, ZeroNeverDropsOneAlwaysDropsAndTheSeedRepeats) {
  Loss off(3), all(3);
  all.configure(1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(off.drop());
    EXPECT_TRUE(all.drop());
  }
  Loss a(99), b(99), c(100);
  for (Loss* l : {&a, &b, &c}) l->configure(0.3);
  std::vector<bool> sa, sb, sc;
  for (int i = 0; i < 256; ++i) {
    sa.push_back(a.drop());
    sb.push_back(b.drop());
    sc.push_back(c.drop());
  }
  EXPECT_EQ(sa, sb);  // same seed, same choices
  EXPECT_NE(sa, sc);
}

TEST(LossConfig, KeyInFileCommandLineAndPortSections) {
  DaemonConfig dc;
  std::string err;
  ASSERT_TRUE(parse_config_text("loss = 0.01\n[port 127.1.0.2]\nloss = 0\n", "f.conf", &dc, &err)) << err;
  PortConfig pc;
  ASSERT_TRUE(port_config_for(dc, "127.1.0.3", &pc, &err)) << err;
  EXPECT_DOUBLE_EQ(pc.loss, 0.01);
  ASSERT_TRUE(port_config_for(dc, "127.1.0.2", &pc, &err)) << err;
  EXPECT_DOUBLE_EQ(pc.loss, 0);
  DaemonConfig cl;
  const char* argv[] = {"uroced", "--loss", "0.25"};
  ASSERT_TRUE(parse_args(3, const_cast<char**>(argv), &cl, &err)) << err;
  EXPECT_DOUBLE_EQ(cl.defaults.loss, 0.25);
  for (const char* bad : {"1.5", "-0.1", "1%", "", "nan"}) {
    PortConfig scratch;
    EXPECT_FALSE(apply_egress_key("loss", bad, &scratch, &err)) << bad;
    EXPECT_NE(err.find("loss"), std::string::npos) << err;
  }
}

// A port whose wire is a counter: every frame handed to it is counted and goes straight home.
class CountingPort : public PacketIo {
 public:
  CountingPort() {
    for (int i = 0; i < 64; ++i) {
      bufs_.push_back(std::make_unique<PktBuf>());
      room_.push_back(std::make_unique<uint8_t[]>(2048));
      bufs_.back()->data = room_.back().get();
      bufs_.back()->cap = 2048;
      bufs_.back()->impl = this;
      free_.push_back(bufs_.back().get());
    }
  }
  uint16_t alloc_burst(PktBuf** b, uint16_t n) override {
    uint16_t k = 0;
    for (; k < n && !free_.empty(); ++k) {
      b[k] = free_.back();
      free_.pop_back();
    }
    return k;
  }
  uint16_t tx_burst(PktBuf** b, uint16_t n) override {
    sent += n;
    free_burst(b, n);
    return n;
  }
  uint16_t rx_burst(PktBuf** b, uint16_t n) override {
    uint16_t k = 0;
    for (; k < n && !rx.empty(); ++k) {
      b[k] = rx.front();
      rx.pop_front();
    }
    return k;
  }
  void free_burst(PktBuf** b, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) static_cast<CountingPort*>(b[i]->impl)->free_.push_back(b[i]);
  }
  uint16_t max_frame() const override { return 2048; }
  void inject(const Mac& dst) {
    PktBuf* b = nullptr;
    ASSERT_EQ(alloc_burst(&b, 1), 1);
    std::memset(b->data, 0, 100);
    std::memcpy(b->data, dst.data(), 6);
    b->data[6] = 0x02;
    b->data[11] = 0x09;
    b->len = 100;
    rx.push_back(b);
  }
  size_t home() const { return free_.size(); }
  std::deque<PktBuf*> rx;
  uint64_t sent = 0;

 private:
  std::vector<std::unique_ptr<PktBuf>> bufs_;
  std::vector<std::unique_ptr<uint8_t[]>> room_;
  std::vector<PktBuf*> free_;
};

TEST(LossSwitch, EgressDropsAreCountedAsDropLossAndEveryBufferGoesHome) {
  CountingPort a, b;
  Switch sw(5);
  PortConfig lossy;
  lossy.loss = 0.1;
  sw.add_port(&a, "a", {}, 0);
  const int ib = sw.add_port(&b, "b", lossy, 0);
  const Mac to_b{0x02, 0x00, 0x7f, 0x01, 0x00, 0x02};
  sw.add_static_mac(to_b, ib);
  constexpr int kFrames = 20'000;
  for (int i = 0; i < kFrames; ++i) {
    a.inject(to_b);
    sw.poll(static_cast<uint64_t>(i));
  }
  const PortCounters& c = sw.counters(ib);
  EXPECT_EQ(c.drop_loss + b.sent, uint64_t{kFrames});
  EXPECT_EQ(c.tx_frames, b.sent);
  EXPECT_NEAR(c.drop_loss / double(kFrames), 0.1, 0.01);
  EXPECT_EQ(c.drop_queue_full, 0u);
  EXPECT_EQ(a.home(), 64u);  // dropped frames went back to their pool
  EXPECT_NE(format_counters(c, sw.config(ib)).find(" drop_loss=" + std::to_string(c.drop_loss) + " "),
            std::string::npos);
  EXPECT_NE(format_counters(c, sw.config(ib)).find(" loss=0.1 "), std::string::npos);

  // Switched off at run time (uroced --set loss=0): nothing more is dropped.
  PortConfig clean = sw.config(ib);
  clean.loss = 0;
  sw.configure_port(ib, clean, kFrames);
  const uint64_t before = c.drop_loss;
  for (int i = 0; i < 1000; ++i) {
    a.inject(to_b);
    sw.poll(static_cast<uint64_t>(kFrames + i));
  }
  EXPECT_EQ(sw.counters(ib).drop_loss, before);
}

}  // namespace
}  // namespace uroce::uroced
