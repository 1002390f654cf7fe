#include "tools/exp/rt_proc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace uroce::exp::rt {

Child spawn(const std::string& name, const std::vector<std::string>& argv,
            const std::map<std::string, std::optional<std::string>>& env, const std::string& log) {
  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
  }
  for (const auto& [k, v] : env)
    if (v) envs.push_back(k + "=" + *v);
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) throw std::runtime_error("cannot write " + log + ": " + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(out);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    execvpe(cargv[0], cargv.data(), cenv.data());
    static const char msg[] = "cannot run the command: exec failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  close(out);
  return Child{name, pid, false, -1};
}

bool reap(Child& c, bool block) {
  if (c.done || c.pid <= 0) return true;
  int st = 0;
  pid_t r;
  do {
    r = waitpid(c.pid, &st, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  c.done = true;
  c.exit_code = r < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return true;
}

void stop(Child& c, int grace_ms) {
  if (reap(c, false)) return;
  kill(c.pid, SIGTERM);
  for (int waited = 0; waited < grace_ms; waited += 10) {
    if (reap(c, false)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(c.pid, SIGKILL);
  reap(c, true);
}

bool tcp_listening(uint16_t port) {
  // Lines: "sl local_address rem_address st ...", addresses as HEX_IP:HEX_PORT, state 0A = LISTEN.
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream f(file);
    std::string line;
    std::getline(f, line);
    while (std::getline(f, line)) {
      std::istringstream in(line);
      std::string sl, local, remote, st;
      in >> sl >> local >> remote >> st;
      const size_t colon = local.rfind(':');
      if (st == "0A" && colon != std::string::npos &&
          std::stoul(local.substr(colon + 1), nullptr, 16) == port)
        return true;
    }
  }
  return false;
}

uint16_t free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  uint16_t port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0)
    port = ntohs(sa.sin_port);
  if (fd >= 0) close(fd);
  if (port == 0) throw std::runtime_error(std::string("no free TCP port: ") + std::strerror(errno));
  return port;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace uroce::exp::rt
