// Reliability under impairment: random messages (1 B .. 1 MiB, random SGE layouts) of every
// operation, over links that lose, reorder, duplicate and corrupt packets, complete byte-exact, in order and
// exactly once. A failure names its seed; UROCE_SIM_SEED=N reruns one seed, UROCE_SIM_MESSAGES=N scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "tests/sim/workload.h"

namespace uroce::test {
namespace {

uint32_t messages_per_case() {
  const char* env = std::getenv("UROCE_SIM_MESSAGES");
  return env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 10000;
}

uint64_t seed_for(uint64_t dflt) {
  const char* env = std::getenv("UROCE_SIM_SEED");
  return env ? std::strtoull(env, nullptr, 10) : dflt;
}

struct Impairment {
  const char* name;
  double loss;
};

class LossyLink : public ::testing::TestWithParam<std::tuple<const char*, double>> {};

TEST_P(LossyLink, EveryMessageArrivesExactlyOnceInOrder) {
  const auto [op, loss] = GetParam();
  WorkloadConfig c;
  c.seed = seed_for(static_cast<uint64_t>(loss * 1000) * 31 + std::string(op).size());
  // Every operation at once is the costliest case: a quarter of the others' messages keeps it to a few
  // seconds while still mixing thousands of READs, atomics and WRITEs on one QP.
  c.messages = std::string(op) == "mixed" ? std::max(1u, messages_per_case() / 4) : messages_per_case();
  c.w_send = c.w_write = c.w_write_imm = c.w_read = c.w_atomic = 0;
  const std::string o = op;
  if (o == "send") c.w_send = 1;
  if (o == "write") c.w_write = c.w_write_imm = 1;
  if (o == "read") c.w_read = 1;
  if (o == "atomic") c.w_atomic = 1;
  if (o == "mixed") c.w_send = c.w_write = c.w_write_imm = c.w_read = c.w_atomic = 1;
  c.link.loss = loss;
  c.link.reorder = loss / 2;
  c.link.reorder_window_ns = 5000;
  c.link.duplicate = loss / 4;
  c.link.corrupt = loss / 10;
  const WorkloadResult r = run_workload(c);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.completed, c.messages) << "seed " << c.seed;
  if (loss > 0) {
    EXPECT_GT(r.link_lost, 0u);
    EXPECT_GT(r.retransmits, 0u);
    // Most flipped bits are covered by the ICRC; the rest hit the Ethernet header or fields the ICRC masks.
    EXPECT_LE(r.icrc_drops, r.link_corrupted);
    if (r.link_corrupted >= 20) {
      EXPECT_GT(r.icrc_drops, 0u);
    }
  }
  std::printf(
      "[ sim      ] %-6s loss %.2f: %u msgs, %.1f MB, %.3f s virtual, retransmits %lu, lost %lu, "
      "reordered %lu, duplicated %lu, corrupted %lu\n",
      op, loss, r.completed, r.bytes / 1e6, r.virtual_ns / 1e9, (unsigned long)r.retransmits,
      (unsigned long)r.link_lost, (unsigned long)r.link_reordered, (unsigned long)r.link_duplicated,
      (unsigned long)r.link_corrupted);
}

INSTANTIATE_TEST_SUITE_P(Transport, LossyLink,
                         ::testing::Combine(::testing::Values("send", "write", "read", "atomic"),
                                            ::testing::Values(0.0, 0.01, 0.05, 0.20)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_loss" +
                                  std::to_string(static_cast<int>(std::get<1>(info.param) * 100));
                         });

// Every operation interleaved on the same QPs (READ responses, atomic replies and WRITE/SEND requests
// sharing the retry and duplicate paths), at a moderate and a heavy impairment.
INSTANTIATE_TEST_SUITE_P(Mixed, LossyLink,
                         ::testing::Combine(::testing::Values("mixed"), ::testing::Values(0.05, 0.20)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_loss" +
                                  std::to_string(static_cast<int>(std::get<1>(info.param) * 100));
                         });

}  // namespace
}  // namespace uroce::test
