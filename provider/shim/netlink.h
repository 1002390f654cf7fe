// The shim's emulated RDMA netlink sockets (netlink.cc).
#pragma once

namespace uroce::shim {

// `fd` is being closed (or replaced by dup2/dup3): if it is an emulated RDMA netlink socket, closes its peer
// and forgets it. Cheap for every other descriptor.
void netlink_forget(int fd);

}  // namespace uroce::shim
