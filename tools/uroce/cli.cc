#include "tools/uroce/cli.h"

#include <charconv>

#include "tools/uroce/layout.h"

namespace uroce::tools {
namespace {

constexpr std::string_view kUsage = R"usage(usage: uroce <command> [options]

commands:
  setup                         create the device nodes /dev/infiniband/uroce_verbs0..3 (as root, once)
  env [--dev NAME] [--ip ADDR]  print 'export' lines for a shell:  eval "$(uroce env)"
  run [--dev NAME] [--ip ADDR] -- CMD [ARGS...]
                                run an unmodified verbs program on a uroce device
  devices                       show device nodes, sysfs trees and libraries
  stats [--pid PID] [--dev NAME] [--json] [--all] [--watch SECONDS]
                                counters of the uroce devices open in running processes, per device
                                and per QP (zero counters hidden unless --all)
  capture [--pid PID] [--dev NAME] -w FILE.pcap [--force] [-c COUNT] [--duration SECONDS] [-s SNAPLEN]
                                make a running device write a pcap of the frames it sends and
                                receives, until COUNT frames, SECONDS or Ctrl-C; FILE is created
                                new with mode 0600 (an existing file is kept unless --force, which
                                replaces a regular file but never follows a symbolic link)
  exp SCENARIO [--out DIR] [--seed N] [--duration-us N] [--cc NAME] [--no-plots] [key=value...]
                                run a congestion-control scenario in the simulator: CSVs, PNGs,
                                summary (exp --list describes the scenarios; docs/cc-results.md)
  help                          show this text

options:
  --dev NAME  device uroce0..uroce3 (default uroce0); uroceN uses /dev/infiniband/uroce_verbsN
  --ip ADDR   IPv4 or IPv6 address whose RoCE v2 GID is GID 0 (default 127.1.0.1)
  --port P   run only: the device's packet port, P = uroced (a lease from the host switch: its own
              address and memif port, uroced started on demand) or a DPDK port spec (sets UROCE_PORT)

environment:
  XDG_RUNTIME_DIR  trees are written to ${XDG_RUNTIME_DIR:-/tmp}/uroce-<uid>/<dev>-<ip>/sysfs
                   (uroce-<uid>.1 .. .7 when that one is another user's, a link or not 0700)
  UROCE_LIBDIR     directory with liburoce-rdmav34.so and liburoce-preload.so (default: found
                   next to this executable)
  UROCE_DEV_DIR    where setup, run and devices look for the nodes (default /dev/infiniband;
                   for tests: libibverbs itself always uses /dev/infiniband)
)usage";

// Splits "--opt=value" or takes the next word; advances i past what it consumed.
std::string option_value(const std::vector<std::string>& args, size_t& i, std::string_view name) {
  const std::string& a = args[i];
  if (a.size() > name.size() && a[name.size()] == '=') return a.substr(name.size() + 1);
  if (i + 1 >= args.size()) throw UsageError("option '" + std::string(name) + "' needs a value");
  return args[++i];
}

bool is_option(const std::string& a, std::string_view name) {
  return a == name || (a.size() > name.size() && a.starts_with(name) && a[name.size()] == '=');
}

}  // namespace

std::optional<unsigned> device_index(std::string_view name) {
  if (!name.starts_with(kDevNamePrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kDevNamePrefix.size());
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  unsigned n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n >= kNumDevNodes) return std::nullopt;
  return n;
}

ParsedArgs parse_device_args(const std::vector<std::string>& args, bool want_command) {
  std::string dev(kDefaultDev);
  std::string ip(kDefaultIp);
  ParsedArgs out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") throw HelpRequested{};
    if (is_option(a, "--dev")) {
      dev = option_value(args, i, "--dev");
    } else if (is_option(a, "--ip")) {
      ip = option_value(args, i, "--ip");
    } else if (a == "--") {
      if (!want_command) throw UsageError("unexpected '--'");
      ++i;
      break;
    } else if (a.starts_with("-")) {
      throw UsageError("unknown option '" + a + "'");
    } else if (want_command) {
      break;
    } else {
      throw UsageError("unexpected argument '" + a + "'");
    }
  }
  if (want_command) {
    out.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    if (out.command.empty())
      throw UsageError("missing command: uroce run [--dev NAME] [--ip ADDR] -- CMD [ARGS...]");
  }

  const auto index = device_index(dev);
  if (!index) {
    throw UsageError("bad value '" + dev + "' for --dev: expected uroce0 .. uroce" +
                     std::to_string(kNumDevNodes - 1) + " (uroceN uses /dev/infiniband/" +
                     std::string(kUverbsPrefix) + "N)");
  }
  const auto addr = parse_ip(ip);
  if (!addr) {
    throw UsageError("bad value '" + ip + "' for --ip: expected an IPv4 or IPv6 unicast address, e.g. " +
                     std::string(kDefaultIp) + " or fd00::1");
  }
  out.device = {dev, *index, *addr};
  return out;
}

void expect_no_args(const std::vector<std::string>& args) {
  if (args.empty()) return;
  if (args[0] == "-h" || args[0] == "--help") throw HelpRequested{};
  if (args[0].starts_with("-")) throw UsageError("unknown option '" + args[0] + "'");
  throw UsageError("unexpected argument '" + args[0] + "'");
}

std::string_view usage() { return kUsage; }

}  // namespace uroce::tools
