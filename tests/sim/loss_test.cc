// Reliability under impairment: random messages (1 B .. 1 MiB, random SGE layouts) of every
// operation, over links that lose, reorder, duplicate and corrupt packets, complete byte-exact, in order and
// exactly once. A failure names its seed; UROCE_SIM_SEED=N reruns one seed, UROCE_SIM_MESSAGES=N scales.
// Each case runs with go-back-N (the default), with selective repeat at both ends, and with selective repeat
// at one end talking to a go-back-N peer.
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

// Which ends use selective repeat: "gbn" neither, "sr" both, "sr_req" the requester only (its peer answers
// with plain NAKs), "sr_resp" the responder only (its peer goes back N over the packets it holds).
using Param = std::tuple<const char*, double, const char*>;

class LossyLink : public ::testing::TestWithParam<Param> {};

TEST_P(LossyLink, EveryMessageArrivesExactlyOnceInOrder) {
  const auto [op, loss, mode] = GetParam();
  WorkloadConfig c;
  c.seed = seed_for(static_cast<uint64_t>(loss * 1000) * 31 + std::string(op).size());
  const std::string m = mode;
  c.sr_requester = m == "sr" || m == "sr_req";
  c.sr_responder = m == "sr" || m == "sr_resp";
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
    // Selective repeat really ran: the responder held packets and released every one it kept (a packet
    // still held at the end would be one that never executed), and an SR requester re-sent selectively
    // only with SR NAKs or its probe. READ responses stay go-back-N: with READs only, a lost response
    // (most of the data) takes the go-back-N path, which covers the requests' gap too.
    if (c.sr_responder) {
      EXPECT_GT(r.sr_held, 0u);
      EXPECT_EQ(r.sr_released, r.sr_held);
    } else {
      EXPECT_EQ(r.sr_held, 0u);
    }
    if (c.sr_requester && c.sr_responder) {
      EXPECT_GT(r.sr_naks, 0u);
      if (o != "read") {
        EXPECT_GT(r.sr_retransmits, 0u);
      }
    } else {
      EXPECT_EQ(r.sr_naks, 0u);  // a go-back-N end neither sends nor asks for SR NAKs
    }
    if (!c.sr_requester) {
      EXPECT_EQ(r.sr_retransmits, 0u);
    }
  }
  std::printf(
      "[ sim      ] %-6s %-7s loss %.2f: %u msgs, %.1f MB, %.3f s virtual, retransmits %lu, lost %lu, "
      "reordered %lu, duplicated %lu, corrupted %lu; timeouts %lu, SR held %lu, SR re-sends %lu\n",
      op, mode, loss, r.completed, r.bytes / 1e6, r.virtual_ns / 1e9, (unsigned long)r.retransmits,
      (unsigned long)r.link_lost, (unsigned long)r.link_reordered, (unsigned long)r.link_duplicated,
      (unsigned long)r.link_corrupted, (unsigned long)r.timeouts, (unsigned long)r.sr_held,
      (unsigned long)r.sr_retransmits);
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  const std::string mode = std::get<2>(info.param);
  return std::string(std::get<0>(info.param)) + "_loss" +
         std::to_string(static_cast<int>(std::get<1>(info.param) * 100)) + (mode == "gbn" ? "" : "_" + mode);
}

INSTANTIATE_TEST_SUITE_P(Transport, LossyLink,
                         ::testing::Combine(::testing::Values("send", "write", "read", "atomic"),
                                            ::testing::Values(0.0, 0.01, 0.05, 0.20),
                                            ::testing::Values("gbn")),
                         case_name);

// Every operation interleaved on the same QPs (READ responses, atomic replies and WRITE/SEND requests
// sharing the retry and duplicate paths), at a moderate and a heavy impairment.
INSTANTIATE_TEST_SUITE_P(Mixed, LossyLink,
                         ::testing::Combine(::testing::Values("mixed"), ::testing::Values(0.05, 0.20),
                                            ::testing::Values("gbn")),
                         case_name);

// The same with selective repeat at both ends.
INSTANTIATE_TEST_SUITE_P(SelectiveRepeat, LossyLink,
                         ::testing::Combine(::testing::Values("send", "write", "read", "atomic", "mixed"),
                                            ::testing::Values(0.01, 0.05, 0.20), ::testing::Values("sr")),
                         case_name);

// Selective repeat at one end only, against a go-back-N peer.
INSTANTIATE_TEST_SUITE_P(SelectiveRepeatInterop, LossyLink,
                         ::testing::Combine(::testing::Values("send", "write", "mixed"),
                                            ::testing::Values(0.05), ::testing::Values("sr_req", "sr_resp")),
                         case_name);

}  // namespace
}  // namespace uroce::test
