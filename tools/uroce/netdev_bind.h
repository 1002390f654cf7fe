// uroce run --netdev IFACE (or UROCE_NETDEV): the device takes the interface's addresses as its GID table,
// its MAC and link state, and an IB MTU that fits the interface's MTU.
#pragma once

#include <string>

#include "tools/uroce/cli.h"

namespace uroce::tools {

// Fills dev->netdev, gids, mac, link_up and (unless ip_given) ip from interface `iface`. GID 0 is `dev->ip`
// when ip_given (it must be one of the interface's addresses), else the interface's first address (IPv4
// first, then IPv6, link-local last). *ib_mtu: ib_mtu_for() the interface's MTU. "" or what is wrong.
std::string bind_netdev(const std::string& iface, bool ip_given, DeviceOptions* dev, unsigned* ib_mtu);

// The largest IB MTU (256..4096) whose packets, with every RoCE v2 header over IPv6, fit an interface MTU of
// `if_mtu` bytes; 0 when not even 256 does.
unsigned ib_mtu_for(int if_mtu);

}  // namespace uroce::tools
