#include "tools/uroced/cm_ports.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "transport/mr.h"

namespace uroce::uroced {

namespace {

constexpr uint32_t kLoopback = 0x7F000001;

bool known_space(uint16_t s) { return s == kPsIpoib || s == kPsIb || s == kPsTcp || s == kPsUdp; }

// Whether two bindings cover a common address: a wildcard binding covers loopback and its own lease's
// address (a process has no others), a specific one that address.
bool overlap(uint32_t ip1, uint32_t own1, uint32_t ip2, uint32_t own2) {
  if (ip1 != 0 && ip2 != 0) return ip1 == ip2;
  if (ip1 == 0 && ip2 == 0) return true;  // both cover loopback
  const uint32_t spec = ip1 ? ip1 : ip2, own = ip1 ? own2 : own1;
  return spec == kLoopback || spec == own;
}

}  // namespace

CmPorts::CmPorts(uint16_t ephemeral_lo, uint16_t ephemeral_hi, uint64_t seed,
                 std::function<bool(uint32_t)> is_lease)
    : lo_(std::min(ephemeral_lo, ephemeral_hi)),
      hi_(std::max(ephemeral_lo, ephemeral_hi)),
      rng_(seed),
      is_lease_(std::move(is_lease)) {
  if (lo_ == 0) lo_ = 1;
}

uint32_t CmPorts::normalise(uint32_t ip) const {
  return (ip >> 24) == 127 && !is_lease_(ip) ? kLoopback : ip;
}

bool CmPorts::conflicts(uint16_t space, uint32_t ip, uint32_t own_ip, uint16_t port, bool reuse) const {
  for (const Bind& b : binds_) {
    if (b.space != space || b.port != port || !overlap(b.ip, b.own_ip, ip, own_ip)) continue;
    if (reuse && b.reuse && !b.listening) continue;
    return true;
  }
  return false;
}

int CmPorts::bind(pid_t pid, uint32_t own_ip, uint16_t space, uint32_t ip, uint16_t port, bool reuse,
                  uint16_t* port_out) {
  if (!known_space(space)) return EINVAL;
  ip = normalise(ip);
  if (ip != 0 && ip != kLoopback && ip != own_ip) return EADDRNOTAVAIL;
  if (port == 0) {
    // A random start in the range, then the next free one, as the kernel's inet_get_local_port does.
    const uint32_t n = static_cast<uint32_t>(hi_ - lo_) + 1;
    const uint32_t start = static_cast<uint32_t>(splitmix64(&rng_) % n);
    for (uint32_t i = 0; i < n && port == 0; ++i) {
      const auto p = static_cast<uint16_t>(lo_ + (start + i) % n);
      if (!conflicts(space, ip, own_ip, p, false)) port = p;
    }
    if (port == 0) return EADDRINUSE;
  } else if (conflicts(space, ip, own_ip, port, reuse)) {
    return EADDRINUSE;
  }
  binds_.push_back({pid, own_ip, space, ip, port, reuse, false});
  *port_out = port;
  return 0;
}

int CmPorts::listen(pid_t pid, uint16_t space, uint32_t ip, uint16_t port) {
  ip = normalise(ip);
  Bind* mine = nullptr;
  for (Bind& b : binds_)
    if (b.pid == pid && b.space == space && b.ip == ip && b.port == port) mine = &b;
  if (!mine) return ENOENT;
  for (const Bind& b : binds_) {
    if (&b == mine || b.space != space || b.port != port || !overlap(b.ip, b.own_ip, ip, mine->own_ip))
      continue;
    return EADDRINUSE;  // shared under reuse: one of them may not listen
  }
  mine->listening = true;
  return 0;
}

int CmPorts::unbind(pid_t pid, uint16_t space, uint32_t ip, uint16_t port) {
  ip = normalise(ip);
  const auto it = std::find_if(binds_.begin(), binds_.end(), [&](const Bind& b) {
    return b.pid == pid && b.space == space && b.ip == ip && b.port == port;
  });
  if (it == binds_.end()) return ENOENT;
  binds_.erase(it);
  return 0;
}

void CmPorts::release(pid_t pid) {
  binds_.erase(std::remove_if(binds_.begin(), binds_.end(), [pid](const Bind& b) { return b.pid == pid; }),
               binds_.end());
}

bool CmPorts::lookup(uint16_t space, uint32_t dst, uint16_t port, Listener* out) const {
  dst = normalise(dst);
  const Bind* wild = nullptr;
  for (const Bind& b : binds_) {
    if (!b.listening || b.space != space || b.port != port) continue;
    if (b.ip == dst) {
      *out = {b.pid, b.own_ip};
      return true;
    }
    if (b.ip == 0 && (dst == kLoopback || dst == b.own_ip)) wild = &b;
  }
  if (!wild) return false;
  *out = {wild->pid, wild->own_ip};
  return true;
}

}  // namespace uroce::uroced
