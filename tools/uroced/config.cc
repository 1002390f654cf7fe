#include "tools/uroced/config.h"

#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"

namespace uroce::uroced {

namespace {

constexpr uint64_t kMinBuffer = 4224;  // one maximum frame

bool fail(std::string* err, const std::string& msg) {
  if (err) *err = msg;
  return false;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// A non-negative decimal number with an optional one-letter suffix from `suffixes` (scale `base`^i).
bool parse_scaled(std::string v, const char* suffixes, double base, uint64_t* out) {
  if (v.empty()) return false;
  double scale = 1;
  const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(v.back())));
  for (int i = 0; suffixes[i]; ++i) {
    if (last == suffixes[i]) {
      scale = std::pow(base, i + 1);
      v.pop_back();
      break;
    }
  }
  if (v.empty() || v[0] == '-' || v[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (errno || end != v.c_str() + v.size() || !std::isfinite(x) || x < 0 || x * scale > 1.8e19) return false;
  *out = static_cast<uint64_t>(std::llround(x * scale));
  return true;
}

bool parse_uint(const std::string& v, uint64_t max, uint64_t* out) {
  if (v.empty() || v.size() > 20) return false;
  for (char c : v)
    if (c < '0' || c > '9') return false;
  *out = std::strtoull(v.c_str(), nullptr, 10);
  return *out <= max;
}

bool parse_subnet(const std::string& v, uint32_t* net, unsigned* prefix) {
  const size_t slash = v.find('/');
  if (slash == std::string::npos) return false;
  in_addr a{};
  uint64_t p = 0;
  if (inet_pton(AF_INET, v.substr(0, slash).c_str(), &a) != 1 || !parse_uint(v.substr(slash + 1), 30, &p) ||
      p < 8)
    return false;
  const uint32_t mask = p == 0 ? 0 : ~uint32_t{0} << (32 - p);
  *net = ntohl(a.s_addr) & mask;
  *prefix = static_cast<unsigned>(p);
  return true;
}

constexpr const char* kEgressKeys = "rate, burst, buffer, pause, pfc, ecn, loss";
constexpr const char* kGlobalKeys =
    "idle_exit, uplink, subnet, max_clients, seed, credit, pfc_watchdog_us, rate, burst, buffer, pause, pfc, "
    "ecn, loss";

bool apply_global_key(const std::string& key, const std::string& value, DaemonConfig* dc, std::string* err) {
  uint64_t n = 0;
  if (key == "idle_exit") {
    if (!parse_uint(value, 86400 * 365, &n))
      return fail(err, "idle_exit: seconds expected, got '" + value + "'");
    dc->idle_exit_s = static_cast<unsigned>(n);
  } else if (key == "uplink") {
    if (value.empty()) return fail(err, "uplink: a pmd_glue port spec expected (e.g. af_packet:iface=veth0)");
    dc->uplink = value;
  } else if (key == "subnet") {
    if (!parse_subnet(value, &dc->subnet, &dc->prefix))
      return fail(err, "subnet: A.B.C.D/N with N in 8..30 expected, got '" + value + "'");
  } else if (key == "max_clients") {
    if (!parse_uint(value, 1024, &n) || n == 0) return fail(err, "max_clients: 1..1024 expected");
    dc->max_clients = static_cast<unsigned>(n);
  } else if (key == "seed") {
    if (!parse_uint(value, UINT64_MAX, &n)) return fail(err, "seed: an unsigned integer expected");
    dc->seed = n;
  } else if (key == "credit") {
    uint64_t bytes = 0;
    if (value != "off" && (!parse_bytes(value, &bytes) || bytes < kMinBuffer || bytes > (1u << 30)))
      return fail(err, "credit: bytes in " + std::to_string(kMinBuffer) + "..1g or off expected, got '" +
                           value + "'");
    dc->credit_bytes = static_cast<uint32_t>(bytes);
  } else if (key == "pfc_watchdog_us") {
    if (!parse_uint(value, 60'000'000, &n))
      return fail(err, "pfc_watchdog_us: microseconds 0..60000000 expected");
    dc->pfc_watchdog_us = n;
  } else {
    PortConfig& d = dc->defaults;
    if (key == "rate" || key == "burst" || key == "buffer" || key == "pause" || key == "pfc" ||
        key == "ecn" || key == "loss")
      return apply_egress_key(key, value, &d, err);
    return fail(err, "unknown key '" + key + "' (valid: " + kGlobalKeys + ")");
  }
  return true;
}

}  // namespace

bool parse_rate(const std::string& v, uint64_t* bps) { return parse_scaled(v, "kmgt", 1000, bps); }
bool parse_bytes(const std::string& v, uint64_t* bytes) { return parse_scaled(v, "kmg", 1024, bytes); }

bool apply_egress_key(const std::string& key, const std::string& value, PortConfig* cfg, std::string* err) {
  if (key == "rate") {
    if (!parse_rate(value, &cfg->rate_bps))
      return fail(err, "rate: bits/s expected (0, 100000, 500m, 10g), got '" + value + "'");
  } else if (key == "burst") {
    if (!parse_bytes(value, &cfg->burst_bytes))
      return fail(err, "burst: bytes expected (64k, 1m), got '" + value + "'");
  } else if (key == "buffer") {
    if (!parse_bytes(value, &cfg->buffer_bytes) || cfg->buffer_bytes < kMinBuffer)
      return fail(err, "buffer: bytes >= " + std::to_string(kMinBuffer) + " expected, got '" + value + "'");
  } else if (key == "pause") {
    if (value == "off") {
      cfg->pause_bytes = 0;
    } else if (!parse_bytes(value, &cfg->pause_bytes) || cfg->pause_bytes < kMinBuffer) {
      return fail(err,
                  "pause: bytes >= " + std::to_string(kMinBuffer) + " or off expected, got '" + value + "'");
    }
  } else if (key == "pfc") {
    if (value != "on" && value != "off") return fail(err, "pfc: on or off expected, got '" + value + "'");
    cfg->pfc_frames = value == "on";
  } else if (key == "ecn") {
    if (value == "off") {
      cfg->red = RedParams{};
      return true;
    }
    std::stringstream in(value);
    std::string a, b, c, extra;
    RedParams r;
    r.enabled = true;
    if (!std::getline(in, a, ',') || !std::getline(in, b, ',') || !std::getline(in, c, ',') ||
        std::getline(in, extra, ',') || !parse_bytes(trim(a), &r.kmin) || !parse_bytes(trim(b), &r.kmax))
      return fail(err, "ecn: KMIN,KMAX,PMAX (bytes, bytes, 0..1) or off expected, got '" + value + "'");
    char* end = nullptr;
    c = trim(c);
    r.pmax = std::strtod(c.c_str(), &end);
    if (c.empty() || end != c.c_str() + c.size() || !(r.pmax >= 0 && r.pmax <= 1))
      return fail(err, "ecn: PMAX must be a probability in 0..1, got '" + c + "'");
    if (r.kmin >= r.kmax) return fail(err, "ecn: KMIN must be below KMAX");
    cfg->red = r;
  } else if (key == "loss") {
    char* end = nullptr;
    const double p = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !(p >= 0 && p <= 1))
      return fail(err, "loss: a probability per frame in 0..1 expected (0.01 = 1%), got '" + value + "'");
    cfg->loss = p;
  } else {
    return fail(err, "unknown key '" + key + "' (valid per port: " + kEgressKeys + ")");
  }
  return true;
}

bool check_port_config(const PortConfig& cfg, std::string* err) {
  if (cfg.red.enabled && cfg.red.kmin >= cfg.red.kmax) return fail(err, "ecn: KMIN must be below KMAX");
  if (cfg.buffer_bytes < kMinBuffer) return fail(err, "buffer: must hold one frame");
  if (cfg.rate_bps && cfg.burst_bytes && cfg.burst_bytes < kMinBuffer)
    return fail(err, "burst: must hold one maximum frame (" + std::to_string(kMinBuffer) + " bytes)");
  return true;
}

bool port_config_for(const DaemonConfig& dc, const std::string& name, PortConfig* out, std::string* err) {
  PortConfig cfg = dc.defaults;
  if (auto it = dc.port_overrides.find(name); it != dc.port_overrides.end())
    for (const auto& [k, v] : it->second)
      if (!apply_egress_key(k, v, &cfg, err)) return false;
  if (!check_port_config(cfg, err)) return false;
  *out = cfg;
  return true;
}

bool parse_config_text(const std::string& text, const std::string& origin, DaemonConfig* dc,
                       std::string* err) {
  std::istringstream in(text);
  std::string line, section;
  for (int no = 1; std::getline(in, line); ++no) {
    const std::string where = origin + ":" + std::to_string(no) + ": ";
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.rfind("[port ", 0) != 0 || trim(line.substr(6, line.size() - 7)).empty())
        return fail(err,
                    where + "bad section '" + line + "' (expected [port NAME], NAME = uplink or an address)");
      section = trim(line.substr(6, line.size() - 7));
      dc->port_overrides[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return fail(err, where + "expected key = value, got '" + line + "'");
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    std::string why;
    if (section.empty()) {
      if (!apply_global_key(key, value, dc, &why)) return fail(err, where + why);
    } else {
      PortConfig scratch;
      if (!apply_egress_key(key, value, &scratch, &why))
        return fail(err, where + "[port " + section + "] " + why);
      dc->port_overrides[section].emplace_back(key, value);
    }
  }
  return true;
}

bool parse_config_file(const std::string& path, DaemonConfig* dc, std::string* err) {
  std::ifstream f(path);
  if (!f) return fail(err, "cannot read config file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_config_text(ss.str(), path, dc, err);
}

bool parse_args(int argc, char** argv, DaemonConfig* dc, std::string* err) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // --set takes every word after it: [PORT] key=value...
  if (auto set = std::find(args.begin(), args.end(), "--set"); set != args.end()) {
    dc->action = Action::kSet;
    dc->set_args.assign(set + 1, args.end());
    args.erase(set, args.end());
    if (dc->set_args.empty()) return fail(err, "--set needs [PORT] key=value...");
  }
  CLI::App app("", "uroced");
  tools::setup_app(app, "");
  bool daemon = false, foreground = false, stats = false, stop = false, version = false;
  app.add_flag("--daemon", daemon);
  app.add_flag("--foreground", foreground);
  app.add_flag("--stats", stats);
  app.add_flag("--stop", stop);
  app.add_flag("--version", version);
  app.add_option("--config", dc->config_path);
  // Every global key is also an option, --key or --key_with_underscores, applied after the config file in
  // the order given.
  std::map<std::string, std::string> values;
  std::map<const CLI::Option*, std::string> key_of;
  for (const char* key : {"idle_exit", "uplink", "subnet", "max_clients", "seed", "credit", "pfc_watchdog_us",
                          "rate", "burst", "buffer", "pause", "pfc", "ecn", "loss"}) {
    std::string dashed = key;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    std::string names = "--" + dashed;
    if (dashed != key) names += ",--" + std::string(key);
    CLI::Option* o =
        app.add_option(names, values[key])->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    key_of[o] = key;
  }
  std::vector<std::string> extras;
  try {
    tools::parse_app(app, args, &extras);
  } catch (const tools::HelpRequested&) {
    dc->action = Action::kHelp;
    return true;
  } catch (const tools::UsageError& e) {
    return fail(err, e.what());
  }
  if (!extras.empty()) {
    const std::string& a = extras.front();
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      std::string key = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
      std::string opt = key;
      std::replace(key.begin(), key.end(), '-', '_');
      return fail(err, "--" + opt + ": unknown key '" + key + "' (valid: " + kGlobalKeys + ")");
    }
    if (a == "--") return fail(err, "unexpected '--'");
    if (a.size() > 1 && a[0] == '-') return fail(err, "unknown option '" + a + "'");
    return fail(err, "unexpected argument '" + a + "'");
  }
  if (version) dc->action = Action::kVersion;
  if (stats) dc->action = Action::kStats;
  if (stop) dc->action = Action::kStop;
  if (daemon) dc->daemon = true;
  if (foreground) dc->daemon = false;
  if (dc->config_path.empty())
    if (const char* env = std::getenv("UROCED_CONFIG"); env && *env) dc->config_path = env;
  if (!dc->config_path.empty() && !parse_config_file(dc->config_path, dc, err)) return false;
  std::vector<std::string> order;
  for (const CLI::Option* o : app.parse_order())
    if (auto it = key_of.find(o);
        it != key_of.end() && std::find(order.begin(), order.end(), it->second) == order.end())
      order.push_back(it->second);
  for (const std::string& k : order) {
    std::string why;
    if (!apply_global_key(k, values[k], dc, &why)) {
      std::string opt = k;
      std::replace(opt.begin(), opt.end(), '_', '-');
      return fail(err, "--" + opt + ": " + why);
    }
  }
  return check_port_config(dc->defaults, err);
}

