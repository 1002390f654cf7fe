#include "tests/glue/frame_exchange.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace uroce::glue::test {

TempDir::TempDir() {
  char tmpl[] = "/tmp/uroce-glue-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

constexpr uint32_t kMagic = 0x55524F43;  // "UROC"
constexpr size_t kEth = 14;
constexpr size_t kTagOff = kEth + 4, kSeqOff = kEth + 8, kLenOff = kEth + 12, kPayloadOff = kEth + 14;

using Clock = std::chrono::steady_clock;

void put32(uint8_t* p, uint32_t v) {
  v = htonl(v);
  std::memcpy(p, &v, 4);
}
uint32_t get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return ntohl(v);
}

// Depends on the byte's position (including its high bits) and on the frame, so shifted, truncated or
// swapped data shows.
inline uint8_t pattern(uint32_t seq, size_t i) { return static_cast<uint8_t>(seq * 131 + i * 7 + (i >> 8)); }

}  // namespace

std::vector<uint16_t> standard_sizes(uint16_t max) {
  static const uint16_t kSizes[] = {64,   65,   127,  128,  256,  511,  512,  1000, 1024, 1500, 1514,
                                    1515, 2047, 2048, 2049, 3000, 4095, 4096, 4097, 4200, 4223, 4224};
  std::vector<uint16_t> out;
  for (uint16_t s : kSizes)
    if (s <= max) out.push_back(s);
  if (out.empty() || out.back() != max) out.push_back(max);
  return out;
}

void fill_frame(PktBuf* b, const wire::MacAddr& dst, const wire::MacAddr& src, uint32_t tag, uint32_t seq,
                uint16_t len) {
  uint8_t* d = b->data;
  std::memcpy(d, dst.data(), 6);
  std::memcpy(d + 6, src.data(), 6);
  d[12] = kTestEtherType >> 8;
  d[13] = kTestEtherType & 0xFF;
  put32(d + kEth, kMagic);
  put32(d + kTagOff, tag);
  put32(d + kSeqOff, seq);
  d[kLenOff] = static_cast<uint8_t>(len >> 8);
  d[kLenOff + 1] = static_cast<uint8_t>(len);
  for (size_t i = kPayloadOff; i < len; ++i) d[i] = pattern(seq, i);
  b->len = len;
}

bool is_test_frame(const PktBuf& b, uint32_t* tag, uint32_t* seq) {
  if (b.len < kMinTestFrame) return false;
  const uint8_t* d = b.data;
  if ((d[12] << 8 | d[13]) != kTestEtherType || get32(d + kEth) != kMagic) return false;
  *tag = get32(d + kTagOff);
  *seq = get32(d + kSeqOff);
  return true;
}

std::string check_frame(const PktBuf& b, uint32_t seq, uint16_t len) {
  const uint8_t* d = b.data;
  const uint16_t stated = static_cast<uint16_t>(d[kLenOff] << 8 | d[kLenOff + 1]);
  if (b.len != len || stated != len)
    return "frame " + std::to_string(seq) + ": length " + std::to_string(b.len) + " (header says " +
           std::to_string(stated) + "), expected " + std::to_string(len);
  for (size_t i = kPayloadOff; i < len; ++i)
    if (d[i] != pattern(seq, i))
      return "frame " + std::to_string(seq) + " of " + std::to_string(len) + " bytes: byte " +
             std::to_string(i) + " is " + std::to_string(d[i]) + ", expected " +
             std::to_string(pattern(seq, i));
  return "";
}

void set_tag_and_swap(PktBuf* b, uint32_t tag) {
  uint8_t tmp[6];
  std::memcpy(tmp, b->data, 6);
  std::memmove(b->data, b->data + 6, 6);
  std::memcpy(b->data + 6, tmp, 6);
  put32(b->data + kTagOff, tag);
}

