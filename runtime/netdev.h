// A kernel network interface as uroce binds to it between hosts, the way rxe binds to a netdev: its MAC,
// MTU, link state and addresses (the GID table mirrors them), and its neighbour table (the MAC of a peer's
// address, resolved by the kernel's ARP/ND). Used by `uroce run --netdev` (the initial GID table) and by the
// provider (MAC, peer resolution, the GID table kept up to date while the program runs). Linux only:
// ioctl, getifaddrs and rtnetlink, no DPDK.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace uroce::runtime {

using NetGid = std::array<uint8_t, 16>;  // an IPv6 address, or ::ffff:a.b.c.d for IPv4 (RoCE v2 GID)
using NetMac = std::array<uint8_t, 6>;

struct NetdevInfo {
  std::string name;
  unsigned ifindex = 0;
  NetMac mac{};
  int mtu = 0;
  bool up = false;       // IFF_UP
  bool running = false;  // IFF_RUNNING: carrier
  // The interface's addresses as GIDs, in this order: IPv4, IPv6 other than link-local, IPv6 link-local;
  // within each, as the kernel lists them.
  std::vector<NetGid> addrs;
};

// Reads interface `name` in the calling thread's network namespace. False with *err saying why.
bool read_netdev(const std::string& name, NetdevInfo* out, std::string* err);

// Updates `table` (every GID slot of the port; a zero GID is an empty slot) to hold exactly `addrs`,
// moving no entry that stays: an address that went away leaves its slot empty, a new one takes the first
// empty slot (rxe's GID table behaves the same way, so an index an application chose keeps its meaning).
// Addresses beyond the table's size are left out.
void update_gid_table(std::span<NetGid> table, const std::vector<NetGid>& addrs);

bool is_ipv4_gid(const NetGid& gid);

// The kernel's neighbour table entry for `ip` on interface `ifindex`, when it holds a usable MAC
// (REACHABLE, STALE, DELAY, PROBE, PERMANENT or NOARP). One rtnetlink RTM_GETNEIGH dump.
bool lookup_neighbour(unsigned ifindex, const NetGid& ip, NetMac* mac);

// lookup_neighbour, and when the table has no entry, asks the kernel to resolve it (ARP for IPv4, ND for
// IPv6) with an RTM_NEWNEIGH NTF_USE request (or, without CAP_NET_ADMIN, an empty UDP datagram to port 4791
// sent from interface `ifname`), then waits up to `timeout_ms` for the entry, checking every 5 ms.
bool resolve_neighbour(unsigned ifindex, const std::string& ifname, const NetGid& ip, NetMac* mac,
                       int timeout_ms);

// The next hop towards `ip` out of interface `ifindex`: the gateway of the kernel's route to it
// (RTM_GETROUTE), or `ip` itself when it is on-link (or no route says otherwise).
NetGid next_hop(unsigned ifindex, const NetGid& ip);

// An rtnetlink socket subscribed to address and link changes (non-blocking, close-on-exec), or -1.
int open_netdev_watch();
// Reads every pending notification from that socket; true if any may concern interface `ifindex`.
bool drain_netdev_watch(int fd, unsigned ifindex);

}  // namespace uroce::runtime
