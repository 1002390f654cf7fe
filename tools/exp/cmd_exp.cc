// uroce exp SCENARIO [--out DIR] [--seed N] [--duration-us N] [--cc NAME] [--no-plots] [key=value ...]
// uroce exp --list
// uroce exp --realtime SCENARIO ...   (tools/exp/realtime.h: real verbs traffic through uroced)
// uroce exp --ns3 CONFIG [--cc NAME] [--seed N]   (ns-3 HPCC's config, topology and flow files: ns3.h)
// uroce exp gen-flows -c CDF -n HOSTS -l LOAD -b BW -t SECONDS [-o FILE]   (traffic_gen.py's procedure)
// uroce exp gen-topo fat-tree|leaf-spine ... [-o FILE]

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/exp/ns3.h"
#include "tools/exp/realtime.h"
#include "tools/exp/runner.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/commands.h"

namespace uroce::tools {

namespace {

uint64_t parse_u64(const std::string& opt, const std::string& v) {
  size_t n = 0;
  unsigned long long x = 0;
  try {
    x = std::stoull(v, &n);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n == 0 || n != v.size() || v[0] == '-')
    throw UsageError("bad value '" + v + "' for " + opt + ": expected a number");
  return x;
}

void list(FILE* f) {
  std::fprintf(
      f, "Scenarios (uroce exp NAME [--out DIR] [--seed N] [--duration-us N] [--cc NAME] [key=value]):\n");
  for (const exp::Scenario& s : exp::scenarios())
    std::fprintf(f, "\n%s (default %lu us)\n  %s\n", s.name,
                 static_cast<unsigned long>(s.default_duration_ns / 1000), s.about);
  std::fprintf(
      f,
      "\nCommon keys: link_gbps delay_ns msg_kb ecn kmin_kb kmax_kb pmax fc=none|pfc|credit xoff_kb xon_kb "
      "headroom_kb buffer_kb credit_kb dt_alpha int pfc_watchdog_us, capture=1 (with --out: each variant's "
      "capture.pcap of\n"
      "every frame the hosts send and receive, PFC frames included), and cc.<param> for the algorithm's\n"
      "parameters.\n"
      "\nReal verbs traffic through uroced instead of the simulator: uroce exp --realtime --list.\n");
}

FILE* open_out(const std::string& path) {
  if (path.empty() || path == "-") return stdout;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
  return f;
}

void close_out(FILE* f) {
  if (f != stdout) std::fclose(f);
}

// Flows in ns-3 HPCC's format, drawn as its traffic_gen.py draws them (options named as its).
int cmd_gen_flows(const std::vector<std::string>& args) {
  CLI::App app(
      "Writes a flow file in ns-3 HPCC's format: per host, Poisson arrivals at LOAD of its link, flow sizes\n"
      "from a CDF (websearch, fb_hadoop, or a file of 'size percentile' lines), destinations uniform.",
      "uroce exp gen-flows");
  setup_app(app, "-c CDF -n HOSTS [-l LOAD] [-b BW] [-t SECONDS] [--start S] [--seed N] [-o FILE]");
  exp::ns3::GenOptions o;
  std::string cdf, bw = "10G", seed, out;
  app.add_option("-c,--cdf", cdf, "flow-size CDF: websearch, fb_hadoop or a file")
      ->required()
      ->type_name("CDF");
  app.add_option("-n,--nhost", o.hosts, "number of hosts (node ids 0..N-1)")->required()->type_name("N");
  app.add_option("-l,--load", o.load, "load per host link, 0..1 (default 0.3)")->type_name("LOAD");
  app.add_option("-b,--bandwidth", bw, "host link rate, e.g. 100G (default 10G)")->type_name("BW");
  app.add_option("-t,--time", o.seconds, "arrivals over this many seconds (default 0.01)")->type_name("S");
  app.add_option("--start", o.start_s, "first possible arrival, seconds (default 2, as traffic_gen)")
      ->type_name("S");
  app.add_option("--seed", seed, "random seed (default 1)")->type_name("N");
  app.add_option("-o,--output", out, "the flow file (default: standard output)")->type_name("FILE");
  parse_app(app, args);
  if (!seed.empty()) o.seed = parse_u64("--seed", seed);
  try {
    o.bandwidth_bps = exp::ns3::parse_rate(bw);
    const exp::ns3::Cdf c = exp::ns3::read_cdf(cdf);
    const std::vector<exp::ns3::FlowLine> flows = exp::ns3::generate_flows(c, o);
    FILE* f = open_out(out);
    exp::ns3::write_flows(f, flows);
    close_out(f);
    if (!out.empty() && out != "-")
      std::fprintf(stderr, "%zu flows (mean size %.0f B) in %s\n", flows.size(), c.mean(), out.c_str());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return 0;
}

// Topologies in ns-3 HPCC's format.
int cmd_gen_topo(const std::vector<std::string>& args) {
  CLI::App app("Writes a topology file in ns-3 HPCC's format.", "uroce exp gen-topo");
  setup_app(
      app,
      "fat-tree [--k K] [--rate BW] [--delay D] [-o FILE]\n"
      "       uroce exp gen-topo leaf-spine [--leaves N] [--spines N] [--hosts-per-leaf N] [--rate BW]\n"
      "                                      [--fabric-rate BW] [--delay D] [-o FILE]");
  std::string kind, rate = "100G", fabric_rate, delay = "1000ns", out;
  uint32_t k = 4, leaves = 4, spines = 2, per_leaf = 8;
  app.add_option("KIND", kind, "fat-tree or leaf-spine")->required()->type_name("KIND");
  app.add_option("--k", k, "fat-tree arity, even (default 4: 16 hosts, 20 switches)")->type_name("K");
  app.add_option("--leaves", leaves, "leaf switches (default 4)")->type_name("N");
  app.add_option("--spines", spines, "spine switches (default 2)")->type_name("N");
  app.add_option("--hosts-per-leaf", per_leaf, "hosts under each leaf (default 8)")->type_name("N");
  app.add_option("--rate", rate, "host link rate (default 100G)")->type_name("BW");
  app.add_option("--fabric-rate", fabric_rate, "leaf-spine link rate (default: --rate)")->type_name("BW");
  app.add_option("--delay", delay, "every link's delay (default 1000ns)")->type_name("D");
  app.add_option("-o,--output", out, "the topology file (default: standard output)")->type_name("FILE");
  parse_app(app, args);
  try {
    const uint64_t r = exp::ns3::parse_rate(rate), d = exp::ns3::parse_delay(delay);
    exp::ns3::Topology t;
    if (kind == "fat-tree") {
      t = exp::ns3::fat_tree(k, r, d);
    } else if (kind == "leaf-spine") {
      t = exp::ns3::leaf_spine(leaves, spines, per_leaf, r,
                               fabric_rate.empty() ? r : exp::ns3::parse_rate(fabric_rate), d);
    } else {
      throw UsageError("unknown topology '" + kind + "' (fat-tree or leaf-spine)");
    }
    FILE* f = open_out(out);
    exp::ns3::write_topology(f, t);
    close_out(f);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return 0;
}

}  // namespace

int cmd_exp(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "gen-flows") return cmd_gen_flows({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "gen-topo") return cmd_gen_topo({args.begin() + 1, args.end()});
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--realtime") {
      std::vector<std::string> rest(args.begin(), args.end());
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      return exp::rt::run_realtime(rest);
    }
  exp::RunOptions opt;
  std::string name, out = "exp-out";
  CLI::App app(
      "Runs a congestion-control scenario in the simulator: CSVs, PNGs and a summary per variant\n"
      "(docs/cc-results.md). KEY=VALUE words set the scenario's knobs (--list names them).",
      "uroce exp");
  setup_app(
      app,
      "SCENARIO [--out DIR] [--seed N] [--duration-us N] [--cc NAME] [--no-plots] [KEY=VALUE...]\n"
      "       uroce exp --list\n"
      "       uroce exp --ns3 CONFIG [--cc NAME] [--seed N]   (ns-3 HPCC's files, run from its directory)\n"
      "       uroce exp gen-flows ... | gen-topo ...   (ns-3 HPCC format inputs; --help on each)\n"
      "       uroce exp --realtime SCENARIO ...   (real verbs traffic through uroced)");
  bool show_list = false, no_plots = false;
  std::string seed, duration_us, ns3_config;
  std::vector<std::string> words;
  app.add_flag("--list", show_list, "describe the scenarios and the common keys");
  app.add_option("--out", out, "write the results under DIR/SCENARIO (default exp-out)")->type_name("DIR");
  app.add_option("--seed", seed, "the simulation's random seed")->type_name("N");
  app.add_option("--duration-us", duration_us, "simulated time, 1..10000000 us (default: the scenario's)")
      ->type_name("N");
  app.add_option("--cc", opt.cc, "the algorithm of every host (default: the scenario's)")->type_name("NAME");
  app.add_flag("--no-plots", no_plots, "CSVs only, no gnuplot PNGs");
  app.add_option(
         "--ns3", ns3_config,
         "run ns-3 HPCC's config file (its TOPOLOGY_FILE / FLOW_FILE, relative to the current directory)"
         " and write its FCT_OUTPUT_FILE / PFC_OUTPUT_FILE")
      ->type_name("CONFIG");
  app.add_option("SCENARIO", words, "the scenario's name (--list), then KEY=VALUE knobs")
      ->type_name("[KEY=VALUE]");
  parse_app(app, args);
  if (show_list) {
    list(stdout);
    return 0;
  }
  const bool plots = !no_plots;
  if (app.count("--seed") > 0) opt.seed = parse_u64("--seed", seed);
  if (app.count("--duration-us") > 0) {
    opt.duration_ns = parse_u64("--duration-us", duration_us) * 1000;
    if (opt.duration_ns == 0 || opt.duration_ns > 10'000'000'000ull)
      throw UsageError("bad value '" + duration_us + "' for --duration-us: expected 1 .. 10000000");
  }
  for (const std::string& a : words) {
    if (a.find('=') != std::string::npos) {
      try {
        opt.knobs.set(a);
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    } else if (name.empty()) {
      name = a;
    } else {
      throw UsageError("more than one scenario ('" + name + "', '" + a + "')");
    }
  }
  if (!ns3_config.empty()) {
    if (!name.empty() || !words.empty()) throw UsageError("--ns3 takes no scenario or KEY=VALUE words");
    exp::ns3::RunOptions o;
    o.cc = opt.cc;
    o.seed = opt.seed;
    o.git = version_line("uroce");
    return exp::ns3::run(ns3_config, o, stdout);  // a bad file or key throws: exit 1 with its message
  }
  if (name.empty()) throw UsageError("missing scenario (uroce exp --list shows them)");
  const exp::Scenario* sc = exp::find_scenario(name);
  if (sc == nullptr) throw UsageError("unknown scenario '" + name + "' (uroce exp --list shows them)");
  std::vector<exp::VariantResult> res;
  try {
    res = exp::run_scenario(*sc, opt, out, plots, stderr);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::printf("scenario %s, seed %lu, %lu us simulated, cc %s; window = last 80%%\n", sc->name,
              static_cast<unsigned long>(opt.seed), static_cast<unsigned long>(opt.duration_ns / 1000),
              opt.cc.empty() ? "(scenario default)" : opt.cc.c_str());
  exp::print_summary(stdout, res);
  if (!out.empty()) {
    const std::string path = out + "/" + sc->name + "/summary.txt";
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      exp::print_summary(f, res);
      std::fclose(f);
    }
    // The manifest: the revision, and a command line with every knob the scenario read, defaults included,
    // that reruns this experiment exactly.
    std::string cmd = "uroce exp " + std::string(sc->name) + " --seed " + std::to_string(opt.seed) +
                      " --duration-us " + std::to_string(opt.duration_ns / 1000);
    if (!opt.cc.empty()) cmd += " --cc " + opt.cc;
    for (const auto& [k, e] : opt.knobs.effective()) cmd += " " + k + "=" + e.value;
    if (FILE* f = std::fopen((out + "/" + sc->name + "/manifest.txt").c_str(), "w")) {
      std::fprintf(f, "revision %s\nscenario %s\nseed %lu\nduration_us %lu\ncc %s\n",
                   version_line("uroce").c_str(), sc->name, static_cast<unsigned long>(opt.seed),
                   static_cast<unsigned long>(opt.duration_ns / 1000),
                   opt.cc.empty() ? "(the scenario's default)" : opt.cc.c_str());
      for (const auto& [k, e] : opt.knobs.effective())
        std::fprintf(f, "knob %s %s (%s)\n", k.c_str(), e.value.c_str(), e.given ? "given" : "default");
      std::fprintf(f, "rerun %s\n", cmd.c_str());
      std::fclose(f);
    }
    std::printf("CSV%s in %s/%s/<variant>/\n", plots ? " and plots" : "", out.c_str(), sc->name);
  }
  return 0;
}

}  // namespace uroce::tools
