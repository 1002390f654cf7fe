// What one variant of a real-time experiment measured, and what is made of it: the simulator's time series
// (runner.h: Series, so the same CSV files and plots) and the summary line of `uroce exp --realtime`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/exp/rt_sample.h"
#include "tools/exp/runner.h"

namespace uroce::exp::rt {

struct Measured {
  std::string name;  // the variant
  pid_t receiver = 0;
  std::vector<pid_t> senders;
  double t0_s = 0;                   // monotonic time of the first sample: time 0 of the CSV files
  std::vector<EngineSample> rx;      // the receiver, every sample period
  std::map<pid_t, EngineSample> tx;  // each sender's last sample
  std::vector<std::vector<std::pair<double, std::vector<QpSample>>>> tx_series;  // per sender: (t_s, qps)
  std::vector<SwitchSample> sw;                              // uroced, every sample period
  int client_exit = 0;                                       // the worst exit status of the senders
  uint64_t kmin_bytes = 0, kmax_bytes = 0, pause_bytes = 0;  // the receiver port's (0: ECN off)
};

struct Report {
  Series series;
  std::vector<double> flow_gbps;  // per flow, mean over the window
  double total_gbps = 0, jain = 0;
  double q_p50_kib = 0, q_p99_kib = 0, q_max_kib = 0;  // receiver port, window samples
  double window_s = 0;
  uint64_t ecn_marked = 0, pauses = 0, pfc_frames = 0, drops = 0, cnp_sent = 0, cnp_handled = 0,
           cc_rate_changes = 0;
  size_t queue_samples = 0;
  double sample_interval_ms = 0;  // median interval between the port's samples
};

// Flows are the receiver's QPs that received more than 1 MB; rates in flows.csv are averaged over
// `rate_interval_s`; the window is the last 80% of the traffic phase (first to last interval with data).
Report analyse(const Measured& m, double rate_interval_s);

// "NAME  flows N  throughput G Gb/s (P% of RATE)  per flow ...  Jain J  queue p50/p99/max A/B/C KiB ..."
std::string summary_line(const Measured& m, const Report& r, uint64_t port_rate_bps, const std::string& rate);

}  // namespace uroce::exp::rt
