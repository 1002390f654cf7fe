// libibverbs 44 lists devices over RDMA netlink when the kernel offers it (ib_core loaded) and reads
// $SYSFS_PATH only when that fails. On such a host the uroce tree would never be read, so while a uroce
// tree is active the shim makes NETLINK_RDMA sockets unavailable, exactly as on a kernel without RDMA.
#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>

#include "provider/shim/next.h"
#include "provider/shim/sysfs_env.h"

namespace uroce::shim {
namespace {
constinit NextSym s_socket{"socket"};
}  // namespace
}  // namespace uroce::shim

extern "C" UROCE_EXPORT int socket(int domain, int type, int protocol) noexcept {
  using namespace uroce::shim;
  size_t len = 0;
  if (domain == AF_NETLINK && protocol == NETLINK_RDMA && sysfs_root(&len) != nullptr) {
    errno = EPROTONOSUPPORT;
    return -1;
  }
  auto* real = next<decltype(socket)>(s_socket);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(domain, type, protocol);
}
