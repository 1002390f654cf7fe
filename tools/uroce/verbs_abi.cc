#include "tools/uroce/verbs_abi.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>

#include <string_view>

namespace uroce::tools {
namespace {

constexpr char kLibrary[] = "libibverbs.so.1";
constexpr char kRegister[] = "verbs_register_driver_34";
constexpr char kAbi[] = "IBVERBS_PRIVATE_34";

// The file behind the handle, symbolic links resolved (libibverbs.so.1 -> libibverbs.so.1.14.44.0).
std::string file_of(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return kLibrary;
  char real[PATH_MAX];
  return realpath(map->l_name, real) != nullptr ? real : map->l_name;
}

// rdma-core names the library libibverbs.so.1.<abi minor>.<release>.<patch>: "44" for 1.14.44.0.
std::string release_of(const std::string& file) {
  std::string_view name = file;
  name.remove_prefix(name.rfind('/') + 1);
  constexpr std::string_view kStem = "libibverbs.so.1.";
  if (!name.starts_with(kStem)) return "";
  name.remove_prefix(kStem.size());
  const size_t minor_end = name.find('.');
  if (minor_end == std::string_view::npos) return "";
  name.remove_prefix(minor_end + 1);
  return std::string(name.substr(0, name.find('.')));
}

}  // namespace

std::string verbs_abi_problem() {
  void* h = dlopen(kLibrary, RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) {
    return std::string("cannot load ") + kLibrary + " (" + dlerror() +
           "): install libibverbs1 (rdma-core 34 to 56; uroce is tested with Debian 12's 44)";
  }
  const bool ok = dlvsym(h, kRegister, kAbi) != nullptr;
  const std::string file = file_of(h);
  dlclose(h);
  if (ok) return "";
  const std::string release = release_of(file);
  return file + (release.empty() ? "" : " (rdma-core " + release + ")") + " has no " + kAbi +
         " provider ABI, so it cannot load uroce's provider: uroce needs rdma-core 34 to 56 (tested with 44)";
}

}  // namespace uroce::tools
