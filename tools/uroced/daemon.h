// The uroced process: control socket, address leases bound to client pids, one DPDK memif server port per
// lease (plus the optional uplink), and the loop that drives the Switch.
//
// Loop: switch passes back to back while frames move; after kSpinNs without work it naps in ppoll on the
// control fds (listening socket, connections, lease pidfds) for 20 us, doubling to 1 ms while traffic was
// seen in the last second and to 20 ms after that (memif has no rx interrupt in DPDK 22.11, so this is
// how an idle daemon stays near 0% CPU). A nap never runs past the moment a rate-limited queue may send.
// While busy, the control fds are still looked at every kControlEveryNs.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pmd_glue/dpdk_port.h"
#include "tools/uroced/cm_ports.h"
#include "tools/uroced/cm_track.h"
#include "tools/uroced/config.h"
#include "tools/uroced/switch_core.h"

namespace uroce::uroced {

class Daemon {
 public:
  Daemon(DaemonConfig cfg, std::filesystem::path base);
  ~Daemon();
  // Takes the lock, starts EAL, opens the uplink, binds the control socket. False with *err on failure;
  // *already_running when another daemon holds the lock and answers.
  bool start(std::string* err, bool* already_running);
  // Runs until idle for idle_exit seconds, `stop`, or SIGTERM/SIGINT. Returns the exit status.
  int run();

 private:
  struct Lease {
    pid_t pid = 0;
    int pidfd = -1;
    uint32_t ip = 0;
    std::string ip_text;
    std::string socket;
    std::unique_ptr<glue::DpdkPort> port;
    int switch_id = -1;
    bool link_was_up = false;  // its memif peer connected at the last check_links()
  };
  struct Conn {
    int fd;
    std::string in;
    uint64_t since_ns;
  };

  void serve_control(const std::vector<pollfd>& fds);
  void check_links(uint64_t now);
  void end_cm_of(const Lease& l, const char* why);
  uint64_t links_checked_ns_ = 0;
  void accept_conns();
  void handle_request(Conn& c);
  std::string do_lease(pid_t pid, const std::string& want, std::string* err);
  std::string do_stats() const;
  std::string do_cm(pid_t pid, const std::vector<std::string>& words);
  bool do_set(const std::vector<std::string>& words, std::string* err);
  // Ends a lease. `exited`: its process is gone, so the CM connections it left open are ended for it
  // (at daemon exit nothing is sent: every port goes down at once).
  void release(size_t idx, const char* why, bool exited);
  uint32_t pick_ip() const;
  std::vector<pollfd> control_fds() const;
  void note_pass(uint64_t start_ns, uint64_t end_ns);
  void log(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));

  DaemonConfig cfg_;
  std::filesystem::path base_;
  int lock_fd_ = -1;
  int listen_fd_ = -1;
  bool stop_ = false;
  Switch sw_;
  CmPorts cm_ports_;
  CmTracker cm_track_;  // the CM connections between leases, ended for a process that dies (cm_track.h)
  std::unique_ptr<glue::DpdkPort> uplink_;
  int uplink_id_ = -1;
  std::vector<std::unique_ptr<Lease>> leases_;
  std::vector<Conn> conns_;
  uint64_t last_client_ns_ = 0;  // when the last lease ended (or the daemon started)
  uint64_t leases_total_ = 0;
  // A switching pass takes microseconds; one that took kStallNs or more means the daemon was runnable but
  // not scheduled (more busy threads than cores). Counted and logged: peers' ACK timers run meanwhile.
  uint64_t stalls_ = 0;
  uint64_t longest_pass_ns_ = 0;
  uint64_t refused_peers_ = 0;  // control connections from other users (SO_PEERCRED), closed unserved
};

uint64_t now_ns();
// The DPDK port's own counters and pool occupancy, " key=value" each.
std::string pmd_counters(const glue::DpdkPort& p);

}  // namespace uroce::uroced
