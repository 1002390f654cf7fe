#include "sim/sim_switch.h"

#include "transport/wire/address.h"

namespace uroce::sim {
namespace {

constexpr uint16_t kEthHeaderLen = 14;
constexpr uint64_t kGroupBit = uint64_t{1} << 40;  // I/G bit: lowest bit of the first octet

}  // namespace

SimSwitch::SimSwitch(const SwitchConfig& cfg, uint32_t id, uint64_t seed)
    : cfg_(cfg), id_(id), pool_(cfg.buffer_frames, cfg.max_frame), core_(cfg.fabric, *this, seed) {
  core_.set_id(id);
}

uint32_t SimSwitch::add_port(uint64_t mac) {
  const auto port = static_cast<uint32_t>(egress_.size());
  ingress_.push_back(std::make_unique<Ingress>(this, port));
  egress_.push_back(nullptr);
  feeder_.push_back(nullptr);
  core_.add_port();
  if (mac != 0) {
    table_[mac] = port;
    core_.add_static_mac(mac, port);
  }
  return port;
}

void SimSwitch::forward(uint32_t in, const SimFrame& f, uint64_t now) {
  if (cfg_.fabric.enabled) return forward_fabric(in, f, now);
  if (f.buf->len < kEthHeaderLen) {
    ++counters_.runt;
    return;
  }
  PktBuf* b = copy_frame(pool_, f);
  if (b == nullptr) {
    ++counters_.no_buffer;
    return;
  }
  const uint64_t dst = wire::mac_to_u64(b->data);
  const uint64_t src = wire::mac_to_u64(b->data + 6);
  if (cfg_.learn && !(src & kGroupBit)) table_[src] = in;

  if (dst & kGroupBit) {
    ++counters_.flooded;
    for (uint32_t p = 0; p < egress_.size(); ++p) {
      if (p == in) continue;
      BufferPool::add_ref(b);
      egress_[p]->send(SimFrame{b}, now);
    }
    BufferPool::release(b);  // the switch's own reference
    return;
  }
  const auto it = table_.find(dst);
  if (it == table_.end() || it->second == in) {
    ++(it == table_.end() ? counters_.unknown_dst : counters_.filtered);
    BufferPool::release(b);
    return;
  }
  ++counters_.forwarded;
  egress_[it->second]->send(SimFrame{b}, now);  // the egress link takes the reference
}

}  // namespace uroce::sim
