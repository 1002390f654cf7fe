// uroce exp SCENARIO [--out DIR] [--seed N] [--duration-us N] [--cc NAME] [--no-plots] [key=value ...]
// uroce exp --list
// uroce exp --realtime SCENARIO ...   (tools/exp/realtime.sh: real verbs traffic through uroced)
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/uroced_client.h"
#include "tools/exp/runner.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/paths.h"

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
      "headroom_kb buffer_kb credit_kb dt_alpha int, and cc.<param> for the algorithm's parameters.\n"
      "\nReal verbs traffic through uroced instead of the simulator: uroce exp --realtime --list.\n");
}

// The real-time runner is a script (it starts uroced and perftest processes and samples their counters);
// it finds uroce and uroced through UROCE and UROCED. Does not return unless exec fails.
int exec_realtime(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  const fs::path dir = self_dir();
  std::error_code ec;
  fs::path script = "uroce-exp-realtime";
  for (const fs::path& p :
       {dir / "exp" / "uroce-exp-realtime", dir / ".." / "libexec" / "uroce" / "uroce-exp-realtime"})
    if (!dir.empty() && fs::is_regular_file(p, ec)) {
      script = p;
      break;
    }
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) setenv("UROCE", self.c_str(), 0);
  setenv("UROCED", runtime::find_uroced().c_str(), 0);
  std::vector<std::string> words = {"bash", script.string()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execvp("bash", argv.data());
  std::fprintf(stderr, "uroce exp --realtime: cannot run %s: %s\n", script.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int cmd_exp(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--realtime") {
      std::vector<std::string> rest(args.begin(), args.end());
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      return exec_realtime(rest);
    }
  exp::RunOptions opt;
  std::string name, out = "exp-out";
  CLI::App app(
      "Runs a congestion-control scenario in the simulator: CSVs, PNGs and a summary per variant\n"
      "(docs/cc-results.md). KEY=VALUE words set the scenario's knobs (--list names them).",
      "uroce exp");
  setup_app(app,
            "SCENARIO [--out DIR] [--seed N] [--duration-us N] [--cc NAME] [--no-plots] [KEY=VALUE...]\n"
            "       uroce exp --list\n"
            "       uroce exp --realtime SCENARIO ...   (real verbs traffic through uroced)");
  bool show_list = false, no_plots = false;
  std::string seed, duration_us;
  std::vector<std::string> words;
  app.add_flag("--list", show_list, "describe the scenarios and the common keys");
  app.add_option("--out", out, "write the results under DIR/SCENARIO (default exp-out)")->type_name("DIR");
  app.add_option("--seed", seed, "the simulation's random seed")->type_name("N");
  app.add_option("--duration-us", duration_us, "simulated time, 1..10000000 us (default: the scenario's)")
      ->type_name("N");
  app.add_option("--cc", opt.cc, "the algorithm of every host (default: the scenario's)")->type_name("NAME");
  app.add_flag("--no-plots", no_plots, "CSVs only, no gnuplot PNGs");
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
    std::printf("CSV%s in %s/%s/<variant>/\n", plots ? " and plots" : "", out.c_str(), sc->name);
  }
  return 0;
}

}  // namespace uroce::tools
