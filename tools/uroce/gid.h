// IP address -> RoCE v2 GID, MAC and GUID, and their sysfs text forms.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace uroce::tools {

using Gid = std::array<uint8_t, 16>;
using Mac = std::array<uint8_t, 6>;

struct IpAddress {
  bool v4 = false;
  Gid gid{};         // the IPv6 address, or the IPv4-mapped ::ffff:a.b.c.d (RoCE v2 GID of an IPv4 address)
  std::string text;  // canonical text (inet_ntop), used in directory names
};

// Accepts dotted IPv4 or any IPv6 text inet_pton accepts. Rejects the unspecified and multicast
// addresses: neither can be a port GID.
std::optional<IpAddress> parse_ip(std::string_view text);

// sysfs GID text: 8 groups of 4 lower-case hex digits joined by ':' (what libibverbs parses back).
std::string gid_text(const Gid& gid);

// Locally administered unicast MAC 02:00:<last 4 bytes of the GID> (the IPv4 address for IPv4).
Mac mac_for(const IpAddress& ip);

// EUI-64 from a MAC (ff:fe inserted, universal/local bit flipped), as sysfs prints GUIDs:
// "xxxx:xxxx:xxxx:xxxx".
std::string guid_text(const Mac& mac);

bool is_loopback(const IpAddress& ip);

}  // namespace uroce::tools
