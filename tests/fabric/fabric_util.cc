#include "tests/fabric/fabric_util.h"

#include <cstring>

#include "fabric/fabric.h"
#include "transport/wire/headers.h"

namespace uroce::test {

std::vector<uint8_t> roce_frame(const RawFlow& f) {
  wire::PacketHeaders h;
  for (int i = 0; i < 6; ++i) {
    h.eth.dst[i] = static_cast<uint8_t>(f.dst_mac >> (40 - 8 * i));
    h.eth.src[i] = static_cast<uint8_t>(f.src_mac >> (40 - 8 * i));
  }
  h.ip.src = wire::ipv4_mapped(f.src_ip);
  h.ip.dst = wire::ipv4_mapped(f.dst_ip);
  h.ip.tclass = f.tclass;
  h.udp_sport = f.sport;
  h.bth.opcode = f.opcode;
  h.bth.dqpn = 0x11;
  if (f.opcode == 0x11)
    h.aeth = {};
  else
    h.reth = {0x1000, 0x1234, f.payload};
  std::vector<uint8_t> payload(f.opcode == 0x11 ? 0 : f.payload, 0x5A);
  std::vector<uint8_t> out(wire::headers_len(h) + payload.size() + wire::trailer_len(payload.size()));
  out.resize(wire::build_frame(h, {payload.data(), payload.size()}, out.data()));
  return out;
}

Pump::Pump(sim::SimNetwork& net, sim::SimPort& port, const RawFlow& flow, uint64_t frames)
    : net_(net), port_(port), left_(frames) {
  for (uint16_t i = 0; i < flow.sports; ++i) {
    RawFlow f = flow;
    f.sport = static_cast<uint16_t>(flow.sport + i);
    frames_.push_back(roce_frame(f));
  }
  net.add_node(*this, {&port});
}

void Pump::poll() {
  blocked_ = false;
  while (left_ > 0) {
    PktBuf* b;
    if (port_.alloc_burst(&b, 1) != 1) {
      retry_at_ = net_.now_ns() + 100;
      return;
    }
    const std::vector<uint8_t>& frame = frames_[sent_ % frames_.size()];
    std::memcpy(b->data, frame.data(), frame.size());
    b->len = static_cast<uint16_t>(frame.size());
    if (port_.tx_burst(&b, 1) != 1) {
      port_.free_burst(&b, 1);
      blocked_ = true;
      return;
    }
    --left_;
    ++sent_;
  }
}

uint64_t Pump::next_deadline_ns() const { return left_ > 0 && !blocked_ ? retry_at_ : kNever; }

Sink::Sink(sim::SimNetwork& net, sim::SimPort& port) : port_(port) { net.add_node(*this, {&port}); }

void Sink::poll() {
  PktBuf* bufs[kBurst];
  uint16_t n;
  while ((n = port_.rx_burst(bufs, kBurst)) > 0) {
    for (uint16_t i = 0; i < n; ++i) {
      ++frames;
      bytes += bufs[i]->len;
      wire::ParsedPacket p;
      if (wire::parse_frame(bufs[i]->data, bufs[i]->len, &p) == wire::RxDrop::kNone &&
          p.ecn() == wire::Ecn::kCe)
        ++ce;
      if (stacks.size() < 16 && bufs[i]->telemetry) stacks.push_back(*bufs[i]->telemetry);
    }
    port_.free_burst(bufs, n);
  }
}

}  // namespace uroce::test
