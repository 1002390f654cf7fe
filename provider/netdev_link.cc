#include "provider/netdev_link.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "provider/gid_text.h"
#include "transport/wire/address.h"

namespace uroce::provider {

namespace {

// The kernel retransmits an unanswered ARP request or neighbour solicitation every second (retrans_time_ms):
// 3 s covers a first one lost, e.g. while an XDP program attached to the interface resets its queues.
constexpr int kResolveTimeoutMs = 3000;
// A cached neighbour is looked up again (without waiting) when it is older than this, so a peer whose MAC
// changed is followed within seconds, as the kernel's own entries are.
constexpr uint64_t kRecheckNs = 5'000'000'000ull;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Replaces `path` with a file holding `content`, atomically: a reader sees the old or the new text.
void replace_file(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".new";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
  if (fd < 0) return;
  const bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
}

}  // namespace

NetdevLink::NetdevLink(const std::string& ifname, const std::string& port_dir)
    : ifname_(ifname), port_dir_(port_dir), owner_pid_(getpid()) {
  runtime::NetdevInfo info;
  std::string err;
  if (!runtime::read_netdev(ifname, &info, &err))
    throw std::runtime_error("UROCE_NETDEV=" + ifname + ": " + err);
  ifindex_ = info.ifindex;
  mac_ = info.mac;
  for (unsigned i = 0; i < params::kGidTableLen; ++i) {
    std::ifstream in(port_dir_ + "/gids/" + std::to_string(i));
    std::string text;
    Gid g{};
    if (!in || !std::getline(in, text) || !parse_gid(text, &g)) break;
    table_.push_back(g);
  }
  if (table_.empty()) throw std::runtime_error("UROCE_NETDEV=" + ifname + ": no GID table in " + port_dir_);
}

NetdevLink::~NetdevLink() {
  // A forked child has no watcher thread, and the stop eventfd is its parent's too (dpdk_eal.h: a child may
  // not use the device).
  if (owner_pid_ != getpid()) {
    if (thread_.joinable()) thread_.detach();
    return;
  }
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (watch_fd_ >= 0) close(watch_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

bool NetdevLink::resolve(const Gid& gid, wire::MacAddr* mac) {
  // Multicast groups map to their Ethernet group addresses; no neighbour entry.
  if (wire::is_multicast_gid(gid)) {
    *mac = wire::multicast_mac(gid);
    return true;
  }
  {
    std::lock_guard lock(table_mu_);
    for (const Gid& own : table_) {
      if (own == gid && own != Gid{}) {
        *mac = mac_;
        return true;
      }
    }
  }
  const uint64_t now = now_ns();
  auto it = cache_.find(gid);
  if (it != cache_.end()) {
    if (now - it->second.checked_ns > kRecheckNs) {
      runtime::lookup_neighbour(ifindex_, runtime::next_hop(ifindex_, gid), &it->second.mac);
      it->second.checked_ns = now;
    }
    *mac = it->second.mac;
    return true;
  }
  // A peer behind a router is reached through the gateway's MAC.
  const Gid hop = runtime::next_hop(ifindex_, gid);
  wire::MacAddr found;
  if (!runtime::resolve_neighbour(ifindex_, ifname_, hop, &found, kResolveTimeoutMs)) return false;
  cache_[gid] = Entry{found, now};
  *mac = found;
  return true;
}

void NetdevLink::configure(DeviceConfig* cfg) {
  cfg->mac = mac_;
  cfg->resolve = [this](const Gid& gid, wire::MacAddr* mac) { return resolve(gid, mac); };
}

void NetdevLink::attach(Device* dev, DeviceLock* mu) {
  for (unsigned i = 0; i < table_.size(); ++i) dev->set_gid(i, table_[i]);
  watch([dev, mu](unsigned i, const Gid& gid) {
    std::lock_guard lock(*mu);
    dev->set_gid(i, gid);
  });
}

void NetdevLink::watch(std::function<void(unsigned, const Gid&)> on_change) {
  on_change_ = std::move(on_change);
  watch_fd_ = runtime::open_netdev_watch();
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (watch_fd_ < 0 || stop_fd_ < 0) return;
  thread_ = std::thread([this] { run(); });
}

void NetdevLink::run() {
  // An address may have changed between `uroce run` writing the tree and the subscription.
  refresh();
  pollfd fds[2] = {{watch_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents) return;
    if (fds[0].revents && runtime::drain_netdev_watch(watch_fd_, ifindex_)) refresh();
  }
}

// Runs on the watcher thread: only it changes table_ after construction (under table_mu_, which resolve()
// reads it under).
void NetdevLink::refresh() {
  runtime::NetdevInfo info;
  if (!runtime::read_netdev(ifname_, &info, nullptr)) info.addrs.clear();  // the interface went away
  std::vector<Gid> next = table_;
  runtime::update_gid_table(next, info.addrs);
  for (unsigned i = 0; i < next.size(); ++i) {
    if (next[i] == table_[i]) continue;
    const bool empty = next[i] == Gid{};
    replace_file(port_dir_ + "/gid_attrs/ndevs/" + std::to_string(i), empty ? "" : ifname_ + "\n");
    replace_file(port_dir_ + "/gids/" + std::to_string(i), wire::gid_text(next[i]) + "\n");
    if (on_change_) on_change_(i, next[i]);
  }
  std::lock_guard lock(table_mu_);
  table_ = std::move(next);
}

}  // namespace uroce::provider
