// Talking to uroced from other processes (`uroce run`, `uroce exp --realtime`, `uroced --stats`): the
// control and lease protocol, shared by the tools (runtime/, so that tools/uroce and tools/uroced need not
// include each other).
//
// Control protocol: a Unix stream socket at <runtime dir>/uroced.sock (runtime dir =
// ${XDG_RUNTIME_DIR:-/tmp}/uroce-$UID, mode 0700, so only the user reaches it). One request line per
// connection; the daemon answers and closes. Requests:
//   ping                      -> "ok pid=N"
//   lease [ADDR]              -> "ok ip=ADDR port=SPEC" : an address (the lowest free one of the subnet,
//                                or ADDR) and a memif port for the connecting process (SO_PEERCRED pid),
//                                released when that process exits (pidfd); SPEC is the memif client spec
//                                the process's provider opens (UROCE_PORT)
//   cm bind SPACE ADDR PORT [reuse] -> "ok port=N"; cm listen|unbind SPACE ADDR PORT -> "ok";
//   cm lookup SPACE ADDR PORT  -> "ok ip=LEASE pid=N": the host's RDMA CM port spaces (cm_ports.h), so that
//                                processes bind and listen as on one kernel; bind/listen/unbind need a
//                                lease and go with it; errors "error errno=N MESSAGE"
//   stats                     -> one line for the daemon, one per port (key=value)
//   set [PORT] key=value...   -> "ok": egress knobs (config.h) of one port or of all ports and new ones
//   stop                      -> "ok", then the daemon exits
// Errors come back as "error MESSAGE".
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace uroce::runtime {

std::filesystem::path control_socket_path(const std::filesystem::path& base);
std::filesystem::path lock_path(const std::filesystem::path& base);
std::filesystem::path log_path(const std::filesystem::path& base);
std::filesystem::path ports_dir(const std::filesystem::path& base);

// One request, one reply (without the trailing newline of a one-line reply). False with *err when no daemon
// answers (nothing listens, or it closed without a reply).
bool request(const std::string& line, std::string* reply, std::string* err);

// The uroced executable: $UROCED, else next to the running executable's build or install layout
// (<build>/tools/uroce -> <build>/tools/uroced/uroced; <prefix>/bin/uroced), else "uroced" on PATH.
std::filesystem::path find_uroced();

// Makes sure a daemon answers: if none does, runs `uroced --daemon` (which returns once the daemon listens)
// and checks again.
bool ensure_daemon(std::string* err);

struct Lease {
  std::string ip;
  std::string port_spec;
};
// Asks for a lease for the calling process (starting the daemon if needed). `want_ip` may be empty.
bool lease_for_self(const std::string& want_ip, Lease* out, std::string* err);

}  // namespace uroce::runtime
