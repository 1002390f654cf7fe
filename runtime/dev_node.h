// The device node libibverbs opens for a uroce device, shared by the tools (which write the sysfs tree
// that names it and `uroce setup`, which makes it) and the preload shim (which stands in for it).
//
// libibverbs (rdma-core 44) lists a device only when stat("/dev/infiniband/<uverbs name>") succeeds, and
// opens that path expecting a character device whose number equals the tree's `dev` file. uroce names
// /dev/full's number, 1:7: opening it gives libibverbs a cmd_fd on which ioctls fail with ENOTTY (so GID
// queries fall back to sysfs) and writes fail cleanly with ENOSPC. Under `uroce run` the shim answers
// for /dev/full itself, so no node has to be made and no step needs root.
#pragma once

#include <string_view>

namespace uroce::runtime {

constexpr std::string_view kDevDir = "/dev/infiniband";
constexpr std::string_view kUverbsPrefix = "uroce_verbs";  // device uroceN uses uroce_verbsN
constexpr unsigned kDevMajor = 1;
constexpr unsigned kDevMinor = 7;
constexpr unsigned kDevMode = 0666;
constexpr char kStandInNode[] = "/dev/full";

// Whether `path` is "<kDevDir>/<kUverbsPrefix><decimal digits>".
constexpr bool is_uverbs_node(std::string_view path) {
  if (!path.starts_with(kDevDir)) return false;
  path.remove_prefix(kDevDir.size());
  if (!path.starts_with('/')) return false;
  path.remove_prefix(1);
  if (!path.starts_with(kUverbsPrefix)) return false;
  path.remove_prefix(kUverbsPrefix.size());
  if (path.empty()) return false;
  for (char c : path) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

static_assert(is_uverbs_node("/dev/infiniband/uroce_verbs0"));
static_assert(is_uverbs_node("/dev/infiniband/uroce_verbs12"));
static_assert(!is_uverbs_node("/dev/infiniband/uroce_verbs"));
static_assert(!is_uverbs_node("/dev/infiniband/uverbs0"));
static_assert(!is_uverbs_node("/dev/infiniband/uroce_verbs0x"));
static_assert(!is_uverbs_node("/dev/infinibandx/uroce_verbs0"));

}  // namespace uroce::runtime