const char* usage_text() {
  return R"(usage: uroced --version
       uroced [--daemon] [--config FILE] [--idle-exit SECONDS] [--uplink SPEC] [--subnet A.B.C.D/N]
              [--rate RATE] [--burst BYTES] [--buffer BYTES] [--pause BYTES|off] [--pfc on|off]
              [--ecn KMIN,KMAX,PMAX|off] [--loss P] [--seed N] [--credit BYTES|off]
              [--pfc-watchdog-us N]
       uroced --stats | --stop | --set [PORT] key=value...

uroced, the uroce host switch: serves the local processes that `uroce run --port uroced` starts, one memif
port and one address lease each, and forwards frames between them (and an optional uplink) by MAC.
It is normally started on demand by `uroce run` and exits after --idle-exit seconds without clients.

  --daemon             detach; log to ${XDG_RUNTIME_DIR:-/tmp}/uroce-$UID/uroced.log
  --idle-exit SECONDS  exit after this long without clients (default 10; 0: never)
  --uplink SPEC        a pmd_glue port (af_packet:iface=X, tap:iface=X, memif:...) forwarded to as well
  --subnet NET/N       leases come from this IPv4 subnet (default 127.1.0.0/16)
  --rate RATE          egress rate limit per port, bits/s (500m, 10g; default 0 = unlimited)
  --burst BYTES        token bucket depth (default max(2 frames, 100 us at the rate))
  --buffer BYTES       egress queue per port, tail drop beyond (default 1m)
  --pause BYTES|off    stop reading a port while its frames hold this much of the queues (default 512k;
                       off: congestion drops frames instead of backpressuring the sender)
  --pfc on|off         send a lossless port's process 802.1Qbb PFC XOFF at half the pause threshold and
                       XON below a quarter (default on; off: reading the port stops only at the threshold)
  --ecn KMIN,KMAX,PMAX RED ECN marking on egress queue depth in bytes (e.g. 20k,200k,0.1)
  --loss P             drop each frame offered to a port's egress with probability P (0.01 = 1%; seeded
                       by --seed, counted as drop_loss)
  --credit BYTES|off   InfiniBand-style link credits instead of PFC: grant each process this much buffer per
                       priority and send only what its credit covers (default off; uroce processes obey)
  --pfc-watchdog-us N  resume a port's priority its process has kept paused N us without a break, and
                       ignore its PFC frames while that goes on (default 0: off)
  --config FILE        key = value file with the same keys and [port NAME] sections ($UROCED_CONFIG)
  --stats              print the running daemon's per-port counters
  --set [PORT] k=v...  change port keys (rate, burst, buffer, pause, pfc, ecn, loss) of PORT (a lease address,
                       uplink) or of every port and the defaults for new ones
  --stop               ask the running daemon to exit
  --version            print the version and exit
Each option takes its value as --opt VALUE or --opt=VALUE.
)";
}

}  // namespace uroce::uroced
