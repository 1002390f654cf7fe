#include "tools/observe/observe_args.h"

#include <charconv>
#include <cmath>
#include <string_view>

#include "tools/uroce/cli.h"

namespace uroce::tools {
namespace {

// Matches "--name VALUE" and "--name=VALUE" (and "-x VALUE" for a short name); advances i past the value.
bool take(const std::vector<std::string>& args, size_t& i, std::string_view name, std::string* value) {
  const std::string& a = args[i];
  if (a.size() > name.size() && a.starts_with(name) && a[name.size()] == '=') {
    *value = a.substr(name.size() + 1);
    return true;
  }
  if (a != name) return false;
  if (i + 1 >= args.size()) throw UsageError("option '" + std::string(name) + "' needs a value");
  *value = args[++i];
  return true;
}

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

// --pid and --dev, shared by both commands. True when args[i] was one of them.
bool take_target(const std::vector<std::string>& args, size_t& i, pid_t* pid, std::string* dev) {
  std::string v;
  if (take(args, i, "--pid", &v)) {
    *pid = static_cast<pid_t>(to_uint(v, "--pid", 1, 0x7fffffff));
    return true;
  }
  if (take(args, i, "--dev", &v)) {
    if (!device_index(v))
      throw UsageError("bad value '" + v + "' for --dev: expected a device name like uroce0");
    *dev = v;
    return true;
  }
  return false;
}

[[noreturn]] void reject(const std::string& a) {
  if (a == "-h" || a == "--help") throw HelpRequested{};
  if (a.starts_with("-")) throw UsageError("unknown option '" + a + "'");
  throw UsageError("unexpected argument '" + a + "'");
}

}  // namespace

StatsArgs parse_stats_args(const std::vector<std::string>& args) {
  StatsArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string v;
    if (take_target(args, i, &out.pid, &out.dev)) continue;
    if (args[i] == "--json") {
      out.json = true;
    } else if (args[i] == "--all") {
      out.all = true;
    } else if (take(args, i, "--watch", &v)) {
      out.watch_s = to_seconds(v, "--watch");
    } else {
      reject(args[i]);
    }
  }
  return out;
}

CaptureArgs parse_capture_args(const std::vector<std::string>& args) {
  CaptureArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string v;
    if (take_target(args, i, &out.pid, &out.dev)) continue;
    if (take(args, i, "-w", &v)) {
      if (v.empty()) throw UsageError("option '-w' needs a file name");
      out.file = v;
    } else if (args[i] == "--force") {
      out.force = true;
    } else if (take(args, i, "-c", &v)) {
      out.count = to_uint(v, "-c", 1, UINT64_MAX);
    } else if (take(args, i, "--duration", &v)) {
      out.duration_s = to_seconds(v, "--duration");
    } else if (take(args, i, "-s", &v) || take(args, i, "--snaplen", &v)) {
      out.snaplen = static_cast<uint32_t>(to_uint(v, "--snaplen", 64, 262144));
    } else {
      reject(args[i]);
    }
  }
  if (out.file.empty()) throw UsageError("missing -w FILE.pcap");
  return out;
}

}  // namespace uroce::tools
