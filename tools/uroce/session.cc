#include "tools/uroce/session.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "tools/uroce/layout.h"
#include "tools/uroce/verbs_abi.h"

namespace uroce::tools {
namespace {

// The interface that holds the address; for a loopback-range address nobody holds, the loopback
// interface (127.0.0.0/8 routes there). Empty when no interface fits.
std::string netdev_for(const IpAddress& ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string exact, loopback;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    if ((a->ifa_flags & IFF_LOOPBACK) != 0 && loopback.empty()) loopback = a->ifa_name;
    if (ip.v4 && a->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (std::memcmp(&sin->sin_addr, ip.gid.data() + 12, 4) == 0) exact = a->ifa_name;
    } else if (!ip.v4 && a->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (std::memcmp(&sin6->sin6_addr, ip.gid.data(), 16) == 0) exact = a->ifa_name;
    }
  }
  freeifaddrs(list);
  if (!exact.empty()) return exact;
  return is_loopback(ip) ? loopback : "";
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

bool plain_shell_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("_-./:,+=@%", c) != nullptr;
}

}  // namespace

DeviceSpec device_spec(const DeviceOptions& opts) {
  if (!opts.netdev.empty())
    return {opts.dev,  opts.index, opts.ip,     opts.netdev, host_name() + " " + opts.dev,
            opts.gids, opts.mac,   opts.link_up};
  return {opts.dev, opts.index, opts.ip, netdev_for(opts.ip), host_name() + " " + opts.dev, {}, {}, true};
}

std::string prepend_preload(const std::string& lib, const std::string& existing) {
  std::string out = lib;
  size_t pos = 0;
  while (pos < existing.size()) {
    const size_t end = existing.find_first_of(" :", pos);
    const std::string item = existing.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (!item.empty() && item != lib) out += ":" + item;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) plain = plain && plain_shell_char(c);
  if (plain) return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string library_warnings(const Libs& libs) {
  std::string out;
  if (!libs.provider_found) {
    out += "warning: provider " + libs.provider.string() +
           " not found (not built yet?): libibverbs will list no uroce device\n";
  }
  if (!libs.shim_found) {
    out += "warning: preload shim " + libs.shim.string() +
           " not found: completion channels and /sys/class/infiniband redirection are off\n";
  }
  if (const std::string abi = verbs_abi_problem(); !abi.empty()) out += "warning: " + abi + "\n";
  return out;
}

Session prepare_session(const DeviceOptions& opts, const Libs& libs) {
  Session s;
  s.root = tree_root(runtime_base(true), opts.dev, opts.ip.text);
  const std::string ibdev_path = s.root.string() + "/class/infiniband/" + opts.dev;
  if (ibdev_path.size() >= kSysfsPathMax) {
    throw std::runtime_error("sysfs path " + ibdev_path + " is longer than libibverbs accepts (" +
                             std::to_string(kSysfsPathMax - 1) +
                             " bytes); set XDG_RUNTIME_DIR to a shorter directory");
  }
  s.tree = write_tree(s.root, sysfs_files(device_spec(opts)));

  s.env.emplace_back("SYSFS_PATH", s.root.string());
  s.env.emplace_back("RDMAV_DRIVERS", rdmav_drivers_value(libs.provider));
  if (libs.shim_found) {
    const char* old = std::getenv("LD_PRELOAD");
    s.env.emplace_back("LD_PRELOAD", prepend_preload(libs.shim.string(), old != nullptr ? old : ""));
  }
  s.env.emplace_back("UROCE_DEV", opts.dev);
  s.env.emplace_back("UROCE_SYSFS", s.root.string());
  return s;
}

}  // namespace uroce::tools