bool exchange(DpdkPort& tx, DpdkPort& rx, uint32_t send_tag, uint32_t expect_tag,
              const std::vector<uint16_t>& lens, std::string* err, ExchangeStats* stats, DpdkPort* also_drain,
              unsigned window, int stall_ms) {
  ExchangeStats st;
  const wire::MacAddr src = tx.mac(), dst = rx.mac();
  const uint32_t total = static_cast<uint32_t>(lens.size());
  uint32_t next_send = 0, next_expect = 0;
  auto last_progress = Clock::now();
  PktBuf* bufs[kBurst];
  std::string problem;

  while (next_expect < total && problem.empty()) {
    // Transmit up to the window.
    const uint32_t room = std::min<uint32_t>(window - (next_send - next_expect), total - next_send);
    if (room > 0) {
      const uint16_t n = tx.alloc_burst(bufs, static_cast<uint16_t>(std::min<uint32_t>(room, kBurst)));
      for (uint16_t i = 0; i < n; ++i)
        fill_frame(bufs[i], dst, src, send_tag, next_send + i, lens[next_send + i]);
      const uint16_t k = tx.tx_burst(bufs, n);
      tx.free_burst(bufs + k, n - k);  // refused ones are rebuilt next round with the same seq
      next_send += k;
    }
    // Receive and check.
    const uint16_t r = rx.rx_burst(bufs, kBurst);
    for (uint16_t i = 0; i < r && problem.empty(); ++i) {
      uint32_t tag, seq;
      if (!is_test_frame(*bufs[i], &tag, &seq) || tag != expect_tag) {
        ++st.ignored;
        continue;
      }
      if (seq != next_expect) {
        problem = "expected frame " + std::to_string(next_expect) + ", got " + std::to_string(seq);
        break;
      }
      problem = check_frame(*bufs[i], seq, lens[seq]);
      st.frames++;
      st.bytes += bufs[i]->len;
      ++next_expect;
      last_progress = Clock::now();
    }
    rx.free_burst(bufs, r);
    if (also_drain != nullptr && also_drain != &rx) {
      const uint16_t d = also_drain->rx_burst(bufs, kBurst);
      st.ignored += d;
      also_drain->free_burst(bufs, d);
    }
    if (Clock::now() - last_progress > std::chrono::milliseconds(stall_ms))
      problem = "stalled: " + std::to_string(next_expect) + " of " + std::to_string(total) +
                " frames arrived, " + std::to_string(next_send) + " sent; tx link " +
                (tx.link_up() ? "up" : "down");
  }
  if (stats) *stats = st;
  if (!problem.empty()) {
    if (err) *err = std::string(kind_name(tx.kind())) + " -> " + kind_name(rx.kind()) + ": " + problem;
    return false;
  }
  return true;
}

bool check_rx_interrupt(DpdkPort& tx, DpdkPort& rx, std::string* err) {
  PktBuf* bufs[kBurst];
  for (uint16_t n; (n = rx.rx_burst(bufs, kBurst)) > 0;) rx.free_burst(bufs, n);
  if (!rx.enable_rx_interrupt()) {
    *err = "enable_rx_interrupt failed";
    return false;
  }
  if (tx.alloc_burst(bufs, 1) != 1) {
    *err = "no buffer";
    return false;
  }
  fill_frame(bufs[0], rx.mac(), tx.mac(), 0x1E, 0, 128);
  if (tx.tx_burst(bufs, 1) != 1) {
    tx.free_burst(bufs, 1);
    *err = "tx refused the frame";
    return false;
  }
  pollfd p{rx.rx_event_fd(), POLLIN, 0};
  const int ready = poll(&p, 1, 1000);
  rx.disable_rx_interrupt();
  if (ready != 1) {
    *err = "rx event fd did not become readable within 1 s";
    return false;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < deadline) {
    const uint16_t n = rx.rx_burst(bufs, kBurst);
    bool found = false;
    for (uint16_t i = 0; i < n; ++i) {
      uint32_t tag, seq;
      found = found || (is_test_frame(*bufs[i], &tag, &seq) && tag == 0x1E);
    }
    rx.free_burst(bufs, n);
    if (found) return true;
  }
  *err = "fd was readable but the frame did not arrive";
  return false;
}

bool echo_until_stop(DpdkPort& port, int idle_ms, uint64_t* echoed) {
  PktBuf* bufs[kBurst];
  PktBuf* out[kBurst];
  auto last = Clock::now();
  *echoed = 0;
  for (;;) {
    const uint16_t r = port.rx_burst(bufs, kBurst);
    uint16_t n_out = 0;
    bool stop = false;
    for (uint16_t i = 0; i < r; ++i) {
      uint32_t tag, seq;
      if (is_test_frame(*bufs[i], &tag, &seq) && tag != kTagEcho && tag != kTagStop) {
        set_tag_and_swap(bufs[i], kTagEcho);  // the received buffer goes straight back out
        out[n_out++] = bufs[i];
      } else {
        stop = stop || (is_test_frame(*bufs[i], &tag, &seq) && tag == kTagStop);
        port.free_burst(&bufs[i], 1);
      }
    }
    uint16_t sent = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    while (sent < n_out && Clock::now() < deadline) sent += port.tx_burst(out + sent, n_out - sent);
    port.free_burst(out + sent, n_out - sent);
    *echoed += sent;
    if (r > 0) last = Clock::now();
    if (stop) return true;
    if (Clock::now() - last > std::chrono::milliseconds(idle_ms)) return false;
  }
}

bool send_stop(DpdkPort& port) {
  PktBuf* b;
  if (port.alloc_burst(&b, 1) != 1) return false;
  fill_frame(b, port.mac(), port.mac(), kTagStop, 0, 64);
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < deadline)
    if (port.tx_burst(&b, 1) == 1) return true;
  port.free_burst(&b, 1);
  return false;
}

}  // namespace uroce::glue::test
