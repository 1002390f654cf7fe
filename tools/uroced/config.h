// uroced settings: command-line options and the config file, with the same key names.
//
// Config file (--config FILE, else $UROCED_CONFIG when set): `key = value` lines, `#` comments, and
// `[port NAME]` sections (NAME = uplink, or a lease address such as 127.1.0.3) whose egress keys override
// the global ones for that port. Command-line options are applied after the file.
//
// Global keys:    idle_exit (seconds, 0 = never), uplink (pmd_glue spec), subnet (A.B.C.D/N, leases come
//                 from it), max_clients, seed (RED's and loss's random streams), credit (BYTES | off:
//                 InfiniBand-style link credits instead of PFC, this much buffer granted per port and VL),
//                 pfc_watchdog_us (0 = off: a process pausing a priority that long without a break is
//                 ignored)
// Egress keys (global or per port):
//   rate   = RATE     token-bucket rate limit in bits/s: 0 (unlimited), 25g, 500m, 1.5g, 100000
//   burst  = BYTES    bucket depth (default max(2 frames, 100 us at the rate)); 64k, 1m (binary units)
//   buffer = BYTES    egress queue limit, tail drop beyond it (default 1m)
//   pause  = BYTES | off   ingress backpressure threshold (switch_core.h; default 512k)
//   pfc    = on | off      send the port's process PFC frames (switch_core.h; default on)
//   ecn    = KMIN,KMAX,PMAX | off   RED ECN marking: KMIN/KMAX in bytes of queue, PMAX in 0..1
//   loss   = P        drop each frame offered to the port's egress with probability P in 0..1 (default 0)
// A bad key or value is an error naming the key (and FILE:LINE for the file).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tools/uroced/switch_core.h"

namespace uroce::uroced {

enum class Action { kRun, kStats, kStop, kSet, kHelp, kVersion };

struct DaemonConfig {
  Action action = Action::kRun;
  bool daemon = false;  // detach, log to <runtime dir>/uroced.log, report readiness to the parent
  unsigned idle_exit_s = 10;
  std::string uplink;
  uint32_t subnet = 0x7F010000;  // 127.1.0.0
  unsigned prefix = 16;
  unsigned max_clients = 64;
  uint64_t seed = 1;
  uint32_t credit_bytes = 0;     // 0: PFC; else credit flow control (switch_core.h)
  uint64_t pfc_watchdog_us = 0;  // 0: off
  std::string config_path;
  PortConfig defaults;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> port_overrides;
  std::vector<std::string> set_args;  // --set: [PORT] key=value...
};

bool parse_rate(const std::string& v, uint64_t* bps);
bool parse_bytes(const std::string& v, uint64_t* bytes);

// Applies one egress key to cfg. Returns false with *err naming the key when the key or value is bad.
bool apply_egress_key(const std::string& key, const std::string& value, PortConfig* cfg, std::string* err);
// Cross-field checks (kmin < kmax, buffer room for a frame).
bool check_port_config(const PortConfig& cfg, std::string* err);
// The config of port `name`: the defaults with that port's overrides applied.
bool port_config_for(const DaemonConfig& dc, const std::string& name, PortConfig* out, std::string* err);

bool parse_config_text(const std::string& text, const std::string& origin, DaemonConfig* dc,
                       std::string* err);
bool parse_config_file(const std::string& path, DaemonConfig* dc, std::string* err);
// argv -> config (reads the config file too). Returns false with *err for bad input.
bool parse_args(int argc, char** argv, DaemonConfig* dc, std::string* err);

const char* usage_text();

}  // namespace uroce::uroced
