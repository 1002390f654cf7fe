// uroce: run unmodified libibverbs programs on the uroce userspace RoCE v2 device.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "tools/uroce/cli.h"
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

int usage_error(std::string_view prefix, const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n\n%.*s", static_cast<int>(prefix.size()), prefix.data(), message.c_str(),
               static_cast<int>(uroce::tools::usage().size()), uroce::tools::usage().data());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using uroce::tools::usage;
  if (argc < 2) return usage_error("uroce", "missing command");
  const std::string_view name = argv[1];
  if (name == "help" || name == "-h" || name == "--help") {
    std::fwrite(usage().data(), 1, usage().size(), stdout);
    return 0;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (c.name != name) continue;
    const std::string prefix = "uroce " + std::string(name);
    try {
      return c.run(args);
    } catch (const uroce::tools::UsageError& e) {
      return usage_error(prefix, e.what());
    } catch (const uroce::tools::HelpRequested&) {
      std::fwrite(usage().data(), 1, usage().size(), stdout);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", prefix.c_str(), e.what());
      return 1;
    }
  }
  return usage_error("uroce", "unknown command '" + std::string(name) + "'");
}
