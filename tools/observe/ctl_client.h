// The client side of the engines' control sockets (provider/control.h; protocol in docs/observability.md):
// finding the running uroce processes and asking them one JSON request per line.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace uroce::tools {

// One open uroce device in a running process.
struct Endpoint {
  pid_t pid = 0;
  std::string dev;
  std::filesystem::path socket;
  std::string comm;  // the process name (/proc/PID/comm), for display
};

// <pid>-<ibdev>.sock -> {pid, ibdev}; nullopt for any other name.
std::optional<Endpoint> parse_socket_name(const std::string& name);

// runtime_base()/ctl: where the engines put their sockets.
std::filesystem::path control_dir();

// The endpoints in `dir`, by pid then device, that match `pid` (0: any) and `dev` ("": any). Sockets of
// processes that no longer exist are removed (a killed process cannot remove its own).
std::vector<Endpoint> find_endpoints(const std::filesystem::path& dir, pid_t pid, const std::string& dev);

// "pid 123 (ib_write_bw) uroce0"
std::string describe(const Endpoint& e);

// The endpoint closed the connection: its process exited or closed the device.
struct ControlClosed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A connection to one endpoint. Throws std::runtime_error naming the endpoint on any failure (ControlClosed
// when the other side went away).
class ControlClient {
 public:
  explicit ControlClient(const Endpoint& e);
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // Sends one request and returns the reply object (its "ok" unchecked). `pass_fd` >= 0 goes along with the
  // request (SCM_RIGHTS): the file `uroce capture` created for the engine to write.
  nlohmann::ordered_json request(const nlohmann::ordered_json& req, int pass_fd = -1);
  int fd() const { return fd_; }

 private:
  Endpoint ep_;
  int fd_ = -1;
  std::string in_;
};

}  // namespace uroce::tools
