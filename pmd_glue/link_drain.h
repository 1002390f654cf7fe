// Link drain: two memif ends of uroce (a process and uroced, or two processes) use it when one end closes.
// A query carries a token; the other end answers with the same token once its rx_burst has taken the
// query, and so every frame queued before it. Link-local (the destination 802.1 reserved for MAC
// control, never forwarded), IEEE local experimental ether type 0x88B5 as the fabric's link credit frames
// (subtype "FC"), subtypes "DQ" and "DA", padded to the 60-byte minimum. DpdkPort and MemifClient speak it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "transport/packet_io.h"

namespace uroce::glue::link_drain {

constexpr uint16_t kEtherType = 0x88B5;
constexpr uint16_t kQuery = 0x4451;   // "DQ"
constexpr uint16_t kAnswer = 0x4441;  // "DA"
constexpr uint16_t kFrameLen = 60;
constexpr uint8_t kDst[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};

// Writes a query or answer (kFrameLen bytes) from `src` into f.
inline void build(uint8_t* f, const uint8_t* src, uint16_t subtype, uint32_t token) {
  std::memset(f, 0, kFrameLen);
  std::memcpy(f, kDst, 6);
  std::memcpy(f + 6, src, 6);
  f[12] = kEtherType >> 8;
  f[13] = kEtherType & 0xFF;
  f[14] = static_cast<uint8_t>(subtype >> 8);
  f[15] = static_cast<uint8_t>(subtype);
  for (int i = 0; i < 4; ++i) f[16 + i] = static_cast<uint8_t>(token >> (24 - 8 * i));
}

// True when f (len bytes) is a query or an answer; then *subtype and *token are set.
inline bool parse(const uint8_t* f, uint32_t len, uint16_t* subtype, uint32_t* token) {
  if (len < 20 || (f[12] << 8 | f[13]) != kEtherType) return false;
  const uint16_t st = static_cast<uint16_t>(f[14] << 8 | f[15]);
  if (st != kQuery && st != kAnswer) return false;
  *subtype = st;
  *token = uint32_t{f[16]} << 24 | uint32_t{f[17]} << 16 | uint32_t{f[18]} << 8 | f[19];
  return true;
}

// The querier's wait: polls `port` (a PacketIo with link_up()) until `answered` turns true (its rx_burst
// notes our answer), the link goes down or `ms` pass, asking with ask() until the ring takes the query.
// What the peer sends meanwhile is not for anyone any more; reading it also hands a memif server the
// buffers it transmits into (the answer among them).
template <typename Port, typename Ask>
void await_answer(Port& port, uint32_t ms, const bool& answered, Ask ask) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  bool asked = false;  // a full ring refuses the query: asked again on the next round
  PktBuf* bufs[kBurst];
  while (std::chrono::steady_clock::now() < until && port.link_up()) {
    if (!asked) asked = ask();
    const uint16_t n = port.rx_burst(bufs, kBurst);
    if (n) port.free_burst(bufs, n);
    if (answered) return;
    if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace uroce::glue::link_drain
