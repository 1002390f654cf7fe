#include "tools/observe/ctl_client.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "tools/uroce/paths.h"

namespace uroce::tools {
namespace fs = std::filesystem;

std::optional<Endpoint> parse_socket_name(const std::string& name) {
  constexpr std::string_view kSuffix = ".sock";
  const size_t dash = name.find('-');
  if (dash == std::string::npos || dash == 0 || !name.ends_with(kSuffix) ||
      name.size() <= dash + 1 + kSuffix.size())
    return std::nullopt;
  Endpoint e;
  int pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + dash, pid);
  if (ec != std::errc() || end != name.data() + dash || pid <= 0) return std::nullopt;
  e.pid = pid;
  e.dev = name.substr(dash + 1, name.size() - dash - 1 - kSuffix.size());
  return e;
}

fs::path control_dir() { return runtime_base(false) / "ctl"; }

std::vector<Endpoint> find_endpoints(const fs::path& dir, pid_t pid, const std::string& dev) {
  std::vector<Endpoint> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto e = parse_socket_name(entry.path().filename().string());
    if (!e) continue;
    if (kill(e->pid, 0) != 0 && errno == ESRCH) {
      fs::remove(entry.path(), ec);  // its process is gone
      continue;
    }
    if ((pid && e->pid != pid) || (!dev.empty() && e->dev != dev)) continue;
    e->socket = entry.path();
    std::ifstream comm("/proc/" + std::to_string(e->pid) + "/comm");
    std::getline(comm, e->comm);
    out.push_back(std::move(*e));
  }
  std::sort(out.begin(), out.end(), [](const Endpoint& a, const Endpoint& b) {
    return std::tie(a.pid, a.dev) < std::tie(b.pid, b.dev);
  });
  return out;
}

std::string describe(const Endpoint& e) {
  std::string s = "pid " + std::to_string(e.pid);
  if (!e.comm.empty()) s += " (" + e.comm + ")";
  return s + " " + e.dev;
}

ControlClient::ControlClient(const Endpoint& e) : ep_(e) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = e.socket.string();
  if (path.size() >= sizeof(addr.sun_path)) throw std::runtime_error("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  // A stuck engine must not hang the tool.
  const timeval tv{5, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd_);
    throw std::runtime_error("cannot connect to " + describe(e) + " at " + path + ": " + std::strerror(err));
  }
}

ControlClient::~ControlClient() {
  if (fd_ >= 0) close(fd_);
}

nlohmann::ordered_json ControlClient::request(const nlohmann::ordered_json& req, int pass_fd) {
  const std::string line = req.dump() + "\n";
  for (size_t off = 0; off < line.size();) {
    iovec iov{const_cast<char*>(line.data() + off), line.size() - off};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))];
    if (pass_fd >= 0 && off == 0) {  // with the first byte, so it arrives with the request
      msg.msg_control = ctrl;
      msg.msg_controllen = sizeof(ctrl);
      cmsghdr* h = CMSG_FIRSTHDR(&msg);
      h->cmsg_level = SOL_SOCKET;
      h->cmsg_type = SCM_RIGHTS;
      h->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(h), &pass_fd, sizeof(int));
    }
    const ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw ControlClosed(describe(ep_) + " closed its control socket");
    off += static_cast<size_t>(n);
  }
  size_t nl;
  while ((nl = in_.find('\n')) == std::string::npos) {
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      throw std::runtime_error(describe(ep_) + " did not answer within 5 s");
    if (n <= 0) throw ControlClosed(describe(ep_) + " closed its control socket");
    in_.append(buf, static_cast<size_t>(n));
  }
  const std::string reply = in_.substr(0, nl);
  in_.erase(0, nl + 1);
  auto j = nlohmann::ordered_json::parse(reply, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error(describe(ep_) + " sent a malformed reply");
  return j;
}

}  // namespace uroce::tools
