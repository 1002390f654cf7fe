// uroce setup: the one step that needs root. libibverbs lists a device only when
// /dev/infiniband/<uverbs dir> is a character device with the rdev its sysfs `dev` file names.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "tools/uroce/cli.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/dev_nodes.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/paths.h"

namespace uroce::tools {
namespace fs = std::filesystem;

namespace {

// Opens the node read-write and writes one byte: /dev/full must refuse it with ENOSPC.
std::string probe(const fs::path& p) {
  const int fd = open(p.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::string("open failed: ") + std::strerror(errno);
  const char byte = 0;
  const ssize_t n = write(fd, &byte, 1);
  const int err = errno;
  close(fd);
  if (n < 0 && err == ENOSPC) return "";
  return "write did not fail with ENOSPC: not /dev/full's device";
}

// "sudo /path/to/uroce setup" when `uroce` on PATH is not this executable, else "".
std::string this_build_command() {
  const fs::path self = self_exe();
  if (self.empty()) return "";
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  for (size_t pos = 0; pos < dirs.size();) {
    const size_t end = std::min(dirs.find(':', pos), dirs.size());
    std::error_code ec;
    if (end > pos && fs::equivalent(fs::path(dirs.substr(pos, end - pos)) / "uroce", self, ec)) return "";
    pos = end + 1;
  }
  return "sudo " + self.string() + " setup";
}

}  // namespace

std::string setup_instruction() {
  const std::string full = this_build_command();
  return "run 'sudo uroce setup' once" + (full.empty() ? "" : " (this build: '" + full + "')");
}

int cmd_setup(const std::vector<std::string>& args) {
  expect_no_args(args, "uroce setup",
                 "Creates the device nodes " + std::string(kDefaultDevDir) + "/" +
                     std::string(kUverbsPrefix) + "0.." + std::to_string(kNumDevNodes - 1) +
                     " (as root, once; again after a reboot if /dev is a tmpfs).");
  const fs::path dir = dev_dir();
  if (std::getenv("UROCE_DEV_DIR") != nullptr) {
    std::printf("note: UROCE_DEV_DIR=%s (libibverbs itself always uses %s)\n", dir.c_str(),
                std::string(kDefaultDevDir).c_str());
  }
  if (geteuid() != 0) {
    if (setup_done()) {
      std::printf("uroce setup: already done: %s/%s0..%u are in place, nothing needs root\n", dir.c_str(),
                  std::string(kUverbsPrefix).c_str(), kNumDevNodes - 1);
      return 0;
    }
    std::fprintf(
        stderr,
        "uroce setup: must run as root.\n"
        "It creates the character devices %s/%s0..%u (mknod: device %u:%u like /dev/full, mode 0666).\n"
        "libibverbs lists a uroce device only when its node exists, and creating device nodes\n"
        "needs root. Needed once (again after a reboot if /dev is a tmpfs). Run:\n\n"
        "    sudo uroce setup\n",
        dir.c_str(), std::string(kUverbsPrefix).c_str(), kNumDevNodes - 1, kDevMajor, kDevMinor);
    const std::string full = this_build_command();
    if (!full.empty()) std::fprintf(stderr, "\n(uroce is not on PATH; this build: %s)\n", full.c_str());
    return 1;
  }

  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    std::printf("%s: exists\n", dir.c_str());
  } else if (fs::create_directories(dir, ec) && chmod(dir.c_str(), 0755) == 0) {
    std::printf("%s: created\n", dir.c_str());
  } else {
    std::fprintf(stderr, "uroce setup: cannot create directory %s: %s\n", dir.c_str(),
                 ec ? ec.message().c_str() : std::strerror(errno));
    return 1;
  }

  bool ok = true;
  for (unsigned i = 0; i < kNumDevNodes; ++i) {
    const fs::path node = dir / uverbs_name(i);
    try {
      std::printf("  %s: %s\n", node.filename().c_str(), ensure_node(node).c_str());
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "uroce setup: %s\n", e.what());
      ok = false;
    }
  }
  for (unsigned i = 0; ok && i < kNumDevNodes; ++i) {
    const fs::path node = dir / uverbs_name(i);
    const NodeCheck c = check_node(node);
    const std::string err = c.state == NodeState::kOk ? probe(node) : c.detail;
    if (!err.empty()) {
      std::fprintf(stderr, "uroce setup: check of %s failed: %s\n", node.c_str(), err.c_str());
      ok = false;
    }
  }
  if (!ok) return 1;
  std::printf("check: %s0..%u open read-write and refuse writes like /dev/full: ok\n",
              std::string(kUverbsPrefix).c_str(), kNumDevNodes - 1);
  std::printf("done: any user can now run 'uroce run -- CMD' or 'eval \"$(uroce env)\"'\n");
  return 0;
}

}  // namespace uroce::tools
