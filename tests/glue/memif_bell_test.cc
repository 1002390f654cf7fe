// The memif bell's ordering (pmd_glue/memif_bell.h), run as the store-buffer litmus test: in each round one
// thread arms an end's bell and then reads a word (the sleeper's last look at its ring), while another
// thread writes the word and then rings that end (the transmitter publishing a frame). At least one of them
// must see the other's store; a round where neither does is a frame waiting for a sleeper that missed it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "pmd_glue/memif_bell.h"
#include "tests/glue/frame_exchange.h"

namespace uroce::glue {
namespace {

using test::TempDir;

// Both ends of one bell.
struct BellPair {
  std::unique_ptr<MemifBell> server, client;
};
BellPair open_pair(const TempDir& dir) {
  BellPair p;
  std::string err;
  p.server = MemifBell::open(dir.file("m.sock"), 0, true, &err);
  EXPECT_NE(p.server, nullptr) << err;
  p.client = MemifBell::open(dir.file("m.sock"), 0, false, &err);
  EXPECT_NE(p.client, nullptr) << err;
  return p;
}

// Both threads leave round r together (as nearly as two cores allow), so that their stores overlap.
class Barrier {
 public:
  void wait(uint64_t round) {
    arrived_.fetch_add(1, std::memory_order_acq_rel);
    for (int spins = 0; arrived_.load(std::memory_order_acquire) < 2 * round; ++spins)
      if (spins > 1000) std::this_thread::yield();  // the other thread may share this core
  }

 private:
  std::atomic<uint64_t> arrived_{0};
};

// Spins for a round-dependent while (0-15 pauses or 0-255 empty turns), so that the two threads' steps
// drift over each other from round to round.
void stagger(uint64_t r, uint64_t salt) {
  const uint64_t h = (r * 0x9E3779B97F4A7C15ull + salt) >> 52;
  if (r & 1) {
    for (uint64_t i = 0; i < (h & 15); ++i) __builtin_ia32_pause();
  } else {
    for (uint64_t i = 0; i < (h & 255); ++i) asm volatile("");
  }
}

// Runs `rounds` rounds with `sleeper` arming and `sender` ringing it; returns the rounds in which neither
// saw the other. Before each round, as between bursts on a live link, the sender has the sleeper's flag in
// its cache and the sleeper the word in its own, so a load that overtakes its thread's store finds the old
// value at once.
uint64_t missed_wakeups(MemifBell& sleeper, MemifBell& sender, uint64_t rounds) {
  std::atomic<uint64_t> word{0};
  std::atomic<uint64_t> rang_in{0};  // the last round in which the sender rang
  Barrier ready, start, end;
  uint64_t missed = 0;
  std::thread tx([&] {
    for (uint64_t r = 1; r <= rounds; ++r) {
      ready.wait(r);
      sender.ring_if_armed();  // the flag is down here: only reads it
      start.wait(r);
      stagger(r, 1);
      word.store(r, std::memory_order_relaxed);
      if (sender.ring_if_armed()) rang_in.store(r, std::memory_order_relaxed);
      end.wait(r);
    }
  });
  for (uint64_t r = 1; r <= rounds; ++r) {
    sleeper.disarm();
    (void)word.load(std::memory_order_relaxed);
    ready.wait(r);
    start.wait(r);
    stagger(r, 2);
    sleeper.arm();
    const bool saw_frame = word.load(std::memory_order_relaxed) == r;
    end.wait(r);
    if (!saw_frame && rang_in.load(std::memory_order_relaxed) != r) ++missed;
  }
  sleeper.disarm();
  tx.join();
  return missed;
}

constexpr uint64_t kRounds = 50000;

// Either end may be the sleeper.
TEST(MemifBell, NoWakeUpIsLost) {
  TempDir dir;
  BellPair p = open_pair(dir);
  ASSERT_TRUE(p.server && p.client);
  EXPECT_EQ(missed_wakeups(*p.server, *p.client, kRounds), 0u);
  EXPECT_EQ(missed_wakeups(*p.client, *p.server, kRounds), 0u);
}

// An end knows whether the other has joined the bell (and so rings it): the mark comes with the other's
// open and goes with its close; a server that opens the files anew starts with no client, whatever mark a
// client of an earlier server left.
TEST(MemifBell, EachEndSeesWhetherTheOtherJoined) {
  TempDir dir;
  const std::string sock = dir.file("m.sock");
  std::string err;
  auto server = MemifBell::open(sock, 0, true, &err);
  ASSERT_NE(server, nullptr) << err;
  EXPECT_FALSE(server->peer_joined());
  auto client = MemifBell::open(sock, 0, false, &err);
  ASSERT_NE(client, nullptr) << err;
  EXPECT_TRUE(server->peer_joined());
  EXPECT_TRUE(client->peer_joined());
  client.reset();
  EXPECT_FALSE(server->peer_joined());
  // A client that dies leaves its mark (here: still open) until a new server starts on the files.
  client = MemifBell::open(sock, 0, false, &err);
  ASSERT_NE(client, nullptr) << err;
  server.reset();  // as a server that died: the files stay
  EXPECT_FALSE(client->peer_joined());
  auto next = MemifBell::open(sock, 0, true, &err);
  ASSERT_NE(next, nullptr) << err;
  EXPECT_FALSE(next->peer_joined());
}

}  // namespace
}  // namespace uroce::glue
