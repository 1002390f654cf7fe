// One simulated congestion-control experiment: hosts running the uroce transport with a CC algorithm,
// switches of the fabric model (sim/), long and finite RDMA WRITE flows between hosts, a sampler
// that records per-flow rates, queue depths, pause frames and CNPs in virtual time, and the summary
// metrics of docs/cc-results.md. Deterministic: one seed fixes the run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cc/cc.h"
#include "sim/sim_network.h"
#include "tools/exp/collective.h"
#include "transport/device.h"

namespace uroce::exp {

constexpr uint8_t kRoceDscp = 26;  // priority 3: the lossless class of FabricConfig's default mask

struct HostConfig {
  std::string cc = "dcqcn";
  cc::Params cc_params;
  uint64_t rate_bps = 100'000'000'000;
  size_t mem_bytes = 1 << 20;     // the largest WRITE a flow on this host posts
  Mtu mtu = Mtu::k4096;           // path MTU of the flows this host sends
  bool selective_repeat = false;  // DeviceConfig::selective_repeat: RC QPs recover loss selectively
  // Probability that a CNP arriving at this host (as the sender of the flow it throttles) is lost, as CNPs
  // on a lossy class or filtered by a switch ACL are.
  double cnp_loss = 0;
};

struct FlowSpec {
  uint32_t src = 0, dst = 0;  // host indices
  uint64_t bytes = 0;         // 0: a long flow, runs until the end
  uint64_t start_ns = 0;
  uint16_t sport = 0;  // UDP source port; 0: derived from the QP numbers (varies per QP)
  uint32_t msg_bytes = 256 * 1024;
  uint32_t depth = 4;  // WRITEs in flight
  // The flow's QP pair is made at start_ns and destroyed once the flow is done (finite flows only), as
  // an RNIC's connection per flow in a trace of many short flows; otherwise both exist for the whole run.
  bool transient = false;
  // The requester's local ACK timeout (IBA exponent: 4.096 us * 2^timeout) and retry count.
  uint8_t timeout = 12;  // ~17 ms: DCQCN may slow a flow to its minimum rate, ACKs then come rarely
  uint8_t retry_cnt = 7;
};

// A queue whose depth the sampler records; the first watched queue is the bottleneck of the summary.
struct Watch {
  std::string name;
  sim::SimSwitch* sw;
  uint32_t port;
};

struct Summary {
  double window_us = 0;
  double total_gbps = 0;   // sum over long flows in the window
  double utilisation = 0;  // bottleneck egress bytes / (rate * window)
  double jain = 0;         // over long flows in the window
  double min_flow_gbps = 0, max_flow_gbps = 0;
  double q_p50_kb = 0, q_p99_kb = 0, q_max_kb = 0;  // bottleneck queue, window samples
  uint64_t drops = 0;
  uint64_t pause_frames = 0;  // PFC frames sent by switches (XOFF incl. refreshes, and XON)
  double paused_us = 0;       // summed paused time of all paused egress queues
  uint64_t cnp_sent = 0, cnp_handled = 0, ecn_marked = 0;
  uint64_t retransmits = 0;
  uint32_t finite_flows = 0, finished_flows = 0;
  double fct_slowdown_p50 = 0, fct_slowdown_p99 = 0;
  std::string status;  // run status of the simulator
  bool has_collective = false;
  CollectiveResult collective;
};

class Experiment {
 public:
  explicit Experiment(uint64_t seed);
  ~Experiment();

  sim::SimNetwork& net() { return net_; }
  uint32_t add_host(const HostConfig& cfg);
  sim::SimPort& port(uint32_t host);
  Device& device(uint32_t host);
  size_t hosts() const;
  // Wires a flow's QP pair; call after the topology is complete.
  uint32_t add_flow(const FlowSpec& spec);
  void watch(const std::string& name, sim::SimSwitch& sw, uint32_t port);
  // A collective (one per experiment) over hosts already attached: its flows take `qp`'s QP settings
  // (timeout, retry count; src, dst, bytes, sport and sizes come from the collective). The run ends when it
  // completes; its bandwidths are in Summary::collective.
  void add_collective(const CollectiveSpec& spec, const FlowSpec& qp = {});
  // A faulty NIC: from `start_ns` on, host `host` sends a PFC XOFF (max quanta) for `prio` every
  // `period_ns`, whether or not it is congested (a PFC storm).
  void add_pfc_storm(uint32_t host, uint8_t prio, uint64_t start_ns, uint64_t period_ns);
  // Sampling starts at `ns` of virtual time instead of 0 (a trace whose traffic starts late).
  void set_sample_start(uint64_t ns) { sample_start_ns_ = ns; }

  // Runs for `duration_ns` of virtual time (or until every flow is finite and done), sampling queues every
  // `sample_ns` and rates every `rate_ns`. The summary's window is the last 80% of the run.
  Summary run(uint64_t duration_ns, uint64_t sample_ns = 1000, uint64_t rate_ns = 50'000);

  // Time series, available after run().
  struct RateRow {
    uint64_t t_ns;
    std::vector<double> gbps;     // per flow, received over the last rate interval
    std::vector<double> cc_gbps;  // per flow, the sender's CC rate (0: unlimited -> line rate)
    uint64_t pause_frames, cnp_sent, ecn_marked, drops;  // cumulative
  };
  struct QueueRow {
    uint64_t t_ns;
    std::vector<uint64_t> bytes;  // per watch
  };
  const std::vector<RateRow>& rates() const { return rates_; }
  const std::vector<QueueRow>& queues() const { return queues_; }
  const std::vector<Watch>& watches() const { return watches_; }
  struct FlowResult {
    FlowSpec spec;
    uint64_t rx_bytes;
    uint64_t fct_ns;  // 0: not finished
    double slowdown;
  };
  std::vector<FlowResult> flow_results() const;

  // Writes every frame each host's port sends and receives (PFC frames included) to a pcap file, time-stamped
  // in virtual nanoseconds. Call after the hosts are added, before run(). Throws when it cannot open it.
  void capture(const std::string& pcap_path);

  // Fabric-wide counters now.
  uint64_t pause_frames() const;
  uint64_t drops() const;

 private:
  struct Host;
  struct Flow;
  class Sampler;
  class Starter;

  bool drive();               // posts WRITEs, collects completions; true when every flow is finite and done
  void wire(uint32_t idx);    // makes and connects the flow's QP pair
  void unwire(uint32_t idx);  // destroys it (a transient flow that is done)
  void sample_queues(uint64_t now);
  void sample_rates(uint64_t now);
  double ideal_fct_ns(const Flow& f) const;

  sim::SimNetwork net_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::shared_ptr<void> pcap_;  // the capture's pcap_dumper_t (capture())
  std::vector<std::unique_ptr<Flow>> flows_;
  std::vector<uint32_t> pending_;  // flows not started yet, latest start first (run() sorts them)
  std::vector<uint32_t> active_;   // started and not done (long flows stay)
  std::vector<Watch> watches_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<Starter> starter_;
  uint64_t sample_start_ns_ = 0;
  std::vector<std::unique_ptr<sim::SimNode>> extra_nodes_;
  std::vector<RateRow> rates_;
  std::vector<QueueRow> queues_;
  std::vector<uint64_t> last_rx_;
  std::unique_ptr<Collective> coll_;
  std::vector<uint32_t> coll_flows_;  // flow index of the collective's edge k
  std::vector<uint64_t> coll_acked_;  // acknowledged bytes of edge k
};

// Jain's fairness index of `x` (1 = all equal).
double jain_index(const std::vector<double>& x);
double percentile(std::vector<double> v, double p);

}  // namespace uroce::exp
