// uroce: run unmodified libibverbs programs on the uroce userspace RoCE v2 device.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/commands.h"

namespace {

struct Command {
  std::string_view name;
  int (*run)(const std::vector<std::string>&);
};

// One subcommand per line.
// clang-format off
constexpr Command kCommands[] = {
    {"setup", uroce::tools::cmd_setup},
    {"env", uroce::tools::cmd_env},
    {"run", uroce::tools::cmd_run},
    {"devices", uroce::tools::cmd_devices},
    {"stats", uroce::tools::cmd_stats},
    {"capture", uroce::tools::cmd_capture},
    {"exp", uroce::tools::cmd_exp},
};
// clang-format on

constexpr int kExitUsage = 2;

// One line: what is wrong, naming the option or value, and where the help is.
int usage_error(const std::string& prefix, const std::string& message) {
  std::fprintf(stderr, "%s: %s (run '%s --help')\n", prefix.c_str(), message.c_str(), prefix.c_str());
  return kExitUsage;
}

void print(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

}  // namespace

int main(int argc, char** argv) {
  namespace tools = uroce::tools;
  // The global options; the first other word is the subcommand, which parses the words after it.
  CLI::App app("", "uroce");
  bool version = false;
  app.set_help_flag();
  bool help = false;
  app.add_flag("-h,--help", help);
  app.add_flag("--version", version);
  app.prefix_command();
  std::vector<std::string> rest;
  try {
    tools::parse_app(app, std::vector<std::string>(argv + 1, argv + argc), &rest);
  } catch (const tools::UsageError& e) {
    return usage_error("uroce", e.what());
  }
  if (version) {
    std::printf("%s\n", tools::version_line("uroce").c_str());
    return 0;
  }
  // `uroce help CMD` is `uroce CMD --help`.
  if (!help && rest.size() == 2 && rest[0] == "help") rest = {rest[1], "--help"};
  if (help || (!rest.empty() && rest[0] == "help")) {
    print(tools::usage());
    return 0;
  }
  if (rest.empty()) return usage_error("uroce", "missing command");
  const std::string name = rest[0];
  if (name == "--") return usage_error("uroce", "missing command");
  if (name.starts_with("-")) return usage_error("uroce", "unknown option '" + name + "'");
  const std::vector<std::string> args(rest.begin() + 1, rest.end());
  for (const auto& c : kCommands) {
    if (c.name != name) continue;
    const std::string prefix = "uroce " + name;
    try {
      return c.run(args);
    } catch (const tools::UsageError& e) {
      return usage_error(prefix, e.what());
    } catch (const tools::HelpRequested& h) {
      print(h.text.empty() ? tools::usage() : std::string_view(h.text));
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", prefix.c_str(), e.what());
      return 1;
    }
  }
  return usage_error("uroce", "unknown command '" + name + "'");
}
