// The RDMA CM's port spaces of one host, kept by uroced for every process on it.
//
// With a kernel RDMA stack, rdma_bind_addr and rdma_listen reserve (port space, address, port) in the
// host's kernel, so two processes cannot both listen on TCP-space port 7174, and a client that names
// 127.0.0.1 reaches whichever process listens there. Under uroce each process has its own engine and its
// own leased address, so the host's view lives here: processes bind, listen and look listeners up through
// uroced's control socket, and everything a process held goes when its lease does.
//
// Addresses (IPv4, host order): 0 is the wildcard; a lease's address (uroced hands them out of 127.1.0.0/16
// by default) is that process's; any other address in 127.0.0.0/8 is the host's loopback, one address for
// binding purposes (as a kernel's lo carries all of it). A binding conflicts with another on the same
// space and port when they cover a common address (a wildcard binding covers loopback and its process's
// own address), unless both asked for address reuse and neither listens (the kernel's cma_check_port). Port 0
// binds an ephemeral port from the range given at construction.
//
// lookup(space, dst, port) answers "whose listener takes a connection to dst:port": a listener bound to
// dst itself, else a wildcard one. For a loopback dst, a listener bound to loopback or wildcard; for a
// lease's address, the listener of that lease bound to it or the wildcard listener of that lease (a
// process's wildcard listener takes connections to its own address and to loopback, not to another
// process's address).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace uroce::uroced {

class CmPorts {
 public:
  // `is_lease(ip)`: whether ip is some lease's address now.
  CmPorts(uint16_t ephemeral_lo, uint16_t ephemeral_hi, uint64_t seed,
          std::function<bool(uint32_t)> is_lease);

  // The lease address of `pid` is `own_ip` (host order): a bind to it is a bind to that lease's address.
  // Returns 0 and the bound port in *port_out, or an errno: EADDRINUSE, EADDRNOTAVAIL (another lease's
  // address), EINVAL (unknown space).
  int bind(pid_t pid, uint32_t own_ip, uint16_t space, uint32_t ip, uint16_t port, bool reuse,
           uint16_t* port_out);
  // Marks pid's binding of (space, ip, port) listening. ENOENT if pid holds no such binding; EADDRINUSE if
  // another binding of the port exists with reuse (a listener's port is its own).
  int listen(pid_t pid, uint16_t space, uint32_t ip, uint16_t port);
  // Drops pid's binding (ENOENT if none).
  int unbind(pid_t pid, uint16_t space, uint32_t ip, uint16_t port);
  // Everything pid held (its process exited).
  void release(pid_t pid);

  struct Listener {
    pid_t pid = 0;
    uint32_t own_ip = 0;  // the listening process's lease address: where its connection requests go
  };
  // The listener that takes a connection to dst:port, or false.
  bool lookup(uint16_t space, uint32_t dst, uint16_t port, Listener* out) const;

  size_t size() const { return binds_.size(); }

 private:
  struct Bind {
    pid_t pid;
    uint32_t own_ip;
    uint16_t space;
    uint32_t ip;  // 0 wildcard, 0x7F000001 for any loopback address, else a lease's address
    uint16_t port;
    bool reuse;
    bool listening;
  };
  uint32_t normalise(uint32_t ip) const;
  bool conflicts(uint16_t space, uint32_t ip, uint32_t own_ip, uint16_t port, bool reuse) const;

  uint16_t lo_, hi_;
  uint64_t rng_;
  std::function<bool(uint32_t)> is_lease_;
  std::vector<Bind> binds_;
};

// Known port spaces (librdmacm's enum rdma_port_space).
constexpr uint16_t kPsIpoib = 0x0002, kPsIb = 0x013F, kPsTcp = 0x0106, kPsUdp = 0x0111;

}  // namespace uroce::uroced
