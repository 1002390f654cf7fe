// A device bound to a kernel netdev (`uroce run --netdev IFACE`, UROCE_NETDEV): the interface's MAC is the
// device's, a peer's MAC comes from the kernel's neighbour table (ARP/ND, resolved on demand), and the GID
// table in the device's sysfs tree - what ibv_query_gid and ibv_devinfo -v read - follows the interface's
// addresses while the program runs (rtnetlink notifications, on a thread of its own).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "provider/device_lock.h"
#include "runtime/netdev.h"
#include "transport/device.h"

namespace uroce::provider {

class NetdevLink {
 public:
  // Reads interface `ifname` and the GID table of `port_dir` (SYSFS .../class/infiniband/DEV/ports/1).
  // Throws std::runtime_error naming what is wrong.
  NetdevLink(const std::string& ifname, const std::string& port_dir);
  ~NetdevLink();
  NetdevLink(const NetdevLink&) = delete;
  NetdevLink& operator=(const NetdevLink&) = delete;

  const wire::MacAddr& mac() const { return mac_; }
  // Gives `cfg` the interface's MAC and the neighbour-table resolver.
  void configure(DeviceConfig* cfg);
  // Loads the table into `dev` (before any other thread uses it) and keeps it current from then on, taking
  // `mu` (the device lock) for each change.
  void attach(Device* dev, DeviceLock* mu);
  // The table as the sysfs tree held it when this was built (index -> GID; zero: empty). Call before watch().
  const std::vector<Gid>& gids() const { return table_; }

  // DeviceConfig::resolve: the peer's MAC from the kernel's neighbour table, asking the kernel to resolve it
  // when it has no entry (waits up to 3 s, the first time only). Called by the device, under its lock.
  bool resolve(const Gid& gid, wire::MacAddr* mac);

  // Starts following the interface's addresses: each slot that changes is rewritten in the sysfs tree and
  // then reported through on_change(index, gid) from the watcher thread.
  void watch(std::function<void(unsigned, const Gid&)> on_change);

 private:
  void run();
  void refresh();

  std::string ifname_;
  std::string port_dir_;
  pid_t owner_pid_;
  unsigned ifindex_ = 0;
  wire::MacAddr mac_{};
  std::mutex table_mu_;
  std::vector<Gid> table_;
  struct Entry {
    wire::MacAddr mac;
    uint64_t checked_ns;
  };
  std::map<Gid, Entry> cache_;  // under the device lock (resolve's caller holds it)
  std::function<void(unsigned, const Gid&)> on_change_;
  int watch_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace uroce::provider
