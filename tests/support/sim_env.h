// Test endpoints: a uroce Device on a simulated port, driven by the virtual-time network, with a PD, CQs and
// one large registered buffer. Used by the transport protocol and simulation tests.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/sim_network.h"
#include "transport/device.h"

namespace uroce::test {

struct EndpointOptions {
  size_t mem_bytes = 1 << 20;
  uint32_t cqe = 4096;
  DeviceConfig device;  // gid/mac filled in from the endpoint number when left zero
};

class Endpoint final : public sim::SimNode {
 public:
  // Endpoint `n` has IPv4 GID ::ffff:10.0.0.n and MAC 02:00:0a:00:00:n.
  Endpoint(sim::SimNetwork& net, uint8_t n, const EndpointOptions& opt = {});
  ~Endpoint() override;

  void poll() override { dev->progress(); }
  uint64_t next_deadline_ns() const override { return dev->next_deadline(); }

  Gid gid() const { return dev->config().gid; }
  // An RC/UC/UD QP on this endpoint's PD and CQ, in RESET.
  Qp* create_qp(QpType type, uint32_t max_wr = 256, uint32_t max_sge = 4, Srq* srq = nullptr,
                uint32_t max_inline = 64);
  uint8_t* mem_at(size_t off) { return mem.data() + off; }
  uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(mem.data() + off); }
  Sge sge(size_t off, uint32_t len) const { return Sge{addr(off), len, mr->lkey}; }
  std::vector<Wc> poll_cq(Cq* q = nullptr);

  sim::SimPort* port = nullptr;
  std::unique_ptr<Device> dev;
  Pd* pd = nullptr;
  Cq* cq = nullptr;
  Mr* mr = nullptr;
  std::vector<uint8_t> mem;
};

struct RcOptions {
  Mtu mtu = Mtu::k1024;
  uint8_t timeout = 14;  // ~67 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 10 us
  uint8_t max_rd_atomic = 16;
  uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  uint32_t sq_psn_a = 100, sq_psn_b = 200;
};

// Moves a connected pair (RC or UC) to RTS with each other as the destination. Returns 0 or the errno.
int connect_qps(Endpoint& a, Qp* qa, Endpoint& b, Qp* qb, const RcOptions& o = {});
// UD QP to RTS with Q_Key `qkey`.
int ud_to_rts(Qp* qp, uint32_t qkey);

// Runs the network until `n` completions have been collected on `ep`'s CQ or `max_ns` of virtual time pass.
std::vector<Wc> run_for_completions(sim::SimNetwork& net, Endpoint& ep, size_t n,
                                    uint64_t max_ns = 10'000'000'000);

}  // namespace uroce::test
