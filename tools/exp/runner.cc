#include "tools/exp/runner.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace uroce::exp {

namespace {

namespace fs = std::filesystem;

// Up to kLinesShown flows are drawn one line each (colours and dash patterns both vary, so no two look
// alike); more are drawn as the band of flows_band.csv. Queue plots carry the first queue's ECN Kmin / Kmax
// and pause threshold as horizontal lines.
constexpr size_t kLinesShown = 8;

}  // namespace

Series series_of(const Experiment& e) {
  Series s;
  const auto results = e.flow_results();
  for (const auto& r : results)
    s.flow_labels.push_back("h" + std::to_string(r.spec.src) + " -> h" + std::to_string(r.spec.dst));
  for (const auto& r : e.rates())
    s.rates.push_back({static_cast<double>(r.t_ns) / 1000, r.gbps, r.cc_gbps, r.pause_frames, r.cnp_sent,
                       r.ecn_marked, r.drops});
  for (const Watch& w : e.watches()) s.queue_names.push_back(w.name);
  for (const auto& r : e.queues()) {
    Series::QueueRow q{static_cast<double>(r.t_ns) / 1000, {}};
    for (uint64_t b : r.bytes) q.kib.push_back(static_cast<double>(b) / 1024);
    s.queues.push_back(std::move(q));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.spec.bytes == 0) continue;
    s.fcts.push_back({i, r.spec.src, r.spec.dst, r.spec.bytes, static_cast<double>(r.spec.start_ns) / 1000,
                      static_cast<double>(r.fct_ns) / 1000, r.slowdown});
  }
  if (!e.watches().empty()) {
    const fabric::FabricConfig& f = e.watches()[0].sw->config().fabric;
    if (f.ecn.enabled) {
      s.kmin_kib = f.ecn.kmin_bytes / 1024.0;
      s.kmax_kib = f.ecn.kmax_bytes / 1024.0;
    }
    if (f.flow_control == fabric::FlowControl::kPfc) s.xoff_kib = f.pfc_xoff_bytes / 1024.0;
  }
  return s;
}

void write_csvs(const Series& s, const std::string& dir) {
  std::ofstream flows(dir + "/flows.csv"), rates(dir + "/cc_rates.csv"), q(dir + "/queues.csv"),
      counters(dir + "/counters.csv"), fct(dir + "/fct.csv");
  flows << "time_us";
  rates << "time_us";
  for (size_t i = 0; i < s.flow_labels.size(); ++i) {
    flows << ",flow" << i << "_gbps";
    rates << ",flow" << i << "_cc_gbps";
  }
  flows << "\n";
  rates << "\n";
  counters << "time_us,pause_frames,cnp_sent,ecn_marked,drops\n";
  for (const auto& r : s.rates) {
    flows << r.t_us;
    rates << r.t_us;
    for (double g : r.gbps) flows << "," << g;
    for (double g : r.cc_gbps) rates << "," << g;
    flows << "\n";
    rates << "\n";
    counters << r.t_us << "," << r.pause_frames << "," << r.cnp_sent << "," << r.ecn_marked << "," << r.drops
             << "\n";
  }
  q << "time_us";
  for (const std::string& name : s.queue_names) q << "," << name << "_kb";
  q << "\n";
  for (const auto& r : s.queues) {
    q << r.t_us;
    for (double k : r.kib) q << "," << k;
    q << "\n";
  }
  // Many flows are read as a band: the slowest, the mean and the fastest flow at each sample.
  std::ofstream band(dir + "/flows_band.csv");
  band << "time_us,min_gbps,mean_gbps,max_gbps,total_gbps\n";
  for (const auto& r : s.rates) {
    if (r.gbps.empty()) continue;
    double lo = r.gbps[0], hi = r.gbps[0], sum = 0;
    for (double g : r.gbps) {
      lo = std::min(lo, g);
      hi = std::max(hi, g);
      sum += g;
    }
    band << r.t_us << "," << lo << "," << sum / static_cast<double>(r.gbps.size()) << "," << hi << "," << sum
         << "\n";
  }
  fct << "flow,src,dst,bytes,start_us,fct_us,slowdown\n";
  for (const auto& f : s.fcts)
    fct << f.flow << "," << f.src << "," << f.dst << "," << f.bytes << "," << f.start_us << "," << f.fct_us
        << "," << f.slowdown << "\n";
}

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

