// Test doubles for code that sits on a PacketIo (uroced's switch core, the PFC endpoint): an in-memory port
// and a plain UDP/IPv4 frame builder.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "transport/packet_io.h"
#include "transport/wire/headers.h"

namespace uroce::test {

// A PacketIo whose "wire" is two queues the test reads and writes. Tracks every buffer it lends out.
class FakePort : public PacketIo {
 public:
  explicit FakePort(size_t nbufs = 256) {
    for (size_t i = 0; i < nbufs; ++i) {
      auto b = std::make_unique<PktBuf>();
      storage_.push_back(std::make_unique<uint8_t[]>(kRoom));
      b->data = storage_.back().get();
      b->cap = kRoom;
      b->impl = this;
      free_.push_back(b.get());
      all_.push_back(std::move(b));
    }
  }
  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override {
    uint16_t k = 0;
    while (k < n && !free_.empty()) {
      bufs[k] = free_.back();
      free_.pop_back();
      bufs[k++]->len = 0;
    }
    return k;
  }
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override {
    const uint16_t k = std::min<uint16_t>(n, tx_room);
    tx_room -= k;
    for (uint16_t i = 0; i < k; ++i) {
      sent.emplace_back(bufs[i]->data, bufs[i]->data + bufs[i]->len);
      // The buffer may belong to another port (as with DPDK): it goes home.
      static_cast<FakePort*>(bufs[i]->impl)->free_.push_back(bufs[i]);
    }
    return k;
  }
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override {
    uint16_t k = 0;
    while (k < n && !rx.empty()) {
      bufs[k++] = rx.front();
      rx.pop_front();
    }
    return k;
  }
  void free_burst(PktBuf** bufs, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) static_cast<FakePort*>(bufs[i]->impl)->free_.push_back(bufs[i]);
  }
  uint16_t max_frame() const override { return kRoom; }

  // Queues a frame for the switch to receive.
  void inject(const std::vector<uint8_t>& frame) {
    PktBuf* b = nullptr;
    ASSERT_EQ(alloc_burst(&b, 1), 1);
    std::memcpy(b->data, frame.data(), frame.size());
    b->len = static_cast<uint16_t>(frame.size());
    rx.push_back(b);
  }
  size_t home() const { return free_.size(); }
  size_t total() const { return all_.size(); }

  std::deque<PktBuf*> rx;
  std::vector<std::vector<uint8_t>> sent;
  uint32_t tx_room = UINT32_MAX;  // frames tx_burst still accepts (backpressure when 0)

 private:
  static constexpr uint16_t kRoom = 4352;
  std::vector<std::unique_ptr<PktBuf>> all_;
  std::vector<std::unique_ptr<uint8_t[]>> storage_;
  std::vector<PktBuf*> free_;
};

// An Ethernet/IPv4/UDP frame of `len` (at least 60) bytes with the given ECN bits and a correct IPv4
// checksum. The default TOS has DSCP bits that must survive marking and put the frame at priority 3 (DSCP >>
// 3).
inline std::vector<uint8_t> frame(const std::array<uint8_t, 6>& dst, const std::array<uint8_t, 6>& src,
                                  uint32_t len = 1000, uint8_t ecn = 0, uint8_t tos = 0x68) {
  std::vector<uint8_t> f(std::max<uint32_t>(len, 60), 0xab);  // no shorter than an Ethernet frame
  auto* eth = reinterpret_cast<wire::EthHdr*>(f.data());
  std::memcpy(eth->dst, dst.data(), 6);
  std::memcpy(eth->src, src.data(), 6);
  eth->ether_type.set(wire::kEtherTypeIpv4);
  auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(f.data() + sizeof(wire::EthHdr));
  std::memset(ip, 0, sizeof *ip);
  ip->ver_ihl = 0x45;
  ip->tos = static_cast<uint8_t>((tos & 0xFC) | ecn);
  ip->total_len.set(static_cast<uint16_t>(f.size() - sizeof(wire::EthHdr)));
  ip->ttl = 64;
  ip->proto = wire::kIpProtoUdp;
  ip->src.set(0x7f010002);
  ip->dst.set(0x7f010001);
  ip->csum.set(wire::ipv4_checksum(*ip));
  return f;
}

}  // namespace uroce::test
