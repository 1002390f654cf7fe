// Id lifetime and binding (ucma_id.cc); everything here runs under lock().
#pragma once

#include <netinet/in.h>

#include <cstdint>

#include "provider/shim/ucma.h"

namespace uroce::shim::ucma {

// One past the highest handle in use or freed so far (find_id is nullptr from there on).
uint32_t id_table_size();

// Frees the id (its port, its unreported events) and the connection requests it has not reported yet.
// Stores up to max_gone freed handles in gone (the id's first) for the backend's destroy; returns how many.
uint32_t free_id(Id* id, uint32_t* gone, uint32_t max_gone);

// Which device GID an address names: none for the wildcard (0, *has_dev false), the loopback GID for
// 127.0.0.0/8 and ::1 (none when no GID is a loopback address: the device is on a real interface), else the
// GID equal to the address; -EADDRNOTAVAIL for any other, -ENODEV without a device.
int map_addr(const sockaddr_in6& addr, bool* has_dev, int* gid_index);

// The source address the host's routing picks to reach dst (a connected UDP socket's own address: no
// packet leaves), as the kernel's rdma_resolve_addr asks its routing table; *gid_index is the device GID
// equal to that source. -ENETUNREACH without a route, -EADDRNOTAVAIL when the source is no device GID
// (the destination is reached through an interface uroce is not on).
int route_source(const sockaddr_in6& dst, sockaddr_in6* src, int* gid_index);

// Binds id to addr (port 0: an ephemeral port); 0 or -EADDRINUSE / -EADDRNOTAVAIL / -ENODEV.
int bind_locked(Id* id, const sockaddr_in6& addr);

// rdma_listen's second look (cma_bind_listen): a REUSEADDR id may not listen where another id holds the
// port.
int check_listen_port(const Id* id);

}  // namespace uroce::shim::ucma
