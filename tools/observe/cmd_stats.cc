// uroce stats: the counters of every running uroce device (provider/control.h), as a table or JSON.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "tools/observe/ctl_client.h"
#include "tools/observe/observe_args.h"
#include "tools/observe/stats_format.h"
#include "tools/uroce/commands.h"

namespace uroce::tools {

using json = nlohmann::ordered_json;

namespace {

// One stats reply per matching endpoint, each with "comm" added. An endpoint that vanished between the
// directory scan and the request (its process just exited) is left out with a note on stderr.
json collect(const StatsArgs& a, const std::filesystem::path& dir) {
  json all = json::array();
  for (const Endpoint& e : find_endpoints(dir, a.pid, a.dev)) {
    try {
      ControlClient c(e);
      json r = c.request({{"cmd", "stats"}});
      if (!r.value("ok", false)) {
        std::fprintf(stderr, "uroce stats: %s: %s\n", describe(e).c_str(), r.value("error", "?").c_str());
        continue;
      }
      r.erase("ok");
      r["comm"] = e.comm;
      all.push_back(std::move(r));
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "uroce stats: %s\n", ex.what());
    }
  }
  return all;
}

std::string key(const json& r) { return std::to_string(r.value("pid", 0)) + "-" + r.value("dev", ""); }

}  // namespace

int cmd_stats(const std::vector<std::string>& args) {
  const StatsArgs a = parse_stats_args(args);
  const auto dir = control_dir();
  std::map<std::string, json> prev;
  for (bool first = true;; first = false) {
    const json all = collect(a, dir);
    if (all.empty() && !a.watch_s) {
      std::fprintf(stderr, "uroce stats: no running uroce process%s (sockets in %s)\n",
                   a.pid || !a.dev.empty() ? " matches" : "", dir.c_str());
      return 1;
    }
    if (a.json) {
      std::printf("%s\n", a.watch_s ? all.dump().c_str() : all.dump(2).c_str());
    } else {
      if (!first) std::printf("\n");
      if (a.watch_s) {
        const std::time_t t = std::time(nullptr);
        char when[32];
        std::strftime(when, sizeof(when), "%H:%M:%S", std::localtime(&t));
        std::printf("--- %s, every %g s (Ctrl-C to stop)\n", when, a.watch_s);
      }
      if (all.empty()) std::printf("no running uroce process\n");
      for (const json& r : all) {
        auto it = prev.find(key(r));
        std::printf("%s", format_stats(r, it == prev.end() ? nullptr : &it->second, {a.all}).c_str());
      }
    }
    std::fflush(stdout);
    if (!a.watch_s) return 0;
    prev.clear();
    for (const json& r : all) prev[key(r)] = r;
    std::this_thread::sleep_for(std::chrono::duration<double>(a.watch_s));
  }
}

}  // namespace uroce::tools
