// The identity of the uroce device, as the ucma emulation reports it: read once from the per-user sysfs
// tree that `uroce run` wrote and libibverbs reads ($SYSFS_PATH/class/infiniband/<dev>/node_guid and
// ports/1/gids/N), so librdmacm's node-GUID match (ibv_get_device_guid) finds the same device.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "provider/shim/sysfs_env.h"
#include "provider/shim/ucma.h"

namespace uroce::shim::ucma {
namespace {

constexpr int kMaxGids = 16;

Device g_device;
pthread_once_t g_once = PTHREAD_ONCE_INIT;

bool read_text(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// sysfs GID / GUID text: groups of 4 hex digits separated by ':' (8 groups for a GID, 4 for a GUID).
bool parse_groups(const char* s, uint8_t* out, int groups) {
  for (int g = 0; g < groups; ++g) {
    for (int i = 0; i < 4; i += 2) {
      const int hi = hex(s[0]), lo = hex(s[1]);
      if (hi < 0 || lo < 0) return false;
      out[g * 2 + i / 2] = static_cast<uint8_t>(hi << 4 | lo);
      s += 2;
    }
    if (g + 1 < groups && *s++ != ':') return false;
  }
  return true;
}

bool is_loopback_gid(const uint8_t* g) {
  static const uint8_t kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const uint8_t kV6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return (std::memcmp(g, kV4Prefix, 12) == 0 && g[12] == 127) || std::memcmp(g, kV6Loopback, 16) == 0;
}

// The device directory: $UROCE_DEV (set by `uroce run`), else the first entry of class/infiniband.
bool device_dir(const char* root, size_t root_len, char* out, size_t size) {
  const char* dev = std::getenv("UROCE_DEV");
  if (dev != nullptr && dev[0] != '\0' && std::strchr(dev, '/') == nullptr) {
    return std::snprintf(out, size, "%.*s/class/infiniband/%s", static_cast<int>(root_len), root, dev) <
           static_cast<int>(size);
  }
  char cls[PATH_MAX];
  std::snprintf(cls, sizeof cls, "%.*s/class/infiniband", static_cast<int>(root_len), root);
  DIR* d = opendir(cls);
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    found = std::snprintf(out, size, "%s/%s", cls, e->d_name) < static_cast<int>(size);
    break;
  }
  closedir(d);
  return found;
}

uint8_t mtu_enum() {
  // The provider's port MTU (provider/engine.cc reads the same variable; default 4096).
  const char* v = std::getenv("UROCE_MTU");
  if (v == nullptr) return 5;
  const int bytes = std::atoi(v);
  for (uint8_t e = 1; e <= 5; ++e) {
    if (bytes == 128 << e) return e;
  }
  return 5;
}

void load() {
  Device& d = g_device;
  d.mtu = mtu_enum();
  size_t root_len = 0;
  const char* root = sysfs_root(&root_len);
  char dir[PATH_MAX - 32], path[PATH_MAX], text[128];
  if (root == nullptr || !device_dir(root, root_len, dir, sizeof dir)) return;
  std::snprintf(path, sizeof path, "%s/node_guid", dir);
  uint8_t guid[8];
  if (!read_text(path, text, sizeof text) || !parse_groups(text, guid, 4)) return;
  std::memcpy(&d.node_guid, guid, 8);  // byte order as in the text: big-endian, as ibv_get_device_guid
  for (int i = 0; i < kMaxGids; ++i) {
    std::snprintf(path, sizeof path, "%s/ports/1/gids/%d", dir, i);
    if (!read_text(path, text, sizeof text) || !parse_groups(text, d.gids[i], 8)) break;
    d.num_gids = i + 1;
  }
  if (d.num_gids == 0) return;
  d.loopback_gid = 0;
  for (int i = 0; i < d.num_gids; ++i) {
    if (is_loopback_gid(d.gids[i])) {
      d.loopback_gid = i;
      d.on_loopback = true;
      break;
    }
  }
  d.ok = true;
}

}  // namespace

const Device& device() {
  pthread_once(&g_once, load);
  return g_device;
}

}  // namespace uroce::shim::ucma
