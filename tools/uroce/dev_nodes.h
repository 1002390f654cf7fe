// The /dev/infiniband/uroce_verbsN character devices libibverbs must find before it lists a device.
#pragma once

#include <filesystem>
#include <string>

namespace uroce::tools {

enum class NodeState { kOk, kMissing, kWrong, kUnusable };

struct NodeCheck {
  NodeState state;
  std::string detail;  // human-readable: what is there and, if wrong, why
};

// Inspects one node: it must be a character device 1:7 (same as /dev/full) with mode 0666 that this
// process can open read-write (kUnusable: right node, but open fails, e.g. a nodev mount).
NodeCheck check_node(const std::filesystem::path& path);

// Root only. Makes `path` such a node: a correct one is left alone, a node with the right device but the
// wrong mode is chmod'ed, anything else that is not a directory is replaced. Returns what it did.
// Throws std::system_error.
std::string ensure_node(const std::filesystem::path& path);

// The node a program started by `uroce run` (or with `uroce env`'s environment) will open for
// `node`: with the preload shim, the shim's stand-in (/dev/full, runtime/dev_node.h), so no setup is
// needed; without it, `node` itself. `path` is set to the one checked.
NodeCheck check_node_as_run(const std::filesystem::path& node, bool shim, std::filesystem::path* path);

// All kNumDevNodes nodes under dev_dir() are kOk.
bool setup_done();

}  // namespace uroce::tools
