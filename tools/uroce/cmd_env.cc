// uroce env: the environment of `uroce run` as shell `export` lines, for  eval "$(uroce env)".
#include <cstdio>

#include "tools/uroce/cli.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/dev_nodes.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/session.h"

namespace uroce::tools {

int cmd_env(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_device_args(args, false);
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
