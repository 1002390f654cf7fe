// A doorbell between the two ends of a memif link, so that an end whose progress thread sleeps wakes when
// a frame comes instead of at the end of a nap.
//
// memif has an interrupt of its own (the transmitter writes an eventfd unless the receiver's ring asks it
// not to), but DPDK 22.11's PMD masks it on every rx ring it sets up and offers no rx interrupt op. So
// uroce's memif ports keep their own bell beside the link's socket, in the same private directory
// (dpdk_spec.h, "memif and other users"):
//   PATH.bell<ID>     one page shared by both ends: per end (server, client) a flag "armed", set while that
//                     end sleeps on its bell;
//   PATH.bell<ID>s/c  a FIFO per end: what the end sleeps on (poll for readability); the other end writes
//                     one byte into it when it has put frames in the ring while the flag was set.
// Ordering (a Dekker pair): the sleeper sets its flag, then looks at its ring once more before sleeping;
// the transmitter publishes frames in the ring, then reads the flag. With a full fence on each side one of
// them sees the other's store, so a frame never waits for a sleeper that missed it. The transmitter
// clears the flag as it rings, so a sleep costs the peer at most one write().
//
// An end arms its flag either for every frame (kArmAll: its progress thread serves alone) or for one-sided
// requests only (kArmRequests: its application polls and handles the rest itself, but may go on to spin on
// memory and leave a WRITE, READ or ATOMIC to the thread). For the latter the transmitter rings only when
// the burst holds such a request (wire::frame_is_one_sided_request), and leaves the flag set otherwise.
//
// The bell is a wake-up hint, never needed for correctness: an end whose peer has no bell (another memif
// program, an older uroce, files it may not open) still receives everything, at its nap's pace.
//
// Threads: arm/disarm on the receiving thread, ring_if_armed on the transmitting one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace uroce::glue {

class MemifBell {
 public:
  // Opens the link's bell files for one end: the server creates those that do not exist yet, a client
  // opens the server's. nullptr with *err set when they cannot be opened or are not what they should be (a
  // file of another kind at that path); for a client of a server without a bell, errno is then ENOENT.
  static std::unique_ptr<MemifBell> open(const std::string& socket, uint32_t id, bool server,
                                         std::string* err);
  ~MemifBell();
  MemifBell(const MemifBell&) = delete;
  MemifBell& operator=(const MemifBell&) = delete;

  // Readable while the peer has rung and disarm() has not run since. Poll it; never read it.
  int fd() const { return own_fd_; }

  // Before sleeping on fd(): arm, then look at the rx ring once more (a frame published before the flag
  // was seen rang nobody). After waking, however it woke: disarm (clears the flag, empties the FIFO).
  void arm(uint32_t mode = kArmAll);
  void disarm();
  static constexpr uint32_t kArmAll = 1, kArmRequests = 2;
  bool armed() const { return mine().load(std::memory_order_relaxed) != 0; }

  // After frames were published in the ring towards the peer: rings the peer's bell if it sleeps on it,
  // armed for everything or, when has_request() says the frames hold a one-sided request, for those. True
  // when it rang. One full fence and one load when the peer is awake.
  template <typename HasRequest>
  bool ring_if_armed(HasRequest has_request) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const uint32_t v = theirs().load(std::memory_order_relaxed);
    if (v == 0) return false;
    if (v == kArmRequests && !has_request()) return false;
    return ring_slow();
  }
  bool ring_if_armed() {
    return ring_if_armed([] { return true; });
  }

  uint64_t rings() const { return rings_.load(std::memory_order_relaxed); }

  // Whether the other end has joined the bell (an end marks itself when it opens the files and unmarks when
  // it closes), so that it rings when we arm: a sleeper then need not nap short for frames that ring
  // nobody. A mark left by an end that died stays until the next end joins; a bell-less program that takes
  // its place would leave our frames to the naps, which stay as the bound (engine.cc).
  bool peer_joined() const { return theirs_joined().load(std::memory_order_relaxed) != 0; }

  // The server removes the files when its port closes (as memif removes its socket).
  void remove_files();

  // The paths of the link's bell files (page, server's FIFO, client's FIFO), for tests and docs.
  static std::string page_path(const std::string& socket, uint32_t id);
  static std::string fifo_path(const std::string& socket, uint32_t id, bool server);

 private:
  MemifBell() = default;
  std::atomic<uint32_t>& mine() const { return *slot_[server_ ? 0 : 1]; }
  std::atomic<uint32_t>& theirs() const { return *slot_[server_ ? 1 : 0]; }
  std::atomic<uint32_t>& mine_joined() const { return *joined_[server_ ? 0 : 1]; }
  std::atomic<uint32_t>& theirs_joined() const { return *joined_[server_ ? 1 : 0]; }
  bool ring_slow();

  std::string socket_;
  uint32_t id_ = 0;
  bool server_ = false;
  void* page_ = nullptr;
  std::atomic<uint32_t>* slot_[2] = {nullptr, nullptr};
  std::atomic<uint32_t>* joined_[2] = {nullptr, nullptr};
  int own_fd_ = -1;   // our FIFO, opened read-write so that it never reports end-of-file
  int peer_fd_ = -1;  // the peer's FIFO, opened read-write so that opening never waits for its reader
  std::atomic<uint64_t> rings_{0};
};

}  // namespace uroce::glue
