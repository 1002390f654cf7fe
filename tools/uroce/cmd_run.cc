// uroce run: CMD with the uroce environment (sysfs tree, provider, preload shim), via execvp.
// By default (no --port, UROCE_PORT unset, or either set to "uroced") the device's address and memif port are
// a lease from the host switch uroced (started if needed), bound to this pid, which CMD keeps
// (runtime/uroced_client.h). --port SPEC / UROCE_PORT=SPEC choose "loopback" or a DPDK port spec instead.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/uroced_client.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/commands.h"
#include "tools/uroce/dev_nodes.h"
#include "tools/uroce/env_check.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/netdev_bind.h"
#include "tools/uroce/session.h"

namespace uroce::tools {

namespace {

constexpr const char* kRunAbout =
    "Runs an unmodified verbs program CMD on a uroce device: its sysfs tree, the provider and the preload\n"
    "shim in CMD's environment, then exec. Options stop at '--' (or at CMD, the first other word); CMD's\n"
    "own arguments are passed untouched.";

constexpr const char* kRunFooter =
    "The device's packet port: without --port (and UROCE_PORT unset or 'uroced') a lease from the host\n"
    "switch uroced (its own address and memif port; uroced is started on demand). --port loopback is the\n"
    "in-process port; a DPDK port spec (memif:..., af_packet:iface=X) is a port of its own.\n"
    "--netdev IFACE (UROCE_NETDEV) binds the device to a kernel interface as rxe does: its MAC,\n"
    "MTU and link state, a GID per address (following changes), peers' MACs by ARP/ND; the port\n"
    "is then af_packet:iface=IFACE,promisc=0 unless --port says otherwise (docs/between-hosts.md); with\n"
    "--xdp an af_xdp port whose XDP program takes UDP 4791 and leaves the rest to the kernel.\n"
    "--cc, --cc-param and --mtu set UROCE_CC, UROCE_CC_PARAMS and UROCE_MTU for CMD ('uroce env --list').";

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  CLI::App app(kRunAbout, "uroce run");
  setup_app(app,
            "[--dev NAME] [--ip ADDR] [--port P] [--netdev IFACE [--xdp]] [--cc NAME] [--cc-param K=V]... "
            "[--mtu N] "
            "-- CMD "
            "[ARGS...]",
            kRunFooter);
  DeviceWords words;
  add_device_options(app, &words);
  std::string port;
  app.add_option("--port", port, "the device's packet port: uroced (default), loopback or a DPDK port spec")
      ->type_name("P");
  std::string netdev;
  app.add_option("--netdev", netdev, "bind the device to kernel interface IFACE (UROCE_NETDEV)")
      ->type_name("IFACE");
  bool xdp = false;
  app.add_flag("--xdp", xdp, "with --netdev: an af_xdp port whose XDP program steers UDP 4791 to uroce");
  RunEnvOptions run_env;
  add_run_env_options(app, &run_env);
  app.prefix_command();
  std::vector<std::string> rest;
  parse_app(app, args, &rest);
  ParsedArgs parsed;
  parsed.command = command_words(rest);
  parsed.device = check_device(words.dev, words.ip);
  const bool ip_given = app.count("--ip") > 0;
  if (std::string e = check_env_var("UROCE_PORT", port); !e.empty()) {
    const size_t colon = e.find(": ");
    throw UsageError("bad value '" + port + "' for --port: " + e.substr(colon + 2));
  }
  // Flags override the variables they stand for; then everything CMD inherits is checked, before anything
  // is set up: a bad value fails here, naming the variable, not inside CMD's device open.
  apply_run_env_options(run_env);
  if (const std::string bad = check_environment(); !bad.empty()) {
    std::fprintf(stderr, "uroce run: %s ('uroce env --list' shows every variable)\n", bad.c_str());
    return 1;
  }
  if (netdev.empty())
    if (const char* e = std::getenv("UROCE_NETDEV"); e && *e) netdev = e;
  if (xdp && netdev.empty()) throw UsageError("--xdp goes with --netdev IFACE");
  if (!netdev.empty()) {
    unsigned ib_mtu = 0;
    if (std::string e = bind_netdev(netdev, ip_given, &parsed.device, &ib_mtu); !e.empty()) {
      std::fprintf(stderr, "uroce run: --netdev %s: %s\n", netdev.c_str(), e.c_str());
      return 1;
    }
    const char* env_port = std::getenv("UROCE_PORT");
    if (port.empty() && env_port && *env_port) port = env_port;
    if (port == "uroced" || port == "loopback") {
      std::fprintf(stderr, "uroce run: --netdev binds the device to %s: --port %s does not go with it\n",
                   netdev.c_str(), port.c_str());
      return 1;
    }
    if (xdp) {
      if (!port.empty()) {
        std::fprintf(stderr, "uroce run: --xdp chooses the port: --port/UROCE_PORT %s does not go with it\n",
                     port.c_str());
        return 1;
      }
      const std::filesystem::path prog = find_libs().shim.parent_path() / "uroce_xdp.o";
      if (!std::filesystem::exists(prog)) {
        std::fprintf(stderr, "uroce run: --xdp: no XDP program %s (built only with clang and libbpf-dev)\n",
                     prog.c_str());
        return 1;
      }
      port = "af_xdp:iface=" + netdev + ",prog=" + prog.string();
      ib_mtu = std::min(ib_mtu, 2048u);  // af_xdp frames fit a 4 KiB UMEM chunk (pmd_glue/dpdk_port.h)
    }
    if (port.empty()) port = "af_packet:iface=" + netdev + ",promisc=0";
    setenv("UROCE_NETDEV", netdev.c_str(), 1);
    if (!std::getenv("UROCE_MTU")) setenv("UROCE_MTU", std::to_string(ib_mtu).c_str(), 1);
  }
  // One device per host, as with an RNIC: without --port or UROCE_PORT every process is a port of the host
  // switch, so a server and a client started by two bare `uroce run` reach each other. UROCE_PORT=loopback
  // (one process, in-process only) and memif/af_packet specs stay explicit choices.
  if (port.empty()) {
    const char* env = std::getenv("UROCE_PORT");
    if (!env || !*env || std::string(env) == "uroced") port = "uroced";
  }

  // Without its node libibverbs silently lists no device, which is hard to diagnose from inside CMD.
  const Libs libs = find_libs();
  const bool shim = libs.shim_found;
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
    runtime::Lease lease;
    std::string err;
    if (!runtime::lease_for_self(ip_given ? parsed.device.ip.text : "", &lease, &err)) {
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
