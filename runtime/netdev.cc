#include "runtime/netdev.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace uroce::runtime {

namespace {

NetGid gid_of_v4(const in_addr& a) {
  NetGid g{};
  g[10] = g[11] = 0xff;
  std::memcpy(g.data() + 12, &a, 4);
  return g;
}

// Appends attribute `type` to the netlink message at the start of buf[0..cap).
void add_attr(char* buf, size_t cap, uint16_t type, const void* data, size_t len) {
  auto* nh = reinterpret_cast<nlmsghdr*>(buf);
  const size_t at = NLMSG_ALIGN(nh->nlmsg_len);
  if (at + RTA_SPACE(len) > cap) return;
  rtattr attr{};
  attr.rta_type = type;
  attr.rta_len = static_cast<uint16_t>(RTA_LENGTH(len));
  std::memcpy(buf + at, &attr, sizeof attr);
  std::memcpy(buf + at + RTA_LENGTH(0), data, len);
  nh->nlmsg_len = static_cast<uint32_t>(at + RTA_ALIGN(attr.rta_len));
}

bool is_zero(const NetGid& g) {
  return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

}  // namespace

bool is_ipv4_gid(const NetGid& gid) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.data(), kPrefix, sizeof kPrefix) == 0;
}

bool read_netdev(const std::string& name, NetdevInfo* out, std::string* err) {
  NetdevInfo info;
  info.name = name;
  info.ifindex = if_nametoindex(name.c_str());
  if (info.ifindex == 0 || name.size() >= IFNAMSIZ) {
    if (err) *err = "no network interface '" + name + "' here ('ip link' lists them)";
    return false;
  }
  Fd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) {
    if (err) *err = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, name.c_str(), name.size());
  if (ioctl(s.fd, SIOCGIFHWADDR, &ifr) != 0 || ifr.ifr_hwaddr.sa_family != 1 /* ARPHRD_ETHER */) {
    if (err) *err = "interface '" + name + "' is not an Ethernet interface";
    return false;
  }
  std::memcpy(info.mac.data(), ifr.ifr_hwaddr.sa_data, 6);
  if (ioctl(s.fd, SIOCGIFMTU, &ifr) == 0) info.mtu = ifr.ifr_mtu;
  if (ioctl(s.fd, SIOCGIFFLAGS, &ifr) == 0) {
    info.up = (ifr.ifr_flags & IFF_UP) != 0;
    info.running = (ifr.ifr_flags & IFF_RUNNING) != 0;
  }

  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    if (err) *err = std::string("getifaddrs: ") + std::strerror(errno);
    return false;
  }
  std::vector<NetGid> v4, v6, link_local;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || name != a->ifa_name) continue;
    if (a->ifa_addr->sa_family == AF_INET) {
      v4.push_back(gid_of_v4(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr));
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const in6_addr& a6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr;
      NetGid g;
      std::memcpy(g.data(), a6.s6_addr, 16);
      (IN6_IS_ADDR_LINKLOCAL(&a6) ? link_local : v6).push_back(g);
    }
  }
  freeifaddrs(list);
  info.addrs = std::move(v4);
  info.addrs.insert(info.addrs.end(), v6.begin(), v6.end());
  info.addrs.insert(info.addrs.end(), link_local.begin(), link_local.end());
  *out = std::move(info);
  return true;
}

void update_gid_table(std::span<NetGid> table, const std::vector<NetGid>& addrs) {
  for (NetGid& slot : table)
    if (!is_zero(slot) && std::find(addrs.begin(), addrs.end(), slot) == addrs.end()) slot = NetGid{};
  for (const NetGid& a : addrs) {
    if (std::find(table.begin(), table.end(), a) != table.end()) continue;
    const auto free = std::find_if(table.begin(), table.end(), is_zero);
    if (free == table.end()) return;
    *free = a;
  }
}

