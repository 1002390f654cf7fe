// Command-line parsing shared by the subcommands. Bad input throws UsageError; main() prints the message
// and the usage text and exits 2.
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

// -h / --help anywhere in a subcommand's options.
struct HelpRequested {};

struct DeviceOptions {
  std::string dev;
  unsigned index = 0;  // N of uroceN
  IpAddress ip;
};

struct ParsedArgs {
  DeviceOptions device;
  std::vector<std::string> command;  // `run` only: CMD and its arguments
};

// Parses [--dev NAME] [--ip ADDR] (also --dev=NAME, --ip=ADDR). With `want_command`, everything after
// "--" (or from the first non-option word) is the command, which must not be empty.
ParsedArgs parse_device_args(const std::vector<std::string>& args, bool want_command);

// For subcommands without options.
void expect_no_args(const std::vector<std::string>& args);

// "uroceN" with N < kNumDevNodes -> N.
std::optional<unsigned> device_index(std::string_view name);

std::string_view usage();

}  // namespace uroce::tools
