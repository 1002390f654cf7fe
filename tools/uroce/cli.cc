#include "tools/uroce/cli.h"

#include <charconv>

#include "tools/uroce/cli_app.h"
#include "tools/uroce/layout.h"

namespace uroce::tools {
namespace {

constexpr std::string_view kUsage = R"usage(usage: uroce <command> [options]
       uroce --version | --help
       uroce <command> --help        that command's options

commands:
  setup                         create the device nodes /dev/infiniband/uroce_verbs0..3 (as root, once)
  env [--dev NAME] [--ip ADDR]  print 'export' lines for a shell:  eval "$(uroce env)"
  env --list                    every environment variable uroce reads (docs/environment.md)
  run [--dev NAME] [--ip ADDR] [--port P] [--cc NAME] [--cc-param K=V]... [--mtu N] -- CMD [ARGS...]
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
  help [COMMAND]                show this text, or that command's help

options:
  --dev NAME  device uroce0..uroce3 (default uroce0); uroceN uses /dev/infiniband/uroce_verbsN
  --ip ADDR   IPv4 or IPv6 address whose RoCE v2 GID is GID 0 (default 127.1.0.1)
  --port P   run only: the device's packet port, P = uroced (a lease from the host switch: its own
              address and memif port, uroced started on demand) or a DPDK port spec (sets UROCE_PORT)
  --cc NAME, --cc-param K=V, --mtu N
              run only: congestion control, its parameters and the port MTU for CMD (set UROCE_CC,
              UROCE_CC_PARAMS, UROCE_MTU)

environment:
  XDG_RUNTIME_DIR  trees are written to ${XDG_RUNTIME_DIR:-/tmp}/uroce-<uid>/<dev>-<ip>/sysfs
                   (uroce-<uid>.1 .. .7 when that one is another user's, a link or not 0700)
  UROCE_LIBDIR     directory with liburoce-rdmav34.so and liburoce-preload.so (default: found
                   next to this executable)
  UROCE_DEV_DIR    where setup, run and devices look for the nodes (default /dev/infiniband;
                   for tests: libibverbs itself always uses /dev/infiniband)
  ...              'uroce env --list' shows all of them; 'uroce run' refuses a bad value of any
)usage";

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

DeviceOptions check_device(const std::string& dev, const std::string& ip) {
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
  DeviceOptions opts;
  opts.dev = dev;
  opts.index = *index;
  opts.ip = *addr;
  return opts;
}

void add_device_options(CLI::App& app, DeviceWords* words) {
  app.add_option("--dev", words->dev,
                 "device uroce0..uroce" + std::to_string(kNumDevNodes - 1) + " (default " +
                     std::string(kDefaultDev) + "); uroceN uses /dev/infiniband/" +
                     std::string(kUverbsPrefix) + "N")
      ->type_name("NAME");
  app.add_option("--ip", words->ip,
                 "IPv4 or IPv6 address whose RoCE v2 GID is GID 0 (default " + std::string(kDefaultIp) + ")")
      ->type_name("ADDR");
}

ParsedArgs parse_device_args(const std::vector<std::string>& args, bool want_command) {
  CLI::App app(want_command ? "Runs CMD with the uroce environment." : "Prints the uroce environment.",
               want_command ? "uroce run" : "uroce env");
  setup_app(app, want_command ? "[--dev NAME] [--ip ADDR] -- CMD [ARGS...]" : "[--dev NAME] [--ip ADDR]");
  DeviceWords words;
  add_device_options(app, &words);
  if (want_command) app.prefix_command();
  std::vector<std::string> rest;
  parse_app(app, args, want_command ? &rest : nullptr);
  ParsedArgs out;
  if (want_command) out.command = command_words(rest);
  out.device = check_device(words.dev, words.ip);
  return out;
}

std::vector<std::string> command_words(std::vector<std::string> rest) {
  // A prefix command stops at "--" or at the first word it does not know: an option it does not have is
  // still an error, the first other word starts CMD.
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    throw UsageError("unknown option '" + rest.front() + "'");
  }
  if (rest.empty()) throw UsageError("missing command: uroce run [OPTIONS] -- CMD [ARGS...]");
  return rest;
}

void expect_no_args(const std::vector<std::string>& args, const std::string& name, const std::string& about) {
  CLI::App app(about, name);
  setup_app(app, "");
  parse_app(app, args);
}

std::string_view usage() { return kUsage; }

}  // namespace uroce::tools
