// uroce env: the environment of `uroce run` as shell `export` lines, for  eval "$(uroce env)".
#include <cstdio>

#include "runtime/env_vars.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/dev_nodes.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/session.h"

namespace uroce::tools {

namespace {

// The table of runtime/env_vars.h: name, kind, accepted values, default, reader, one line.
void print_env_table() {
  for (const runtime::EnvVar& v : runtime::env_vars()) {
    std::printf("%-20s %-9s %s\n", std::string(v.name).c_str(),
                std::string(runtime::kind_name(v.kind)).c_str(), std::string(v.doc).c_str());
    std::printf("%-20s values: %s; default: %s; read by: %s\n", "", std::string(v.range).c_str(),
                v.def.empty() ? "(none)" : std::string(v.def).c_str(), std::string(v.reader).c_str());
  }
}

// The same table as markdown, the body of docs/environment.md (a ctest keeps the two equal).
void print_env_markdown() {
  std::printf("| Variable | Kind | Values | Default | Read by | Meaning |\n|---|---|---|---|---|---|\n");
  for (const runtime::EnvVar& v : runtime::env_vars()) {
    std::string range(v.range);
    for (size_t pos = 0; (pos = range.find('|', pos)) != std::string::npos; pos += 2)
      range.replace(pos, 1, "\\|");
    std::printf("| `%s` | %s | %s | %s | %s | %s |\n", std::string(v.name).c_str(),
                std::string(runtime::kind_name(v.kind)).c_str(), range.c_str(), std::string(v.def).c_str(),
                std::string(v.reader).c_str(), std::string(v.doc).c_str());
  }
}

}  // namespace

int cmd_env(const std::vector<std::string>& args) {
  CLI::App app(
      "Prints the environment of 'uroce run' as shell export lines (eval \"$(uroce env)\"), or with --list\n"
      "every environment variable uroce reads, with its values and default.",
      "uroce env");
  setup_app(app, "[--dev NAME] [--ip ADDR] | --list");
  DeviceWords words;
  add_device_options(app, &words);
  bool list = false;
  app.add_flag("--list", list, "list every environment variable uroce reads (docs/environment.md)");
  bool markdown = false;
  app.add_flag("--markdown", markdown, "with --list: as the markdown table of docs/environment.md");
  parse_app(app, args);
  if (markdown && !list) throw UsageError("--markdown goes with --list");
  if (list) {
    markdown ? print_env_markdown() : print_env_table();
    return 0;
  }
  ParsedArgs parsed;
  parsed.device = check_device(words.dev, words.ip);
  const Libs libs = find_libs();
  const Session s = prepare_session(parsed.device, libs);

  std::fputs(library_warnings(libs).c_str(), stderr);
  std::filesystem::path node;
  const NodeCheck c = check_node_as_run(dev_dir() / uverbs_name(parsed.device.index), libs.shim_found, &node);
  if (c.state != NodeState::kOk) {
    std::fprintf(stderr, "warning: %s: %s: %s\n", node.c_str(), c.detail.c_str(),
                 setup_instruction().c_str());
  }
  for (const auto& [name, value] : s.env)
    std::printf("export %s=%s\n", name.c_str(), shell_quote(value).c_str());
  return 0;
}

}  // namespace uroce::tools
