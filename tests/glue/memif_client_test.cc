// uroce's own memif client (pmd_glue/memif_client.h) against DPDK's memif server PMD: frames of every size
// both ways, intact and in order, every buffer back home, the link going down and coming back; and against
// a scripted server in this file that breaks the protocol: what the client refuses, counts and survives.
#include "pmd_glue/memif_client.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "pmd_glue/dpdk_port.h"
#include "pmd_glue/link_drain.h"
#include "tests/glue/frame_exchange.h"

namespace uroce::glue {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::TempDir;
using Clock = std::chrono::steady_clock;

MemifClientConfig config(const std::string& sock) {
  MemifClientConfig c;
  c.socket = sock;
  c.log2_ring = 8;
  c.buffers = 1024;
  return c;
}

std::unique_ptr<MemifClient> client_or_fail(const MemifClientConfig& cfg) {
  std::string err;
  auto c = MemifClient::create(cfg, &err);
  EXPECT_NE(c, nullptr) << err;
  return c;
}

// Services the client (its control channel) while waiting for `done`, for at most `limit`.
template <typename Done>
bool serve_until(MemifClient& c, Done done, milliseconds limit = milliseconds(3000)) {
  const auto until = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= until) return false;
    c.service();
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// Sends test frames of lens[i] (seq i) from tx and expects them on rx in order and intact, at most
// `window` in flight; the client's control channel is served throughout. "" or what went wrong.
std::string exchange(PacketIo& tx, PacketIo& rx, MemifClient& client, const std::vector<uint16_t>& lens,
                     uint32_t tag, unsigned window = 128) {
  const wire::MacAddr mac{2, 0, 0, 0, 0, 1};
  uint32_t sent = 0, got = 0;
  PktBuf* bufs[kBurst];
  auto progress = Clock::now();
  unsigned polls = 0;
  while (got < lens.size()) {
    if (++polls % 64 == 0) client.service();
    const uint32_t room =
        std::min<uint32_t>(window - (sent - got), static_cast<uint32_t>(lens.size()) - sent);
    if (room) {
      const uint16_t n = tx.alloc_burst(bufs, static_cast<uint16_t>(std::min<uint32_t>(room, kBurst)));
      for (uint16_t i = 0; i < n; ++i) test::fill_frame(bufs[i], mac, mac, tag, sent + i, lens[sent + i]);
      const uint16_t k = tx.tx_burst(bufs, n);
      tx.free_burst(bufs + k, n - k);
      sent += k;
    }
    const uint16_t r = rx.rx_burst(bufs, kBurst);
    std::string problem;
    for (uint16_t i = 0; i < r && problem.empty(); ++i) {
      uint32_t t = 0, seq = 0;
      if (!test::is_test_frame(*bufs[i], &t, &seq) || t != tag) continue;
      if (seq != got) problem = "expected frame " + std::to_string(got) + ", got " + std::to_string(seq);
      if (problem.empty()) problem = test::check_frame(*bufs[i], seq, lens[seq]);
      ++got;
      progress = Clock::now();
    }
    rx.free_burst(bufs, r);
    if (!problem.empty()) return problem;
    if (Clock::now() - progress > seconds(5))
      return "stalled: " + std::to_string(got) + " of " + std::to_string(lens.size()) + " arrived, " +
             std::to_string(sent) + " sent";
  }
  return "";
}

std::vector<uint16_t> every_size(uint16_t max) {
  std::vector<uint16_t> lens;
  for (int rep = 0; rep < 4; ++rep)
    for (uint16_t s : test::standard_sizes(max)) lens.push_back(s);
  for (int i = 0; i < 3000; ++i) lens.push_back(static_cast<uint16_t>(64 + (i * 7919) % (max - 63)));
  return lens;
}

std::unique_ptr<DpdkPort> dpdk_server(const std::string& sock) {
  std::string err;
  auto p = DpdkPort::open("memif:socket=" + sock + ",role=server,wait=0", &err);
  EXPECT_NE(p, nullptr) << err;
  return p;
}

// A client linked to DPDK's memif server PMD in this process.
class DpdkServerLink : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server && client);
    ASSERT_TRUE(client->wait_link_up(seconds(5))) << client->last_disconnect();
    ASSERT_TRUE(serve_until(*client, [&] { return server->link_up(); }));
  }
  TempDir dir;
  std::unique_ptr<DpdkPort> server = dpdk_server(dir.file("m.sock"));
  std::unique_ptr<MemifClient> client = client_or_fail(config(dir.file("m.sock")));
};