bool lookup_neighbour(unsigned ifindex, const NetGid& ip, NetMac* mac) {
  const bool v4 = is_ipv4_gid(ip);
  Fd s(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (s.fd < 0) return false;
  struct {
    nlmsghdr nh;
    ndmsg nd;
  } req{};
  req.nh.nlmsg_len = sizeof req;
  req.nh.nlmsg_type = RTM_GETNEIGH;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.nh.nlmsg_seq = 1;
  req.nd.ndm_family = v4 ? AF_INET : AF_INET6;
  req.nd.ndm_ifindex = static_cast<int>(ifindex);
  if (send(s.fd, &req, sizeof req, 0) < 0) return false;
  const uint8_t* want = v4 ? ip.data() + 12 : ip.data();
  const size_t want_len = v4 ? 4 : 16;
  constexpr uint16_t kUsable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;
  bool found = false;
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    const ssize_t got = recv(s.fd, buf, sizeof buf, 0);
    if (got <= 0) return found;
    int n = static_cast<int>(got);
    for (auto* nh = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
      if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) return found;
      if (nh->nlmsg_type != RTM_NEWNEIGH) continue;
      const auto* nd = static_cast<const ndmsg*>(NLMSG_DATA(nh));
      if (static_cast<unsigned>(nd->ndm_ifindex) != ifindex || !(nd->ndm_state & kUsable)) continue;
      const uint8_t *dst = nullptr, *ll = nullptr;
      int len = static_cast<int>(RTM_PAYLOAD(nh));
      for (auto* rta =
               reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(nd) + NLMSG_ALIGN(sizeof *nd));
           RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
        if (rta->rta_type == NDA_DST && RTA_PAYLOAD(rta) == want_len)
          dst = static_cast<const uint8_t*>(RTA_DATA(rta));
        if (rta->rta_type == NDA_LLADDR && RTA_PAYLOAD(rta) == 6)
          ll = static_cast<const uint8_t*>(RTA_DATA(rta));
      }
      if (dst && ll && std::memcmp(dst, want, want_len) == 0) {
        std::memcpy(mac->data(), ll, 6);
        found = true;
      }
    }
  }
}

namespace {

// Asks the kernel to resolve `ip` on `ifindex` the way `ip neigh replace IP dev IF use nud none` does: an
// RTM_NEWNEIGH with NTF_USE makes it send an ARP request or neighbour solicitation, and nothing else goes on
// the wire. Needs CAP_NET_ADMIN.
bool kernel_solicit(unsigned ifindex, const NetGid& ip) {
  const bool v4 = is_ipv4_gid(ip);
  Fd s(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (s.fd < 0) return false;
  struct {
    nlmsghdr nh;
    ndmsg nd;
    rtattr dst_attr;
    uint8_t dst[16];
  } req{};
  const size_t alen = v4 ? 4 : 16;
  req.nh.nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(sizeof req.nd) + RTA_LENGTH(alen));
  req.nh.nlmsg_type = RTM_NEWNEIGH;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
  req.nh.nlmsg_seq = 1;
  req.nd.ndm_family = v4 ? AF_INET : AF_INET6;
  req.nd.ndm_ifindex = static_cast<int>(ifindex);
  req.nd.ndm_state = NUD_NONE;
  req.nd.ndm_flags = NTF_USE;
  req.dst_attr.rta_type = NDA_DST;
  req.dst_attr.rta_len = static_cast<uint16_t>(RTA_LENGTH(alen));
  std::memcpy(req.dst, v4 ? ip.data() + 12 : ip.data(), alen);
  if (send(s.fd, &req, req.nh.nlmsg_len, 0) < 0) return false;
  alignas(nlmsghdr) char buf[512];
  const ssize_t n = recv(s.fd, buf, sizeof buf, 0);
  if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(nlmsgerr)))) return false;
  const auto* nh = reinterpret_cast<const nlmsghdr*>(buf);
  return nh->nlmsg_type == NLMSG_ERROR && static_cast<const nlmsgerr*>(NLMSG_DATA(nh))->error == 0;
}

}  // namespace

