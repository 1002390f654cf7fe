// `uroce stats` and `uroce capture` without DPDK: the pcap writer, the capture ring and tap, an engine's
// control endpoint over a transport Device on a fake port (talked to through the tool's own client), and
// the tool's option parsing, endpoint discovery and table layout.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "provider/capture.h"
#include "provider/control.h"
#include "tests/support/pcap_io.h"
#include "tools/observe/ctl_client.h"
#include "tools/observe/observe_args.h"
#include "tools/observe/stats_format.h"
#include "tools/uroce/cli.h"

namespace uroce {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using provider::CaptureRing;
using provider::CaptureTap;
using provider::ControlEndpoint;
using provider::ControlSource;
using provider::PcapWriter;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/uroce-observe-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<uint8_t> frame(size_t len, uint8_t seed) {
  std::vector<uint8_t> f(len);
  for (size_t i = 0; i < len; ++i) f[i] = static_cast<uint8_t>(seed + i);
  return f;
}

// A port that owns a few buffers, accepts at most `accept` frames per tx_burst and hands out queued frames.
class FakePort final : public PacketIo {
 public:
  FakePort() {
    for (auto& s : storage_) free_.push_back(&bufs_[free_.size()]), free_.back()->data = s.data();
    for (auto* b : free_) b->cap = kCap;
  }
  uint16_t alloc_burst(PktBuf** out, uint16_t n) override {
    uint16_t k = 0;
    while (k < n && !free_.empty()) {
      out[k] = free_.back();
      out[k]->len = 0;
      free_.pop_back();
      ++k;
    }
    return k;
  }
  uint16_t tx_burst(PktBuf** b, uint16_t n) override {
    const uint16_t k = std::min<uint16_t>(n, accept);
    for (uint16_t i = 0; i < k; ++i) {
      sent.emplace_back(b[i]->data, b[i]->data + b[i]->len);
      free_.push_back(b[i]);
    }
    return k;
  }
  uint16_t rx_burst(PktBuf** out, uint16_t n) override {
    uint16_t k = 0;
    while (k < n && !incoming.empty() && alloc_burst(&out[k], 1) == 1) {
      std::copy(incoming.front().begin(), incoming.front().end(), out[k]->data);
      out[k]->len = static_cast<uint16_t>(incoming.front().size());
      incoming.pop_front();
      ++k;
    }
    return k;
  }
  void free_burst(PktBuf** b, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) free_.push_back(b[i]);
  }
  uint16_t max_frame() const override { return kCap; }

  uint16_t accept = kBurst;
  std::vector<std::vector<uint8_t>> sent;
  std::deque<std::vector<uint8_t>> incoming;

 private:
  static constexpr uint16_t kCap = 512;
  std::array<std::array<uint8_t, kCap>, 64> storage_;
  std::array<PktBuf, 64> bufs_;
  std::vector<PktBuf*> free_;
};

// Sends frames through the tap as a Device would: allocated from the port, filled, transmitted.
uint16_t send_frames(CaptureTap& tap, const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<PktBuf*> b(frames.size());
  const uint16_t n = tap.alloc_burst(b.data(), static_cast<uint16_t>(b.size()));
  for (uint16_t i = 0; i < n; ++i) {
    std::copy(frames[i].begin(), frames[i].end(), b[i]->data);
    b[i]->len = static_cast<uint16_t>(frames[i].size());
  }
  const uint16_t k = tap.tx_burst(b.data(), n);
  tap.free_burst(b.data() + k, static_cast<uint16_t>(n - k));
  return k;
}

std::vector<std::vector<uint8_t>> drain_all(CaptureRing& ring) {
  std::vector<std::vector<uint8_t>> out;
  ring.drain(
      [&](uint64_t, const uint8_t* d, uint32_t cap_len, uint32_t) { out.emplace_back(d, d + cap_len); });
  return out;
}

