// Whether an IPv4 address is one of this host's own: on 127.0.0.0/8 or assigned to one of its interfaces.
// A program that names its host's interface address reaches the host itself, and on a host with uroce's
// host switch that is the uroce device, as with an RNIC bound to that netdev. Header-only and libc-only,
// so the preload shim (which links no C++ runtime) can use it as well as the provider and uroced.
#pragma once

#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstdint>

namespace uroce::runtime {

// ADDR in network byte order. Interfaces are read each time: addresses come and go while programs run.
inline bool is_host_ipv4(uint32_t addr) {
  if ((ntohl(addr) >> 24) == 127) return true;
  if (addr == htonl(INADDR_ANY)) return false;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (const ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    found = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == addr;
  }
  freeifaddrs(list);
  return found;
}

}  // namespace uroce::runtime
