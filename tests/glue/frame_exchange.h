// Test traffic for DpdkPorts: frames that carry a sender tag, a sequence number and a position-dependent
// payload, and loops that send them from one port and check them arriving on another. Used by the glue
// tests and by glue_peer (the helper that runs in a second process or a network namespace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pmd_glue/dpdk_port.h"

namespace uroce::glue::test {

// A fresh directory under /tmp for a test's sockets and bell files, removed with its contents at the end.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

constexpr uint16_t kTestEtherType = 0x88B5;  // IEEE 802 local experimental: nobody else sends it
constexpr uint32_t kTagEcho = 0xEC0EC0;      // glue_peer echo rewrites frames to this tag
constexpr uint32_t kTagStop = 0x5709;        // tells glue_peer echo to exit
constexpr uint16_t kMinTestFrame = 32;       // Ethernet header + test header + a few payload bytes

// The frame sizes every transport test covers (each <= max), in a fixed order.
std::vector<uint16_t> standard_sizes(uint16_t max);

// Writes a test frame of `len` bytes into b (b->cap >= len).
void fill_frame(PktBuf* b, const wire::MacAddr& dst, const wire::MacAddr& src, uint32_t tag, uint32_t seq,
                uint16_t len);

// True if b holds a test frame; then *tag and *seq are set.
bool is_test_frame(const PktBuf& b, uint32_t* tag, uint32_t* seq);

// "" when b is test frame `seq` of `len` bytes with its payload intact, else what is wrong.
std::string check_frame(const PktBuf& b, uint32_t seq, uint16_t len);

// Rewrites a test frame in place: swaps the MACs and sets the tag (payload untouched).
void set_tag_and_swap(PktBuf* b, uint32_t tag);

struct ExchangeStats {
  uint64_t frames = 0, bytes = 0, ignored = 0;  // ignored: other traffic seen on the rx port(s)
};

// Sends frames of lens[i] (tag send_tag, seq = i) on `tx` and expects them back on `rx` in order, intact,
// tagged expect_tag. At most `window` frames are in flight (kernel-backed ports drop when their rings
// overflow). `also_drain`, if given, is polled and emptied too (an af_packet port sees its own frames).
// Fails after `stall_ms` without progress.
bool exchange(DpdkPort& tx, DpdkPort& rx, uint32_t send_tag, uint32_t expect_tag,
              const std::vector<uint16_t>& lens, std::string* err, ExchangeStats* stats = nullptr,
              DpdkPort* also_drain = nullptr, unsigned window = 64, int stall_ms = 5000);

// For a port with an rx event fd: arms the interrupt, sends a frame from `tx`, and checks that the fd
// becomes readable and the frame can then be received.
bool check_rx_interrupt(DpdkPort& tx, DpdkPort& rx, std::string* err);

// Echo loop of glue_peer: returns every test frame received on `port` retagged kTagEcho until a kTagStop
// frame arrives (true) or nothing arrives for idle_ms (false).
bool echo_until_stop(DpdkPort& port, int idle_ms, uint64_t* echoed);

// Sends one kTagStop frame (retrying while tx refuses, up to 1 s).
bool send_stop(DpdkPort& port);

}  // namespace uroce::glue::test
