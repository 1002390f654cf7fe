#include "tools/uroce/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "runtime/runtime_dir.h"
#include "tools/uroce/layout.h"
#include "uroce_build_info.h"

namespace uroce::tools {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kProviderFile = "liburoce-rdmav34.so";
constexpr std::string_view kProviderSuffix = "-rdmav34.so";
constexpr std::string_view kShimFile = "liburoce-preload.so";
#ifdef UROCE_INSTALL_LIBDIR
constexpr std::string_view kInstallLibDir = UROCE_INSTALL_LIBDIR;  // relative to the prefix
#else
constexpr std::string_view kInstallLibDir = "lib";
#endif

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

fs::path tree_root(const fs::path& base, const std::string& dev, const std::string& ip) {
  return base / (dev + "-" + ip) / "sysfs";
}

fs::path dev_dir() {
  const std::string v = env_or_empty("UROCE_DEV_DIR");
  return v.empty() ? fs::path(kDefaultDevDir) : fs::path(v);
}

Libs find_libs() {
  std::vector<Libs> layouts;
  auto add = [&](const fs::path& provider_dir, const fs::path& shim_dir) {
    layouts.push_back({provider_dir / kProviderFile, shim_dir / kShimFile, false, false});
  };
  const std::string libdir = env_or_empty("UROCE_LIBDIR");
  if (!libdir.empty()) {
    Libs l{fs::path(libdir) / kProviderFile, fs::path(libdir) / kShimFile, false, false};
    l.provider_found = is_file(l.provider);
    l.shim_found = is_file(l.shim);
    return l;
  }
  const fs::path exe_dir = self_dir();
  bool installed = false;
  if (!exe_dir.empty()) {
    const fs::path up = exe_dir.parent_path();
    std::error_code ec;
    if (fs::is_directory(up / "provider", ec) || fs::exists(up / "CMakeCache.txt", ec)) {
      add(up / "provider", up / "provider" / "shim");
    }
    // `cmake --install` / the .deb (cmake/install.cmake): <prefix>/bin/uroce, the provider in
    // <prefix>/<libdir>/libibverbs/, the shim in <prefix>/<libdir>/uroce/.
    const fs::path lib = up / kInstallLibDir;
    if (fs::is_directory(lib / "uroce", ec) || fs::is_directory(lib / "libibverbs", ec)) {
      add(lib / "libibverbs", lib / "uroce");
      installed = true;
    }
    if (fs::is_directory(up / "lib" / "uroce", ec)) add(up / "lib" / "uroce", up / "lib" / "uroce");
  }
  // An installed uroce never falls back to the build tree it came from: a broken install must show.
  if (!installed) add(UROCE_BUILD_PROVIDER_DIR, UROCE_BUILD_SHIM_DIR);

  for (auto& l : layouts) {
    l.provider_found = is_file(l.provider);
    l.shim_found = is_file(l.shim);
  }
  for (const auto& l : layouts) {
    if (l.provider_found) return l;
  }
  return layouts.front();
}

std::string rdmav_drivers_value(const fs::path& provider) {
  std::string s = provider.string();
  if (s.size() > kProviderSuffix.size() && s.ends_with(kProviderSuffix))
    s.resize(s.size() - kProviderSuffix.size());
  return s;
}

}  // namespace uroce::tools
