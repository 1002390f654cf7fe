// uroce run: CMD with the uroce environment (sysfs tree, provider, preload shim), via execvp.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tools/uroce/cli.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/dev_nodes.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/session.h"

namespace uroce::tools {

int cmd_run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_device_args(args, true);

  // Without its node libibverbs silently lists no device, which is hard to diagnose from inside CMD.
  const auto node = dev_dir() / uverbs_name(parsed.device.index);
  const NodeCheck c = check_node(node);
  if (c.state != NodeState::kOk) {
    std::fprintf(stderr,
                 "uroce run: %s: %s\n"
                 "libibverbs lists %s only when that device node is right: %s, then try again.\n",
                 node.c_str(), c.detail.c_str(), parsed.device.dev.c_str(), setup_instruction().c_str());
    return 1;
  }

  const Libs libs = find_libs();
  const Session s = prepare_session(parsed.device, libs);
  std::fputs(library_warnings(libs).c_str(), stderr);
  for (const auto& [name, value] : s.env) {
    if (setenv(name.c_str(), value.c_str(), 1) != 0) {
      std::fprintf(stderr, "uroce run: setenv %s: %s\n", name.c_str(), std::strerror(errno));
      return 1;
    }
  }

  std::vector<char*> argv;
  for (const auto& a : parsed.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execvp(argv[0], argv.data());
  const int err = errno;
  std::fprintf(stderr, "uroce run: cannot run '%s': %s\n", argv[0], std::strerror(err));
  return err == ENOENT ? 127 : 126;  // what shells return for "not found" and "not executable"
}

}  // namespace uroce::tools
