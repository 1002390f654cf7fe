// Command-line parsing shared by the subcommands (CLI11 underneath: tools/uroce/cli_app.h). Bad input
// throws UsageError; main() prints its message on one line with "run 'uroce CMD --help'" and exits 2.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tools/uroce/gid.h"

namespace uroce::tools {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// -h / --help anywhere in a subcommand's options; `text` is that subcommand's help.
struct HelpRequested {
  std::string text;
};

struct DeviceOptions {
  std::string dev;
  unsigned index = 0;  // N of uroceN
  IpAddress ip;
  // uroce run --netdev: the interface, its GID table (ip is gids[0]) and MAC; empty without --netdev.
  std::string netdev;
  std::vector<Gid> gids;
  std::optional<Mac> mac;
  bool link_up = true;
};

struct ParsedArgs {
  DeviceOptions device;
  std::vector<std::string> command;  // `run` only: CMD and its arguments
};

// Parses [--dev NAME] [--ip ADDR] (also --dev=NAME, --ip=ADDR). With `want_command`, everything after
// "--" (or from the first non-option word) is the command, which must not be empty.
ParsedArgs parse_device_args(const std::vector<std::string>& args, bool want_command);

// What a prefix command (`uroce run`) left after its options: CMD and its arguments, "--" dropped;
// UsageError for an unknown option before CMD or no CMD.
std::vector<std::string> command_words(std::vector<std::string> rest);

// For subcommands without options; `name` ("uroce setup") and `about` make its --help text.
void expect_no_args(const std::vector<std::string>& args, const std::string& name = "uroce",
                    const std::string& about = "");

// Validates --dev and --ip as typed; UsageError naming the bad value.
DeviceOptions check_device(const std::string& dev, const std::string& ip);

// "uroceN" with N < kNumDevNodes -> N.
std::optional<unsigned> device_index(std::string_view name);

std::string_view usage();

}  // namespace uroce::tools
