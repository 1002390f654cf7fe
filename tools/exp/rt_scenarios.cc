#include "tools/exp/rt_scenarios.h"

#include <algorithm>
#include <stdexcept>

#include "tools/uroce/cli.h"
#include "tools/uroced/config.h"

namespace uroce::exp::rt {

using tools::UsageError;

namespace {

const std::vector<std::pair<std::string, std::string>> kPerftestKeys = {
    {"rate", "1g"},  {"flows", "2"},   {"kmin", "32k"},  {"kmax", "256k"},
    {"pmax", "0.2"}, {"msg", "65536"}, {"pause", "512k"}};

const Scenario* find(const std::string& name) {
  for (const Scenario& s : scenarios())
    if (name == s.name) return &s;
  return nullptr;
}

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

}  // namespace

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
      "bytes, depth = WRITEs in flight per sender, burst = the port's token bucket depth, credit = BYTES\n"
      "runs uroced with link credits instead of PFC (--credit), capture=1 writes receiver.pcap and\n"
      "sender0.pcap (uroce capture) per variant; cc.PARAM=V sets a\n"
      "parameter of the algorithm "
      "(UROCE_CC_PARAMS, docs/cc.md), e.g. cc.clamp_tgt_rate=1.\n"
      "--cc sets UROCE_CC for the CC variants (default dcqcn); --duration the seconds of traffic (default "
      "6).\n"
      "Samples every 1 ms; writes flows.csv, cc_rates.csv, queues.csv, counters.csv (the simulator's\n"
      "files), PNG plots, summary.txt and manifest.txt under DIR/SCENARIO.\n");
}

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
  if (o.key("credit") != "off" && !uroced::parse_bytes(o.key("credit"), &k.credit))
    throw UsageError("key 'credit' must be a byte count (64k) or off, got '" + o.key("credit") + "'");
  if (o.key("capture") != "0" && o.key("capture") != "1")
    throw UsageError("key 'capture' must be 0 or 1, got '" + o.key("capture") + "'");
  k.capture = o.key("capture") == "1";
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
    for (const auto& [name, def] : common_keys()) known += " " + name;
    const auto named = [&](const auto& kv) { return kv.first == k; };
    if (o.key(k).empty() || (std::none_of(o.sc->keys.begin(), o.sc->keys.end(), named) &&
                             std::none_of(common_keys().begin(), common_keys().end(), named)))
      throw UsageError("unknown key '" + k + "' (" + known + " cc.PARAM)");
  }
  return o;
}

}  // namespace uroce::exp::rt