TEST_F(DpdkServerLink, EverySizeBothWaysEveryBufferHome) {
  EXPECT_EQ(client->max_frame(), kMaxFrame);
  const auto lens = every_size(kMaxFrame);
  EXPECT_EQ(exchange(*client, *server, *client, lens, 0xC1), "");
  EXPECT_EQ(exchange(*server, *client, *client, lens, 0x5E), "");
  EXPECT_EQ(client->client_stats().rx_bad, 0u);
  EXPECT_GE(client->client_stats().tx_frames, lens.size());
  EXPECT_GE(client->client_stats().rx_frames, lens.size());
  EXPECT_EQ(client->client_stats().interrupts, 0u) << "DPDK's server polls: it masks the ring's interrupt";

  // The server goes: the client sees its link go down and takes every buffer in the rings back.
  server.reset();
  ASSERT_TRUE(serve_until(*client, [&] { return !client->link_up(); })) << "the link stayed up";
  EXPECT_EQ(client->free_buffers(), client->buffers());
  EXPECT_EQ(client->client_stats().disconnects, 1u);
  EXPECT_NE(client->last_disconnect(), "");
  PktBuf* b;
  ASSERT_EQ(client->alloc_burst(&b, 1), 1);
  b->len = 64;
  EXPECT_EQ(client->tx_burst(&b, 1), 0) << "a down link takes nothing; the caller keeps the buffer";
  client->free_burst(&b, 1);

  // A new server on the same socket: the client connects again by itself, and frames flow.
  server = dpdk_server(dir.file("m.sock"));
  ASSERT_TRUE(server);
  ASSERT_TRUE(client->wait_link_up(seconds(5))) << client->last_disconnect();
  ASSERT_TRUE(serve_until(*client, [&] { return server->link_up(); }));
  const std::vector<uint16_t> some(500, 1500);
  EXPECT_EQ(exchange(*client, *server, *client, some, 0xC2), "");
  EXPECT_EQ(exchange(*server, *client, *client, some, 0x5F), "");
  EXPECT_EQ(client->client_stats().connects, 2u);
  EXPECT_EQ(server->pool_available(), server->pool_size());
}

// Sends `n` test frames tagged `tag` from tx, then closes `closing` (tx itself) on another thread while
// this one polls rx: true once rx got all of them in order and the close returned. The close must not
// return in the first 100 ms, when rx has read nothing yet.
template <typename Closing>
bool send_close_and_read(PacketIo& tx, PacketIo& rx, std::unique_ptr<Closing>& closing, uint32_t tag) {
  const wire::MacAddr mac{2, 0, 0, 0, 0, 1};
  constexpr uint16_t kFrames = 20;
  PktBuf* bufs[kBurst];
  if (tx.alloc_burst(bufs, kFrames) != kFrames) return false;
  for (uint16_t i = 0; i < kFrames; ++i) test::fill_frame(bufs[i], mac, mac, tag, i, 200);
  if (tx.tx_burst(bufs, kFrames) != kFrames) return false;
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    closing.reset();
    closed = true;
  });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(closed) << "the sender closed before its peer had read anything";
  uint16_t got = 0;
  const auto deadline = Clock::now() + seconds(10);
  while ((got < kFrames || !closed) && Clock::now() < deadline) {
    const uint16_t n = rx.rx_burst(bufs, kBurst);
    for (uint16_t i = 0; i < n; ++i) {
      uint32_t t = 0, seq = 0;
      if (test::is_test_frame(*bufs[i], &t, &seq) && t == tag) {
        EXPECT_EQ(seq, got);
        ++got;
      }
    }
    rx.free_burst(bufs, n);
  }
  closer.join();
  return got == kFrames;
}

