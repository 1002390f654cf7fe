// ns-3 HPCC's experiment files, read as they are, and its result files, written in its own line formats, so
// a researcher's existing inputs and analysis scripts (alibaba-edu/High-Precision-Congestion-Control:
// simulation/mix/config.txt, topology.txt, flow.txt; analysis/fct_analysis.py) work on uroce's simulator.
//
// config.txt: one "KEY value..." per line. TOPOLOGY_FILE, FLOW_FILE, FCT_OUTPUT_FILE, PFC_OUTPUT_FILE are
// paths relative to the directory the run starts in (ns-3's simulation/), as ns-3 opens them.
// topology: "nodes switches links", then the switch node ids, then one "a b rate delay error_rate" per link
// (rate like 100Gbps, delay like 0.001ms or 1000ns). flows: a count, then that many
// "src dst priority_group dport size_bytes start_seconds".
// fct output, one line per finished flow in the order flows finish:
//   "%08x %08x %u %u %lu %lu %lu %lu": sip dip sport dport size start_ns fct_ns standalone_fct_ns
// with node n's address 0x0b000001 + (n / 256) * 0x10000 + (n % 256) * 0x100 and the standalone FCT as
// ns-3 defines it (base RTT plus the flow's bytes with headers at the path's bottleneck rate).
// pfc output, one line per PFC frame a device receives: "time_ns node_id node_type if_index type" (node_type
// 0 host, 1 switch; if_index counts the node's links in file order from 1; type 1 pause, 0 resume).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace uroce::exp::ns3 {

struct Config {
  std::string path;
  std::map<std::string, std::string> kv;  // KEY -> the rest of its line
  std::vector<std::string> keys;          // in file order
  bool has(const std::string& k) const { return kv.count(k) != 0; }
  std::string str(const std::string& k, const std::string& def) const;
  double num(const std::string& k, double def) const;  // throws naming the key if not a number
};
// Throws std::runtime_error "FILE:LINE: ..." on a malformed line or a key ns-3 does not have.
Config read_config(const std::string& path);

struct TopoLink {
  uint32_t a = 0, b = 0;
  uint64_t rate_bps = 0;
  uint64_t delay_ns = 0;
  double error_rate = 0;
};
struct Topology {
  uint32_t nodes = 0;
  std::vector<bool> is_switch;  // per node id
  std::vector<TopoLink> links;
};
Topology read_topology(const std::string& path);
void write_topology(FILE* out, const Topology& t);

struct FlowLine {
  uint32_t src = 0, dst = 0, pg = 3, dport = 100;
  uint64_t bytes = 0;
  double start_s = 0;
};
std::vector<FlowLine> read_flows(const std::string& path, const Topology& t);
void write_flows(FILE* out, const std::vector<FlowLine>& flows);

// "100Gbps", "25Gbps", "100Mb/s", "10G", "400000000" (b/s); "0.001ms", "1000ns", "1us", "0.000001s".
// Throw std::invalid_argument naming the text.
uint64_t parse_rate(const std::string& text);
uint64_t parse_delay(const std::string& text);
uint32_t node_ip(uint32_t node);

struct RunOptions {
  std::string cc;  // empty: from CC_MODE
  uint64_t seed = 1;
  std::string git;  // the build's revision, for the manifest
};
// Runs the experiment the config describes; writes FCT_OUTPUT_FILE, PFC_OUTPUT_FILE and, next to the FCT
// file, FCT_OUTPUT_FILE.manifest. Prints the FCT slowdown table to `out`. Returns 0, or throws
// std::runtime_error / std::invalid_argument with a message naming the file or key.
int run(const std::string& config_path, const RunOptions& opt, FILE* out);

// Flow-size CDF as traffic_gen's files: "size percentile" per line, percentiles rising from 0 to 100.
struct Cdf {
  std::vector<std::pair<double, double>> points;
  double mean() const;
  double sample(double u01) const;  // the size at percentile 100 * u01, interpolated
};
Cdf read_cdf(const std::string& path_or_name);  // "websearch" and "fb_hadoop" are built in

struct GenOptions {
  uint32_t hosts = 0;
  double load = 0.3;  // of each host's link
  uint64_t bandwidth_bps = 10'000'000'000;
  double seconds = 0.01;  // arrivals over this long
  double start_s = 2.0;   // traffic_gen's base time
  uint64_t seed = 1;
};
// Poisson arrivals per host at `load` of its link, sizes from the CDF, destinations uniform over the other
// hosts (traffic_gen.py's procedure). Hosts are node ids 0..hosts-1.
std::vector<FlowLine> generate_flows(const Cdf& cdf, const GenOptions& o);

// k-ary fat tree (k even): k^3/4 hosts (ids 0..), then k^2/2 edge, k^2/2 aggregation and k^2/4 core
// switches, every link `rate_bps` and `delay_ns`.
Topology fat_tree(uint32_t k, uint64_t rate_bps, uint64_t delay_ns);
// Leaf-spine: `leaves` leaves of `hosts_per_leaf` hosts, each leaf joined to every spine. Host links at
// host_bps, leaf-spine links at fabric_bps (oversubscription = hosts_per_leaf * host_bps / (spines *
// fabric_bps)).
Topology leaf_spine(uint32_t leaves, uint32_t spines, uint32_t hosts_per_leaf, uint64_t host_bps,
                    uint64_t fabric_bps, uint64_t delay_ns);

}  // namespace uroce::exp::ns3
