// memif and ring ports: frames of every size both ways with payload intact and every buffer back home,
// within one process and across two, plus the link-down, oversize, stale-socket and fork cases.
#include <gtest/gtest.h>
#include <poll.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "pmd_glue/dpdk_port.h"
#include "tests/glue/frame_exchange.h"
#include "tests/support/frames.h"

namespace uroce::glue {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using test::TempDir;

std::unique_ptr<DpdkPort> open_or_fail(const std::string& spec) {
  std::string err;
  auto p = DpdkPort::open(spec, &err);
  EXPECT_NE(p, nullptr) << err;
  return p;
}

// A memif server and client on dir's m.sock, true once both links are up.
bool open_linked_pair(const TempDir& dir, std::unique_ptr<DpdkPort>* server,
                      std::unique_ptr<DpdkPort>* client) {
  *server = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=server");
  *client = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=client");
  return *server && *client && (*server)->wait_link_up(seconds(3)) && (*client)->wait_link_up(seconds(3));
}

std::vector<uint16_t> every_size_a_few_times(uint16_t max) {
  std::vector<uint16_t> lens;
  for (int rep = 0; rep < 8; ++rep)
    for (uint16_t s : test::standard_sizes(max)) lens.push_back(s);
  for (int i = 0; i < 2000; ++i) lens.push_back(static_cast<uint16_t>(64 + (i * 7919) % (max - 63)));
  return lens;
}

void expect_both_ways(DpdkPort& a, DpdkPort& b) {
  const auto lens = every_size_a_few_times(kMaxFrame);
  std::string err;
  test::ExchangeStats st;
  EXPECT_TRUE(test::exchange(a, b, 0xA, 0xA, lens, &err, &st, nullptr, 512)) << err;
  EXPECT_EQ(st.frames, lens.size());
  EXPECT_TRUE(test::exchange(b, a, 0xB, 0xB, lens, &err, &st, nullptr, 512)) << err;
  EXPECT_EQ(st.frames, lens.size());
}

// A glue_peer process, the memif client of the server socket `sock`, that echoes every test frame until a
// stop frame or `idle_ms` without one. Returns its pid (< 0 if fork failed).
pid_t start_echo_peer(const std::string& sock, int idle_ms) {
  const std::string spec = "memif:socket=" + sock + ",role=client";
  const std::string idle = std::to_string(idle_ms);
  const pid_t pid = fork();
  if (pid == 0) {
    execl(GLUE_PEER, "glue_peer", "echo", spec.c_str(), idle.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

void expect_pools_full(const DpdkPort& a, const DpdkPort& b) {
  EXPECT_EQ(a.pool_available(), a.pool_size()) << "port a leaked mbufs";
  EXPECT_EQ(b.pool_available(), b.pool_size()) << "port b leaked mbufs";
}

TEST(MemifPair, EverySizeBothWaysNoLeak) {
  TempDir dir;
  std::unique_ptr<DpdkPort> server, client;
  ASSERT_TRUE(open_linked_pair(dir, &server, &client));
  EXPECT_EQ(server->max_frame(), kMaxFrame);
  EXPECT_NE(server->mac(), client->mac());
  EXPECT_EQ(server->mac()[0] & 3, 2) << "a locally administered unicast MAC";
  expect_both_ways(*server, *client);
  expect_pools_full(*server, *client);
  const auto st = client->stats();
  EXPECT_EQ(st.rx_linearised + st.rx_chain_drop + st.rx_oversize, 0u);
  // Neither end slept on its bell, so thousands of frames rang nothing.
  EXPECT_EQ(st.bell_rings + server->stats().bell_rings, 0u);
}

// DPDK's interrupt thread stays parked in the gate (intr_gate.h) while memif ports exist, busy or idle, so
// a burst never waits for that thread to be woken and scheduled: on two cores busy with spinning pollers
// that took up to most of a second, and the QPs' ACK timers ran out meanwhile.
TEST(MemifPair, AnIdleLinkKeepsTheInterruptThreadParked) {
  TempDir dir;
  std::unique_ptr<DpdkPort> server, client;
  ASSERT_TRUE(open_linked_pair(dir, &server, &client));
  std::string err;
  ASSERT_TRUE(test::exchange(*server, *client, 1, 1, std::vector<uint16_t>(16, 512), &err)) << err;
  const uint64_t released = IntrGate::releases();
  // Idle through several of the gate's passes, each after a parked spell in which no burst ran.
  const uint64_t start = IntrGate::passes();
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (IntrGate::passes() < start + 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_GE(IntrGate::passes(), start + 10) << "the interrupt thread stopped coming back to the gate";
  EXPECT_EQ(IntrGate::releases(), released);
  EXPECT_TRUE(test::exchange(*client, *server, 2, 2, std::vector<uint16_t>(16, 512), &err)) << err;
  expect_pools_full(*server, *client);
}

// While a link is down the interrupt thread comes out every kPeriod (a handshake may be under way), but
// not for ever: a server whose client has not come within kHandshakeWindow goes back to kSettledPeriod,
// and a client that comes later still links up.
TEST(IntrGatePeriod, ShortOnlyWhileAHandshakeMayBeUnderWay) {
  using std::chrono::milliseconds;
  EXPECT_EQ(IntrGate::period(true, milliseconds(0)), IntrGate::kSettledPeriod);
  EXPECT_EQ(IntrGate::period(false, milliseconds(0)), IntrGate::kPeriod);
  EXPECT_EQ(IntrGate::period(false, IntrGate::kHandshakeWindow - milliseconds(1)), IntrGate::kPeriod);
  EXPECT_EQ(IntrGate::period(false, IntrGate::kHandshakeWindow), IntrGate::kSettledPeriod);
  EXPECT_EQ(IntrGate::period(true, seconds(60)), IntrGate::kSettledPeriod);
}

TEST(MemifPair, AClientThatComesLateStillLinksUp) {
  TempDir dir;
  std::unique_ptr<DpdkPort> server = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=server");
  ASSERT_TRUE(server);
  ASSERT_FALSE(server->link_up());
  // Alone past the handshake window: the thread comes out at the settled pace.
  const auto deadline = std::chrono::steady_clock::now() + IntrGate::kHandshakeWindow + seconds(10);
  while (IntrGate::last_period() != IntrGate::kSettledPeriod && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(IntrGate::last_period(), IntrGate::kSettledPeriod);
  ASSERT_FALSE(server->link_up());
  std::unique_ptr<DpdkPort> client = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=client");
  ASSERT_TRUE(client);
  ASSERT_TRUE(server->wait_link_up(seconds(5)));
  ASSERT_TRUE(client->wait_link_up(seconds(5)));
  std::string err;
  EXPECT_TRUE(test::exchange(*server, *client, 1, 1, std::vector<uint16_t>(16, 512), &err)) << err;
  expect_pools_full(*server, *client);
}

// The interrupt thread, let out, may find a burst that does not end: a datapath thread it preempted on its
// own CPU is inside one and cannot finish while the gate's thread waits. The gate then reopens the ports
// and tries again later instead of leaving every port blind until that thread runs.
TEST(MemifPair, ABurstThatDoesNotEndLeavesNoPortBlind) {
  TempDir dir;
  std::unique_ptr<DpdkPort> server, client;
  ASSERT_TRUE(open_linked_pair(dir, &server, &client));
  IntrGate::Member held;
  ASSERT_TRUE(IntrGate::join(&held));
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  bool inside = false;  // a burst of `held`, begun on this thread and not ended
  while (!(inside = IntrGate::try_enter(&held)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  ASSERT_TRUE(inside);
  const uint64_t backed_off = IntrGate::backoffs();
  while (IntrGate::backoffs() == backed_off && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GT(IntrGate::backoffs(), backed_off) << "the interrupt thread did not come out and go back";
  std::string err;
  EXPECT_TRUE(test::exchange(*server, *client, 3, 3, std::vector<uint16_t>(64, 512), &err)) << err;
  EXPECT_TRUE(test::exchange(*client, *server, 4, 4, std::vector<uint16_t>(64, 512), &err)) << err;
  IntrGate::exit(&held);
  const uint64_t passed = IntrGate::passes();
  while (IntrGate::passes() == passed && std::chrono::steady_clock::now() < deadline + seconds(10))
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GT(IntrGate::passes(), passed) << "the interrupt thread did not get out once the burst ended";
  IntrGate::leave(&held);
  expect_pools_full(*server, *client);
}

// DPDK 22.11's memif raises no rx interrupt; uroce's bell (pmd_glue/memif_bell.h) stands in for it. An end
// that arms its bell and sleeps on the fd wakes when the other end transmits, in both directions, and each
// sleep costs the transmitter one ring however many frames follow.
TEST(MemifPair, AnArmedBellWakesTheReceiverOnTheNextFrame) {
  TempDir dir;
  std::unique_ptr<DpdkPort> server, client;
  ASSERT_TRUE(open_linked_pair(dir, &server, &client));
  ASSERT_GE(server->rx_event_fd(), 0);
  ASSERT_GE(client->rx_event_fd(), 0);
  EXPECT_TRUE(server->rx_interrupt_is_hint());  // a peer without a bell would not wake us: still nap
  std::string err;
  EXPECT_TRUE(test::check_rx_interrupt(*client, *server, &err)) << err;
  EXPECT_TRUE(test::check_rx_interrupt(*server, *client, &err)) << err;
  EXPECT_EQ(client->stats().bell_rings, 1u);
  EXPECT_EQ(server->stats().bell_rings, 1u);

  // Armed again: a burst of frames rings once; disarmed, the fd is quiet and further frames ring nothing.
  PktBuf* bufs[kBurst];
  ASSERT_TRUE(server->enable_rx_interrupt());
  const std::vector<uint16_t> lens(64, 256);
  ASSERT_TRUE(test::exchange(*client, *server, 7, 7, lens, &err)) << err;
  EXPECT_EQ(client->stats().bell_rings, 2u);
  pollfd p{server->rx_event_fd(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 1);
  server->disable_rx_interrupt();
  EXPECT_EQ(poll(&p, 1, 0), 0) << "disarming empties the bell";
  ASSERT_TRUE(test::exchange(*client, *server, 8, 8, lens, &err)) << err;
  EXPECT_EQ(client->stats().bell_rings, 2u);
  for (uint16_t n; (n = server->rx_burst(bufs, kBurst)) > 0;) server->free_burst(bufs, n);
  expect_pools_full(*server, *client);
  // The server's files go with its port.
  const std::string sock = dir.file("m.sock");
  EXPECT_TRUE(std::filesystem::exists(glue::MemifBell::page_path(sock, 0)));
  client.reset();
  server.reset();
  EXPECT_FALSE(std::filesystem::exists(glue::MemifBell::page_path(sock, 0)));
  EXPECT_FALSE(std::filesystem::exists(glue::MemifBell::fifo_path(sock, 0, true)));
  EXPECT_FALSE(std::filesystem::exists(glue::MemifBell::fifo_path(sock, 0, false)));
}

// A progress thread whose application polls its CQ arms the bell for one-sided requests only: the frames the
// application handles itself (SENDs, ACKs, READ responses) ring nothing, a WRITE, READ request or ATOMIC
// rings at once (provider/engine.cc).
TEST(MemifPair, ABellArmedForRequestsRingsForOneSidedRequestsOnly) {
  TempDir dir;
  std::unique_ptr<DpdkPort> server, client;
  ASSERT_TRUE(open_linked_pair(dir, &server, &client));
  ASSERT_GE(server->rx_event_fd(), 0);
  EXPECT_TRUE(server->peer_rings());  // each end joined the bell: each rings the other
  EXPECT_TRUE(client->peer_rings());
  const auto send_one = [&](uint8_t opcode) {
    const auto f = uroce::test::make_frame(uroce::test::sample_headers(opcode, false, false),
                                           uroce::test::sample_payload(opcode, 16));
    PktBuf* b = nullptr;
    ASSERT_EQ(client->alloc_burst(&b, 1), 1);
    ASSERT_LE(f.size(), b->cap);
    std::memcpy(b->data, f.data(), f.size());
    b->len = static_cast<uint16_t>(f.size());
    ASSERT_EQ(client->tx_burst(&b, 1), 1);
  };
  pollfd p{server->rx_event_fd(), POLLIN, 0};
  ASSERT_TRUE(server->enable_rx_interrupt(/*requests_only=*/true));
  for (uint8_t o :
       {wire::op::kRcSendOnly, wire::op::kRcAck, wire::op::kRcReadRespOnly, wire::op::kRcAtomicAck})
    send_one(o);
  EXPECT_EQ(client->stats().bell_rings, 0u);
  EXPECT_EQ(poll(&p, 1, 0), 0);
  for (uint8_t o : {wire::op::kRcWriteOnly, wire::op::kRcReadRequest, wire::op::kRcFetchAdd}) {
    send_one(o);
    EXPECT_EQ(poll(&p, 1, 0), 1) << wire::op_name(o);
    server->disable_rx_interrupt();
    ASSERT_TRUE(server->enable_rx_interrupt(true));
  }
  EXPECT_EQ(client->stats().bell_rings, 3u);
  // Armed for everything (the thread serves alone), a SEND rings too.
  server->disable_rx_interrupt();
  ASSERT_TRUE(server->enable_rx_interrupt());
  send_one(wire::op::kRcSendOnly);
  EXPECT_EQ(poll(&p, 1, 0), 1);
  EXPECT_EQ(client->stats().bell_rings, 4u);
  server->disable_rx_interrupt();
  PktBuf* bufs[kBurst];
  uint32_t got = 0;
  for (uint16_t n; (n = server->rx_burst(bufs, kBurst)) > 0; got += n) server->free_burst(bufs, n);
  EXPECT_EQ(got, 8u);
  expect_pools_full(*server, *client);
}

// Something else at a bell's path (here a directory) leaves the port without a bell, working as before.
TEST(MemifPair, APortWhoseBellCannotOpenStillCarriesFrames) {
  TempDir dir;
  const std::string sock = dir.file("m.sock");
  std::filesystem::create_directory(glue::MemifBell::page_path(sock, 0));
  std::unique_ptr<DpdkPort> server, client;
  ASSERT_TRUE(open_linked_pair(dir, &server, &client));
  EXPECT_EQ(server->rx_event_fd(), -1);
  EXPECT_FALSE(server->enable_rx_interrupt());
  EXPECT_FALSE(server->rx_interrupt_is_hint());
  EXPECT_FALSE(server->peer_rings());
  std::string err;
  const std::vector<uint16_t> lens(100, 1024);
  EXPECT_TRUE(test::exchange(*client, *server, 1, 1, lens, &err)) << err;
  EXPECT_TRUE(test::exchange(*server, *client, 2, 2, lens, &err)) << err;
}

TEST(MemifPair, SeveralIdsShareOneSocket) {
  TempDir dir;
  const std::string sock = dir.file("m.sock");
  auto s0 = open_or_fail("memif:socket=" + sock + ",role=server,id=0");
  auto s1 = open_or_fail("memif:socket=" + sock + ",role=server,id=1");
  auto c1 = open_or_fail("memif:socket=" + sock + ",role=client,id=1");
  auto c0 = open_or_fail("memif:socket=" + sock + ",role=client,id=0");
  ASSERT_TRUE(s0 && s1 && c0 && c1);
  for (auto* p : {s0.get(), s1.get(), c0.get(), c1.get()}) ASSERT_TRUE(p->wait_link_up(seconds(3)));
  std::string err;
  const std::vector<uint16_t> lens(100, 1024);
  EXPECT_TRUE(test::exchange(*s1, *c1, 1, 1, lens, &err)) << err;
  EXPECT_TRUE(test::exchange(*c0, *s0, 2, 2, lens, &err)) << err;
}

TEST(MemifPair, TxWhileDownKeepsBuffersWithCaller) {
  TempDir dir;
  auto server = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=server");
  ASSERT_TRUE(server);
  EXPECT_FALSE(server->link_up());
  PktBuf* bufs[kBurst];
  ASSERT_EQ(server->alloc_burst(bufs, kBurst), kBurst);
  for (auto* b : bufs) test::fill_frame(b, server->mac(), server->mac(), 1, 0, 100);
  EXPECT_EQ(server->tx_burst(bufs, kBurst), 0);
  server->free_burst(bufs, kBurst);
  EXPECT_EQ(server->pool_available(), server->pool_size());
}

// A port that closes right after it transmitted (a program exiting after its last ACK) waits until the peer
// has read what it sent, however late the peer runs (here: not at all until the close has waited 100 ms,
// five times the fixed linger this replaced), then the peer gets every frame.
TEST(MemifPair, AClosingPortWaitsUntilThePeerHasReadWhatItSent) {
  TempDir dir;
  std::unique_ptr<DpdkPort> server, client;
  ASSERT_TRUE(open_linked_pair(dir, &server, &client));
  client->set_close_linger_ms(5000);
  constexpr uint16_t kFrames = 20;
  PktBuf* bufs[kBurst];
  ASSERT_EQ(client->alloc_burst(bufs, kFrames), kFrames);
  for (uint16_t i = 0; i < kFrames; ++i) test::fill_frame(bufs[i], server->mac(), client->mac(), 7, i, 200);
  ASSERT_EQ(client->tx_burst(bufs, kFrames), kFrames);

  std::atomic<bool> closed{false};
  std::thread closer([&] {
    client.reset();
    closed = true;
  });
  const auto stalled_until = std::chrono::steady_clock::now() + milliseconds(100);
  while (std::chrono::steady_clock::now() < stalled_until && !closed)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_FALSE(closed) << "the port closed before its peer had read anything";

  uint16_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while ((got < kFrames || !closed) && std::chrono::steady_clock::now() < deadline) {
    const uint16_t n = server->rx_burst(bufs, kBurst);
    for (uint16_t i = 0; i < n; ++i) {
      uint32_t tag = 0, seq = 0;
      EXPECT_TRUE(test::is_test_frame(*bufs[i], &tag, &seq));
      EXPECT_EQ(seq, got);
      EXPECT_EQ(test::check_frame(*bufs[i], seq, 200), "");
      ++got;
    }
    server->free_burst(bufs, n);
    if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  closer.join();
  EXPECT_EQ(got, kFrames);
  EXPECT_EQ(server->drain_answers_sent(), 1u) << "the peer was never asked, or asked more than once";
  EXPECT_EQ(server->pool_available(), server->pool_size());
}

TEST(MemifPair, FramesLongerThanMaxFrameAreDroppedAndCounted) {
  TempDir dir;
  auto server = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=server");
  auto client = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=client");
  ASSERT_TRUE(server && client && server->wait_link_up(seconds(3)));
  PktBuf* b;
  ASSERT_EQ(client->rx_burst(&b, 1), 0);  // a memif client hands its rx buffers to the ring when it polls
  ASSERT_EQ(server->alloc_burst(&b, 1), 1);
  ASSERT_GE(b->cap, kMaxFrame + 1);
  test::fill_frame(b, client->mac(), server->mac(), 1, 0, kMaxFrame + 1);
  // A burst may meet the gate that parks DPDK's interrupt thread (a busy ring for a moment), and the client
  // refills the ring only when a poll of it gets through: offer the frame until the ring takes it, polling
  // the client meanwhile (nothing else is sent, so it receives nothing), for at most 3 s.
  const auto deadline = std::chrono::steady_clock::now() + seconds(3);
  uint16_t sent = 0;
  while ((sent = server->tx_burst(&b, 1)) == 0 && std::chrono::steady_clock::now() < deadline) {
    PktBuf* r;
    if (client->rx_burst(&r, 1) == 1) client->free_burst(&r, 1);
  }
  ASSERT_EQ(sent, 1);
  std::string err;  // a good frame after it still arrives
  EXPECT_TRUE(test::exchange(*server, *client, 2, 2, {kMaxFrame}, &err)) << err;
  EXPECT_EQ(client->stats().rx_oversize, 1u);
  expect_pools_full(*server, *client);
}

TEST(MemifPair, ClientWithoutServerFailsWithAHint) {
  TempDir dir;
  std::string err;
  auto client = DpdkPort::open("memif:socket=" + dir.file("none.sock") + ",role=client,wait=100", &err);
  EXPECT_EQ(client, nullptr);
  EXPECT_NE(err.find("no memif server"), std::string::npos) << err;
}

// Not memif, but the same open path: the af_packet PMD itself would report "Operation not permitted".
TEST(AfPacketPort, AMissingInterfaceIsNamed) {
  std::string err;
  auto port = DpdkPort::open("af_packet:iface=nosuch0", &err);
  EXPECT_EQ(port, nullptr);
  EXPECT_NE(err.find("no network interface 'nosuch0'"), std::string::npos) << err;
  EXPECT_EQ(err.find("Operation not permitted"), std::string::npos) << err;
}

TEST(MemifPair, StaleSocketFileIsReplaced) {
  TempDir dir;
  const std::string path = dir.file("stale.sock");
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  close(fd);  // the file stays, nobody listens: what a crashed server leaves
  auto server = open_or_fail("memif:socket=" + path + ",role=server");
  auto client = open_or_fail("memif:socket=" + path + ",role=client");
  ASSERT_TRUE(server && client);
  EXPECT_TRUE(client->wait_link_up(seconds(3)));
}

TEST(MemifPair, ForkedChildDoesNotDisturbTheParentsLink) {
  TempDir dir;
  auto server = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=server");
  auto client = open_or_fail("memif:socket=" + dir.file("m.sock") + ",role=client");
  ASSERT_TRUE(server && client && server->wait_link_up(seconds(3)));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    server.reset();  // destructors in the child must leave the parent's devices alone
    client.reset();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(server->link_up());
  EXPECT_TRUE(client->link_up());
  std::string err;
  EXPECT_TRUE(test::exchange(*server, *client, 1, 1, std::vector<uint16_t>(64, 512), &err)) << err;
}

// The peer going away while this side is inside a burst: DPDK's memif handles the peer's disconnect on its
// interrupt thread and unmaps the shared rings there, so a burst running at that moment on another thread
// would touch unmapped memory. The port keeps its bursts and that teardown apart. Each round a glue_peer
// process echoes what a thread here sends and receives without pause in large frames (so a burst is in the
// rings most of the time) until it is killed; this process must see its link go down, stay alive, and get
// every buffer back.
TEST(MemifProcesses, PeerKilledWhileBurstingIsSafe) {
  for (int round = 0; round < 30; ++round) {
    TempDir dir;
    const std::string sock = dir.file("k.sock");
    auto server = open_or_fail("memif:socket=" + sock + ",role=server");
    ASSERT_TRUE(server);
    const pid_t pid = start_echo_peer(sock, 10000);
    ASSERT_GE(pid, 0);
    const bool up = server->wait_link_up(seconds(10));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> echoed{0};
    std::thread burster([&] {
      const wire::MacAddr mac = server->mac();
      PktBuf* bufs[kBurst];
      while (!stop.load(std::memory_order_relaxed)) {
        const uint16_t n = server->alloc_burst(bufs, kBurst);
        for (uint16_t i = 0; i < n; ++i) test::fill_frame(bufs[i], mac, mac, 0xD, i, 4000);
        const uint16_t sent = server->tx_burst(bufs, n);
        server->free_burst(bufs + sent, static_cast<uint16_t>(n - sent));
        const uint16_t got = server->rx_burst(bufs, kBurst);
        server->free_burst(bufs, got);
        echoed.fetch_add(got, std::memory_order_relaxed);
      }
    });
    // Kill the peer once frames flow both ways (or give up after 10 s).
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (up && echoed.load() < 2000 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    const bool flowing = echoed.load() >= 2000;
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    while (server->link_up() && std::chrono::steady_clock::now() < deadline + seconds(5))
      std::this_thread::yield();
    const bool went_down = !server->link_up();
    stop = true;
    burster.join();
    ASSERT_TRUE(up) << "round " << round << ": glue_peer never connected";
    ASSERT_TRUE(flowing) << "round " << round << ": echoes never flowed";
    ASSERT_TRUE(went_down) << "round " << round << ": the link stayed up after the peer died";
    EXPECT_EQ(server->pool_available(), server->pool_size()) << "round " << round;
  }
}

TEST(RingPair, EverySizeBothWaysNoLeak) {
  auto a = open_or_fail("ring:glue_test_ab");
  auto b = open_or_fail("ring:glue_test_ab");
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->link_up() && b->link_up());
  std::string err;
  EXPECT_EQ(DpdkPort::open("ring:glue_test_ab", &err), nullptr);
  EXPECT_NE(err.find("both ends"), std::string::npos) << err;
  expect_both_ways(*a, *b);
  expect_pools_full(*a, *b);
}

// A PMD may hand over a frame in several segments; rx_burst copies it into one buffer (or drops it when
// it is longer than max_frame). The ring PMD passes mbufs through untouched, so a chain built here and
// transmitted behind DpdkPort's back arrives as that chain.
TEST(RingPair, ChainedFramesAreLinearisedOrDropped) {
  auto a = open_or_fail("ring:glue_test_chain");
  auto b = open_or_fail("ring:glue_test_chain");
  ASSERT_TRUE(a && b);
  for (const uint16_t total : {uint16_t{3000}, uint16_t{kMaxFrame + 100}}) {
    PktBuf* parts[2];
    ASSERT_EQ(a->alloc_burst(parts, 2), 2);
    PktBuf* whole;
    ASSERT_EQ(a->alloc_burst(&whole, 1), 1);
    test::fill_frame(whole, b->mac(), a->mac(), 7, 0, total);
    const uint16_t head = 1000;
    std::memcpy(parts[0]->data, whole->data, head);
    std::memcpy(parts[1]->data, whole->data + head, total - head);
    a->free_burst(&whole, 1);
    auto* m0 = static_cast<rte_mbuf*>(parts[0]->impl);
    auto* m1 = static_cast<rte_mbuf*>(parts[1]->impl);
    m0->data_len = m0->pkt_len = head;
    m1->data_len = m1->pkt_len = total - head;
    ASSERT_EQ(rte_pktmbuf_chain(m0, m1), 0);
    ASSERT_EQ(rte_eth_tx_burst(a->port_id(), 0, &m0, 1), 1);

    PktBuf* got[kBurst];
    const uint16_t n = b->rx_burst(got, kBurst);
    if (total <= kMaxFrame) {
      ASSERT_EQ(n, 1);
      EXPECT_EQ(test::check_frame(*got[0], 0, total), "");
      EXPECT_EQ(static_cast<rte_mbuf*>(got[0]->impl)->nb_segs, 1);
      b->free_burst(got, n);
    } else {
      EXPECT_EQ(n, 0);
    }
  }
  const auto st = b->stats();
  EXPECT_EQ(st.rx_linearised, 1u);
  EXPECT_EQ(st.rx_chain_drop, 1u);
  expect_pools_full(*a, *b);
}

// The cross-process path: this process is the memif server, glue_peer (exec'd) the client that echoes.
TEST(MemifProcesses, FramesCrossAndComeBack) {
  TempDir dir;
  const std::string sock = dir.file("x.sock");
  auto server = open_or_fail("memif:socket=" + sock + ",role=server");
  ASSERT_TRUE(server);
  const pid_t pid = start_echo_peer(sock, 5000);
  ASSERT_GE(pid, 0);
  const bool up = server->wait_link_up(seconds(10));
  std::string err;
  bool ok = false;
  if (up) {
    const auto lens = every_size_a_few_times(kMaxFrame);
    test::ExchangeStats st;
    ok = test::exchange(*server, *server, 0xC, test::kTagEcho, lens, &err, &st, nullptr, 256, 5000);
    if (ok) {
      EXPECT_EQ(st.frames, lens.size());  // every frame sent came back
    }
  }
  test::send_stop(*server);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(up) << "glue_peer never connected";
  EXPECT_TRUE(ok) << err;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(server->pool_available(), server->pool_size());
}

}  // namespace
}  // namespace uroce::glue
