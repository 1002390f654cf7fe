// uroce devices: device nodes, whether setup was done, the sysfs trees of this user, the libraries.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tools/uroce/cli.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/dev_nodes.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/paths.h"

namespace uroce::tools {
namespace fs = std::filesystem;

namespace {

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

void list_trees() {
  const fs::path base = runtime_base(false);
  std::printf("sysfs trees (%s):\n", base.c_str());
  std::error_code ec;
  int n = 0;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const fs::path root = entry.path() / "sysfs";
    if (!fs::is_directory(root / "class" / "infiniband", ec)) continue;
    for (const auto& dev : fs::directory_iterator(root / "class" / "infiniband", ec)) {
      const std::string gid0 = first_line(dev.path() / "ports" / "1" / "gids" / "0");
      std::printf("  %-8s gid0 %s\n           SYSFS_PATH=%s\n", dev.path().filename().c_str(), gid0.c_str(),
                  root.c_str());
      ++n;
    }
  }
  if (n == 0) std::printf("  none yet ('uroce run' and 'uroce env' write them)\n");
}

}  // namespace

int cmd_devices(const std::vector<std::string>& args) {
  expect_no_args(
      args, "uroce devices",
      "Shows the device nodes, whether setup was done, this user's sysfs trees and the libraries.");
  const fs::path dir = dev_dir();
  std::printf("device nodes (%s):\n", dir.c_str());
  bool all_ok = true;
  for (unsigned i = 0; i < kNumDevNodes; ++i) {
    const NodeCheck c = check_node(dir / uverbs_name(i));
    all_ok = all_ok && c.state == NodeState::kOk;
    std::printf("  %s  %s%s  (for %s%u)\n", uverbs_name(i).c_str(), c.state == NodeState::kOk ? "ok: " : "",
                c.detail.c_str(), std::string(kDevNamePrefix).c_str(), i);
  }
  std::printf("setup: %s\n",
              all_ok ? "done"
                     : ("not done (not needed under 'uroce run', whose shim stands in for the nodes; "
                        "for programs started without the shim: " +
                        setup_instruction() + ")")
                           .c_str());

  list_trees();

  const Libs libs = find_libs();
  std::printf("libraries:\n  provider  %s  (%s)\n  shim      %s  (%s)\n", libs.provider.c_str(),
              libs.provider_found ? "found" : "not built", libs.shim.c_str(),
              libs.shim_found ? "found" : "not built");
  return 0;
}

}  // namespace uroce::tools
