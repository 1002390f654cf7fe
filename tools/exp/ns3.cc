#include "tools/exp/ns3.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <deque>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cc/cc.h"
#include "fabric/rng.h"
#include "ns3_cdfs.h"  // generated: cmake/embed_cdfs.cmake
#include "sim/fabric_queue.h"
#include "tools/exp/experiment.h"
#include "tools/exp/text.h"

namespace uroce::exp::ns3 {

namespace {

// Every key ns-3 HPCC's third.cc reads. A key outside this set is a typo, refused; a key in it that uroce
// does not model is listed in the manifest as read and not used.
const std::set<std::string> kNs3Keys = {"ENABLE_QCN",
                                        "USE_DYNAMIC_PFC_THRESHOLD",
                                        "CLAMP_TARGET_RATE",
                                        "PAUSE_TIME",
                                        "DATA_RATE",
                                        "LINK_DELAY",
                                        "PACKET_PAYLOAD_SIZE",
                                        "L2_CHUNK_SIZE",
                                        "L2_ACK_INTERVAL",
                                        "L2_BACK_TO_ZERO",
                                        "TOPOLOGY_FILE",
                                        "FLOW_FILE",
                                        "TRACE_FILE",
                                        "TRACE_OUTPUT_FILE",
                                        "SIMULATOR_STOP_TIME",
                                        "ALPHA_RESUME_INTERVAL",
                                        "RP_TIMER",
                                        "EWMA_GAIN",
                                        "FAST_RECOVERY_TIMES",
                                        "RATE_AI",
                                        "RATE_HAI",
                                        "ERROR_RATE_PER_LINK",
                                        "CC_MODE",
                                        "RATE_DECREASE_INTERVAL",
                                        "MIN_RATE",
                                        "FCT_OUTPUT_FILE",
                                        "HAS_WIN",
                                        "GLOBAL_T",
                                        "MI_THRESH",
                                        "VAR_WIN",
                                        "FAST_REACT",
                                        "U_TARGET",
                                        "INT_MULTI",
                                        "RATE_BOUND",
                                        "ACK_HIGH_PRIO",
                                        "DCTCP_RATE_AI",
                                        "PFC_OUTPUT_FILE",
                                        "LINK_DOWN",
                                        "ENABLE_TRACE",
                                        "KMAX_MAP",
                                        "KMIN_MAP",
                                        "PMAX_MAP",
                                        "BUFFER_SIZE",
                                        "QLEN_MON_FILE",
                                        "QLEN_MON_START",
                                        "QLEN_MON_END",
                                        "MULTI_RATE",
                                        "SAMPLE_FEEDBACK",
                                        "PINT_LOG_BASE",
                                        "PINT_PROB"};

std::runtime_error file_error(const std::string& path, size_t line, const std::string& what) {
  return std::runtime_error(path + (line ? ":" + std::to_string(line) : "") + ": " + what);
}

std::ifstream open_in(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot open the ") + what + " '" + path + "'");
  return in;
}

// "KEY n rate value rate value ..." maps (KMAX_MAP and friends): rate (b/s) -> value.
std::map<uint64_t, double> rate_map(const Config& c, const std::string& key) {
  std::map<uint64_t, double> m;
  if (!c.has(key)) return m;
  std::istringstream in(c.kv.at(key));
  size_t n = 0;
  if (!(in >> n)) throw std::invalid_argument(c.path + ": " + key + ": expected a count first");
  for (size_t i = 0; i < n; ++i) {
    double rate = 0, v = 0;
    if (!(in >> rate >> v))
      throw std::invalid_argument(c.path + ": " + key + ": expected " + std::to_string(n) +
                                  " rate/value pairs");
    m[static_cast<uint64_t>(rate)] = v;
  }
  return m;
}

// The value a rate map gives a port of `rate`; ns-3 requires an entry for every link speed.
double at_rate(const std::map<uint64_t, double>& m, uint64_t rate, const char* key) {
  auto it = m.find(rate);
  if (it == m.end())
    throw std::invalid_argument(std::string(key) + " has no entry for " + std::to_string(rate) +
                                " b/s, a link speed of the topology (ns-3 requires one per speed)");
  return it->second;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// One path's facts between two hosts, as ns-3's CalculateRoute finds them (BFS over switches).
struct PathFacts {
  uint64_t delay_ns = 0;     // one way, summed link delays
  uint64_t tx_delay_ns = 0;  // one payload-sized packet's serialization, summed over the hops
  uint64_t bw_bps = 0;       // the slowest link
};

std::vector<PathFacts> paths_from(const Topology& t, uint32_t host, uint32_t payload) {
  std::vector<std::vector<std::pair<uint32_t, const TopoLink*>>> adj(t.nodes);
  for (const TopoLink& l : t.links) {
    adj[l.a].emplace_back(l.b, &l);
    adj[l.b].emplace_back(l.a, &l);
  }
  std::vector<PathFacts> f(t.nodes);
  std::vector<int> dist(t.nodes, -1);
  std::deque<uint32_t> q{host};
  dist[host] = 0;
  f[host].bw_bps = UINT64_MAX;
  while (!q.empty()) {
    const uint32_t now = q.front();
    q.pop_front();
    for (const auto& [next, l] : adj[now]) {
      if (dist[next] >= 0) continue;
      dist[next] = dist[now] + 1;
      f[next].delay_ns = f[now].delay_ns + l->delay_ns;
      f[next].tx_delay_ns = f[now].tx_delay_ns + uint64_t{payload} * 8'000'000'000 / l->rate_bps;
      f[next].bw_bps = std::min(f[now].bw_bps, l->rate_bps);
      if (t.is_switch[next]) q.push_back(next);  // no path runs through a host
    }
  }
  return f;
}

// Bytes on the wire per packet beyond its payload: Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4 (the first
// packet of a WRITE also carries a 16-byte RETH).
constexpr uint32_t kPacketOverhead = 14 + 20 + 8 + 12 + 4;
constexpr uint32_t kRethBytes = 16;

Mtu mtu_for_payload(uint32_t payload, uint32_t* bytes) {
  // IB path MTUs are powers of two; take the nearest to ns-3's payload size.
  static const std::pair<uint32_t, Mtu> kMtus[] = {
      {256, Mtu::k256}, {512, Mtu::k512}, {1024, Mtu::k1024}, {2048, Mtu::k2048}, {4096, Mtu::k4096}};
  auto best = kMtus[0];
  for (const auto& m : kMtus)
    if (std::llabs(static_cast<long long>(m.first) - payload) <
        std::llabs(static_cast<long long>(best.first) - payload))
      best = m;
  *bytes = best.first;
  return best.second;
}

struct CcChoice {
  std::string name;
  cc::Params params;
  std::vector<std::string> used;  // config keys the mapping read
};

double mbps_of(const Config& c, const std::string& key) {
  return static_cast<double>(parse_rate(c.kv.at(key))) / 1e6;
}

// ns-3's CC_MODE and its DCQCN / HPCC / TIMELY / DCTCP keys in uroce's parameter names.
CcChoice map_cc(const Config& c, const std::string& forced, uint64_t max_rtt_ns, uint32_t mtu_bytes) {
  CcChoice r;
  const int mode = static_cast<int>(c.num("CC_MODE", 1));
  if (!forced.empty()) {
    r.name = forced;
  } else {
    switch (mode) {
      case 1:
        r.name = "dcqcn";
        break;
      case 3:
        r.name = "hpcc";
        break;
      case 7:
        r.name = "timely";
        break;
      case 8:
        r.name = "dctcp";
        break;
      default:
        throw std::invalid_argument(
            c.path + ": CC_MODE " + std::to_string(mode) +
            " has no uroce algorithm (1 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP; or --cc NAME)");
    }
  }
  auto take = [&](const char* key, const char* param, double v) {
    r.params[param] = v;
    r.used.push_back(key);
  };
  if (r.name == "dcqcn") {
    // ns-3's DCQCN (mlx model) has no byte counter: the timer alone drives increases.
    r.params["rpg_byte_reset"] = 0;
    if (c.has("RP_TIMER")) take("RP_TIMER", "rpg_time_reset", c.num("RP_TIMER", 0));
    if (c.has("ALPHA_RESUME_INTERVAL"))
      take("ALPHA_RESUME_INTERVAL", "dce_tcp_rtt", c.num("ALPHA_RESUME_INTERVAL", 0));
    if (c.has("RATE_DECREASE_INTERVAL"))
      take("RATE_DECREASE_INTERVAL", "rate_reduce_monitor_period", c.num("RATE_DECREASE_INTERVAL", 0));
    if (c.has("EWMA_GAIN")) take("EWMA_GAIN", "dce_tcp_g", std::round(1024 * (1 - c.num("EWMA_GAIN", 0))));
    if (c.has("FAST_RECOVERY_TIMES"))
      take("FAST_RECOVERY_TIMES", "rpg_threshold", c.num("FAST_RECOVERY_TIMES", 1));
    if (c.has("RATE_AI")) take("RATE_AI", "rpg_ai_rate", mbps_of(c, "RATE_AI"));
    if (c.has("RATE_HAI")) take("RATE_HAI", "rpg_hai_rate", mbps_of(c, "RATE_HAI"));
    if (c.has("MIN_RATE")) take("MIN_RATE", "rpg_min_rate", mbps_of(c, "MIN_RATE"));
    if (c.has("CLAMP_TARGET_RATE"))
      take("CLAMP_TARGET_RATE", "clamp_tgt_rate", c.num("CLAMP_TARGET_RATE", 0));
  } else if (r.name == "hpcc") {
    // GLOBAL_T 1 (ns-3's default): T is the largest base RTT of the topology.
    r.params["base_rtt"] = static_cast<double>(max_rtt_ns) / 1000;
    if (c.has("U_TARGET")) take("U_TARGET", "eta", c.num("U_TARGET", 0.95));
    if (c.has("MI_THRESH")) take("MI_THRESH", "max_stage", c.num("MI_THRESH", 5));
    // ns-3 adds RATE_AI per RTT; uroce's HPCC adds w_ai bytes to the window per RTT.
    if (c.has("RATE_AI"))
      take("RATE_AI", "w_ai", mbps_of(c, "RATE_AI") * 1e6 * static_cast<double>(max_rtt_ns) / 8e9);
  } else if (r.name == "timely") {
    if (c.has("RATE_AI")) take("RATE_AI", "delta", mbps_of(c, "RATE_AI"));
    if (c.has("MIN_RATE")) take("MIN_RATE", "min_rate", mbps_of(c, "MIN_RATE"));
  } else if (r.name == "dctcp") {
    // ns-3's DCTCP (CC_MODE 8) sizes its window from the largest base RTT too.
    r.params["base_rtt"] = static_cast<double>(max_rtt_ns) / 1000;
    if (c.has("EWMA_GAIN")) take("EWMA_GAIN", "g", c.num("EWMA_GAIN", 0));
    if (c.has("DCTCP_RATE_AI")) take("DCTCP_RATE_AI", "dctcp_rate_ai", mbps_of(c, "DCTCP_RATE_AI"));
    if (c.has("MIN_RATE")) take("MIN_RATE", "min_rate", mbps_of(c, "MIN_RATE"));
  } else if (r.name == "swift") {
    r.params["mss"] = mtu_bytes;  // Swift counts its window in packets of the path MTU
  }
  return r;
}

}  // namespace

std::string Config::str(const std::string& k, const std::string& def) const {
  auto it = kv.find(k);
  return it == kv.end() ? def : it->second;
}

double Config::num(const std::string& k, double def) const {
  auto it = kv.find(k);
  if (it == kv.end()) return def;
  size_t n = 0;
  const double v = leading_number(it->second, &n);
  if (n == 0) throw std::invalid_argument(path + ": " + k + " '" + it->second + "' is not a number");
  return v;
}

Config read_config(const std::string& path) {
  std::ifstream in = open_in(path, "config");
  Config c;
  c.path = path;
  std::string line;
  size_t no = 0;
  while (std::getline(in, line)) {
    ++no;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find_first_of(" \t");
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : trim(line.substr(sp));
    if (kNs3Keys.count(key) == 0) throw file_error(path, no, "'" + key + "' is not an ns-3 HPCC config key");
    if (value.empty()) throw file_error(path, no, key + " has no value");
    if (c.kv.count(key) == 0) c.keys.push_back(key);
    c.kv[key] = value;  // ns-3 reads the file top down: a later line wins
  }
  return c;
}

uint64_t parse_rate(const std::string& text) {
  size_t n = 0;
  const double v = leading_number(text, &n);
  std::string unit = text.substr(n);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return std::tolower(ch); });
  double mult = 0;
  if (unit.empty() || unit == "bps" || unit == "b/s") mult = 1;
  if (unit == "k" || unit == "kbps" || unit == "kb/s") mult = 1e3;
  if (unit == "m" || unit == "mbps" || unit == "mb/s") mult = 1e6;
  if (unit == "g" || unit == "gbps" || unit == "gb/s") mult = 1e9;
  if (n == 0 || mult == 0 || v <= 0)
    throw std::invalid_argument("bad rate '" + text + "' (e.g. 100Gbps, 50Mb/s)");
  return static_cast<uint64_t>(std::llround(v * mult));
}

