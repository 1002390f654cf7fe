#include "tools/uroce/gid.h"

#include "transport/wire/address.h"

#include <arpa/inet.h>

#include <cstdio>

namespace uroce::tools {

std::optional<IpAddress> parse_ip(std::string_view text) {
  const std::string s(text);
  IpAddress ip;
  in_addr a4{};
  char buf[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, s.c_str(), &a4) == 1) {
    ip.v4 = true;
    ip.gid[10] = 0xff;
    ip.gid[11] = 0xff;
    const auto* b = reinterpret_cast<const uint8_t*>(&a4.s_addr);  // network order
    for (int i = 0; i < 4; ++i) ip.gid[12 + i] = b[i];
    if (b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0) return std::nullopt;
    if (b[0] >= 224 && b[0] <= 239) return std::nullopt;
    ip.text = inet_ntop(AF_INET, &a4, buf, sizeof buf);
    return ip;
  }
  in6_addr a6{};
  if (inet_pton(AF_INET6, s.c_str(), &a6) != 1) return std::nullopt;
  for (int i = 0; i < 16; ++i) ip.gid[i] = a6.s6_addr[i];
  if (IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_MULTICAST(&a6)) return std::nullopt;
  ip.text = inet_ntop(AF_INET6, &a6, buf, sizeof buf);
  return ip;
}

std::string gid_text(const Gid& gid) { return wire::gid_text(gid); }

Mac mac_for(const IpAddress& ip) { return wire::mac_for_gid(ip.gid); }

std::string guid_text(const Mac& mac) {
  const uint8_t eui[8] = {
      static_cast<uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
  char out[20];
  std::snprintf(out, sizeof out, "%02x%02x:%02x%02x:%02x%02x:%02x%02x", eui[0], eui[1], eui[2], eui[3],
                eui[4], eui[5], eui[6], eui[7]);
  return out;
}

bool is_loopback(const IpAddress& ip) {
  if (ip.v4) return ip.gid[12] == 127;
  for (int i = 0; i < 15; ++i) {
    if (ip.gid[i] != 0) return false;
  }
  return ip.gid[15] == 1;
}

}  // namespace uroce::tools
