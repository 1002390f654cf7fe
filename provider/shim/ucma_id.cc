// The id table of the ucma emulation, and what binding an id means: the address names the uroce device
// (one of its GIDs; 127.0.0.0/8, ::1 and the host's interface addresses its loopback GID; the wildcard none
// yet), and (port space, port) is reserved inside the process with the kernel's cma_check_port rules.
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "provider/shim/ucma.h"
#include "provider/shim/ucma_addr.h"
#include "provider/shim/ucma_id.h"
#include "runtime/host_addr.h"

namespace uroce::shim::ucma {
namespace {

// Indexed by handle (handles are reused after destroy, as the kernel's xarray ids are).
Id** g_ids = nullptr;
uint32_t g_cap = 0;

struct PortRange {
  uint16_t lo = 32768, hi = 60999;  // Linux defaults of net.ipv4.ip_local_port_range
};

PortRange local_port_range() {
  PortRange r;
  const int fd = open("/proc/sys/net/ipv4/ip_local_port_range", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return r;
  char buf[64] = {};
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  unsigned lo = 0, hi = 0;
  if (n > 0 && std::sscanf(buf, "%u %u", &lo, &hi) == 2 && lo > 0 && lo <= hi && hi <= 65535) {
    r.lo = static_cast<uint16_t>(lo);
    r.hi = static_cast<uint16_t>(hi);
  }
  return r;
}

// cma_check_port: another holder of (ps, port) conflicts unless both allow reuse, or both are AF-only
// and of different families; a wildcard on either side conflicts with everything (EADDRNOTAVAIL), an
// equal address is EADDRINUSE.
int check_port(const Id* self, uint16_t ps, uint16_t port, const sockaddr_in6& addr, bool reuseaddr) {
  for (uint32_t h = 0; h < g_cap; ++h) {
    const Id* cur = g_ids[h];
    if (cur == nullptr || cur == self || !cur->has_port || cur->ps != ps || addr_port(cur->src) != port)
      continue;
    if (reuseaddr && cur->reuseaddr) continue;
    if (self->afonly && cur->afonly && addr.sin6_family != cur->src.sin6_family) continue;
    if (addr_any(addr) || addr_any(cur->src)) return -EADDRNOTAVAIL;
    if (addr_same_ip(addr, cur->src)) return -EADDRINUSE;
  }
  return 0;
}

uint32_t next_random() {
  static uint32_t state = 0;
  if (state == 0) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    state = static_cast<uint32_t>(ts.tv_nsec) ^ static_cast<uint32_t>(getpid()) << 16 ^ 0x9e3779b9u;
    if (state == 0) state = 1;
  }
  state ^= state << 13;  // xorshift32: ports need spreading, not secrecy
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}

}  // namespace

Id* find_id(uint32_t handle) { return handle < g_cap ? g_ids[handle] : nullptr; }

uint32_t id_table_size() { return g_cap; }

Id* new_id(Channel* ch) {
  uint32_t h = 0;
  while (h < g_cap && g_ids[h] != nullptr) ++h;
  if (h == g_cap) {
    const uint32_t cap = g_cap == 0 ? 16 : g_cap * 2;
    auto** grown = static_cast<Id**>(std::realloc(g_ids, cap * sizeof(Id*)));
    if (grown == nullptr) return nullptr;
    std::memset(grown + g_cap, 0, (cap - g_cap) * sizeof(Id*));
    g_ids = grown;
    g_cap = cap;
  }
  auto* id = static_cast<Id*>(std::calloc(1, sizeof(Id)));
  if (id == nullptr) return nullptr;
  id->handle = h;
  id->channel = ch;
  id->listener = kNoId;
  g_ids[h] = id;
  return id;
}

uint32_t free_id(Id* id, uint32_t* gone, uint32_t max_gone) {
  uint32_t n = 0;
  const uint32_t handle = id->handle;
  leave_groups_of(handle);
  drop_events_of(handle);
  g_ids[handle] = nullptr;
  std::free(id);
  if (max_gone > 0) gone[n++] = handle;
  // Requests not yet reported die with their listener (the kernel destroys them with it too).
  for (uint32_t h = 0; h < g_cap; ++h) {
    Id* c = g_ids[h];
    if (c == nullptr || c->listener != handle) continue;
    drop_events_of(h);
    g_ids[h] = nullptr;
    std::free(c);
    if (n < max_gone) gone[n++] = h;
  }
  return n;
}

int map_addr(const sockaddr_in6& addr, bool* has_dev, int* gid_index) {
  *has_dev = false;
  *gid_index = -1;
  if (addr_any(addr)) return 0;
  const Device& dev = device();
  if (!dev.ok) return -ENODEV;
  if (addr_loopback(addr)) {
    // A device on a real interface (its --ip on the veth or NIC uroce sends through) is not on the
    // loopback interface: a loopback address names the host but no RDMA device, as a wildcard does.
    // libfabric's verbs provider binds 127.0.0.1 to learn the device and, finding none, takes the
    // addresses of the interfaces the device is on instead.
    if (!dev.on_loopback) return 0;
    *has_dev = true;
    *gid_index = dev.loopback_gid;
    return 0;
  }
  uint8_t gid[16];
  ip_to_gid(addr, gid);
  for (int i = 0; i < dev.num_gids; ++i) {
    if (std::memcmp(dev.gids[i], gid, 16) == 0) {
      *has_dev = true;
      *gid_index = i;
      return 0;
    }
  }
  // Another address of this host (an interface's) names the host itself, as loopback does, when the device
  // is the host's (on loopback: the host switch or the in-process port).
  if (dev.on_loopback && addr.sin6_family == AF_INET && runtime::is_host_ipv4(as_v4(addr).sin_addr.s_addr)) {
    *has_dev = true;
    *gid_index = dev.loopback_gid;
    return 0;
  }
  return -EADDRNOTAVAIL;
}

int route_source(const sockaddr_in6& dst, sockaddr_in6* src, int* gid_index) {
  const int fd = socket(dst.sin6_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -ENETUNREACH;
  sockaddr_in6 to;
  copy_addr(&to, dst);
  set_port(to, 4791);  // any non-zero port: connect() only looks the route up
  const socklen_t len = dst.sin6_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  sockaddr_in6 own{};
  socklen_t own_len = sizeof own;
  const bool routed = connect(fd, reinterpret_cast<const sockaddr*>(&to), len) == 0 &&
                      getsockname(fd, reinterpret_cast<sockaddr*>(&own), &own_len) == 0;
  close(fd);
  if (!routed) return -ENETUNREACH;
  // The route's source must be one of the device's own GIDs: a device of the host switch reaches no other
  // host, even though the host's interface addresses name it.
  uint8_t gid[16];
  ip_to_gid(own, gid);
  const Device& dev = device();
  *gid_index = -1;
  for (int i = 0; i < dev.num_gids && *gid_index < 0; ++i)
    if (std::memcmp(dev.gids[i], gid, 16) == 0) *gid_index = i;
  if (*gid_index < 0) return -EADDRNOTAVAIL;
  copy_addr(src, own);
  set_port(*src, 0);
  return 0;
}

int bind_locked(Id* id, const sockaddr_in6& addr) {
  bool has_dev = false;
  int gid_index = -1;
  if (const int ret = map_addr(addr, &has_dev, &gid_index); ret != 0) return ret;
  uint16_t port = addr_port(addr);
  if (port != 0) {
    if (const int ret = check_port(id, id->ps, port, addr, id->reuseaddr); ret != 0) return ret;
  } else {
    // cma_alloc_any_port: a random start in the local range, then the next free port.
    static PortRange range;  // under lock(), so no guard variable (the shim links no libstdc++)
    static bool range_read = false;
    if (!range_read) {
      range = local_port_range();
      range_read = true;
    }
    const uint32_t span = static_cast<uint32_t>(range.hi - range.lo) + 1;
    const uint32_t start = next_random() % span;
    int ret = -EADDRNOTAVAIL;
    for (uint32_t i = 0; i < span && ret != 0; ++i) {
      port = static_cast<uint16_t>(range.lo + (start + i) % span);
      ret = check_port(id, id->ps, port, addr, false);
    }
    if (ret != 0) return -EADDRNOTAVAIL;
  }
  copy_addr(&id->src, addr);
  set_port(id->src, port);
  id->src_set = true;
  id->has_port = true;
  id->has_dev = has_dev;
  id->gid_index = gid_index;
  if (has_dev) std::memcpy(id->sgid, device().gids[gid_index], 16);
  return 0;
}

int check_listen_port(const Id* id) { return check_port(id, id->ps, addr_port(id->src), id->src, false); }

}  // namespace uroce::shim::ucma
