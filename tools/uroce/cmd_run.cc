// uroce run: CMD with the uroce environment (sysfs tree, provider, preload shim), via execvp.
// By default (no --port, UROCE_PORT unset, or either set to "uroced") the device's address and memif port are
// a lease from the host switch uroced (started if needed), bound to this pid, which CMD keeps
// (tools/uroced/client.h). --port SPEC / UROCE_PORT=SPEC choose "loopback" or a DPDK port spec instead.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tools/uroce/cli.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/dev_nodes.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/session.h"
#include "tools/uroced/client.h"

namespace uroce::tools {

namespace {

// Takes `--port VALUE` / `--port=VALUE` out of the options before the command (the other options are
// parse_device_args'). Sets *ip_given when --ip is among them.
std::string take_port_option(std::vector<std::string>* args, bool* ip_given) {
  std::string port;
  *ip_given = false;
  for (size_t i = 0; i < args->size();) {
    const std::string& a = (*args)[i];
    if (a == "--" || !a.starts_with("-")) break;
    if (a == "--ip" || a.starts_with("--ip=")) *ip_given = true;
    if (a == "--port") {
      if (i + 1 >= args->size()) throw UsageError("option '--port' needs a value");
      port = (*args)[i + 1];
      args->erase(args->begin() + static_cast<std::ptrdiff_t>(i),
                  args->begin() + static_cast<std::ptrdiff_t>(i) + 2);
      continue;
    }
    if (a.starts_with("--port=")) {
      port = a.substr(7);
      args->erase(args->begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
  return port;
}

}  // namespace

int cmd_run(const std::vector<std::string>& raw_args) {
  std::vector<std::string> args = raw_args;
  bool ip_given = false;
  std::string port = take_port_option(&args, &ip_given);
  // One device per host, as with an RNIC: without --port or UROCE_PORT every process is a port of the host
  // switch, so a server and a client started by two bare `uroce run` reach each other. UROCE_PORT=loopback
  // (one process, in-process only) and memif/af_packet specs stay explicit choices.
  if (port.empty()) {
    const char* env = std::getenv("UROCE_PORT");
    if (!env || !*env || std::string(env) == "uroced") port = "uroced";
  }
  ParsedArgs parsed = parse_device_args(args, true);

  // Without its node libibverbs silently lists no device, which is hard to diagnose from inside CMD.
  const bool shim = find_libs().shim_found;
  std::filesystem::path node;
  const NodeCheck c = check_node_as_run(dev_dir() / uverbs_name(parsed.device.index), shim, &node);
  if (c.state != NodeState::kOk) {
    std::fprintf(stderr, "uroce run: %s: %s\nlibibverbs lists %s only when that device node is right: %s.\n",
                 node.c_str(), c.detail.c_str(), parsed.device.dev.c_str(),
                 shim ? "the shim opens it in place of /dev/infiniband/uroce_verbsN, so it must be usable"
                      : (setup_instruction() + ", then try again").c_str());
    return 1;
  }

  if (port == "uroced") {
    uroced::Lease lease;
    std::string err;
    if (!uroced::lease_for_self(ip_given ? parsed.device.ip.text : "", &lease, &err)) {
      std::fprintf(stderr, "uroce run: %s\n", err.c_str());
      return 1;
    }
    const auto ip = parse_ip(lease.ip);
    if (!ip) {
      std::fprintf(stderr, "uroce run: uroced leased a bad address '%s'\n", lease.ip.c_str());
      return 1;
    }
    parsed.device.ip = *ip;
    port = lease.port_spec;
    // uroced is a third busy process on the path: a CQ poller that has waited a while gives up its core
    // (provider/verbs_cq.cc), so that the switch runs when the frame it waits for needs forwarding.
    setenv("UROCE_POLL_YIELD", "1", 0);
  }
  if (!port.empty() && setenv("UROCE_PORT", port.c_str(), 1) != 0) {
    std::fprintf(stderr, "uroce run: setenv UROCE_PORT: %s\n", std::strerror(errno));
    return 1;
  }

  const Libs libs = find_libs();
  const Session s = prepare_session(parsed.device, libs);
  std::fputs(library_warnings(libs).c_str(), stderr);
  for (const auto& [name, value] : s.env) {
    if (setenv(name.c_str(), value.c_str(), 1) != 0) {
      std::fprintf(stderr, "uroce run: setenv %s: %s\n", name.c_str(), std::strerror(errno));
      return 1;
    }
  }

  std::vector<char*> argv;
  for (const auto& a : parsed.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execvp(argv[0], argv.data());
  const int err = errno;
  std::fprintf(stderr, "uroce run: cannot run '%s': %s\n", argv[0], std::strerror(err));
  return err == ENOENT ? 127 : 126;  // what shells return for "not found" and "not executable"
}

}  // namespace uroce::tools
