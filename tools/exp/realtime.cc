#include "tools/exp/realtime.h"

#include <signal.h>
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
#include "tools/exp/rt_scenarios.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/paths.h"

namespace uroce::exp::rt {

namespace {

namespace fs = std::filesystem;
using tools::UsageError;

constexpr auto kSamplePeriod = std::chrono::microseconds(1000);  // receiver counters and the port's queue
constexpr int kSenderEvery = 10;                                 // senders' CC rates: every 10th sample
constexpr double kRateIntervalS = 0.010;                         // flows.csv: rates over 10 ms
constexpr double kStartTimeoutS = 30;                            // server listening, processes set up
constexpr double kExitGraceS = 60;                               // past --duration before clients are stopped
constexpr double kCloseTimeoutS = 20;  // for a sender to exit once the sampling ended

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
  std::vector<std::string> uroced_cmd = {runtime::find_uroced().string(),
                                         "--daemon",
                                         "--rate",
                                         std::to_string(k.rate_bps),
                                         "--ecn",
                                         ecn,
                                         "--pause",
                                         std::to_string(k.pause),
                                         "--idle-exit",
                                         "5",
                                         "--burst",
                                         std::to_string(k.burst)};
  if (k.credit) uroced_cmd.insert(uroced_cmd.end(), {"--credit", std::to_string(k.credit)});
  Child daemon = spawn("uroced", uroced_cmd, {}, vdir + "/uroced.out");
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

  // Captures of the receiver and the first sender; each ends when its process exits.
  std::vector<Child> captures;
  if (ok && k.capture)
    for (const auto& [name, pid] : {std::pair<std::string, pid_t>{"receiver", server.pid},
                                    std::pair<std::string, pid_t>{"sender0", clients.front().pid}}) {
      // Once its device is open (it answers on its control socket); 128 bytes of each frame: the headers.
      EngineProbe probe(pid);
      EngineSample s;
      if (!wait_for([&] { return probe.sample(&s); }, kStartTimeoutS)) {
        fail("no device to capture in " + name);
        break;
      }
      captures.push_back(spawn("capture " + name,
                               {uroce, "capture", "--pid", std::to_string(pid), "-w",
                                vdir + "/" + name + ".pcap", "--force", "-s", "128"},
                               {}, vdir + "/capture-" + name + ".log"));
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
  // The receiver may finish first (perftest's server; uroce-traffic's once every sender reported, while the
  // senders still close their devices): the senders get time to exit by themselves unless they overran.
  if (ok)
    wait_for(
        [&] { return std::all_of(clients.begin(), clients.end(), [](Child& c) { return reap(c, false); }); },
        kCloseTimeoutS);
  for (Child& c : clients) {
    stop(c);
    m->client_exit = std::max(m->client_exit, c.exit_code);
    if (c.exit_code != 0) fail(c.name + " exited with " + std::to_string(c.exit_code));
  }
  if (server.pid > 0 && !wait_for([&] { return reap(server, false); }, 20)) stop(server);
  for (Child& c : captures)
    if (!wait_for([&] { return reap(c, false); }, 5)) stop(c);
  // uroced answers "stop" and then closes its ports and removes its files: the directory goes once it has
  // exited (removed under its feet, parts of it stayed behind).
  std::string reply, err;
  pid_t daemon_pid = 0;
  if (runtime::request("ping", &reply, &err) && reply.rfind("ok pid=", 0) == 0)
    daemon_pid = static_cast<pid_t>(std::atoi(reply.c_str() + 7));
  runtime::request("stop", &reply, &err);
  if (daemon_pid > 0) wait_for([&] { return kill(daemon_pid, 0) != 0; }, 10);
  std::error_code ec;
  fs::copy_file(runtime::log_path(tools::runtime_base(false)), vdir + "/uroced.log",
                fs::copy_options::overwrite_existing, ec);
  fs::remove_all(rtdir, ec);
  if (ec)
    std::fprintf(stderr, "uroce exp --realtime: could not remove %s: %s\n", rtdir.c_str(),
                 ec.message().c_str());
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
