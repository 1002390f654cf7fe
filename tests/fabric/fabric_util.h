// Raw-frame helpers for the fabric model tests: RoCEv2 frames built with the wire builder, a node that
// pumps N frames through a SimPort as fast as its tx ring takes them, and a node that counts arrivals.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/sim_network.h"
#include "transport/wire/packet.h"

namespace uroce::test {

struct RawFlow {
  uint32_t src_ip = 0x0A000001, dst_ip = 0x0A000002;
  uint16_t sport = 0xC000;
  uint8_t tclass = (26 << 2) | 2;  // DSCP 26 (priority 3), ECT(0)
  uint8_t opcode = 0x0A;           // RC RDMA WRITE ONLY
  uint32_t payload = 4096;
  uint64_t src_mac = 0, dst_mac = 0;
  uint16_t sports = 1;  // the pump cycles through sport, sport + 1, ... sport + sports - 1
};

// A complete frame (valid ICRC) for `f`.
std::vector<uint8_t> roce_frame(const RawFlow& f);

class Pump final : public sim::SimNode {
 public:
  Pump(sim::SimNetwork& net, sim::SimPort& port, const RawFlow& flow, uint64_t frames);
  void poll() override;
  uint64_t next_deadline_ns() const override;
  uint64_t sent() const { return sent_; }

 private:
  sim::SimNetwork& net_;
  sim::SimPort& port_;
  std::vector<std::vector<uint8_t>> frames_;
  uint64_t left_, sent_ = 0;
  bool blocked_ = false;   // tx ring full: the network wakes us when it has space
  uint64_t retry_at_ = 0;  // pool empty: try again then
};

class Sink final : public sim::SimNode {
 public:
  Sink(sim::SimNetwork& net, sim::SimPort& port);
  void poll() override;
  uint64_t next_deadline_ns() const override { return kNever; }
  uint64_t frames = 0, bytes = 0, ce = 0;
  std::vector<cc::IntStack> stacks;  // INT stacks of the first frames (up to 16)

 private:
  sim::SimPort& port_;
};

}  // namespace uroce::test
