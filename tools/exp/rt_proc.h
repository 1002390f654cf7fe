// Processes of a real-time experiment (tools/exp/realtime.h): started with fork + execve, their output in a
// log file, reaped without blocking while the runner samples.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace uroce::exp::rt {

struct Child {
  std::string name;  // for messages: "server", "client 2"
  pid_t pid = -1;
  bool done = false;
  int exit_code = -1;  // 128 + signal when it was killed
};

// Starts argv[0] (found on PATH when it has no '/') with the current environment changed by `env` (a value
// of nullopt removes the variable), stdin from /dev/null, stdout and stderr to `log` (replaced). Throws
// std::runtime_error when it cannot fork or the log cannot be opened.
Child spawn(const std::string& name, const std::vector<std::string>& argv,
            const std::map<std::string, std::optional<std::string>>& env, const std::string& log);

// Collects the exit status if the child has ended (block: wait for it). True once it is done.
bool reap(Child& c, bool block);

// SIGTERM, then SIGKILL after `grace_ms`, and reaps it.
void stop(Child& c, int grace_ms = 2000);

// Whether a TCP socket listens on 127.0.0.1 or any address at `port` (/proc/net/tcp).
bool tcp_listening(uint16_t port);

// A TCP port no socket on loopback uses now (the kernel's choice for a bind to port 0).
uint16_t free_tcp_port();

// Seconds on the monotonic clock.
double now_s();

}  // namespace uroce::exp::rt
