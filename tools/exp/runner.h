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

}  // namespace uroce::exp
