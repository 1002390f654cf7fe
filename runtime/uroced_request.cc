#include "runtime/uroced_request.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/runtime_dir.h"

namespace uroce::runtime {

std::string uroced_socket_path(const std::string& base) { return base + "/uroced.sock"; }

bool uroced_request(const std::string& line, std::string* reply, std::string* err) {
  RuntimeDir dir;
  if (!runtime_dir(true, &dir, err)) return false;
  const std::string sock = uroced_socket_path(dir.path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (sock.size() >= sizeof(sa.sun_path)) {
    close(fd);
    *err = "control socket path " + sock + " is too long (set XDG_RUNTIME_DIR to a shorter one)";
    return false;
  }
  std::strncpy(sa.sun_path, sock.c_str(), sizeof(sa.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    *err = "no uroced at " + sock + ": " + std::strerror(errno);
    close(fd);
    return false;
  }
  const std::string msg = line + "\n";
  if (send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size())) {
    *err = "uroced at " + sock + " closed the connection";
    close(fd);
    return false;
  }
  timeval tv{10, 0};  // a daemon that hangs must not hang us
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  close(fd);
  if (out.empty()) {
    *err = "uroced at " + sock + " closed the connection without a reply";
    return false;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  *reply = out;
  return true;
}

}  // namespace uroce::runtime
