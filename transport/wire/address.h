// Addresses as uroce writes and reads them: the MAC a uroce endpoint derives from its GID, multicast groups
// and their Ethernet addresses, a MAC as a 48-bit integer (for tables keyed by MAC), and the text form of a
// GID that sysfs and the tools print.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>

#include "transport/wire/headers.h"

namespace uroce::wire {

// uroce endpoints derive their MAC from their address: 02:00 (locally administered, unicast) and the low 32
// bits of the GID (the IPv4 address of an IPv4-mapped GID), so two uroce devices reach each other without
// ARP. Ports with real neighbours resolve MACs instead (DeviceConfig::resolve).
inline MacAddr mac_for_gid(const Ipv6Addr& gid) { return {0x02, 0x00, gid[12], gid[13], gid[14], gid[15]}; }

// The same for an IPv4 address in host order.
inline MacAddr mac_for_ipv4(uint32_t ip) {
  return {0x02,
          0x00,
          static_cast<uint8_t>(ip >> 24),
          static_cast<uint8_t>(ip >> 16),
          static_cast<uint8_t>(ip >> 8),
          static_cast<uint8_t>(ip)};
}

// A multicast group address: IPv6 ff00::/8 (RFC 4291 2.7), or an IPv4-mapped 224.0.0.0/4 (RFC 1112), the two
// forms a RoCEv2 multicast GID takes (the kernel's rdma_is_multicast_addr).
inline bool is_multicast_gid(const Ipv6Addr& gid) {
  return gid[0] == 0xFF || (is_ipv4_mapped(gid) && (gid[12] & 0xF0) == 0xE0);
}

// The Ethernet group address frames to a multicast group go to: 01:00:5e and the low 23 bits of an IPv4 group
// (RFC 1112 6.4), 33:33 and the low 32 bits of an IPv6 group (RFC 2464 7). For is_multicast_gid() addresses.
inline MacAddr multicast_mac(const Ipv6Addr& gid) {
  if (is_ipv4_mapped(gid)) return {0x01, 0x00, 0x5E, static_cast<uint8_t>(gid[13] & 0x7F), gid[14], gid[15]};
  return {0x33, 0x33, gid[12], gid[13], gid[14], gid[15]};
}

// The 48-bit MAC at p[0..6) as an integer, p[0] in bits 47..40; and back.
inline uint64_t mac_to_u64(const uint8_t* p) {
  uint64_t m = 0;
  for (int i = 0; i < 6; ++i) m = (m << 8) | p[i];
  return m;
}
inline uint64_t mac_to_u64(const MacAddr& m) { return mac_to_u64(m.data()); }
inline void mac_from_u64(uint8_t* p, uint64_t mac) {
  for (int i = 5; i >= 0; --i, mac >>= 8) p[i] = static_cast<uint8_t>(mac);
}

// "fe80:0000:0000:0000:0202:c9ff:fe00:0001": eight groups of four hex digits, as sysfs gids/N shows a GID.
inline std::string gid_text(const Ipv6Addr& g) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14],
                g[15]);
  return buf;
}

}  // namespace uroce::wire