bool plot(const Series& s, const std::string& dir, const std::string& title) {
  const size_t flows = s.flow_labels.size(), watches = s.queue_names.size();
  std::ofstream gp(dir + "/plot.gp");
  gp << "set terminal pngcairo noenhanced size 900,500 font ',10'\nset datafile separator ','\nset key "
        "outside right\n"
        "set grid\nset xlabel 'time (us)'\n";
  gp << "set output '" << dir << "/rates.png'\nset ylabel 'Gb/s'\n";
  if (flows <= kLinesShown) {
    gp << "set title '" << title << ": per-flow receive rate'\nplot ";
    for (size_t i = 0; i < flows; ++i)
      gp << (i ? ", " : "") << "'" << dir << "/flows.csv' using 1:" << i + 2 << " with lines lw 1.5 dt "
         << i % 4 + 1 << " title 'flow" << i << ": " << s.flow_labels[i] << "'";
  } else {
    gp << "set title '" << title << ": receive rate of " << flows << " flows (band: slowest to fastest)'\n"
       << "plot '" << dir
       << "/flows_band.csv' using 1:2:4 with filledcurves fs transparent solid 0.3 noborder "
       << "title 'min..max of " << flows << " flows', '' using 1:3 with lines lw 2 title 'mean per flow'";
  }
  gp << "\n";
  if (watches > 0) {
    gp << "set output '" << dir << "/queue.png'\nset title '" << title
       << ": queue depth'\nset ylabel 'KiB'\n";
    int n = 1;
    auto hline = [&](const std::string& name, double kib) {
      gp << "set arrow " << n << " from graph 0, first " << kib << " to graph 1, first " << kib
         << " nohead dt 2 lc rgb 'gray40'\nset label " << n << " '" << name << "' at graph 1.01, first "
         << kib << " tc rgb 'gray40'\n";
      ++n;
    };
    if (s.kmax_kib > 0) {
      hline("Kmin", s.kmin_kib);
      hline("Kmax", s.kmax_kib);
    }
    if (s.xoff_kib > 0) hline(s.xoff_label, s.xoff_kib);
    gp << "plot ";
    for (size_t i = 0; i < watches && i < 8; ++i)
      gp << (i ? ", " : "") << "'" << dir << "/queues.csv' using 1:" << i + 2
         << " with lines lw 1.5 title columnhead";
    gp << "\nunset arrow\nunset label\n";
  }
  gp << "set output '" << dir << "/counters.png'\nset title '" << title
     << ": cumulative events'\nset ylabel 'count'\nset logscale y\n"
     << "plot '" << dir
     << "/counters.csv' using 1:($2+1) with lines title 'pause frames+1', '' using 1:($3+1) "
     << "with lines title 'CNPs sent+1', '' using 1:($5+1) with lines title 'drops+1'\n";
  gp.close();
  const std::string cmd = "gnuplot '" + dir + "/plot.gp' 2>'" + dir + "/gnuplot.log'";
  if (std::system(cmd.c_str()) == 0) return true;
  std::fprintf(stderr, "uroce exp: gnuplot failed, see %s/gnuplot.log\n", dir.c_str());
  return false;
}

std::vector<VariantResult> run_scenario(const Scenario& sc, RunOptions& opt, const std::string& out_dir,
                                        bool plots, FILE* log) {
  if (opt.duration_ns == 0) opt.duration_ns = sc.default_duration_ns;
  std::vector<Variant> variants = sc.variants(opt);
  const bool capture = opt.knobs.num("capture", 0) != 0;
  opt.knobs.check();
  if (capture && out_dir.empty()) throw std::invalid_argument("capture=1 needs --out DIR");
  const bool gnuplot = plots && !out_dir.empty() && have_gnuplot();
  if (plots && !out_dir.empty() && !gnuplot)
    std::fprintf(log, "uroce exp: gnuplot not found; writing CSVs only (apt install gnuplot-nox for PNGs)\n");
  std::vector<VariantResult> out;
  for (Variant& v : variants) {
    Experiment e(opt.seed);
    v.build(e);
    const std::string dir = out_dir.empty() ? "" : out_dir + "/" + sc.name + "/" + v.name;
    if (!dir.empty()) fs::create_directories(dir);
    if (capture) e.capture(dir + "/capture.pcap");
    VariantResult r{v.name, e.run(opt.duration_ns), dir};
    if (!out_dir.empty()) {
      const Series series = series_of(e);
      write_csvs(series, r.dir);
      if (gnuplot) plot(series, r.dir, std::string(sc.name) + " / " + v.name);
    }
    out.push_back(std::move(r));
  }
  return out;
}

void print_summary(FILE* f, const std::vector<VariantResult>& rs) {
  std::fprintf(f, "%-16s %9s %6s %6s %8s %8s %8s %7s %7s %9s %8s %8s %8s %9s\n", "variant", "Gb/s", "util",
               "jain", "q_p50KB", "q_p99KB", "q_maxKB", "drops", "pauses", "pausedus", "cnps", "retx",
               "fct_p50", "fct_p99");
  for (const VariantResult& r : rs) {
    const Summary& s = r.summary;
    std::fprintf(f, "%-16s %9.2f %6.3f %6.3f %8.1f %8.1f %8.1f %7lu %7lu %9.1f %8lu %8lu %8.2f %9.2f\n",
                 r.name.c_str(), s.total_gbps, s.utilisation, s.jain, s.q_p50_kb, s.q_p99_kb, s.q_max_kb,
                 static_cast<unsigned long>(s.drops), static_cast<unsigned long>(s.pause_frames), s.paused_us,
                 static_cast<unsigned long>(s.cnp_sent), static_cast<unsigned long>(s.retransmits),
                 s.fct_slowdown_p50, s.fct_slowdown_p99);
  }
  for (const VariantResult& r : rs) {
    const CollectiveResult& c = r.summary.collective;
    if (!r.summary.has_collective) continue;
    std::fprintf(f,
                 "%s: %s of %.0f MiB on %u ranks x %u channels: %u of its operations done, %u measured: "
                 "algbw %.2f GB/s, busbw %.2f GB/s; operation mean %.0f us, max %.0f us; step p50 %.1f us, "
                 "max %.1f us\n",
                 r.name.c_str(), c.kind.c_str(), static_cast<double>(c.bytes) / (1 << 20), c.ranks,
                 c.channels, c.iterations_done, c.measured, c.algbw_gbyte_s, c.busbw_gbyte_s, c.op_mean_us,
                 c.op_max_us, c.step_p50_us, c.step_max_us);
  }
  for (const VariantResult& r : rs) {
    if (r.summary.status != "time_limit" && r.summary.status != "done")
      std::fprintf(f, "%s: simulator stopped: %s\n", r.name.c_str(), r.summary.status.c_str());
    if (r.summary.finite_flows)
      std::fprintf(f, "%s: %u of %u finite flows finished\n", r.name.c_str(), r.summary.finished_flows,
                   r.summary.finite_flows);
  }
}

}  // namespace uroce::exp
