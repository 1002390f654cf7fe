#include "tools/exp/realtime.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "runtime/uroced_client.h"
#include "tools/exp/rt_proc.h"
#include "tools/exp/rt_report.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/paths.h"
#include "tools/uroced/config.h"

namespace uroce::exp::rt {

namespace {

namespace fs = std::filesystem;
using tools::UsageError;

constexpr auto kSamplePeriod = std::chrono::microseconds(1000);  // receiver counters and the port's queue
constexpr int kSenderEvery = 10;                                 // senders' CC rates: every 10th sample
constexpr double kRateIntervalS = 0.010;                         // flows.csv: rates over 10 ms
constexpr double kStartTimeoutS = 30;                            // server listening, processes set up
constexpr double kExitGraceS = 60;                               // past --duration before clients are stopped

enum class Load {
  kPerftest,   // ib_write_bw -q FLOWS: one sender process, one receiver process
  kIncast,     // uroce-traffic: FLOWS sender processes, one receiver process with FLOWS QPs
  kAllreduce,  // uroce-traffic allreduce: FLOWS ranks in a ring; rank 0 is the one sampled
};

struct Variant {
  std::string name;
  std::string cc;
  bool ecn = true;
  unsigned ecn_divisor = 1;  // thresholds = kmin / divisor, kmax / divisor
};

struct Scenario {
  const char* name;
  const char* about;
  Load load;
  std::vector<std::pair<std::string, std::string>> keys;  // the scenario's keys and their defaults
  // Algorithm parameters the scenario sets for its CC variants unless cc.PARAM=V is given, and why.
  std::vector<std::pair<std::string, std::string>> cc_defaults;
  const char* cc_why;
  std::vector<Variant> (*variants)(const std::string& cc, const std::string& kmin);
};

const std::vector<std::pair<std::string, std::string>> kPerftestKeys = {
    {"rate", "1g"},  {"flows", "2"},   {"kmin", "32k"},  {"kmax", "256k"},
    {"pmax", "0.2"}, {"msg", "65536"}, {"pause", "512k"}};

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all = {
      {"fair",
       "N flows (ib_write_bw -q N between two processes) share one rate-limited, ECN-marking port; with "
       "DCQCN\n"
       "they should split it evenly and hold the queue near the ECN thresholds.",
       Load::kPerftest,
       kPerftestKeys,
       {},
       "",
       [](const std::string& cc, const std::string&) {
         return std::vector<Variant>{{cc, cc}};
       }},
      {"pfc-vs-dcqcn",
       "the same flows with no congestion control, held back only by uroced's lossless ingress pause, then\n"
       "with DCQCN and ECN: how often the port pauses and how deep the queue stands.",
       Load::kPerftest,
       kPerftestKeys,
       {},
       "",
       [](const std::string& cc, const std::string&) {
         return std::vector<Variant>{{"pause-only", "none", false}, {cc + "+pause", cc}};
       }},
      {"ecn-threshold",
       "DCQCN with ECN thresholds at their default and at 1/30 of it: marking too early costs throughput\n"
       "(operators report it); here the rate floor decides how much.",
       Load::kPerftest,
       kPerftestKeys,
       {},
       "",
       [](const std::string& cc, const std::string& kmin) {
         return std::vector<Variant>{{"kmin=" + kmin, cc}, {"kmin=1_30", cc, true, 30}};
       }},
      {"incast",
       "N separate sender processes (uroce-traffic clients) WRITE into one receiver process holding N RC\n"
       "QPs: all N flows converge on the receiver's rate-limited, ECN-marking uroced port. Variants: the CC\n"
       "(--cc, default dcqcn) with ECN and pause, and pfc: no CC, uroced's lossless ingress pause alone.",
       Load::kIncast,
       {{"rate", "500m"},
        {"flows", "4"},
        {"kmin", "32k"},
        {"kmax", "256k"},
        {"pmax", "0.2"},
        {"msg", "65536"},
        {"depth", "4"},
        {"pause", "128k"},
        {"burst", "64k"}},
       {{"rpg_max_rate", "port"},
        {"clamp_tgt_rate", "1"},
        {"dce_tcp_rtt", "300"},
        {"rpg_time_reset", "2000"},
        {"rpg_byte_reset", "0"},
        {"rpg_ai_rate", "0.5"},
        {"rate_reduce_monitor_period", "500"},
        {"min_time_between_cnps", "0"}},
       "the ConnectX defaults are built for 100 Gb/s links, where a marked flow gets a CNP every few "
       "microseconds. Here a flow's CNPs come ~0.5-2 ms apart: alpha, decaying every dce_tcp_rtt = 1 us, is "
       "~0 "
       "at each CNP (its steady value is about dce_tcp_rtt / the CNP interval), so cuts are tiny, while the "
       "increase steps (timer every 300 us, byte counter every 32 KiB, 5 and 50 Mb/s) restore the rate at "
       "once: "
       "the queue stands at the pause threshold (docs/cc-results.md). rpg_max_rate=port starts a flow at the "
       "port rate (a NIC's line rate is its link's); clamp_tgt_rate=1 lets a cut lower the target rate; "
       "dce_tcp_rtt=300 keeps alpha near the CNP interval; rpg_time_reset=2000, rpg_byte_reset=0 (no byte "
       "counter, so no hyper increase) and rpg_ai_rate=0.5 make the increase 0.25 Mb/s per ms per flow; "
       "rate_reduce_monitor_period=500 allows a cut per 0.5 ms; min_time_between_cnps=0 has the receiver "
       "answer "
       "every marked packet (it handles frames in bursts, so a 4 us gap dropped most CNPs).",
       [](const std::string& cc, const std::string&) {
         return std::vector<Variant>{{cc, cc}, {"pfc", "none", false}};
       }},
      {"allreduce",
       "N ranks (uroce-traffic allreduce processes) run a ring AllReduce of msg bytes (sum of floats, "
       "checked)\n"
       "for the duration, each sending to the next through uroced; prints the bus bandwidth as nccl-tests\n"
       "defines it (busbw = algbw * 2(N-1)/N) for the slowest rank. rate=0: the ports are not limited.",
       Load::kAllreduce,
       {{"rate", "0"}, {"flows", "4"}, {"msg", "4194304"}, {"pause", "512k"}},
       {},
       "",
       [](const std::string& cc, const std::string&) {
         return std::vector<Variant>{{"ring", cc, false}};
       }},
  };
  return all;
}

const Scenario* find(const std::string& name) {
  for (const Scenario& s : scenarios())
    if (name == s.name) return &s;
  return nullptr;
}

void usage(FILE* f) {
  std::fprintf(
      f,
      "uroce exp --realtime SCENARIO [--out DIR] [--duration S] [--cc NAME] [--no-plots] [key=value ...]\n"
      "\nScenarios (real time, through uroced; each variant runs its own uroced):\n");
  for (const Scenario& s : scenarios()) {
    std::string about = s.about, keys;
    for (size_t p = 0; (p = about.find('\n', p)) != std::string::npos; p += 18)
      about.replace(p, 1, "\n" + std::string(17, ' '));
    for (const auto& [k, v] : s.keys) keys += " " + k + "=" + v;
    std::fprintf(f, "  %-14s %s\n                 keys:%s\n", s.name, about.c_str(), keys.c_str());
    if (!s.cc_defaults.empty()) {
      std::string cc;
      for (const auto& [k, v] : s.cc_defaults) cc += " cc." + k + "=" + v;
      std::fprintf(f, "                 DCQCN parameters set unless given:%s (docs/cc-results.md)\n",
                   cc.c_str());
    }
  }
  std::fprintf(
      f,
      "\nkey=value sets a knob (defaults shown): rate = the receiver port's rate, flows = QPs (incast: "
      "sender\n"
      "processes), kmin/kmax/pmax = ECN marking, pause = uroced's ingress pause threshold, msg = message\n"
      "bytes, depth = WRITEs in flight per sender, burst = the port's token bucket depth; cc.PARAM=V sets a\n"
      "parameter of the algorithm "
      "(UROCE_CC_PARAMS, docs/cc.md), e.g. cc.clamp_tgt_rate=1.\n"
      "--cc sets UROCE_CC for the CC variants (default dcqcn); --duration the seconds of traffic (default "
      "6).\n"
      "Samples every 1 ms; writes flows.csv, cc_rates.csv, queues.csv, counters.csv (the simulator's\n"
      "files), PNG plots, summary.txt and manifest.txt under DIR/SCENARIO.\n");
}

struct Options {
  const Scenario* sc = nullptr;
  std::string out = "exp-out", cc = "dcqcn";
  unsigned duration = 6;
  bool plots = true;
  std::map<std::string, std::string> given;     // key=value words
  std::map<std::string, std::string> given_cc;  // cc.PARAM=V words
  std::string key(const std::string& k) const {
    if (const auto it = given.find(k); it != given.end()) return it->second;
    for (const auto& [name, def] : sc->keys)
      if (name == k) return def;
    return "";
  }
};

unsigned parse_uint(const std::string& what, const std::string& v, unsigned lo, unsigned hi) {
  size_t n = 0;
  unsigned long x = 0;
  try {
    x = std::stoul(v, &n);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n == 0 || n != v.size() || x < lo || x > hi)
    throw UsageError(what + " must be " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" + v +
                     "'");
  return static_cast<unsigned>(x);
}

// Checked knob values, in the units the processes take.
struct Knobs {
  uint64_t rate_bps = 0, kmin = 0, kmax = 0, pause = 0, burst = 0;  // burst 0: uroced's default
  unsigned flows = 0, msg = 0, depth = 0;
  std::string pmax;
  std::string cc_params;  // UROCE_CC_PARAMS for the CC variants
};

Knobs check(const Options& o) {
  Knobs k;
  if (!uroced::parse_rate(o.key("rate"), &k.rate_bps))
    throw UsageError("key 'rate' must be a rate in bits/s (500m, 1g; 0: unlimited), got '" + o.key("rate") +
                     "'");
  if (!o.key("kmin").empty() && (!uroced::parse_bytes(o.key("kmin"), &k.kmin) ||
                                 !uroced::parse_bytes(o.key("kmax"), &k.kmax) || k.kmin >= k.kmax))
    throw UsageError("keys 'kmin' < 'kmax' must be byte counts (32k, 256k)");
  if (!uroced::parse_bytes(o.key("pause"), &k.pause))
    throw UsageError("key 'pause' must be a byte count (128k), got '" + o.key("pause") + "'");
  if (!o.key("burst").empty() && !uroced::parse_bytes(o.key("burst"), &k.burst))
    throw UsageError("key 'burst' must be a byte count (64k), got '" + o.key("burst") + "'");
  k.pmax = o.key("pmax");
  k.flows = parse_uint("key 'flows'", o.key("flows"), o.sc->load == Load::kAllreduce ? 2 : 1, 16);
  k.msg = parse_uint("key 'msg'", o.key("msg"), 4096, 1u << 26);
  if (o.sc->load == Load::kIncast) k.depth = parse_uint("key 'depth'", o.key("depth"), 1, 64);
  std::map<std::string, std::string> cc;
  for (const auto& [p, v] : o.sc->cc_defaults)
    cc[p] = v == "port" ? std::to_string(k.rate_bps / 1'000'000) : v;
  for (const auto& [p, v] : o.given_cc) cc[p] = v;
  for (const auto& [p, v] : cc) k.cc_params += (k.cc_params.empty() ? "" : ",") + p + "=" + v;
  return k;
}

Options parse(const std::vector<std::string>& args, bool* listed) {
  Options o;
  std::string scenario;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help" || a == "--list") {
      *listed = true;
      return o;
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--duration") {
      o.duration = parse_uint("--duration", value(), 2, 600);
    } else if (a == "--cc") {
      o.cc = value();
    } else if (a == "--no-plots") {
      o.plots = false;
    } else if (a.rfind("cc.", 0) == 0 && a.find('=') != std::string::npos) {
      o.given_cc[a.substr(3, a.find('=') - 3)] = a.substr(a.find('=') + 1);
    } else if (a.find('=') != std::string::npos) {
      o.given[a.substr(0, a.find('='))] = a.substr(a.find('=') + 1);
    } else if (a.rfind("-", 0) == 0) {
      throw UsageError("unknown option '" + a + "'");
    } else if (scenario.empty()) {
      scenario = a;
    } else {
      throw UsageError("more than one scenario ('" + scenario + "', '" + a + "')");
    }
  }
  if (scenario.empty()) throw UsageError("missing scenario (uroce exp --realtime --list shows them)");
  o.sc = find(scenario);
  if (!o.sc) throw UsageError("unknown scenario '" + scenario + "' (uroce exp --realtime --list shows them)");
  for (const auto& [k, v] : o.given) {
    std::string known;
    for (const auto& [name, def] : o.sc->keys) known += (known.empty() ? "" : " ") + name;
    if (o.key(k).empty() ||
        std::none_of(o.sc->keys.begin(), o.sc->keys.end(), [&](const auto& kv) { return kv.first == k; }))
      throw UsageError("unknown key '" + k + "' (" + known + " cc.PARAM)");
  }
  return o;
}

