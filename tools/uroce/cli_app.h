// The one argument parser of uroce's subcommands and uroced: CLI11 apps with uroce's help layout and
// one-line errors. A subcommand constructs a CLI::App, calls setup_app(), adds its options, then parse_app();
// bad input throws UsageError (tools/uroce/cli.h) with a message naming the option or value, and -h/--help
// throws HelpRequested carrying that app's own help text.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "tools/uroce/layout.h"

namespace uroce::tools {

// Gives `app` (constructed with its description and its name as the user types it, "uroce stats") the
// help layout: "usage: NAME USAGE", the description, the options, the footer.
void setup_app(CLI::App& app, const std::string& usage, const std::string& footer = "");

// Parses args (the words after the subcommand name). Words the app does not know are errors ("unknown
// option '--x'", "unexpected argument 'x'", "unexpected '--'"), or, with `extras`, handed back there. A
// prefix command (app.prefix_command(): `uroce run`) stops at "--" or at the first word it does not know,
// and `extras` gets that word and all after it exactly as given.
void parse_app(CLI::App& app, const std::vector<std::string>& args,
               std::vector<std::string>* extras = nullptr);

// --dev NAME and --ip ADDR, kept as typed (the defaults when absent); check_device() validates them.
struct DeviceWords {
  std::string dev{kDefaultDev};
  std::string ip{kDefaultIp};
};
void add_device_options(CLI::App& app, DeviceWords* words);

// "uroce 0.1.0 (git ae3a2d0)" style line for --version, with `tool` as the program name.
std::string version_line(const std::string& tool);

// The one-line message for a CLI11 parse error, naming the option (and the value when there is one).
std::string describe_parse_error(const CLI::ParseError& e);

}  // namespace uroce::tools