TEST(Pcap, WriterOutputReadsBackThroughLibpcap) {
  TempDir dir;
  const std::string path = (dir.path / "w.pcap").string();
  PcapWriter w;
  ASSERT_EQ(w.open(path, 4224), "");
  const auto a = frame(60, 1), b = frame(300, 7);
  ASSERT_TRUE(w.write(1'700'000'000'123'456'789ull, a.data(), 60, 60));
  ASSERT_TRUE(w.write(1'700'000'001'000'000'001ull, b.data(), 100, 300));  // snapped
  EXPECT_EQ(w.close(), "");
  EXPECT_EQ(w.records(), 2u);
  const test::PcapFile f = test::read_pcap(path);
  EXPECT_EQ(f.linktype, 1);  // DLT_EN10MB
  ASSERT_EQ(f.frames.size(), 2u);
  EXPECT_EQ(f.frames[0].bytes, a);
  EXPECT_EQ(f.frames[1].bytes, std::vector<uint8_t>(b.begin(), b.begin() + 100));
  // File header: nanosecond magic, version 2.4, snaplen, LINKTYPE_ETHERNET; then the first record's time.
  std::ifstream in(path, std::ios::binary);
  uint32_t h[10];
  in.read(reinterpret_cast<char*>(h), sizeof(h));
  EXPECT_EQ(h[0], 0xa1b23c4du);
  EXPECT_EQ(h[1], 2u | (4u << 16));
  EXPECT_EQ(h[4], 4224u);
  EXPECT_EQ(h[5], 1u);
  EXPECT_EQ(h[6], 1'700'000'000u);
  EXPECT_EQ(h[7], 123'456'789u);
  EXPECT_EQ(h[8], 60u);
}

TEST(Pcap, OpenNamesAnUnwritablePath) {
  PcapWriter w;
  const std::string err = w.open("/nonexistent-dir/x.pcap", 100);
  EXPECT_NE(err.find("/nonexistent-dir/x.pcap"), std::string::npos) << err;
}

TEST(CaptureRing, DropsWhenFullAndStopsAtTheLimit) {
  CaptureRing ring(4, 64, 6);
  std::vector<std::vector<uint8_t>> frames;
  std::vector<PktBuf> bufs(5);
  std::vector<PktBuf*> ptrs;
  for (int i = 0; i < 5; ++i) {
    frames.push_back(frame(40 + i, static_cast<uint8_t>(i)));
    bufs[i].data = frames[i].data();
    bufs[i].len = static_cast<uint16_t>(frames[i].size());
    ptrs.push_back(&bufs[i]);
  }
  // Five frames into four slots: four kept, one dropped.
  ring.publish(ring.stage(ptrs.data(), 5, 1), 5);
  EXPECT_EQ(ring.dropped(), 1u);
  EXPECT_FALSE(ring.limit_reached());
  const auto got = drain_all(ring);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3], frames[3]);
  // One more frame of the limit of six is left: the rest of the burst is neither kept nor dropped.
  ring.publish(ring.stage(ptrs.data(), 3, 2), 3);
  EXPECT_TRUE(ring.limit_reached());
  EXPECT_EQ(ring.dropped(), 1u);
  EXPECT_EQ(drain_all(ring).size(), 1u);
  ring.publish(ring.stage(ptrs.data(), 3, 3), 3);
  EXPECT_EQ(drain_all(ring).size(), 0u);
}

TEST(CaptureRing, KeepsSnaplenBytes) {
  CaptureRing ring(8, 16, 0);
  auto f = frame(100, 3);
  PktBuf b;
  b.data = f.data();
  b.len = 100;
  PktBuf* p = &b;
  ring.publish(ring.stage(&p, 1, 5), 1);
  uint32_t orig = 0;
  std::vector<uint8_t> got;
  ring.drain([&](uint64_t, const uint8_t* d, uint32_t cap_len, uint32_t o) {
    got.assign(d, d + cap_len);
    orig = o;
  });
  EXPECT_EQ(got, std::vector<uint8_t>(f.begin(), f.begin() + 16));
  EXPECT_EQ(orig, 100u);
}

TEST(CaptureTap, CapturesOnlyFramesThePortAccepted) {
  FakePort port;
  CaptureTap tap(&port);
  EXPECT_EQ(send_frames(tap, {frame(60, 0)}), 1);  // not armed: nothing recorded anywhere
  CaptureRing ring(16, 512, 0);
  tap.attach_locked(&ring);
  port.accept = 2;
  EXPECT_EQ(send_frames(tap, {frame(60, 1), frame(61, 2), frame(62, 3)}), 2);
  port.incoming.push_back(frame(70, 9));
  PktBuf* rx[4];
  ASSERT_EQ(tap.rx_burst(rx, 4), 1);
  tap.free_burst(rx, 1);
  tap.attach_locked(nullptr);
  EXPECT_EQ(send_frames(tap, {frame(60, 4)}), 1);
  const auto got = drain_all(ring);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], frame(60, 1));
  EXPECT_EQ(got[1], frame(61, 2));
  EXPECT_EQ(got[2], frame(70, 9));
  EXPECT_EQ(ring.dropped(), 0u);
  EXPECT_EQ(port.sent.size(), 4u);
}