// A closing end waits until the other has read what it sent (the link drain of link_drain.h), both ways:
// the client asks DPDK's server (a DpdkPort answers from its rx_burst), and answers the server's query.
TEST_F(DpdkServerLink, AClosingEndWaitsForThePeerToReadWhatItSent) {
  // The client closes right after sending; the server reads nothing for 100 ms, then everything.
  client->set_close_linger_ms(5000);
  EXPECT_TRUE(send_close_and_read(*client, *server, client, 7));
  EXPECT_EQ(server->drain_answers_sent(), 1u);

  // Now the server closes right after sending, and the client, polling, answers its query.
  client = client_or_fail(config(dir.file("m.sock")));
  ASSERT_TRUE(client && client->wait_link_up(seconds(5))) << client->last_disconnect();
  ASSERT_TRUE(serve_until(*client, [&] { return server->link_up(); }));
  PktBuf* r;
  ASSERT_EQ(client->rx_burst(&r, 1), 0);  // hands the server its buffers
  server->set_close_linger_ms(5000);
  EXPECT_TRUE(send_close_and_read(*server, *client, server, 8));
  EXPECT_EQ(client->client_stats().drain_answers, 1u);
}

// A server scripted here, one step at a time: it accepts one client, says HELLO, and maps what the client
// sends, so that a test can write the rings as a hostile server would.
class ScriptedServer {
 public:
  explicit ScriptedServer(const std::string& path) {
    listen_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
    ok_ = listen_ >= 0 && bind(listen_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
          listen(listen_, 1) == 0;
  }
  ~ScriptedServer() {
    if (region_) munmap(region_, region_size_);
    for (int fd : {conn_, listen_, region_fd_})
      if (fd >= 0) close(fd);
  }
  bool ok() const { return ok_; }

  // Accepts the client (serviced meanwhile) and sends HELLO with the given version range.
  bool accept_and_hello(MemifClient& c, uint16_t min_version = memif::kVersion,
                        uint16_t max_version = memif::kVersion) {
    if (!serve_until(c, [&] { return readable(listen_); })) return false;
    conn_ = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    memif::Msg h{};
    h.type = memif::kMsgHello;
    h.hello.min_version = min_version;
    h.hello.max_version = max_version;
    h.hello.max_log2_ring_size = 14;
    return conn_ >= 0 && write(conn_, &h, sizeof h) == sizeof h;
  }
  // The next message from the client (serviced meanwhile), its fd (if any) in *fd.
  bool next(MemifClient& c, memif::Msg* m, int* fd = nullptr) {
    if (!serve_until(c, [&] { return readable(conn_); })) return false;
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))];
    iovec iov{m, sizeof *m};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    if (recvmsg(conn_, &mh, 0) != sizeof *m) return false;
    int got = -1;
    if (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm && cm->cmsg_type == SCM_RIGHTS)
      std::memcpy(&got, CMSG_DATA(cm), sizeof got);
    if (fd) {
      *fd = got;
    } else if (got >= 0) {
      close(got);
    }
    return true;
  }
  void send_type(uint16_t type) {
    memif::Msg m{};
    m.type = type;
    ASSERT_EQ(write(conn_, &m, sizeof m), static_cast<ssize_t>(sizeof m));
  }
  // The whole handshake after HELLO, mapping the region and noting the rings.
  bool handshake(MemifClient& c) {
    memif::Msg m{};
    if (!next(c, &m) || m.type != memif::kMsgInit || m.init.version != memif::kVersion) return false;
    send_type(memif::kMsgAck);
    if (!next(c, &m, &region_fd_) || m.type != memif::kMsgAddRegion || region_fd_ < 0) return false;
    region_size_ = m.add_region.size;
    region_ =
        static_cast<uint8_t*>(mmap(nullptr, region_size_, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd_, 0));
    if (region_ == MAP_FAILED) return false;
    send_type(memif::kMsgAck);
    for (int i = 0; i < 2; ++i) {
      if (!next(c, &m) || m.type != memif::kMsgAddRing || m.add_ring.offset >= region_size_) return false;
      (m.add_ring.flags & memif::kAddRingC2S ? c2s_ : s2c_) =
          reinterpret_cast<memif::Ring*>(region_ + m.add_ring.offset);
      log2_ = m.add_ring.log2_ring_size;
      send_type(memif::kMsgAck);
    }
    if (!next(c, &m) || m.type != memif::kMsgConnect) return false;
    if (c2s_ == nullptr || s2c_ == nullptr || c2s_->cookie != memif::kCookie) return false;
    send_type(memif::kMsgConnected);
    return serve_until(c, [&] { return c.link_up(); });
  }
  memif::Ring* s2c() const { return s2c_; }
  memif::Ring* c2s() const { return c2s_; }
  uint16_t mask() const { return static_cast<uint16_t>((1u << log2_) - 1); }
  uint8_t* at(uint32_t off) const { return region_ + off; }
  int conn() const { return conn_; }

 private:
  static bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  }
  int listen_ = -1, conn_ = -1, region_fd_ = -1;
  bool ok_ = false;
  uint8_t* region_ = nullptr;
  size_t region_size_ = 0;
  memif::Ring *c2s_ = nullptr, *s2c_ = nullptr;
  unsigned log2_ = 0;
};

