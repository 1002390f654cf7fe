#include "runtime/uroced_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/runtime_dir.h"
#include "runtime/uroced_request.h"

namespace uroce::runtime {

namespace fs = std::filesystem;

fs::path control_socket_path(const fs::path& base) { return runtime::uroced_socket_path(base.string()); }
fs::path lock_path(const fs::path& base) { return base / "uroced.lock"; }
fs::path log_path(const fs::path& base) { return base / "uroced.log"; }
fs::path ports_dir(const fs::path& base) { return base / "uroced-ports"; }

bool request(const std::string& line, std::string* reply, std::string* err) {
  return runtime::uroced_request(line, reply, err);
}

fs::path find_uroced() {
  if (const char* v = std::getenv("UROCED"); v && *v) return v;
  const fs::path dir = runtime::self_dir();
  std::error_code ec;
  if (!dir.empty()) {
    for (const fs::path& p : {dir / "uroced" / "uroced", dir / "uroced"})
      if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return p;
  }
  return "uroced";
}

bool ensure_daemon(std::string* err) {
  std::string reply;
  if (request("ping", &reply, err)) return true;
  const fs::path exe = find_uroced();
  const pid_t pid = fork();
  if (pid < 0) {
    *err = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    const std::string path = exe.string();
    std::vector<char*> argv = {const_cast<char*>(path.c_str()), const_cast<char*>("--daemon"), nullptr};
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot run %s: %s (set UROCED to its path)\n", path.c_str(), std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *err = "starting " + exe.string() + " --daemon failed (see " +
           log_path(runtime::runtime_base(true)).string() + ")";
    return false;
  }
  // The launcher returns once the daemon listens; allow for a daemon that was exiting as we looked.
  for (int i = 0; i < 50; ++i) {
    if (request("ping", &reply, err)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool lease_for_self(const std::string& want_ip, Lease* out, std::string* err) {
  const std::string line = want_ip.empty() ? "lease" : "lease " + want_ip;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!ensure_daemon(err)) return false;
    std::string reply;
    if (!request(line, &reply, err)) continue;  // the daemon exited between ping and lease: start another
    if (reply.rfind("ok ", 0) != 0) {
      *err = "uroced: " + (reply.rfind("error ", 0) == 0 ? reply.substr(6) : reply);
      return false;
    }
    const size_t ip = reply.find(" ip="), port = reply.find(" port=");
    if (ip == std::string::npos || port == std::string::npos || port < ip) {
      *err = "uroced: unexpected reply '" + reply + "'";
      return false;
    }
    out->ip = reply.substr(ip + 4, port - ip - 4);
    out->port_spec = reply.substr(port + 6);
    return true;
  }
  return false;
}

}  // namespace uroce::runtime
