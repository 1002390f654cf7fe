#include "tools/observe/observe_args.h"

#include <charconv>
#include <cmath>
#include <string_view>

#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"

namespace uroce::tools {
namespace {

uint64_t to_uint(const std::string& v, std::string_view opt, uint64_t min, uint64_t max) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < min || n > max)
    throw UsageError("bad value '" + v + "' for " + std::string(opt) + ": expected a whole number " +
                     std::to_string(min) + " .. " + std::to_string(max));
  return n;
}

double to_seconds(const std::string& v, std::string_view opt) {
  double d = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(d) || d <= 0 || d > 1e6)
    throw UsageError("bad value '" + v + "' for " + std::string(opt) +
                     ": expected seconds > 0, e.g. 1 or 0.5");
  return d;
}

// --pid and --dev, shared by both commands, kept as typed.
struct TargetWords {
  std::string pid, dev;
};

void add_target(CLI::App& app, TargetWords* w) {
  app.add_option("--pid", w->pid, "only the process PID (default: every process)")->type_name("PID");
  app.add_option("--dev", w->dev, "only the device NAME, uroce0..uroce3 (default: every device)")
      ->type_name("NAME");
}

void check_target(const CLI::App& app, const TargetWords& w, pid_t* pid, std::string* dev) {
  if (app.count("--pid") > 0) *pid = static_cast<pid_t>(to_uint(w.pid, "--pid", 1, 0x7fffffff));
  if (app.count("--dev") > 0) {
    if (!device_index(w.dev))
      throw UsageError("bad value '" + w.dev + "' for --dev: expected a device name like uroce0");
    *dev = w.dev;
  }
}

}  // namespace

StatsArgs parse_stats_args(const std::vector<std::string>& args) {
  CLI::App app(
      "Counters of the uroce devices open in running processes, per device and per QP (zero counters\n"
      "hidden unless --all).",
      "uroce stats");
  setup_app(app, "[--pid PID] [--dev NAME] [--json] [--all] [--watch SECONDS]");
  StatsArgs out;
  TargetWords target;
  std::string watch;
  add_target(app, &target);
  app.add_flag("--json", out.json, "print the engines' replies as JSON");
  app.add_flag("--all", out.all, "include the counters that are zero");
  app.add_option("--watch", watch, "print again every SECONDS, with the rates of what moved")
      ->type_name("SECONDS");
  parse_app(app, args);
  check_target(app, target, &out.pid, &out.dev);
  if (app.count("--watch") > 0) out.watch_s = to_seconds(watch, "--watch");
  return out;
}

CaptureArgs parse_capture_args(const std::vector<std::string>& args) {
  CLI::App app(
      "Makes a running device write a pcap of the frames it sends and receives, until COUNT frames,\n"
      "SECONDS or Ctrl-C. FILE is created new with mode 0600 (an existing file is kept unless --force,\n"
      "which replaces a regular file but never follows a symbolic link).",
      "uroce capture");
  setup_app(app,
            "[--pid PID] [--dev NAME] -w FILE.pcap [--force] [-c COUNT] [--duration SECONDS] [-s SNAPLEN]");
  CaptureArgs out;
  TargetWords target;
  std::string count, duration, snaplen;
  add_target(app, &target);
  app.add_option("-w", out.file, "the pcap file to write")->type_name("FILE.pcap");
  app.add_flag("--force", out.force, "replace an existing regular file");
  app.add_option("-c", count, "stop after COUNT frames")->type_name("COUNT");
  app.add_option("--duration", duration, "stop after SECONDS")->type_name("SECONDS");
  app.add_option("-s,--snaplen", snaplen,
                 "keep at most SNAPLEN bytes of each frame, 64..262144 (default: all)")
      ->type_name("SNAPLEN");
  parse_app(app, args);
  check_target(app, target, &out.pid, &out.dev);
  if (app.count("-c") > 0) out.count = to_uint(count, "-c", 1, UINT64_MAX);
  if (app.count("--duration") > 0) out.duration_s = to_seconds(duration, "--duration");
  if (app.count("--snaplen") > 0)
    out.snaplen = static_cast<uint32_t>(to_uint(snaplen, "--snaplen", 64, 262144));
  if (app.count("-w") > 0 && out.file.empty()) throw UsageError("option '-w' needs a file name");
  if (out.file.empty()) throw UsageError("missing -w FILE.pcap");
  return out;
}

}  // namespace uroce::tools
