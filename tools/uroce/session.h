// The environment `uroce run` and `uroce env` give a program: the fake sysfs tree for one device plus the
// variables that make libibverbs load the uroce provider and the preload shim.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tools/uroce/cli.h"
#include "tools/uroce/paths.h"
#include "tools/uroce/sysfs_tree.h"

namespace uroce::tools {

struct Session {
  std::filesystem::path root;  // SYSFS_PATH: the directory that contains class/
  WriteResult tree = WriteResult::kUnchanged;
  // In this order: SYSFS_PATH, RDMAV_DRIVERS, LD_PRELOAD (only when the shim exists), UROCE_DEV, UROCE_SYSFS.
  std::vector<std::pair<std::string, std::string>> env;
};

// Writes (or confirms) the tree under runtime_base() and computes the variables. Throws on failure.
Session prepare_session(const DeviceOptions& opts, const Libs& libs);

// The spec the tree is generated from: netdev and node description of this host.
DeviceSpec device_spec(const DeviceOptions& opts);

// `existing` (space or colon separated) with `lib` first and not repeated, joined with ':'.
std::string prepend_preload(const std::string& lib, const std::string& existing);

// A word that a POSIX shell reads back as `s`: unchanged when it is plain, else single-quoted.
std::string shell_quote(const std::string& s);

// Warnings for missing libraries, one line each ("" when both exist).
std::string library_warnings(const Libs& libs);

}  // namespace uroce::tools
