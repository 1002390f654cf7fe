#include "tools/uroce/env_check.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <stdexcept>

#include "cc/cc.h"
#include "pmd_glue/dpdk_spec.h"
#include "runtime/env_vars.h"
#include "tools/uroce/cli.h"
#include "transport/device.h"

namespace uroce::tools {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

void set_env(const char* name, const std::string& value) {
  if (setenv(name, value.c_str(), 1) != 0)
    throw std::runtime_error(std::string("setenv ") + name + " failed");
}

}  // namespace

std::string check_env_var(const std::string& name, const std::string& value, const std::string& cc) {
  const runtime::EnvVar* var = runtime::find_env_var(name);
  if (var == nullptr || value.empty()) return "";
  if (std::string e = runtime::check_env_value(*var, value); !e.empty()) return e;
  const std::string prefix = name + "=" + value + ": ";
  switch (var->kind) {
    case runtime::EnvKind::kCc:
    case runtime::EnvKind::kCcParams: {
      DeviceConfig dc;
      dc.cc = var->kind == runtime::EnvKind::kCc ? value : cc;
      try {
        if (var->kind == runtime::EnvKind::kCcParams) dc.cc_params = cc::parse_params(value);
      } catch (const std::invalid_argument& e) {
        return prefix + e.what();
      }
      if (std::string e = Device::check_config(dc); !e.empty()) return prefix + e;
      return "";
    }
    case runtime::EnvKind::kPort: {
      if (value == "uroced" || value == "loopback") return "";
      glue::PortSpec spec;
      std::string err;
      if (!glue::parse_port_spec(value, &spec, &err)) return prefix + err;
      return "";
    }
    default:
      return "";
  }
}

std::string check_environment() {
  const std::string cc = env_or("UROCE_CC", "none");
  for (const runtime::EnvVar& var : runtime::env_vars()) {
    const std::string name(var.name);
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) continue;
    if (std::string e = check_env_var(name, v, cc); !e.empty()) return e;
  }
  return "";
}

void add_run_env_options(CLI::App& app, RunEnvOptions* opts) {
  std::string names;
  for (const std::string& n : cc::algorithm_names()) names += (names.empty() ? "" : ", ") + n;
  app.add_option("--cc", opts->cc, "congestion control of every QP (UROCE_CC): " + names)->type_name("NAME");
  app.add_option("--cc-param", opts->cc_params,
                 "a parameter of the algorithm, repeatable (UROCE_CC_PARAMS; replaces the variable)")
      ->type_name("K=V")
      ->allow_extra_args(false);
  app.add_option("--mtu", opts->mtu, "the port's MTU in bytes: 256, 512, 1024, 2048 or 4096 (UROCE_MTU)")
      ->type_name("N");
}

void apply_run_env_options(const RunEnvOptions& opts) {
  // Each flag is checked as the variable it sets would be, and worded as the flag.
  auto refuse = [](const std::string& flag, const std::string& value, const std::string& why) {
    const size_t colon = why.find(": ");
    throw UsageError("bad value '" + value + "' for " + flag + ": " +
                     (colon == std::string::npos ? why : why.substr(colon + 2)));
  };
  const std::string cc = opts.cc.empty() ? env_or("UROCE_CC", "none") : opts.cc;
  if (!opts.cc.empty()) {
    if (std::string e = check_env_var("UROCE_CC", opts.cc); !e.empty()) refuse("--cc", opts.cc, e);
  }
  std::string params;
  for (const std::string& p : opts.cc_params) {
    if (p.find('=') == std::string::npos)
      throw UsageError("bad value '" + p + "' for --cc-param: expected K=V");
    if (std::string e = check_env_var("UROCE_CC_PARAMS", p, cc); !e.empty()) refuse("--cc-param", p, e);
    params += (params.empty() ? "" : ",") + p;
  }
  if (!opts.cc_params.empty()) {
    if (std::string e = check_env_var("UROCE_CC_PARAMS", params, cc); !e.empty())
      refuse("--cc-param", params, e);
  }
  if (!opts.mtu.empty()) {
    if (std::string e = check_env_var("UROCE_MTU", opts.mtu); !e.empty()) refuse("--mtu", opts.mtu, e);
  }
  if (!opts.cc.empty()) set_env("UROCE_CC", opts.cc);
  if (!opts.cc_params.empty()) set_env("UROCE_CC_PARAMS", params);
  if (!opts.mtu.empty()) set_env("UROCE_MTU", opts.mtu);
}

}  // namespace uroce::tools