// The helper programs: uroce-traffic and uroced next to this uroce (build tree or install tree).
fs::path traffic_program() {
  const fs::path dir = tools::self_dir();
  std::error_code ec;
  for (const fs::path& p :
       {dir / "exp" / "uroce-traffic", dir / ".." / "libexec" / "uroce" / "uroce-traffic"})
    if (!dir.empty() && fs::is_regular_file(p, ec)) return p;
  return "uroce-traffic";
}

template <typename Cond>
bool wait_for(Cond cond, double timeout_s) {
  const double end = now_s() + timeout_s;
  while (!cond()) {
    if (now_s() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string rate_text(uint64_t bps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g Mb/s", static_cast<double>(bps) / 1e6);
  return buf;
}

// Runs one variant: its own uroced and processes; fills *m. False (with a message) when it could not run.
bool run_variant(const Options& o, const Knobs& k, const Variant& v, const std::string& vdir, Measured* m) {
  m->name = v.name;
  char tmpl[] = "/tmp/uroce-exp-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  const std::string rtdir = tmpl;
  const char* old_xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::optional<std::string> saved_xdg = old_xdg ? std::optional<std::string>(old_xdg) : std::nullopt;
  setenv("XDG_RUNTIME_DIR", rtdir.c_str(), 1);  // this variant's uroced, for the processes and the runner
  m->kmin_bytes = v.ecn ? k.kmin / v.ecn_divisor : 0;
  m->kmax_bytes = v.ecn ? k.kmax / v.ecn_divisor : 0;
  m->pause_bytes = k.pause;
  const std::string ecn =
      v.ecn ? std::to_string(m->kmin_bytes) + "," + std::to_string(m->kmax_bytes) + "," + k.pmax : "off";
  std::fprintf(stderr, "== %s/%s: %u flows, port rate %s, ECN %s, pause %lu B, cc %s, %us\n", o.sc->name,
               v.name.c_str(), k.flows, rate_text(k.rate_bps).c_str(), ecn.c_str(),
               static_cast<unsigned long>(k.pause), v.cc.c_str(), o.duration);
  bool ok = true;
  std::vector<Child> clients;
  Child server;
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "uroce exp --realtime: %s/%s: %s (logs in %s)\n", o.sc->name, v.name.c_str(),
                 why.c_str(), vdir.c_str());
    ok = false;
  };
  Child daemon =
      spawn("uroced",
            {runtime::find_uroced().string(), "--daemon", "--rate", std::to_string(k.rate_bps), "--ecn", ecn,
             "--pause", std::to_string(k.pause), "--idle-exit", "5", "--burst", std::to_string(k.burst)},
            {}, vdir + "/uroced.out");
  reap(daemon, true);  // --daemon returns once the daemon listens
  if (daemon.exit_code != 0) fail("uroced did not start");

  const std::string uroce = tools::self_exe().string();
  std::map<std::string, std::optional<std::string>> env = {
      {"UROCE_CC", v.cc},
      {"UROCE_CC_PARAMS", v.cc == "none" || k.cc_params.empty() ? std::nullopt : std::optional(k.cc_params)}};
  const uint16_t port = free_tcp_port();
  std::vector<std::string> server_cmd, client_cmd;
  if (o.sc->load == Load::kPerftest) {
    server_cmd = {"ib_write_bw", "-d",
                  "uroce0",      "-x",
                  "0",           "-F",
                  "-q",          std::to_string(k.flows),
                  "-s",          std::to_string(k.msg),
                  "-D",          std::to_string(o.duration),
                  "-p",          std::to_string(port)};
    client_cmd = server_cmd;
    client_cmd.push_back("127.0.0.1");
  } else if (o.sc->load == Load::kAllreduce) {
    server_cmd = {traffic_program().string(), "allreduce",          "0",
                  std::to_string(k.flows),    std::to_string(port), std::to_string(k.msg),
                  std::to_string(o.duration)};
  } else {
    server_cmd = {traffic_program().string(), "server", std::to_string(port), std::to_string(k.flows),
                  std::to_string(k.msg)};
    client_cmd = {traffic_program().string(),
                  "client",
                  "127.0.0.1",
                  std::to_string(port),
                  std::to_string(k.msg),
                  std::to_string(o.duration),
                  std::to_string(k.depth)};
  }
  auto under_uroce = [&](std::vector<std::string> cmd) {
    cmd.insert(cmd.begin(), {uroce, "run", "--port", "uroced", "--"});
    return cmd;
  };
  if (ok) {
    server = spawn("server", under_uroce(server_cmd), env, vdir + "/server.log");
    if (!wait_for([&] { return tcp_listening(port) || reap(server, false); }, kStartTimeoutS) || server.done)
      fail("the receiver did not listen on TCP port " + std::to_string(port));
  }
  if (ok) {
    const unsigned nclients = o.sc->load == Load::kPerftest    ? 1
                              : o.sc->load == Load::kAllreduce ? k.flows - 1
                                                               : k.flows;
    for (unsigned i = 0; i < nclients; ++i) {
      if (o.sc->load == Load::kAllreduce) {  // rank i + 1
        client_cmd = server_cmd;
        client_cmd[2] = std::to_string(i + 1);
      }
      clients.push_back(spawn("client " + std::to_string(i), under_uroce(client_cmd), env,
                              vdir + "/client" + (nclients > 1 ? std::to_string(i) : "") + ".log"));
    }
  }

  // Sampling until every sender has exited.
  if (ok) {
    m->receiver = server.pid;
    for (const Child& c : clients) m->senders.push_back(c.pid);
    m->tx_series.resize(clients.size());
    EngineProbe rx(server.pid);
    std::vector<EngineProbe> tx;
    for (const Child& c : clients) tx.emplace_back(c.pid);
    m->t0_s = now_s();
    const double deadline = m->t0_s + kStartTimeoutS + o.duration + kExitGraceS;
    auto next = std::chrono::steady_clock::now();
    std::string err;
    for (uint64_t tick = 0;; ++tick) {
      EngineSample s;
      if (rx.sample(&s)) m->rx.push_back(std::move(s));
      SwitchSample sw;
      if (sample_switch(&sw, &err)) m->sw.push_back(std::move(sw));
      if (tick % kSenderEvery == 0)
        for (size_t i = 0; i < tx.size(); ++i)
          if (tx[i].sample(&s)) m->tx_series[i].push_back({s.t_s, s.qps});
      bool all_done = true;
      for (Child& c : clients) all_done = reap(c, false) && all_done;
      if (all_done || reap(server, false)) break;
      if (now_s() > deadline) {
        fail("the senders did not finish in time; stopping them");
        break;
      }
      next += kSamplePeriod;
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now;  // behind (not scheduled): sample now, do not catch up in a burst
      std::this_thread::sleep_until(next);
    }
    for (size_t i = 0; i < tx.size(); ++i)
      if (const EngineSample* last = tx[i].last()) m->tx[clients[i].pid] = *last;
  }
  for (Child& c : clients) {
    stop(c, static_cast<int>(kExitGraceS * 1000));
    m->client_exit = std::max(m->client_exit, c.exit_code);
    if (c.exit_code != 0) fail(c.name + " exited with " + std::to_string(c.exit_code));
  }
  if (server.pid > 0 && !wait_for([&] { return reap(server, false); }, 20)) stop(server);
  std::string reply, err;
  runtime::request("stop", &reply, &err);
  std::error_code ec;
  fs::copy_file(runtime::log_path(tools::runtime_base(false)), vdir + "/uroced.log",
                fs::copy_options::overwrite_existing, ec);
  fs::remove_all(rtdir, ec);
  if (saved_xdg) {
    setenv("XDG_RUNTIME_DIR", saved_xdg->c_str(), 1);
  } else {
    unsetenv("XDG_RUNTIME_DIR");
  }
  return ok;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model;
  unsigned n = 0;
  while (std::getline(f, line)) {
    if (line.rfind("processor", 0) == 0) ++n;
    if (model.empty() && line.rfind("model name", 0) == 0) model = line.substr(line.find(':') + 2);
  }
  return model + ", " + std::to_string(n) + " CPUs";
}

void write_manifest(const Options& o, const Knobs& k, const std::vector<Variant>& variants,
                    const std::string& dir) {
  std::ofstream f(dir + "/manifest.txt");
  f << "revision " << tools::version_line("uroce") << "\nscenario " << o.sc->name
    << " (real time, through uroced)\n"
    << "cpu " << cpu_model() << "\nduration_s " << o.duration << "\ncc " << o.cc << "\nsample_period_us "
    << std::chrono::microseconds(kSamplePeriod).count() << "\nrate_interval_ms " << kRateIntervalS * 1000
    << "\n";
  std::string rerun = "uroce exp --realtime " + std::string(o.sc->name) + " --duration " +
                      std::to_string(o.duration) + " --cc " + o.cc;
  for (const auto& [name, def] : o.sc->keys) {
    f << "knob " << name << " " << o.key(name) << " (" << (o.given.count(name) ? "given" : "default")
      << ")\n";
    rerun += " " + name + "=" + o.key(name);
  }
  if (!k.cc_params.empty()) {
    f << "cc_params " << k.cc_params << " (UROCE_CC_PARAMS of the CC variants";
    for (const auto& [p, v] : o.given_cc) f << "; cc." << p << " given";
    f << ")\n";
    if (o.sc->cc_why[0]) f << "cc_params_why " << o.sc->cc_why << "\n";
    for (size_t s = 0, e; s < k.cc_params.size(); s = e + 1) {
      e = k.cc_params.find(',', s);
      if (e == std::string::npos) e = k.cc_params.size();
      rerun += " cc." + k.cc_params.substr(s, e - s);
    }
  }
  for (const Variant& v : variants)
    f << "variant " << v.name << ": UROCE_CC=" << v.cc << ", ECN "
      << (v.ecn ? std::to_string(k.kmin / v.ecn_divisor) + ".." + std::to_string(k.kmax / v.ecn_divisor) +
                      " B pmax " + k.pmax
                : std::string("off"))
      << ", pause " << k.pause << " B\n";
  f << "rerun " << rerun << "\n";
}

// The ranks' own figures (their last output line: "allreduce: rank R of N, ... algbw A Gb/s busbw B Gb/s,
// sums checked"): the slowest rank's, as nccl-tests reports the collective's time.
std::string allreduce_line(const std::string& vdir, unsigned ranks) {
  double busbw = 0, algbw = 0;
  unsigned reported = 0;
  for (unsigned i = 0; i < ranks; ++i) {
    std::ifstream f(vdir +
                    (i == 0 ? "/server.log" : "/client" + (ranks > 2 ? std::to_string(i - 1) : "") + ".log"));
    for (std::string line; std::getline(f, line);) {
      const size_t a = line.find("algbw "), b = line.find("busbw ");
      if (line.rfind("allreduce: rank", 0) != 0 || a == std::string::npos || b == std::string::npos) continue;
      const double al = std::atof(line.c_str() + a + 6), bu = std::atof(line.c_str() + b + 6);
      busbw = reported == 0 ? bu : std::min(busbw, bu);
      algbw = reported == 0 ? al : std::min(algbw, al);
      ++reported;
    }
  }
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "allreduce          ranks %u  reported %u  algbw %.3f Gb/s  busbw %.3f Gb/s (slowest rank; busbw = "
      "algbw * 2(n-1)/n)",
      ranks, reported, algbw, busbw);
  return buf;
}

}  // namespace

