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

#include "tools/exp/runner.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/paths.h"
#include "tools/uroced/client.h"

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
  if (n == 0 || n != v.size()) throw UsageError(opt + ": '" + v + "' is not a number");
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
  setenv("UROCED", uroced::find_uroced().c_str(), 0);
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
  bool plots = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") throw HelpRequested{};
    if (a == "--list") {
      list(stdout);
      return 0;
    } else if (a == "--out") {
      out = value();
    } else if (a == "--seed") {
      opt.seed = parse_u64(a, value());
    } else if (a == "--duration-us") {
      opt.duration_ns = parse_u64(a, value()) * 1000;
      if (opt.duration_ns == 0 || opt.duration_ns > 10'000'000'000ull)
        throw UsageError("--duration-us: must be 1..10000000");
    } else if (a == "--cc") {
      opt.cc = value();
    } else if (a == "--no-plots") {
      plots = false;
    } else if (a.find('=') != std::string::npos) {
      try {
        opt.knobs.set(a);
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    } else if (a.rfind("--", 0) == 0) {
      throw UsageError("unknown option '" + a + "'");
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