uint64_t parse_delay(const std::string& text) {
  size_t n = 0;
  const double v = leading_number(text, &n);
  const std::string unit = text.substr(n);
  double mult = 0;
  if (unit == "ns") mult = 1;
  if (unit == "us") mult = 1e3;
  if (unit == "ms") mult = 1e6;
  if (unit == "s") mult = 1e9;
  if (n == 0 || mult == 0 || v < 0)
    throw std::invalid_argument("bad delay '" + text + "' (e.g. 0.001ms, 1000ns)");
  return static_cast<uint64_t>(std::llround(v * mult));
}

uint32_t node_ip(uint32_t node) {
  return 0x0b000001u + (node / 256) * 0x00010000u + (node % 256) * 0x00000100u;
}

Topology read_topology(const std::string& path) {
  std::ifstream in = open_in(path, "topology file");
  Topology t;
  uint32_t switches = 0, links = 0;
  if (!(in >> t.nodes >> switches >> links) || t.nodes == 0 || switches > t.nodes)
    throw file_error(path, 1, "expected 'nodes switches links'");
  t.is_switch.assign(t.nodes, false);
  for (uint32_t i = 0; i < switches; ++i) {
    uint32_t id = 0;
    if (!(in >> id) || id >= t.nodes)
      throw file_error(
          path, 2, "expected " + std::to_string(switches) + " switch ids below " + std::to_string(t.nodes));
    t.is_switch[id] = true;
  }
  for (uint32_t i = 0; i < links; ++i) {
    TopoLink l;
    std::string rate, delay;
    if (!(in >> l.a >> l.b >> rate >> delay >> l.error_rate))
      throw file_error(path, 3 + i,
                       "expected 'a b rate delay error_rate' (link " + std::to_string(i + 1) + " of " +
                           std::to_string(links) + ")");
    if (l.a >= t.nodes || l.b >= t.nodes || l.a == l.b)
      throw file_error(path, 3 + i,
                       "link " + std::to_string(l.a) + "-" + std::to_string(l.b) +
                           ": node ids must differ and be below " + std::to_string(t.nodes));
    if (!t.is_switch[l.a] && !t.is_switch[l.b])
      throw file_error(path, 3 + i,
                       "link " + std::to_string(l.a) + "-" + std::to_string(l.b) + " joins two hosts");
    if (l.error_rate < 0 || l.error_rate >= 1) throw file_error(path, 3 + i, "error_rate must be in [0, 1)");
    try {
      l.rate_bps = parse_rate(rate);
      l.delay_ns = parse_delay(delay);
    } catch (const std::invalid_argument& e) {
      throw file_error(path, 3 + i, e.what());
    }
    t.links.push_back(l);
  }
  return t;
}