int run_realtime(const std::vector<std::string>& args) {
  bool listed = false;
  const Options o = parse(args, &listed);
  if (listed) {
    usage(stdout);
    return 0;
  }
  const Knobs k = check(o);
  if (o.sc->load == Load::kPerftest && std::system("command -v ib_write_bw >/dev/null 2>&1") != 0)
    throw UsageError("ib_write_bw (perftest) is not installed");
  const std::vector<Variant> variants = o.sc->variants(o.cc, o.key("kmin"));
  const std::string base = o.out + "/" + o.sc->name;
  fs::create_directories(base);
  write_manifest(o, k, variants, base);
  const bool gnuplot = o.plots && have_gnuplot();
  if (o.plots && !gnuplot)
    std::fprintf(stderr,
                 "uroce exp --realtime: gnuplot not found; writing CSVs only (apt install gnuplot-nox)\n");
  std::vector<std::string> lines;
  bool all_ok = true;
  for (const Variant& v : variants) {
    const std::string vdir = base + "/" + v.name;
    fs::create_directories(vdir);
    Measured m;
    all_ok = run_variant(o, k, v, vdir, &m) && all_ok;
    const Report r = analyse(m, kRateIntervalS);
    write_csvs(r.series, vdir);
    if (gnuplot) plot(r.series, vdir, std::string(o.sc->name) + " / " + v.name + " (real time)");
    lines.push_back(summary_line(m, r, k.rate_bps, o.key("rate")));
    if (o.sc->load == Load::kAllreduce) lines.push_back(allreduce_line(vdir, k.flows));
  }
  std::ofstream summary(base + "/summary.txt");
  for (const std::string& l : lines) {
    std::printf("%s\n", l.c_str());
    summary << l << "\n";
  }
  std::printf("CSV%s in %s/<variant>/ (flows.csv, queues.csv, counters.csv, cc_rates.csv); manifest.txt\n",
              gnuplot ? " and plots" : "", base.c_str());
  return all_ok ? 0 : 1;
}

}  // namespace uroce::exp::rt
