// Where uroce keeps its per-user state and finds its libraries and device nodes.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/runtime_dir.h"

namespace uroce::tools {

// The per-user runtime directory and the running executable: runtime/runtime_dir.h.
using runtime::runtime_base;
using runtime::self_dir;
using runtime::self_exe;

// <base>/<dev>-<ip>/sysfs: the SYSFS_PATH for one device and address.
std::filesystem::path tree_root(const std::filesystem::path& base, const std::string& dev,
                                const std::string& ip);

// $UROCE_DEV_DIR, else /dev/infiniband. The override exists for tests; libibverbs always opens
// /dev/infiniband/<name>.
std::filesystem::path dev_dir();

struct Libs {
  std::filesystem::path provider;  // .../liburoce-rdmav34.so (libibverbs dlopens it via RDMAV_DRIVERS)
  std::filesystem::path shim;      // .../liburoce-preload.so (LD_PRELOAD)
  bool provider_found = false;
  bool shim_found = false;
};

// $UROCE_LIBDIR (both files in one directory) when set. Otherwise looks next to the executable in a build
// tree (<build>/tools/uroce -> <build>/provider/, <build>/provider/shim/), in an install tree
// (<prefix>/bin/uroce -> <prefix>/<libdir>/libibverbs/ and <prefix>/<libdir>/uroce/, libdir as installed by
// cmake/install.cmake, e.g. lib/x86_64-linux-gnu; or both in <prefix>/lib/uroce/), then, unless it runs
// from an install tree, in the build directory this binary was configured with. Returns the first layout
// that has the provider, else the first that applies.
Libs find_libs();

// RDMAV_DRIVERS value for a provider path: the path without the "-rdmav34.so" suffix libibverbs appends.
std::string rdmav_drivers_value(const std::filesystem::path& provider);

}  // namespace uroce::tools
