// A collective operation as NCCL runs it over RDMA, reduced to its traffic and its dependencies: ring
// AllReduce (reduce-scatter then all-gather, 2(n-1) steps) and AllToAll, each rank sending on several QPs
// ("channels"). A step's data leaves a rank only once the data it depends on has arrived, so the slowest
// flow of a step sets the pace of every rank. Bandwidths are reported as nccl-tests defines them:
// algbw = size / time per operation, busbw = algbw * 2(n-1)/n (AllReduce) or algbw * (n-1)/n (AllToAll).
//
// This file is the bookkeeping only (which flows exist, how many bytes each may have posted, when steps
// and operations completed); Experiment (experiment.h) wires the flows and posts the WRITEs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::exp {

enum class CollectiveKind { kRingAllReduce, kAllToAll };
const char* collective_name(CollectiveKind k);

struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::kRingAllReduce;
  std::vector<uint32_t> ranks;      // host indices; for AllReduce in ring order
  uint32_t channels = 4;            // QPs per peer (NCCL channels)
  uint64_t bytes = 0;               // per rank: nccl-tests' message size
  uint32_t iterations = 5;          // operations run back to back
  uint32_t warmup = 1;              // the first this many are not measured
  uint32_t msg_bytes = 256 * 1024;  // largest WRITE posted
  uint32_t depth = 4;               // WRITEs in flight per QP
  uint16_t sport = 0;               // UDP source port of every QP; 0: varies per QP
  // An operation starts only when every rank has completed the previous one (a training step computes
  // between its collectives); without it ranks run ahead into the next operation as far as their
  // dependencies allow.
  bool barrier = true;
};

struct CollectiveResult {
  std::string kind;
  uint32_t ranks = 0, channels = 0;
  uint64_t bytes = 0;
  uint32_t iterations_done = 0, measured = 0;
  double algbw_gbyte_s = 0, busbw_gbyte_s = 0;  // GB/s (1e9 bytes) as nccl-tests prints them
  double op_mean_us = 0, op_max_us = 0;         // per operation, measured ones
  double step_p50_us = 0, step_max_us = 0;      // time from one step's end on every flow to the next's
};

class Collective {
 public:
  struct Edge {
    uint32_t src, dst;  // host indices
  };

  // Throws std::invalid_argument for fewer than 2 ranks, no channel, or a size that does not give every
  // flow at least one byte per step.
  explicit Collective(const CollectiveSpec& spec);

  const CollectiveSpec& spec() const { return spec_; }
  // The flows, one QP pair each; index k is the flow's place in the acked vectors below.
  const std::vector<Edge>& edges() const { return edges_; }
  uint32_t steps_per_op() const;
  uint64_t chunk_bytes() const { return chunk_; }  // one flow's share of one step
  uint64_t total_bytes(size_t) const { return chunk_ * steps_per_op() * spec_.iterations; }
  // How many bytes flow k may have posted, given every flow's acknowledged bytes.
  uint64_t allowed(size_t k, const std::vector<uint64_t>& acked) const;
  // Records step and operation completions (call after completions were counted, at virtual time `now`).
  void update(uint64_t now, const std::vector<uint64_t>& acked);
  bool done() const { return steps_done_ >= steps_per_op() * spec_.iterations; }
  // `start_ns`: when the first step was posted.
  CollectiveResult result(uint64_t start_ns) const;

 private:
  uint64_t done_steps(size_t k, const std::vector<uint64_t>& acked) const { return acked[k] / chunk_; }

  CollectiveSpec spec_;
  std::vector<Edge> edges_;
  std::vector<std::vector<size_t>> waits_for_;  // per flow: the flows whose previous step it waits for
  uint64_t chunk_ = 0;
  uint64_t steps_done_ = 0;            // steps every flow has completed
  std::vector<uint64_t> step_end_ns_;  // per global step: when its last flow completed it
};

}  // namespace uroce::exp
