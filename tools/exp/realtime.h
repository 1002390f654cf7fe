// uroce exp --realtime: congestion-control scenarios with real verbs traffic through uroced, in real time.
//
// Each variant of a scenario gets its own runtime directory and so its own uroced, started with the
// variant's port rate, ECN thresholds and pause threshold; then a receiver process and its senders run under
// `uroce run` with the variant's congestion control (UROCE_CC, UROCE_CC_PARAMS). While they run the runner
// samples, every millisecond, the receiver's per-QP receive counters (its control socket, as `uroce stats`)
// and the receiver port's queue in uroced (`stats` on uroced's control socket), and every 10 ms the senders'
// CC rates. It writes the simulator's CSV files and plots (runner.h: Series), a summary line per variant
// computed as the simulator's (Jain over per-flow means, queue percentiles, window = last 80% of the
// traffic phase) and a manifest with every knob.
#pragma once

#include <string>
#include <vector>

namespace uroce::exp::rt {

// The words after `uroce exp --realtime`. Returns the exit status (0 when every variant ran and its
// processes exited 0); throws tools::UsageError for bad input.
int run_realtime(const std::vector<std::string>& args);

}  // namespace uroce::exp::rt