// A Device with one RC QP on a FakePort behind a tap, and its control endpoint in a temporary directory.
class Endpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceConfig cfg;
    cfg.name = "uroce3";
    dev_ = std::make_unique<Device>(cfg, &tap_, &clock_);
    ASSERT_EQ(dev_->alloc_pd(&pd_), 0);
    ASSERT_EQ(dev_->create_cq(16, &cq_), 0);
    QpInitAttr init;
    init.send_cq = init.recv_cq = cq_;
    init.cap = QpCap{4, 4, 1, 1, 0};
    ASSERT_EQ(dev_->create_qp(pd_, init, &qp_), 0);
    ControlSource src{
        "uroce3",
        "fake",
        &mu_,
        dev_.get(),
        &tap_,
        [this] { return std::vector<uint32_t>{qp_->qpn()}; },
        [] {
          return std::vector<std::pair<std::string, uint64_t>>{{"rx_frames", 7}, {"link_up", 1}};
        },
        {}};
    std::string err;
    ep_ = ControlEndpoint::start(src, &err, dir_.path.string());
    ASSERT_TRUE(ep_) << err;
    target_.pid = getpid();
    target_.dev = "uroce3";
    target_.socket = ep_->path();
  }
  void TearDown() override {
    ep_.reset();
    if (dev_) dev_->destroy_qp(qp_);
  }

  // Frames the device receives (garbage: each is counted as a drop) through one progress pass.
  void receive(size_t n) {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < n; ++i) port_.incoming.push_back(frame(20, static_cast<uint8_t>(i)));
    dev_->progress();
  }

  json wait_inactive(tools::ControlClient& c) {
    for (int i = 0; i < 500; ++i) {
      json st = c.request({{"cmd", "capture_status"}});
      if (!st.value("active", true)) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return json{};
  }

  TempDir dir_;
  FakePort port_;
  CaptureTap tap_{&port_};
  SteadyClock clock_;
  provider::DeviceLock mu_;
  std::unique_ptr<Device> dev_;
  Pd* pd_ = nullptr;
  Cq* cq_ = nullptr;
  Qp* qp_ = nullptr;
  std::unique_ptr<ControlEndpoint> ep_;
  tools::Endpoint target_;
};

TEST_F(Endpoint, SocketIsNamedByPidAndDeviceAndRemovedAtClose) {
  EXPECT_EQ(fs::path(ep_->path()).filename().string(), std::to_string(getpid()) + "-uroce3.sock");
  EXPECT_TRUE(fs::is_socket(ep_->path()));
  const std::string p = ep_->path();
  ep_.reset();
  EXPECT_FALSE(fs::exists(p));
}

