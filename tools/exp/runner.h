// Runs a scenario's variants, writes their CSV time series and gnuplot PNGs, and prints the summary.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "tools/exp/scenarios.h"

namespace uroce::exp {

struct VariantResult {
  std::string name;
  Summary summary;
  std::string dir;  // where its CSVs (and plots) went; empty without an output directory
};

// out_dir empty: no files. plots: run gnuplot on the CSVs (skipped with a message when it is missing).
std::vector<VariantResult> run_scenario(const Scenario& sc, RunOptions& opt, const std::string& out_dir,
                                        bool plots, FILE* log);

void print_summary(FILE* out, const std::vector<VariantResult>& results);

// A run's time series as the CSV files and plots present them, whoever measured them: the simulator
// (series_of) or the real-time runner (tools/exp/realtime.h). Files: flows.csv (per-flow receive rate),
// cc_rates.csv (per-flow CC rate), counters.csv (cumulative events), queues.csv (watched queues, KiB),
// flows_band.csv (slowest / mean / fastest flow), fct.csv (finite flows).
struct Series {
  std::vector<std::string> flow_labels;  // one per flow, e.g. "h1 -> h0"
  struct RateRow {
    double t_us = 0;
    std::vector<double> gbps, cc_gbps;                                   // per flow; cc 0: unlimited
    uint64_t pause_frames = 0, cnp_sent = 0, ecn_marked = 0, drops = 0;  // cumulative
  };
  std::vector<RateRow> rates;
  std::vector<std::string> queue_names;
  struct QueueRow {
    double t_us = 0;
    std::vector<double> kib;  // per watched queue
  };
  std::vector<QueueRow> queues;
  struct Fct {
    size_t flow = 0;
    uint32_t src = 0, dst = 0;
    uint64_t bytes = 0;
    double start_us = 0, fct_us = 0, slowdown = 0;
  };
  std::vector<Fct> fcts;
  // Horizontal lines on the queue plot (0: none): the first queue's ECN thresholds and pause threshold.
  double kmin_kib = 0, kmax_kib = 0, xoff_kib = 0;
  std::string xoff_label = "XOFF (per ingress)";
};

Series series_of(const Experiment& e);
void write_csvs(const Series& s, const std::string& dir);
// Runs gnuplot on the CSVs: rates.png, queue.png, counters.png. False (with gnuplot.log) when it failed.
bool plot(const Series& s, const std::string& dir, const std::string& title);
bool have_gnuplot();

}  // namespace uroce::exp
