// One function per `uroce` subcommand, each in its own cmd_<name>.cc. `args` are the words after the
// subcommand name. They return the process exit status and throw UsageError for bad arguments.
#pragma once

#include <string>
#include <vector>

namespace uroce::tools {

int cmd_setup(const std::vector<std::string>& args);
int cmd_env(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_devices(const std::vector<std::string>& args);
int cmd_stats(const std::vector<std::string>& args);    // tools/observe/cmd_stats.cc
int cmd_capture(const std::vector<std::string>& args);  // tools/observe/cmd_capture.cc
int cmd_exp(const std::vector<std::string>& args);      // tools/exp/cmd_exp.cc

// "run 'sudo uroce setup' once", plus this executable's full path when `uroce` on PATH is another one.
std::string setup_instruction();

}  // namespace uroce::tools