// A client linked to a ScriptedServer (the handshake done), for the tests that break the rings.
class ScriptedLink : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(client);
    ASSERT_TRUE(s.accept_and_hello(*client));
    ASSERT_TRUE(s.handshake(*client));
  }
  TempDir dir;
  ScriptedServer s{dir.file("m.sock")};
  std::unique_ptr<MemifClient> client = client_or_fail(config(dir.file("m.sock")));
};

TEST(MemifClient, AServerWithoutMemif2IsRefusedWithAReason) {
  TempDir dir;
  ScriptedServer s(dir.file("m.sock"));
  ASSERT_TRUE(s.ok());
  auto client = client_or_fail(config(dir.file("m.sock")));
  ASSERT_TRUE(client);
  ASSERT_TRUE(s.accept_and_hello(*client, 0x0300, 0x0300));
  memif::Msg m{};
  ASSERT_TRUE(s.next(*client, &m));
  EXPECT_EQ(m.type, memif::kMsgDisconnect);
  EXPECT_FALSE(client->link_up());
  EXPECT_NE(client->last_disconnect().find("memif 2.0"), std::string::npos) << client->last_disconnect();
}

// A server writes the rings as it likes: a length over the buffer, a zero length and a chain are dropped
// and counted, the frames around them arrive; a tail past the buffers it was given takes the link down.
TEST_F(ScriptedLink, WhatAServerWritesIsCheckedBeforeItIsUsed) {
  memif::Ring* r = s.s2c();
  const uint16_t given = r->head;
  ASSERT_GE(given, 8) << "the client hands its rx buffers over when the link comes up";
  // Slots 0..5: good (100 bytes), too long, zero, a chain of two, good again. The server fills the buffers
  // the descriptors name and may rewrite the descriptors' offsets; the client reads its own buffers.
  const uint32_t lens[] = {100, kMaxFrame + 1u, 0, 64, 64, 100};
  for (uint16_t i = 0; i < 6; ++i) {
    memif::Desc& d = r->desc[i];
    std::memset(s.at(d.offset), 0xAB, 100);
    d.length = lens[i];
    d.flags = i == 3 ? memif::kDescNext : 0;
    if (i == 5) d.offset = 0;  // pointing at the rings: must not be what the client reads
  }
  std::atomic_ref<uint16_t>(r->tail).store(6, std::memory_order_release);
  PktBuf* bufs[kBurst];
  const uint16_t n = client->rx_burst(bufs, kBurst);
  ASSERT_EQ(n, 2);
  for (uint16_t i = 0; i < n; ++i) {
    EXPECT_EQ(bufs[i]->len, 100);
    EXPECT_EQ(bufs[i]->data[0], 0xAB) << "frame " << i << " was read from where the server pointed";
  }
  client->free_burst(bufs, n);
  EXPECT_EQ(client->client_stats().rx_bad, 4u);
  EXPECT_TRUE(client->link_up());

  // Sent frames come home once the server's tail passes them; a tail beyond them is a broken server.
  ASSERT_EQ(client->alloc_burst(bufs, 4), 4);
  for (uint16_t i = 0; i < 4; ++i) bufs[i]->len = 60;
  ASSERT_EQ(client->tx_burst(bufs, 4), 4);
  EXPECT_EQ(s.c2s()->head, 4);
  std::atomic_ref<uint16_t>(s.c2s()->tail).store(9, std::memory_order_release);
  EXPECT_EQ(client->tx_burst(bufs, 0), 0);
  EXPECT_FALSE(client->link_up());
  EXPECT_NE(client->last_disconnect().find("C2S tail"), std::string::npos) << client->last_disconnect();
  memif::Msg m{};
  ASSERT_TRUE(s.next(*client, &m));
  EXPECT_EQ(m.type, memif::kMsgDisconnect) << "the server is told why";
  EXPECT_EQ(client->free_buffers(), client->buffers());
}

