// Socket-address helpers of the ucma emulation: addresses live in sockaddr_in6-sized space as in the ABI
// (a sockaddr_in in its first 16 bytes for AF_INET).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <cstring>

namespace uroce::shim::ucma {

inline bool addr_valid(const sockaddr_in6& a) {
  return a.sin6_family == AF_INET || a.sin6_family == AF_INET6;
}

inline const sockaddr_in& as_v4(const sockaddr_in6& a) { return reinterpret_cast<const sockaddr_in&>(a); }
inline sockaddr_in& as_v4(sockaddr_in6& a) { return reinterpret_cast<sockaddr_in&>(a); }

inline bool addr_any(const sockaddr_in6& a) {
  if (a.sin6_family == AF_INET) return as_v4(a).sin_addr.s_addr == htonl(INADDR_ANY);
  return IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr);
}

inline bool addr_loopback(const sockaddr_in6& a) {
  if (a.sin6_family == AF_INET) return (ntohl(as_v4(a).sin_addr.s_addr) >> 24) == 127;
  return IN6_IS_ADDR_LOOPBACK(&a.sin6_addr);
}

// A group address: IPv4 224.0.0.0/4, IPv6 ff00::/8.
inline bool addr_multicast(const sockaddr_in6& a) {
  if (a.sin6_family == AF_INET) return (ntohl(as_v4(a).sin_addr.s_addr) >> 28) == 0xE;
  return a.sin6_family == AF_INET6 && a.sin6_addr.s6_addr[0] == 0xFF;
}

// 127.0.0.1 or ::1, keeping the family.
inline void set_loopback(sockaddr_in6& a) {
  if (a.sin6_family == AF_INET) {
    as_v4(a).sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else {
    a.sin6_addr = in6addr_loopback;
  }
}

// Port in host order.
inline uint16_t addr_port(const sockaddr_in6& a) {
  return ntohs(a.sin6_family == AF_INET ? as_v4(a).sin_port : a.sin6_port);
}
inline void set_port(sockaddr_in6& a, uint16_t port) {
  if (a.sin6_family == AF_INET) {
    as_v4(a).sin_port = htons(port);
  } else {
    a.sin6_port = htons(port);
  }
}

// Same family and IP (ports ignored), cma_addr_cmp's "equal".
inline bool addr_same_ip(const sockaddr_in6& a, const sockaddr_in6& b) {
  if (a.sin6_family != b.sin6_family) return false;
  if (a.sin6_family == AF_INET) return as_v4(a).sin_addr.s_addr == as_v4(b).sin_addr.s_addr;
  return std::memcmp(&a.sin6_addr, &b.sin6_addr, 16) == 0;
}

// rdma_ip2gid: IPv4 as ::ffff:a.b.c.d, IPv6 as is.
inline void ip_to_gid(const sockaddr_in6& a, uint8_t* gid) {
  if (a.sin6_family == AF_INET) {
    std::memset(gid, 0, 10);
    gid[10] = gid[11] = 0xff;
    std::memcpy(gid + 12, &as_v4(a).sin_addr, 4);
  } else {
    std::memcpy(gid, &a.sin6_addr, 16);
  }
}

// The address a GID stands for, in `family` when it can be (an IPv4-mapped GID in AF_INET), port 0.
inline void gid_to_addr(const uint8_t* gid, sa_family_t family, sockaddr_in6* a) {
  std::memset(a, 0, sizeof *a);
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (family == AF_INET && std::memcmp(gid, kMapped, 12) == 0) {
    as_v4(*a).sin_family = AF_INET;
    std::memcpy(&as_v4(*a).sin_addr, gid + 12, 4);
  } else {
    a->sin6_family = AF_INET6;
    std::memcpy(&a->sin6_addr, gid, 16);
  }
}

inline void copy_addr(sockaddr_in6* dst, const sockaddr_in6& src) {
  std::memset(dst, 0, sizeof *dst);
  std::memcpy(dst, &src, src.sin6_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
}

}  // namespace uroce::shim::ucma
