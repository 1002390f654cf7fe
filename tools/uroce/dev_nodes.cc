#include "tools/uroce/dev_nodes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "runtime/dev_node.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/paths.h"

namespace uroce::tools {
namespace {

std::string describe(const struct stat& st) {
  char buf[96];
  const unsigned mode = st.st_mode & 07777;
  if (S_ISCHR(st.st_mode)) {
    std::snprintf(buf, sizeof buf, "char %u:%u mode %04o", major(st.st_rdev), minor(st.st_rdev), mode);
  } else if (S_ISLNK(st.st_mode)) {
    std::snprintf(buf, sizeof buf, "a symlink");
  } else if (S_ISDIR(st.st_mode)) {
    std::snprintf(buf, sizeof buf, "a directory");
  } else if (S_ISBLK(st.st_mode)) {
    std::snprintf(buf, sizeof buf, "block %u:%u", major(st.st_rdev), minor(st.st_rdev));
  } else {
    std::snprintf(buf, sizeof buf, "a non-device file (mode %04o)", mode);
  }
  return buf;
}

bool right_device(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == makedev(kDevMajor, kDevMinor);
}

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

NodeCheck check_node(const std::filesystem::path& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return {NodeState::kMissing, "missing"};
    return {NodeState::kUnusable, std::string("cannot stat: ") + std::strerror(errno)};
  }
  if (!right_device(st)) return {NodeState::kWrong, describe(st) + ", expected char 1:7 (like /dev/full)"};
  if ((st.st_mode & 07777) != kDevMode) return {NodeState::kWrong, describe(st) + ", expected mode 0666"};
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return {NodeState::kUnusable, describe(st) + ", but open failed: " + std::strerror(errno)};
  close(fd);
  return {NodeState::kOk, describe(st)};
}

std::string ensure_node(const std::filesystem::path& path) {
  struct stat st {};
  std::string replaced;
  if (lstat(path.c_str(), &st) == 0) {
    if (right_device(st)) {
      if ((st.st_mode & 07777) == kDevMode) return "ok, left alone (" + describe(st) + ")";
      if (chmod(path.c_str(), kDevMode) != 0) throw_errno("chmod " + path.string());
      return "fixed mode (was " + describe(st) + ")";
    }
    if (S_ISDIR(st.st_mode)) {
      errno = EISDIR;
      throw_errno(path.string() + " is a directory; remove it by hand");
    }
    if (unlink(path.c_str()) != 0) throw_errno("remove " + path.string());
    replaced = describe(st);
  } else if (errno != ENOENT) {
    throw_errno("stat " + path.string());
  }
  if (mknod(path.c_str(), S_IFCHR | kDevMode, makedev(kDevMajor, kDevMinor)) != 0) {
    throw_errno("mknod " + path.string());
  }
  if (chmod(path.c_str(), kDevMode) != 0) throw_errno("chmod " + path.string());  // umask-proof
  return replaced.empty() ? "created (char 1:7 mode 0666)" : "replaced (was " + replaced + ")";
}

NodeCheck check_node_as_run(const std::filesystem::path& node, bool shim, std::filesystem::path* path) {
  *path = shim ? std::filesystem::path(runtime::kStandInNode) : node;
  return check_node(*path);
}

bool setup_done() {
  const auto dir = dev_dir();
  for (unsigned i = 0; i < kNumDevNodes; ++i) {
    if (check_node(dir / uverbs_name(i)).state != NodeState::kOk) return false;
  }
  return true;
}

}  // namespace uroce::tools