bool resolve_neighbour(unsigned ifindex, const std::string& ifname, const NetGid& ip, NetMac* mac,
                       int timeout_ms) {
  if (lookup_neighbour(ifindex, ip, mac)) return true;
  const bool v4 = is_ipv4_gid(ip);
  if (!kernel_solicit(ifindex, ip)) {
    // Without CAP_NET_ADMIN: a datagram makes the kernel resolve the address to send it. It goes to UDP port
    // 4791, where the peer's RoCE stack (or the rule that keeps its kernel off that port) takes it.
    Fd s(socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (s.fd < 0) return false;
    // Needs CAP_NET_RAW on older kernels; without it the route decides the interface, which is the same one
    // when the peer is on the interface's subnet.
    (void)setsockopt(s.fd, SOL_SOCKET, SO_BINDTODEVICE, ifname.c_str(),
                     static_cast<socklen_t>(ifname.size()));
    sockaddr_storage ss{};
    socklen_t len;
    if (v4) {
      auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
      sin->sin_family = AF_INET;
      sin->sin_port = htons(4791);
      std::memcpy(&sin->sin_addr, ip.data() + 12, 4);
      len = sizeof *sin;
    } else {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
      sin6->sin6_family = AF_INET6;
      sin6->sin6_port = htons(4791);
      std::memcpy(&sin6->sin6_addr, ip.data(), 16);
      sin6->sin6_scope_id = ifindex;
      len = sizeof *sin6;
    }
    (void)sendto(s.fd, "", 0, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&ss), len);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (lookup_neighbour(ifindex, ip, mac)) return true;
  }
  return false;
}

NetGid next_hop(unsigned ifindex, const NetGid& ip) {
  const bool v4 = is_ipv4_gid(ip);
  const size_t alen = v4 ? 4 : 16;
  Fd s(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (s.fd < 0) return ip;
  alignas(nlmsghdr) char req[NLMSG_SPACE(sizeof(rtmsg)) + RTA_SPACE(16) + RTA_SPACE(sizeof(uint32_t))] = {};
  auto* nh = reinterpret_cast<nlmsghdr*>(req);
  nh->nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  nh->nlmsg_type = RTM_GETROUTE;
  nh->nlmsg_flags = NLM_F_REQUEST;
  nh->nlmsg_seq = 1;
  auto* rt = static_cast<rtmsg*>(NLMSG_DATA(nh));
  rt->rtm_family = v4 ? AF_INET : AF_INET6;
  rt->rtm_dst_len = static_cast<uint8_t>(alen * 8);
  const uint32_t index = ifindex;
  add_attr(req, sizeof req, RTA_DST, v4 ? ip.data() + 12 : ip.data(), alen);
  add_attr(req, sizeof req, RTA_OIF, &index, sizeof index);
  if (send(s.fd, req, nh->nlmsg_len, 0) < 0) return ip;
  alignas(nlmsghdr) char buf[4096];
  const ssize_t got = recv(s.fd, buf, sizeof buf, 0);
  if (got <= 0) return ip;
  int n = static_cast<int>(got);
  for (auto* reply = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(reply, n); reply = NLMSG_NEXT(reply, n)) {
    if (reply->nlmsg_type != RTM_NEWROUTE) continue;
    const auto* route = static_cast<const rtmsg*>(NLMSG_DATA(reply));
    int len = static_cast<int>(RTM_PAYLOAD(reply));
    for (auto* rta = RTM_RTA(route); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
      if (rta->rta_type != RTA_GATEWAY || RTA_PAYLOAD(rta) != alen) continue;
      NetGid gw = ip;
      std::memcpy(v4 ? gw.data() + 12 : gw.data(), RTA_DATA(rta), alen);
      return gw;
    }
  }
  return ip;
}

int open_netdev_watch() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) return -1;
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool drain_netdev_watch(int fd, unsigned ifindex) {
  bool relevant = false;
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    const ssize_t got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (got < 0 && errno == ENOBUFS) {
      relevant = true;  // notifications were lost: re-read everything
      continue;
    }
    if (got <= 0) return relevant;
    int n = static_cast<int>(got);
    for (auto* nh = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
      if (nh->nlmsg_type == RTM_NEWADDR || nh->nlmsg_type == RTM_DELADDR) {
        relevant |= static_cast<const ifaddrmsg*>(NLMSG_DATA(nh))->ifa_index == ifindex;
      } else if (nh->nlmsg_type == RTM_NEWLINK || nh->nlmsg_type == RTM_DELLINK) {
        relevant |=
            static_cast<unsigned>(static_cast<const ifinfomsg*>(NLMSG_DATA(nh))->ifi_index) == ifindex;
      }
    }
  }
}

}  // namespace uroce::runtime
