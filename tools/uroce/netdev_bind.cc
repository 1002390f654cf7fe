#include "tools/uroce/netdev_bind.h"

#include <algorithm>

#include "runtime/netdev.h"
#include "transport/params.h"

namespace uroce::tools {

namespace {

// IPv6 40 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 + ICRC 4: the largest header set a packet with payload
// carries (an RDMA WRITE first with immediate over IPv6).
constexpr int kMaxRoceHeaders = 84;

}  // namespace

unsigned ib_mtu_for(int if_mtu) {
  for (unsigned mtu = 4096; mtu >= 256; mtu /= 2)
    if (static_cast<int>(mtu) + kMaxRoceHeaders <= if_mtu) return mtu;
  return 0;
}

std::string bind_netdev(const std::string& iface, bool ip_given, DeviceOptions* dev, unsigned* ib_mtu) {
  runtime::NetdevInfo info;
  std::string err;
  if (!runtime::read_netdev(iface, &info, &err)) return err;
  if (info.addrs.empty()) return "interface '" + iface + "' has no IPv4 or IPv6 address to make a GID of";
  if (ib_mtu_for(info.mtu) == 0)
    return "interface '" + iface + "' has MTU " + std::to_string(info.mtu) + ": too small for RoCE (>= 340)";
  Gid first = info.addrs.front();
  if (ip_given) {
    if (std::find(info.addrs.begin(), info.addrs.end(), dev->ip.gid) == info.addrs.end())
      return "--ip " + dev->ip.text + " is not an address of interface '" + iface + "'";
    first = dev->ip.gid;
  } else {
    IpAddress ip;
    ip.v4 = runtime::is_ipv4_gid(first);
    ip.gid = first;
    // parse_ip gives the canonical text, which names the device's sysfs directory.
    std::string text;
    if (ip.v4) {
      text = std::to_string(first[12]) + "." + std::to_string(first[13]) + "." + std::to_string(first[14]) +
             "." + std::to_string(first[15]);
    } else {
      text = gid_text(first);
    }
    const auto parsed = parse_ip(text);
    if (!parsed) return "interface '" + iface + "': address " + text + " cannot be a GID";
    dev->ip = *parsed;
  }
  std::vector<Gid> table(params::kGidTableLen);
  table[0] = first;
  runtime::update_gid_table(table, info.addrs);
  dev->netdev = iface;
  dev->gids = std::move(table);
  dev->mac = info.mac;
  dev->link_up = info.up && info.running;
  *ib_mtu = ib_mtu_for(info.mtu);
  return "";
}

}  // namespace uroce::tools
