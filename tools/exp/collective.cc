#include "tools/exp/collective.h"

#include <algorithm>
#include <stdexcept>

#include "tools/exp/experiment.h"

namespace uroce::exp {

const char* collective_name(CollectiveKind k) {
  return k == CollectiveKind::kRingAllReduce ? "allreduce" : "alltoall";
}

Collective::Collective(const CollectiveSpec& spec) : spec_(spec) {
  const auto n = static_cast<uint32_t>(spec.ranks.size());
  const uint32_t c = spec.channels;
  if (n < 2 || c == 0 || spec.iterations == 0 || spec.warmup >= spec.iterations)
    throw std::invalid_argument("collective: needs 2+ ranks, 1+ channels, more iterations than warm-up");
  if (spec.kind == CollectiveKind::kRingAllReduce) {
    // Rank i's channel ch sends to rank i+1 on the same channel; its step s carries what it received from
    // rank i-1 at step s-1 (reduced with its own data, or forwarded in the all-gather half).
    chunk_ = spec.bytes / (uint64_t{n} * c);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t ch = 0; ch < c; ++ch) {
        edges_.push_back(Edge{spec.ranks[i], spec.ranks[(i + 1) % n]});
        waits_for_.push_back({size_t{(i + n - 1) % n} * c + ch});
      }
  } else {
    // Every rank sends bytes / n to every other rank, split over the channels; a rank starts the next
    // operation once all it sent and all it receives of this one completed.
    chunk_ = spec.bytes / (uint64_t{n} * c);
    for (uint32_t s = 0; s < n; ++s)
      for (uint32_t d = 0; d < n; ++d)
        for (uint32_t ch = 0; ch < c && s != d; ++ch) edges_.push_back(Edge{spec.ranks[s], spec.ranks[d]});
    for (const Edge& e : edges_) {
      std::vector<size_t> w;
      for (size_t k = 0; k < edges_.size(); ++k)
        if (edges_[k].src == e.src || edges_[k].dst == e.src) w.push_back(k);
      waits_for_.push_back(std::move(w));
    }
  }
  if (chunk_ == 0) throw std::invalid_argument("collective: size too small for ranks x channels");
}

uint32_t Collective::steps_per_op() const {
  const auto n = static_cast<uint32_t>(spec_.ranks.size());
  return spec_.kind == CollectiveKind::kRingAllReduce ? 2 * (n - 1) : 1;
}

uint64_t Collective::allowed(size_t k, const std::vector<uint64_t>& acked) const {
  uint64_t ready = UINT64_MAX;  // steps the flows that k waits for have all completed
  for (size_t w : waits_for_[k]) ready = std::min(ready, done_steps(w, acked));
  uint64_t steps = ready + 1;
  if (spec_.barrier) steps = std::min(steps, (steps_done_ / steps_per_op() + 1) * steps_per_op());
  return std::min(total_bytes(k), steps * chunk_);
}

void Collective::update(uint64_t now, const std::vector<uint64_t>& acked) {
  uint64_t all = UINT64_MAX;
  for (size_t k = 0; k < edges_.size(); ++k) all = std::min(all, done_steps(k, acked));
  while (steps_done_ < all) {
    step_end_ns_.push_back(now);
    ++steps_done_;
  }
}

CollectiveResult Collective::result(uint64_t start_ns) const {
  CollectiveResult r;
  const auto n = static_cast<uint32_t>(spec_.ranks.size());
  r.kind = collective_name(spec_.kind);
  r.ranks = n;
  r.channels = spec_.channels;
  r.bytes = spec_.bytes;
  const uint32_t spo = steps_per_op();
  r.iterations_done = static_cast<uint32_t>(steps_done_ / spo);
  std::vector<double> steps;
  for (size_t g = 0; g < step_end_ns_.size(); ++g)
    steps.push_back(static_cast<double>(step_end_ns_[g] - (g ? step_end_ns_[g - 1] : start_ns)) / 1000);
  r.step_p50_us = percentile(steps, 50);
  r.step_max_us = percentile(steps, 100);
  if (r.iterations_done <= spec_.warmup) return r;
  r.measured = r.iterations_done - spec_.warmup;
  auto op_end = [&](uint32_t ops) { return ops == 0 ? start_ns : step_end_ns_[uint64_t{ops} * spo - 1]; };
  for (uint32_t it = spec_.warmup; it < r.iterations_done; ++it)
    r.op_max_us = std::max(r.op_max_us, static_cast<double>(op_end(it + 1) - op_end(it)) / 1000);
  r.op_mean_us = static_cast<double>(op_end(r.iterations_done) - op_end(spec_.warmup)) / 1000 / r.measured;
  // nccl-tests: algbw = size / time; the bus factor turns it into the bytes each rank's link carried.
  r.algbw_gbyte_s = static_cast<double>(spec_.bytes) / (r.op_mean_us * 1000);
  const double factor = spec_.kind == CollectiveKind::kRingAllReduce ? 2.0 * (n - 1) / n : (n - 1.0) / n;
  r.busbw_gbyte_s = r.algbw_gbyte_s * factor;
  return r;
}

}  // namespace uroce::exp