void write_topology(FILE* out, const Topology& t) {
  uint32_t switches = 0;
  for (bool s : t.is_switch) switches += s;
  std::fprintf(out, "%u %u %zu\n", t.nodes, switches, t.links.size());
  bool first = true;
  for (uint32_t i = 0; i < t.nodes; ++i)
    if (t.is_switch[i]) {
      std::fprintf(out, first ? "%u" : " %u", i);
      first = false;
    }
  std::fprintf(out, "\n");
  for (const TopoLink& l : t.links) {
    const std::string rate = l.rate_bps % 1'000'000'000 == 0
                                 ? std::to_string(l.rate_bps / 1'000'000'000) + "Gbps"
                                 : std::to_string(l.rate_bps / 1'000'000) + "Mbps";
    std::fprintf(out, "%u %u %s %" PRIu64 "ns %g\n", l.a, l.b, rate.c_str(), l.delay_ns, l.error_rate);
  }
}

std::vector<FlowLine> read_flows(const std::string& path, const Topology& t) {
  std::ifstream in = open_in(path, "flow file");
  size_t n = 0;
  if (!(in >> n)) throw file_error(path, 1, "expected the number of flows");
  std::vector<FlowLine> flows;
  for (size_t i = 0; i < n; ++i) {
    FlowLine f;
    if (!(in >> f.src >> f.dst >> f.pg >> f.dport >> f.bytes >> f.start_s))
      throw file_error(path, 2 + i,
                       "expected 'src dst pg dport size start_s' (flow " + std::to_string(i + 1) + " of " +
                           std::to_string(n) + ")");
    if (f.src >= t.nodes || f.dst >= t.nodes || t.is_switch[f.src] || t.is_switch[f.dst] || f.src == f.dst)
      throw file_error(path, 2 + i,
                       "flow " + std::to_string(f.src) + " -> " + std::to_string(f.dst) +
                           ": both ends must be distinct hosts of the topology");
    if (f.bytes == 0 || f.start_s < 0) throw file_error(path, 2 + i, "size must be > 0 and start >= 0");
    flows.push_back(f);
  }
  return flows;
}

void write_flows(FILE* out, const std::vector<FlowLine>& flows) {
  std::fprintf(out, "%zu\n", flows.size());
  for (const FlowLine& f : flows)
    std::fprintf(out, "%u %u %u %u %" PRIu64 " %.9f\n", f.src, f.dst, f.pg, f.dport, f.bytes, f.start_s);
}

double Cdf::mean() const {
  double s = 0;
  for (size_t i = 1; i < points.size(); ++i)
    s += (points[i].first + points[i - 1].first) / 2 * (points[i].second - points[i - 1].second);
  return s / 100;
}

double Cdf::sample(double u01) const {
  const double y = u01 * 100;
  for (size_t i = 1; i < points.size(); ++i)
    if (y <= points[i].second) {
      const auto [x0, y0] = points[i - 1];
      const auto [x1, y1] = points[i];
      return x0 + (x1 - x0) / (y1 - y0) * (y - y0);
    }
  return points.back().first;
}

Cdf read_cdf(const std::string& path_or_name) {
  std::string text;
  const char* builtin = builtin_cdf(path_or_name);
  if (builtin != nullptr) {
    text = builtin;
  } else {
    std::ifstream in = open_in(path_or_name, "flow-size CDF (or one of: websearch, fb_hadoop)");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  Cdf c;
  std::istringstream in(text);
  std::string line;
  size_t no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (trim(line).empty()) continue;
    std::istringstream ls(line);
    double x = 0, y = 0;
    if (!(ls >> x >> y)) throw file_error(path_or_name, no, "expected 'size percentile'");
    if (!c.points.empty() && (x <= c.points.back().first || y <= c.points.back().second))
      throw file_error(path_or_name, no, "sizes and percentiles must both rise");
    c.points.emplace_back(x, y);
  }
  if (c.points.size() < 2 || c.points.front().second != 0 || c.points.back().second != 100)
    throw file_error(path_or_name, 0, "a CDF runs from percentile 0 to 100");
  return c;
}

std::vector<FlowLine> generate_flows(const Cdf& cdf, const GenOptions& o) {
  if (o.hosts < 2) throw std::invalid_argument("traffic needs at least 2 hosts");
  if (!(o.load > 0 && o.load <= 1)) throw std::invalid_argument("load must be in (0, 1]");
  fabric::Rng rng(o.seed);
  const double mean_gap_ns = cdf.mean() * 8 / (static_cast<double>(o.bandwidth_bps) * o.load) * 1e9;
  const uint64_t base = static_cast<uint64_t>(std::llround(o.start_s * 1e9));
  const uint64_t end = base + static_cast<uint64_t>(std::llround(o.seconds * 1e9));
  auto gap = [&] { return static_cast<uint64_t>(-std::log(1 - rng.uniform()) * mean_gap_ns); };
  // (next arrival, host), earliest first; equal times by host id, so one seed gives one trace.
  std::set<std::pair<uint64_t, uint32_t>> next;
  for (uint32_t h = 0; h < o.hosts; ++h) next.emplace(base + gap(), h);
  std::vector<FlowLine> flows;
  while (!next.empty()) {
    const auto [t, src] = *next.begin();
    next.erase(next.begin());
    if (t > end) continue;
    FlowLine f;
    f.src = src;
    f.dst = static_cast<uint32_t>(rng.below(o.hosts - 1));
    if (f.dst >= src) ++f.dst;
    f.bytes = std::max<uint64_t>(1, static_cast<uint64_t>(cdf.sample(rng.uniform())));
    f.start_s = static_cast<double>(t) * 1e-9;
    flows.push_back(f);
    next.emplace(t + gap(), src);
  }
  return flows;
}

Topology fat_tree(uint32_t k, uint64_t rate_bps, uint64_t delay_ns) {
  if (k < 2 || k % 2 != 0 || k > 64) throw std::invalid_argument("fat tree: k must be even, 2..64");
  const uint32_t half = k / 2, hosts = k * k * k / 4, edges = k * k / 2, aggs = k * k / 2, cores = k * k / 4;
  Topology t;
  t.nodes = hosts + edges + aggs + cores;
  t.is_switch.assign(t.nodes, false);
  for (uint32_t i = hosts; i < t.nodes; ++i) t.is_switch[i] = true;
  auto link = [&](uint32_t a, uint32_t b) { t.links.push_back(TopoLink{a, b, rate_bps, delay_ns, 0}); };
  const uint32_t edge0 = hosts, agg0 = hosts + edges, core0 = hosts + edges + aggs;
  for (uint32_t h = 0; h < hosts; ++h) link(h, edge0 + h / half);
  for (uint32_t pod = 0; pod < k; ++pod)
    for (uint32_t e = 0; e < half; ++e)
      for (uint32_t a = 0; a < half; ++a) link(edge0 + pod * half + e, agg0 + pod * half + a);
  // Aggregation switch a of every pod goes to cores a*half .. a*half+half-1.
  for (uint32_t pod = 0; pod < k; ++pod)
    for (uint32_t a = 0; a < half; ++a)
      for (uint32_t c = 0; c < half; ++c) link(agg0 + pod * half + a, core0 + a * half + c);
  return t;
}

Topology leaf_spine(uint32_t leaves, uint32_t spines, uint32_t hosts_per_leaf, uint64_t host_bps,
                    uint64_t fabric_bps, uint64_t delay_ns) {
  if (leaves < 1 || spines < 1 || hosts_per_leaf < 1 || leaves * hosts_per_leaf < 2)
    throw std::invalid_argument("leaf-spine: needs leaves, spines and at least 2 hosts in all");
  const uint32_t hosts = leaves * hosts_per_leaf;
  Topology t;
  t.nodes = hosts + leaves + spines;
  t.is_switch.assign(t.nodes, false);
  for (uint32_t i = hosts; i < t.nodes; ++i) t.is_switch[i] = true;
  for (uint32_t h = 0; h < hosts; ++h)
    t.links.push_back(TopoLink{h, hosts + h / hosts_per_leaf, host_bps, delay_ns, 0});
  for (uint32_t l = 0; l < leaves; ++l)
    for (uint32_t s = 0; s < spines; ++s)
      t.links.push_back(TopoLink{hosts + l, hosts + leaves + s, fabric_bps, delay_ns, 0});
  return t;
}

int run(const std::string& config_path, const RunOptions& opt, FILE* out) {
  const Config c = read_config(config_path);
  for (const char* k : {"TOPOLOGY_FILE", "FLOW_FILE", "FCT_OUTPUT_FILE"})
    if (!c.has(k)) throw std::invalid_argument(config_path + ": " + k + " is missing");
  const Topology topo = read_topology(c.str("TOPOLOGY_FILE", ""));
  const std::vector<FlowLine> flows = read_flows(c.str("FLOW_FILE", ""), topo);
  std::set<std::string> used = {
      "TOPOLOGY_FILE", "FLOW_FILE",           "FCT_OUTPUT_FILE",    "PFC_OUTPUT_FILE", "SIMULATOR_STOP_TIME",
      "CC_MODE",       "PACKET_PAYLOAD_SIZE", "ENABLE_QCN",         "KMAX_MAP",        "KMIN_MAP",
      "PMAX_MAP",      "BUFFER_SIZE",         "ERROR_RATE_PER_LINK"};

  const uint32_t payload = static_cast<uint32_t>(c.num("PACKET_PAYLOAD_SIZE", 1000));
  uint32_t mtu_bytes = 0;
  const Mtu mtu = mtu_for_payload(payload, &mtu_bytes);

  // Facts of every host pair (ns-3's pairRtt / pairBw), from each host's BFS.
  std::vector<uint32_t> host_ids;
  std::vector<int> host_of(topo.nodes, -1);
  for (uint32_t n = 0; n < topo.nodes; ++n)
    if (!topo.is_switch[n]) {
      host_of[n] = static_cast<int>(host_ids.size());
      host_ids.push_back(n);
    }
  std::map<uint32_t, std::vector<PathFacts>> facts;
  for (const FlowLine& f : flows)
    if (facts.count(f.src) == 0) facts[f.src] = paths_from(topo, f.src, mtu_bytes);
  uint64_t max_rtt = 0;
  for (auto& [src, v] : facts)
    for (uint32_t h : host_ids)
      if (h != src && v[h].bw_bps != 0) max_rtt = std::max(max_rtt, 2 * v[h].delay_ns + v[h].tx_delay_ns);
  for (const FlowLine& f : flows)
    if (facts[f.src][f.dst].bw_bps == 0)
      throw std::invalid_argument("flow " + std::to_string(f.src) + " -> " + std::to_string(f.dst) +
                                  ": no path in the topology");

  // Each host's rate: its (first) link.
  std::vector<uint64_t> host_rate(topo.nodes, 0);
  std::set<uint64_t> rates;
  for (const TopoLink& l : topo.links) {
    for (uint32_t n : {l.a, l.b})
      if (!topo.is_switch[n] && host_rate[n] == 0) host_rate[n] = l.rate_bps;
    rates.insert(l.rate_bps);
  }
  const CcChoice cc = map_cc(c, opt.cc, max_rtt, mtu_bytes);
  used.insert(cc.used.begin(), cc.used.end());

  // The switches: ns-3's shared buffer, RED/ECN per the rate maps, PFC on the RoCE priority.
  fabric::FabricConfig fab;
  fab.enabled = true;
  fab.flow_control = fabric::FlowControl::kPfc;
  fab.buffer_bytes = static_cast<uint64_t>(c.num("BUFFER_SIZE", 16) * 1024 * 1024);
  fab.ecn.enabled = c.num("ENABLE_QCN", 1) != 0;
  fab.int_enabled = cc.name == "hpcc";
  const auto kmin = rate_map(c, "KMIN_MAP"), kmax = rate_map(c, "KMAX_MAP"), pmax = rate_map(c, "PMAX_MAP");
  // uroce's switch has one ECN profile; ns-3 sets one per port by its speed. Take the fastest speed's.
  const uint64_t fastest = *rates.rbegin();
  if (fab.ecn.enabled && !kmin.empty()) {
    fab.ecn.kmin_bytes = static_cast<uint32_t>(at_rate(kmin, fastest, "KMIN_MAP") * 1000);
    fab.ecn.kmax_bytes = static_cast<uint32_t>(at_rate(kmax, fastest, "KMAX_MAP") * 1000);
    fab.ecn.pmax = at_rate(pmax, fastest, "PMAX_MAP");
  }
  uint64_t max_delay = 0;
  for (const TopoLink& l : topo.links) max_delay = std::max(max_delay, l.delay_ns);
  // ns-3's headroom: three times the link's bandwidth-delay product, plus two frames.
  fab.pfc_headroom_bytes = static_cast<uint32_t>(fastest / 8 * max_delay / 1'000'000'000 * 3 + 2 * 4200);
  // ns-3's dynamic PFC threshold lets an ingress queue hold (free buffer) / 8 before XOFF; uroce's XOFF is
  // static: that threshold with the buffer empty, but no more than a share that lets every port of the
  // largest switch reach it, and XON 2 frames below.
  uint32_t max_ports = 1;
  {
    std::vector<uint32_t> ports(topo.nodes, 0);
    for (const TopoLink& l : topo.links) {
      ++ports[l.a];
      ++ports[l.b];
    }
    for (uint32_t n = 0; n < topo.nodes; ++n)
      if (topo.is_switch[n]) max_ports = std::max(max_ports, ports[n]);
  }
  const uint64_t frame = mtu_bytes + 128;
  const uint64_t share = fab.buffer_bytes / max_ports;
  const uint64_t fit = share > fab.pfc_headroom_bytes ? share - fab.pfc_headroom_bytes : 0;
  fab.pfc_xoff_bytes =
      static_cast<uint32_t>(std::max<uint64_t>(4 * frame, std::min<uint64_t>(fab.buffer_bytes / 8, fit)));
  fab.pfc_xon_bytes = static_cast<uint32_t>(fab.pfc_xoff_bytes - 2 * frame);
  sim::SwitchConfig sc;
  sc.fabric = fab;
  sc.max_frame = static_cast<uint16_t>(frame + 128);
  sc.buffer_frames = static_cast<uint32_t>(fab.buffer_bytes / 512 + 256);

  Experiment e(opt.seed);
  std::vector<uint32_t> exp_host(topo.nodes, UINT32_MAX);
  std::vector<sim::SimSwitch*> sw(topo.nodes, nullptr);
  constexpr uint32_t kMsg = 64 * 1024;
  for (uint32_t n = 0; n < topo.nodes; ++n) {
    if (topo.is_switch[n]) {
      sw[n] = &e.net().add_switch(sc);
      continue;
    }
    HostConfig h;
    h.cc = cc.name;
    h.cc_params = cc.params;
    h.rate_bps = host_rate[n] ? host_rate[n] : fastest;
    h.mem_bytes = kMsg;
    h.mtu = mtu;
    exp_host[n] = e.add_host(h);
  }
  // Devices numbered per node from 1 in link order (ns-3's if_index; device 0 is its loopback).
  struct IfRef {
    uint32_t node;
    uint32_t ifindex;
  };
  std::vector<uint32_t> next_if(topo.nodes, 1);
  std::vector<std::pair<sim::FabricQueue*, IfRef>> queues;
  auto fq = [](sim::Link* l) { return l ? dynamic_cast<sim::FabricQueue*>(&l->queue()) : nullptr; };
  for (const TopoLink& l : topo.links) {
    sim::LinkConfig lc;
    lc.rate_bps = l.rate_bps;
    lc.delay_ns = l.delay_ns;
    lc.loss = l.error_rate > 0 ? l.error_rate : c.num("ERROR_RATE_PER_LINK", 0);
    const IfRef ia{l.a, next_if[l.a]++}, ib{l.b, next_if[l.b]++};
    if (topo.is_switch[l.a] && topo.is_switch[l.b]) {
      const auto [pa, pb] = e.net().connect(*sw[l.a], *sw[l.b], lc);
      queues.push_back({fq(&sw[l.a]->egress(pa)), ia});
      queues.push_back({fq(&sw[l.b]->egress(pb)), ib});
    } else {
      const bool a_host = !topo.is_switch[l.a];
      const uint32_t host = a_host ? l.a : l.b, s = a_host ? l.b : l.a;
      const uint32_t p = e.net().attach(e.port(exp_host[host]), *sw[s], lc);
      queues.push_back({fq(e.port(exp_host[host]).uplink()), a_host ? ia : ib});
      queues.push_back({fq(&sw[s]->egress(p)), a_host ? ib : ia});
    }
  }
  e.net().compute_routes();

  FILE* pfc = nullptr;
  if (c.has("PFC_OUTPUT_FILE")) {
    pfc = std::fopen(c.str("PFC_OUTPUT_FILE", "").c_str(), "w");
    if (pfc == nullptr)
      throw std::runtime_error("cannot write the PFC output '" + c.str("PFC_OUTPUT_FILE", "") + "'");
    for (auto& [q, ref] : queues) {
      if (q == nullptr) continue;
      const uint32_t type = topo.is_switch[ref.node] ? 1 : 0;
      q->set_pfc_trace([pfc, ref, type](uint64_t now, bool pause) {
        std::fprintf(pfc, "%" PRIu64 " %u %u %u %u\n", now, ref.node, type, ref.ifindex, pause ? 1u : 0u);
      });
    }
  }

  // Flows: UDP source ports per host pair from 10000, as ns-3 numbers them.
  std::map<std::pair<uint32_t, uint32_t>, uint16_t> next_port;
  std::vector<uint16_t> sport(flows.size());
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowLine& f = flows[i];
    auto [it, fresh] = next_port.try_emplace({f.src, f.dst}, 10000);
    sport[i] = it->second++;
    FlowSpec s;
    s.src = exp_host[f.src];
    s.dst = exp_host[f.dst];
    s.bytes = f.bytes;
    s.start_ns = static_cast<uint64_t>(std::llround(f.start_s * 1e9));
    s.sport = sport[i];
    s.msg_bytes = kMsg;
    s.depth = 16;
    s.transient = true;
    e.add_flow(s);
  }
  const uint64_t stop_ns = static_cast<uint64_t>(std::llround(c.num("SIMULATOR_STOP_TIME", 4) * 1e9));
  uint64_t first = UINT64_MAX;
  for (const FlowLine& f : flows)
    first = std::min<uint64_t>(first, static_cast<uint64_t>(std::llround(f.start_s * 1e9)));
  e.set_sample_start(first == UINT64_MAX ? 0 : first);
  const auto wall0 = std::chrono::steady_clock::now();
  const Summary sum = e.run(stop_ns, 10'000, 1'000'000);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  uint64_t hop_frames = 0;  // frames serialized onto any link: the simulator's unit of work
  for (const auto& l : e.net().links()) hop_frames += l->counters().sent_frames;
  if (pfc != nullptr) std::fclose(pfc);

  // FCT file, in the order flows finished.
  const std::vector<Experiment::FlowResult> res = e.flow_results();
  std::vector<size_t> order;
  for (size_t i = 0; i < res.size(); ++i)
    if (res[i].fct_ns) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return res[a].spec.start_ns + res[a].fct_ns < res[b].spec.start_ns + res[b].fct_ns;
  });
  const std::string fct_path = c.str("FCT_OUTPUT_FILE", "");
  FILE* fct = std::fopen(fct_path.c_str(), "w");
  if (fct == nullptr) throw std::runtime_error("cannot write the FCT output '" + fct_path + "'");
  std::vector<std::pair<uint64_t, double>> slow;  // size, slowdown
  for (size_t i : order) {
    const FlowLine& f = flows[i];
    const PathFacts& p = facts[f.src][f.dst];
    const uint64_t pkts = (f.bytes + mtu_bytes - 1) / mtu_bytes;
    const uint64_t wire_bytes = f.bytes + pkts * kPacketOverhead + kRethBytes;
    const uint64_t standalone = 2 * p.delay_ns + p.tx_delay_ns + wire_bytes * 8'000'000'000 / p.bw_bps;
    std::fprintf(fct, "%08x %08x %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", node_ip(f.src),
                 node_ip(f.dst), sport[i], f.dport, f.bytes, res[i].spec.start_ns, res[i].fct_ns, standalone);
    slow.emplace_back(f.bytes,
                      std::max(1.0, static_cast<double>(res[i].fct_ns) / static_cast<double>(standalone)));
  }
  std::fclose(fct);

  // The manifest: what reproduces this run.
  if (FILE* m = std::fopen((fct_path + ".manifest").c_str(), "w")) {
    std::fprintf(m, "uroce %s\nconfig %s\nseed %" PRIu64 "\ncc %s\n", opt.git.c_str(), config_path.c_str(),
                 opt.seed, cc.name.c_str());
    for (const auto& [k, v] : cc.params) std::fprintf(m, "cc.%s %g\n", k.c_str(), v);
    std::fprintf(m, "cc.(others) the algorithm's defaults (docs/cc.md)\n");
    std::fprintf(m, "path_mtu %u (PACKET_PAYLOAD_SIZE %u: IB MTUs are powers of two)\n", mtu_bytes, payload);
    std::fprintf(m,
                 "fabric buffer_bytes=%" PRIu64
                 " ecn=%d kmin_bytes=%u kmax_bytes=%u pmax=%g flow_control=pfc "
                 "xoff_bytes=%u xon_bytes=%u headroom_bytes=%u int=%d dt_alpha=%g\n",
                 fab.buffer_bytes, fab.ecn.enabled, fab.ecn.kmin_bytes, fab.ecn.kmax_bytes, fab.ecn.pmax,
                 fab.pfc_xoff_bytes, fab.pfc_xon_bytes, fab.pfc_headroom_bytes, fab.int_enabled,
                 fab.dt_alpha);
    std::fprintf(m, "flows %zu message_bytes %u depth 16 (WRITEs; a QP pair per flow, made at its start)\n",
                 flows.size(), kMsg);
    std::fprintf(m, "stop_ns %" PRIu64 "\nmax_base_rtt_ns %" PRIu64 "\n", stop_ns, max_rtt);
    for (const std::string& k : c.keys)
      std::fprintf(m, "%s %s %s\n", used.count(k) ? "used" : "ignored", k.c_str(), c.kv.at(k).c_str());
    std::fclose(m);
  }

  // FCT slowdown by flow size: flows sorted by size in ten bins of equal count (analysis/fct_analysis.py
  // uses the same bins at a 5% step).
  std::stable_sort(slow.begin(), slow.end());
  std::fprintf(out, "ns-3 config %s: %zu hosts, %zu switches, %zu flows, cc %s, seed %" PRIu64 "\n",
               config_path.c_str(), host_ids.size(), topo.nodes - host_ids.size(), flows.size(),
               cc.name.c_str(), opt.seed);
  std::fprintf(out,
               "finished %zu of %zu flows by %.6f s (%s); pause frames %" PRIu64 ", drops %" PRIu64
               ", CNPs %" PRIu64 "\n",
               order.size(), flows.size(), static_cast<double>(stop_ns) / 1e9, sum.status.c_str(),
               sum.pause_frames, sum.drops, sum.cnp_sent);
  std::fprintf(out, "%-12s %-14s %10s %10s %10s\n", "flows", "size <= (B)", "p50", "p95", "p99");
  const size_t n = slow.size();
  for (size_t b = 0; b < 10 && n > 0; ++b) {
    const size_t lo = b * n / 10, hi = (b + 1) * n / 10;
    if (hi <= lo) continue;
    std::vector<double> v;
    for (size_t i = lo; i < hi; ++i) v.push_back(slow[i].second);
    std::fprintf(out, "%3zu%%-%3zu%%    %-14" PRIu64 " %10.3f %10.3f %10.3f\n", b * 10, (b + 1) * 10,
                 slow[hi - 1].first, percentile(v, 50), percentile(v, 95), percentile(v, 99));
  }
  uint64_t last_end = first;
  for (size_t i : order) last_end = std::max(last_end, res[i].spec.start_ns + res[i].fct_ns);
  const double span_s = first == UINT64_MAX ? 0 : static_cast<double>(last_end - first) / 1e9;
  std::fprintf(out,
               "simulator: %.3f ms of traffic (first start to last finish) in %.2f s wall; %" PRIu64
               " frame hops, %.2f M hops/s, %.2e simulated s per wall s\n",
               span_s * 1e3, wall_s, hop_frames,
               wall_s > 0 ? static_cast<double>(hop_frames) / wall_s / 1e6 : 0,
               wall_s > 0 ? span_s / wall_s : 0);
  std::fprintf(out, "FCT lines (ns-3 format) in %s\n", fct_path.c_str());
  return 0;
}

}  // namespace uroce::exp::ns3