TEST_F(Endpoint, StatsListDeviceCountersDropsPortAndQps) {
  receive(3);
  tools::ControlClient c(target_);
  const json r = c.request({{"cmd", "stats"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(r["pid"], getpid());
  EXPECT_EQ(r["dev"], "uroce3");
  EXPECT_EQ(r["port"], "fake");
  EXPECT_EQ(r["device"].size(), static_cast<size_t>(Counter::kCount));
  EXPECT_EQ(r["device"]["tx_packets"], 0u);
  EXPECT_EQ(
      r["rx_drops"]["truncated_eth"].get<uint64_t>() + r["rx_drops"]["not_ip_ethertype"].get<uint64_t>(), 3u);
  EXPECT_EQ(r["port_stats"]["rx_frames"], 7u);
  ASSERT_EQ(r["qps"].size(), 1u);
  const json& q = r["qps"][0];
  EXPECT_EQ(q["qpn"], qp_->qpn());
  EXPECT_EQ(q["type"], "RC");
  EXPECT_EQ(q["state"], "RESET");
  for (const char* k : {"tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "retransmitted_packets",
                        "local_ack_timeouts", "rnr_nak_received", "seq_err_nak_sent", "duplicate_request",
                        "out_of_sequence", "cnp_handled", "cc_rate_bps"})
    EXPECT_TRUE(q.contains(k)) << k;
  EXPECT_FALSE(r["capture"]["active"]);
  // The same connection serves several requests.
  EXPECT_TRUE(c.request({{"cmd", "stats"}}).value("ok", false));
}

// The standard (mlx5/rxe, IB PMA) names: unique, and each the uroce counter it names (PMA data in words).
TEST(StdCounters, NamesAreUniqueAndMapToTheirSource) {
  Counters c;
  for (size_t i = 0; i < static_cast<size_t>(Counter::kCount); ++i) c.n[i] = 1000 + 8 * i;
  std::set<std::string> names;
  for (const StdCounter& s : kStdCounters) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_EQ(std_counter_value(s, c), c[s.src] / s.divisor) << s.name;
  }
  auto value = [&](const char* name) {
    for (const StdCounter& s : kStdCounters)
      if (std::string(s.name) == name) return std_counter_value(s, c);
    ADD_FAILURE() << name << " missing";
    return uint64_t{0};
  };
  EXPECT_EQ(value("np_cnp_sent"), c[Counter::kCnpSent]);
  EXPECT_EQ(value("rp_cnp_handled"), c[Counter::kCnpRcvd]);
  EXPECT_EQ(value("local_ack_timeout_err"), c[Counter::kTimeouts]);
  EXPECT_EQ(value("port_xmit_data"), c[Counter::kTxBytes] / 4);
  EXPECT_EQ(value("port_rcv_packets"), c[Counter::kRxPackets]);
}

// In the stats reply beside uroce's own names, and alone in the hw_counters reply.
TEST_F(Endpoint, StandardCounterNamesInStatsAndHwCounters) {
  receive(3);
  tools::ControlClient c(target_);
  const json st = c.request({{"cmd", "stats"}});
  EXPECT_EQ(st["hw_counters"].size() + st["counters"].size(), kStdCounterCount);
  for (const StdCounter& s : kStdCounters) {
    const json& group = st[s.kind == StdCounterKind::kHw ? "hw_counters" : "counters"];
    ASSERT_TRUE(group.contains(s.name)) << s.name;
    EXPECT_EQ(group[s.name], st["device"][counter_name(s.src)].get<uint64_t>() / s.divisor) << s.name;
  }
  const json hw = c.request({{"cmd", "hw_counters"}});
  ASSERT_TRUE(hw.value("ok", false)) << hw.dump();
  EXPECT_EQ(hw["dev"], "uroce3");
  EXPECT_EQ(hw["port"], 1);
  EXPECT_EQ(hw["hw_counters"], st["hw_counters"]);
  EXPECT_EQ(hw["counters"], st["counters"]);
  EXPECT_FALSE(hw.contains("device"));
}

TEST_F(Endpoint, BadRequestsGetAnErrorAndTheConnectionStays) {
  tools::ControlClient c(target_);
  json r = c.request({{"cmd", "reboot"}});
  EXPECT_FALSE(r.value("ok", true));
  EXPECT_NE(r.value("error", "").find("reboot"), std::string::npos);
  r = c.request({{"nocmd", 1}});
  EXPECT_FALSE(r.value("ok", true));
  r = c.request({{"cmd", "capture_start"}, {"path", "relative.pcap"}});
  EXPECT_NE(r.value("error", "").find("absolute"), std::string::npos) << r.dump();
  r = c.request({{"cmd", "capture_start"}, {"path", "/tmp/x.pcap"}, {"snaplen", -3}});
  EXPECT_NE(r.value("error", "").find("snaplen"), std::string::npos) << r.dump();
  r = c.request({{"cmd", "capture_stop"}});
  EXPECT_FALSE(r.value("ok", true));
  EXPECT_TRUE(c.request({{"cmd", "stats"}}).value("ok", false));
}

TEST_F(Endpoint, CaptureStopsAtCountAndWritesBothDirections) {
  const std::string path = (dir_.path / "c.pcap").string();
  tools::ControlClient c(target_);
  json r = c.request({{"cmd", "capture_start"}, {"path", path}, {"count", 3}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(r["snaplen"], 512u);  // the port's largest frame
  EXPECT_FALSE(c.request({{"cmd", "capture_start"}, {"path", path}}).value("ok", true));  // one at a time
  {
    std::lock_guard lock(mu_);
    send_frames(tap_, {frame(60, 100), frame(64, 101)});
  }
  receive(2);
  const json st = wait_inactive(c);
  EXPECT_EQ(st.value("frames", 0u), 3u) << st.dump();
  EXPECT_TRUE(st.value("limit_reached", false));
  r = c.request({{"cmd", "capture_stop"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(r["frames"], 3u);
  EXPECT_EQ(r["dropped"], 0u);
  const test::PcapFile f = test::read_pcap(path);
  ASSERT_EQ(f.frames.size(), 3u);
  EXPECT_EQ(f.frames[0].bytes, frame(60, 100));
  EXPECT_EQ(f.frames[1].bytes, frame(64, 101));
  EXPECT_EQ(f.frames[2].bytes, frame(20, 0));
}

TEST_F(Endpoint, CaptureEndsWhenItsClientGoesAway) {
  const std::string path = (dir_.path / "gone.pcap").string();
  {
    tools::ControlClient c(target_);
    ASSERT_TRUE(c.request({{"cmd", "capture_start"}, {"path", path}}).value("ok", false));
    receive(2);
  }
  tools::ControlClient other(target_);
  const json st = wait_inactive(other);
  EXPECT_EQ(st.value("frames", 0u), 2u) << st.dump();
  EXPECT_EQ(test::read_pcap(path).frames.size(), 2u);
  // The tap is disarmed: later frames go to no ring.
  receive(1);
  EXPECT_EQ(test::read_pcap(path).frames.size(), 2u);
}

TEST(ControlEndpoint, OffWithUroceControl0) {
  setenv("UROCE_CONTROL", "0", 1);
  provider::DeviceLock mu;
  std::string err = "x";
  EXPECT_EQ(
      ControlEndpoint::start(ControlSource{"uroce0", "", &mu, nullptr, nullptr, {}, {}, {}}, &err, "/tmp"),
      nullptr);
  EXPECT_EQ(err, "");
  unsetenv("UROCE_CONTROL");
}

// docs/observability.md explains every counter `uroce stats` can print.
TEST(ObserveDocs, NameEveryCounter) {
  std::ifstream in(UROCE_OBSERVABILITY_DOC);
  ASSERT_TRUE(in) << UROCE_OBSERVABILITY_DOC;
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto documented = [&](const std::string& name) { return doc.find("`" + name + "`") != std::string::npos; };
  for (size_t i = 0; i < static_cast<size_t>(Counter::kCount); ++i)
    EXPECT_TRUE(documented(counter_name(static_cast<Counter>(i)))) << counter_name(static_cast<Counter>(i));
  for (size_t i = 1; i < static_cast<size_t>(wire::RxDrop::kCount); ++i)
    EXPECT_TRUE(documented(wire::rx_drop_name(static_cast<wire::RxDrop>(i))))
        << wire::rx_drop_name(static_cast<wire::RxDrop>(i));
  provider::DeviceLock mu;
  FakePort port;
  SteadyClock clock;
  Device dev(DeviceConfig{}, &port, &clock);
  Pd* pd;
  Cq* cq;
  Qp* qp;
  ASSERT_EQ(dev.alloc_pd(&pd), 0);
  ASSERT_EQ(dev.create_cq(4, &cq), 0);
  QpInitAttr init;
  init.send_cq = init.recv_cq = cq;
  ASSERT_EQ(dev.create_qp(pd, init, &qp), 0);
  const json r = json::parse(provider::stats_json(ControlSource{
      "uroce0", "", &mu, &dev, nullptr, [&] { return std::vector<uint32_t>{qp->qpn()}; }, {}, {}}));
  ASSERT_EQ(r["qps"].size(), 1u);
  for (const auto& [name, v] : r["qps"][0].items())
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos) << name;
  dev.destroy_qp(qp);
}

TEST(ObserveTool, ParsesSocketNames) {
  auto e = tools::parse_socket_name("1234-uroce0.sock");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->pid, 1234);
  EXPECT_EQ(e->dev, "uroce0");
  for (const char* bad :
       {"uroce0.sock", "-uroce0.sock", "12x-uroce0.sock", "1234-.sock", "1234-uroce0", "0-u.sock"})
    EXPECT_FALSE(tools::parse_socket_name(bad)) << bad;
}

TEST(ObserveTool, FindEndpointsFiltersAndRemovesSocketsOfDeadProcesses) {
  TempDir dir;
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const pid_t me = getpid();
  for (const std::string& n : {std::to_string(dead) + "-uroce0.sock", std::to_string(me) + "-uroce0.sock",
                               std::to_string(me) + "-uroce1.sock", std::string("notes.txt")})
    std::ofstream(dir.path / n) << "";
  auto all = tools::find_endpoints(dir.path, 0, "");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].dev, "uroce0");
  EXPECT_EQ(all[1].dev, "uroce1");
  EXPECT_FALSE(all[0].comm.empty());
  EXPECT_FALSE(fs::exists(dir.path / (std::to_string(dead) + "-uroce0.sock")));
  EXPECT_TRUE(fs::exists(dir.path / "notes.txt"));
  EXPECT_EQ(tools::find_endpoints(dir.path, me, "uroce1").size(), 1u);
  EXPECT_EQ(tools::find_endpoints(dir.path, me + 1, "").size(), 0u);
}

TEST(ObserveTool, TableHidesZeroCountersUnlessAll) {
  const json r = json::parse(R"({"pid":42,"comm":"ib_write_bw","dev":"uroce0","gid":"g","port":"memif",
    "time_ns":2000000000,"device":{"tx_packets":10,"tx_bytes":0,"bad_thing":0},"rx_drops":{"bad_icrc":2},
    "port_stats":{"rx_frames":5,"link_up":1},
    "qps":[{"qpn":17,"type":"RC","state":"RTS","dest_qpn":18,"tx_packets":9,"tx_bytes":900,"rx_packets":0,
            "rx_bytes":0,"retransmitted_packets":4,"out_of_sequence":0,"detail":"qp 17 RTS"}],
    "capture":{"active":false}})");
  const std::string t = tools::format_stats(r, nullptr, {});
  EXPECT_NE(t.find("pid 42 (ib_write_bw) uroce0"), std::string::npos) << t;
  EXPECT_NE(t.find("tx_packets"), std::string::npos);
  EXPECT_EQ(t.find("bad_thing"), std::string::npos) << t;
  EXPECT_NE(t.find("bad_icrc"), std::string::npos);
  EXPECT_NE(t.find("port (link up)"), std::string::npos);
  EXPECT_NE(t.find("retransmitted_packets=4"), std::string::npos) << t;
  EXPECT_EQ(t.find("out_of_sequence"), std::string::npos) << t;
  EXPECT_EQ(t.find("qp 17 RTS"), std::string::npos);
  const std::string all = tools::format_stats(r, nullptr, {true});
  EXPECT_NE(all.find("bad_thing"), std::string::npos);
  EXPECT_NE(all.find("out_of_sequence=0"), std::string::npos);
  EXPECT_NE(all.find("qp 17 RTS"), std::string::npos);
  // --watch: a rate for counters that moved since the previous reply (1 s earlier).
  json prev = r;
  prev["time_ns"] = 1000000000;
  prev["device"]["tx_packets"] = 4;
  EXPECT_NE(tools::format_stats(r, &prev, {}).find("6/s"), std::string::npos)
      << tools::format_stats(r, &prev, {});
}

TEST(ObserveTool, SiNumbers) {
  EXPECT_EQ(tools::si_number(12), "12");
  EXPECT_EQ(tools::si_number(12345), "12.3 k");
  EXPECT_EQ(tools::si_number(2.5e9), "2.5 G");
}

TEST(ObserveTool, Options) {
  using V = std::vector<std::string>;
  auto s = tools::parse_stats_args(V{"--pid", "12", "--dev=uroce1", "--json", "--all", "--watch", "0.5"});
  EXPECT_EQ(s.pid, 12);
  EXPECT_EQ(s.dev, "uroce1");
  EXPECT_TRUE(s.json && s.all);
  EXPECT_DOUBLE_EQ(s.watch_s, 0.5);
  auto c = tools::parse_capture_args(V{"-w", "f.pcap", "-c", "200", "--duration=3", "-s", "128"});
  EXPECT_EQ(c.file, "f.pcap");
  EXPECT_EQ(c.count, 200u);
  EXPECT_DOUBLE_EQ(c.duration_s, 3);
  EXPECT_EQ(c.snaplen, 128u);
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const tools::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { tools::parse_stats_args(V{"--watch", "0"}); }).find("--watch"), std::string::npos);
  EXPECT_NE(message([&] { tools::parse_stats_args(V{"--pid", "x"}); }).find("--pid"), std::string::npos);
  EXPECT_NE(message([&] { tools::parse_stats_args(V{"--dev", "eth0"}); }).find("--dev"), std::string::npos);
  EXPECT_NE(message([&] { tools::parse_stats_args(V{"--bogus"}); }).find("--bogus"), std::string::npos);
  EXPECT_NE(message([&] { tools::parse_capture_args(V{"-c", "5"}); }).find("-w"), std::string::npos);
  EXPECT_NE(message([&] {
              tools::parse_capture_args(V{"-w", "f", "-c", "0"});
            }).find("-c"),
            std::string::npos);
  EXPECT_NE(message([&] { tools::parse_capture_args(V{"-w"}); }).find("-w"), std::string::npos);
}

}  // namespace
}  // namespace uroce