TEST_F(ScriptedLink, AnRxTailPastTheGivenBuffersTakesTheLinkDown) {
  memif::Ring* r = s.s2c();
  std::atomic_ref<uint16_t>(r->tail).store(static_cast<uint16_t>(r->head + 1), std::memory_order_release);
  PktBuf* bufs[kBurst];
  EXPECT_EQ(client->rx_burst(bufs, kBurst), 0);
  EXPECT_FALSE(client->link_up());
  EXPECT_EQ(client->free_buffers(), client->buffers());
}

// A drain query among the frames while the server has also broken the C2S ring: the answer, sent after the
// ring was read, finds the broken tail and takes the link down; every buffer comes home exactly once.
TEST_F(ScriptedLink, ADrainQueryBesideABrokenTailLosesNoBuffer) {
  memif::Ring* r = s.s2c();
  const uint8_t src[6] = {2, 0, 0, 0, 0, 9};
  for (uint16_t i = 0; i < 3; ++i) {  // a frame, the query, a frame
    memif::Desc& d = r->desc[i];
    if (i == 1) {
      link_drain::build(s.at(d.offset), src, link_drain::kQuery, 0x1234);
      d.length = link_drain::kFrameLen;
    } else {
      std::memset(s.at(d.offset), 0xCD, 100);
      d.length = 100;
    }
  }
  std::atomic_ref<uint16_t>(s.c2s()->tail).store(5, std::memory_order_release);  // nothing was sent
  std::atomic_ref<uint16_t>(r->tail).store(3, std::memory_order_release);
  PktBuf* bufs[kBurst];
  const uint16_t n = client->rx_burst(bufs, kBurst);
  EXPECT_EQ(n, 2);
  EXPECT_FALSE(client->link_up());
  EXPECT_EQ(client->client_stats().drain_answers, 0u);
  client->free_burst(bufs, n);
  EXPECT_EQ(client->free_buffers(), client->buffers());
  EXPECT_EQ(client->rx_burst(bufs, kBurst), 0);
  EXPECT_EQ(client->free_buffers(), client->buffers());
}

TEST(MemifClient, ABadConfigurationIsRefusedWithAReason) {
  std::string err;
  MemifClientConfig c = config("/tmp/x.sock");
  c.log2_ring = 15;
  EXPECT_EQ(MemifClient::create(c, &err), nullptr);
  EXPECT_NE(err.find("log2"), std::string::npos) << err;
  c = config("");
  EXPECT_EQ(MemifClient::create(c, &err), nullptr);
  EXPECT_NE(err.find("socket"), std::string::npos) << err;
  c = config("/tmp/x.sock");
  c.buffers = 100;
  EXPECT_EQ(MemifClient::create(c, &err), nullptr);
  EXPECT_NE(err.find("buffers"), std::string::npos) << err;
}

}  // namespace
}  // namespace uroce::glue
