// The environment `uroce run` hands to its command: the --cc, --cc-param and --mtu flags that stand for
// UROCE_CC, UROCE_CC_PARAMS and UROCE_MTU, and the check of every variable of runtime/env_vars.h that is
// set, before exec.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace uroce::tools {

struct RunEnvOptions {
  std::string cc;                      // --cc NAME
  std::vector<std::string> cc_params;  // --cc-param K=V, repeatable
  std::string mtu;                     // --mtu N
};

void add_run_env_options(CLI::App& app, RunEnvOptions* opts);

// Checks the flags (UsageError naming the flag and value) and sets the variables they stand for.
void apply_run_env_options(const RunEnvOptions& opts);

// "" when every variable of the table that is set in this process's environment has a good value, else
// "NAME=VALUE: why" for the first bad one.
std::string check_environment();

// One variable's value checked by its kind, including the kinds that need cc/ or pmd_glue/ (the
// algorithm, its parameters, the port spec). `cc` is the algorithm UROCE_CC_PARAMS belongs to.
std::string check_env_var(const std::string& name, const std::string& value, const std::string& cc = "none");

}  // namespace uroce::tools
