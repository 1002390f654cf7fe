// A random verbs workload between two simulated endpoints, checked for exactly-once, in-order, byte-exact
// delivery. Used by the loss/reorder/duplication/corruption simulation tests and the goodput benchmark.
#pragma once

#include <cstdint>
#include <string>

#include "tests/support/sim_env.h"

namespace uroce::test {

struct WorkloadConfig {
  uint64_t seed = 1;
  uint32_t messages = 1000;
  uint32_t min_len = 1;  // sizes are log-uniform in [min_len, max_len]
  uint32_t max_len = 1 << 20;
  uint32_t depth = 16;  // operations in flight
  // Relative weights of the operations.
  uint32_t w_send = 1, w_write = 1, w_write_imm = 1, w_read = 1, w_atomic = 1;
  Mtu mtu = Mtu::k4096;
  sim::LinkConfig link;
  uint8_t timeout = 12;  // ~17 ms: above the queueing of 16 outstanding 1 MiB READs at line rate
  uint64_t max_virtual_ns = 600'000'000'000;
  // Selective repeat on the requesting endpoint (a) and on the responding one (b); off: go-back-N.
  bool sr_requester = false, sr_responder = false;
};

struct WorkloadResult {
  bool ok = false;
  std::string error;  // the first mismatch, with the seed
  uint32_t completed = 0;
  uint64_t bytes = 0;
  uint64_t virtual_ns = 0;
  uint64_t retransmits = 0;
  uint64_t icrc_drops = 0;
  uint64_t link_lost = 0, link_corrupted = 0, link_duplicated = 0, link_reordered = 0;
  uint64_t timeouts = 0, seq_naks = 0;
  uint64_t sr_held = 0, sr_released = 0, sr_retransmits = 0, sr_naks = 0;  // selective repeat, both ends
};

WorkloadResult run_workload(const WorkloadConfig& cfg);

// The goodput measurement's workload (bench_goodput, goodput_test): `messages` 1 MiB RDMA WRITEs on a link
// losing `loss` of its frames, a ~4 ms ACK timeout, selective repeat on both sides or on neither.
inline WorkloadConfig goodput_workload(uint32_t messages, double loss, bool selective_repeat) {
  WorkloadConfig c;
  c.seed = 42;
  c.messages = messages;
  c.min_len = c.max_len = 1 << 20;
  c.w_send = c.w_write_imm = c.w_read = c.w_atomic = 0;
  c.w_write = 1;
  c.link.loss = loss;
  c.timeout = 10;  // ~4 ms
  c.sr_requester = c.sr_responder = selective_repeat;
  return c;
}

}  // namespace uroce::test
