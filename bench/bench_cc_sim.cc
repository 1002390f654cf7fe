// Simulated congestion-control outcomes, each against its criterion, in virtual time on the fabric model:
// DCQCN in a 16:1 incast at 100 Gb/s, PFC only vs DCQCN + PFC, two flows converging, HPCC in the same
// incast. The baseline, measured in the same run, is the same incast with PFC alone (no congestion
// control). Deterministic: one seed, the same binary prints the same table.
//
// Usage: bench_cc_sim [--out DIR]   (DIR: also write each run's CSVs and gnuplot PNGs there)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "cc/cc.h"
#include "tools/exp/runner.h"

using namespace uroce::exp;

namespace {

std::string g_out;

std::vector<VariantResult> run(const char* scenario, const char* cc = "") {
  RunOptions o;
  o.seed = 1;
  o.cc = cc;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_scenario(*find_scenario(scenario), o, g_out, !g_out.empty(), stderr);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\n[%s: %.0f us simulated in %.2f s wall]\n", scenario,
              static_cast<double>(o.duration_ns) / 1000, s);
  print_summary(stdout, r);
  return r;
}

const char* verdict(bool ok) { return ok ? "yes" : "NO"; }

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      g_out = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_cc_sim [--out DIR]\n");
      return 2;
    }
  }
  const double kmax_kb = default_fabric().ecn.kmax_bytes / 1024.0;
  std::printf(
      "Fabric: 100 Gb/s links, 1 us propagation, MTU 4096, 256 KiB WRITEs; ECN Kmin %u KiB, Kmax %.0f KiB, "
      "Pmax %.2f; PFC XOFF %u KiB; window = last 80%% of each run\n",
      default_fabric().ecn.kmin_bytes / 1024, kmax_kb, default_fabric().ecn.pmax,
      default_fabric().pfc_xoff_bytes / 1024);

  const auto pfc = run("pfc-vs-dcqcn");
  const auto incast = run("incast");
  const auto fair = run("fair2");
  const Summary& d = incast.at(0).summary;
  const Summary& p_only = pfc.at(0).summary;
  const Summary& p_cc = pfc.at(1).summary;
  const Summary& f = fair.at(0).summary;
  const double share = f.total_gbps / 2;

  bool have_hpcc = false;
  for (const std::string& n : uroce::cc::algorithm_names()) have_hpcc |= n == "hpcc";
  Summary h;
  if (have_hpcc) h = run("hpcc-incast").at(0).summary;

  std::printf(
      "\nOutcome                                                  measured            criterion  met\n");
  std::printf("DCQCN 16:1 bottleneck utilisation                        %6.1f%%             >= 95%%     %s\n",
              100 * d.utilisation, verdict(d.utilisation >= 0.95));
  std::printf("DCQCN 16:1 Jain fairness                                 %6.3f              >= 0.95    %s\n",
              d.jain, verdict(d.jain >= 0.95));
  std::printf("DCQCN 16:1 p99 queue                                     %6.1f KiB          < %.0f KiB  %s\n",
              d.q_p99_kb, kmax_kb, verdict(d.q_p99_kb < kmax_kb));
  std::printf("DCQCN 16:1 drops                                         %6lu              0          %s\n",
              static_cast<unsigned long>(d.drops), verdict(d.drops == 0));
  std::printf("pause frames, PFC only (baseline) vs DCQCN + PFC         %6lu vs %-6lu     more       %s\n",
              static_cast<unsigned long>(p_only.pause_frames), static_cast<unsigned long>(p_cc.pause_frames),
              verdict(p_only.pause_frames > p_cc.pause_frames));
  std::printf(
      "two flows: slowest / fastest vs fair share %5.1f Gb/s     %5.1f%% / %5.1f%%     within 10%% %s\n",
      share, 100 * f.min_flow_gbps / share, 100 * f.max_flow_gbps / share,
      verdict(f.min_flow_gbps >= 0.9 * share && f.max_flow_gbps <= 1.1 * share));
  if (have_hpcc)
    std::printf(
        "HPCC 16:1 median queue / utilisation                     %5.1f KiB / %5.1f%%  ~0 / 95%%   %s\n",
        h.q_p50_kb, 100 * h.utilisation, verdict(h.q_p50_kb < 16 && h.utilisation >= 0.9));
  else
    std::printf("HPCC: not registered in cc/ (skipped)\n");
  return 0;
}
