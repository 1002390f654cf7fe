#include "tools/exp/experiment.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "fabric/fabric.h"
#include "fabric/rng.h"
#include "sim/fabric_queue.h"
#include "transport/wire/address.h"
#include "transport/wire/headers.h"

namespace uroce::exp {

namespace {

constexpr uint32_t kAccessAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

}  // namespace

double jain_index(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) {
    s += v;
    s2 += v * v;
  }
  return s2 == 0 ? 0 : s * s / (static_cast<double>(x.size()) * s2);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i =
      std::min(v.size() - 1,
               static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(v.size()))) - (p > 0 ? 1 : 0));
  return v[i];
}

namespace {

// A NIC port that loses a fraction of the CNPs it receives (HostConfig::cnp_loss) and passes everything
// else; buffers are the simulator port's, with the ownership rules of PacketIo.
class CnpLossyPort final : public PacketIo {
 public:
  CnpLossyPort(sim::SimPort& port, double loss, uint64_t seed) : port_(port), loss_(loss), rng_(seed) {}
  uint16_t alloc_burst(PktBuf** b, uint16_t n) override { return port_.alloc_burst(b, n); }
  uint16_t tx_burst(PktBuf** b, uint16_t n) override { return port_.tx_burst(b, n); }
  void free_burst(PktBuf** b, uint16_t n) override { port_.free_burst(b, n); }
  uint16_t max_frame() const override { return port_.max_frame(); }
  uint16_t rx_burst(PktBuf** b, uint16_t n) override {
    const uint16_t got = port_.rx_burst(b, n);
    uint16_t kept = 0;
    for (uint16_t i = 0; i < got; ++i) {
      const fabric::FrameClass c = fabric::classify(b[i]->data, b[i]->len, 0);
      if (c.bth_offset != 0 &&
          wire::bth_opcode(*reinterpret_cast<const wire::Bth*>(b[i]->data + c.bth_offset)) ==
              wire::op::kCnp &&
          rng_.chance(loss_)) {
        port_.free_burst(&b[i], 1);
        continue;
      }
      b[kept++] = b[i];
    }
    return kept;
  }

 private:
  sim::SimPort& port_;
  double loss_;
  fabric::Rng rng_;
};

}  // namespace

struct Experiment::Host final : sim::SimNode {
  HostConfig cfg;
  std::vector<uint8_t> mem;
  sim::SimPort* port = nullptr;
  std::unique_ptr<CnpLossyPort> lossy;  // between the device and `port` when cfg.cnp_loss > 0
  std::unique_ptr<Device> dev;
  Pd* pd = nullptr;
  Cq* cq = nullptr;
  Mr* mr = nullptr;
  std::unordered_map<uint32_t, uint32_t> rx_flows;  // dest QPN -> flow index, of flows into this host

  void poll() override { dev->progress(); }
  uint64_t next_deadline_ns() const override { return dev->next_deadline(); }
};

struct Experiment::Flow {
  FlowSpec spec;
  Qp* sq = nullptr;
  Qp* rq = nullptr;
  uint64_t posted = 0, acked = 0;
  uint32_t outstanding = 0;
  uint64_t rx_bytes = 0;
  uint64_t fct_ns = 0;
  bool failed = false;
  bool done = false;    // finished or failed; no longer driven
  int32_t coll_k = -1;  // the collective's edge this flow carries, or -1
};

// Samples on its own clock: a node whose deadline is the next sample time.
class Experiment::Sampler final : public sim::SimNode {
 public:
  Sampler(Experiment& e, uint64_t sample_ns, uint64_t rate_ns, uint64_t start_ns)
      : e_(e), sample_ns_(sample_ns), rate_ns_(rate_ns), next_q_(start_ns), next_r_(start_ns) {}
  void poll() override {
    const uint64_t now = e_.net_.now_ns();
    while (next_q_ <= now) {
      e_.sample_queues(next_q_);
      next_q_ += sample_ns_;
    }
    while (next_r_ <= now) {
      e_.sample_rates(next_r_);
      next_r_ += rate_ns_;
    }
  }
  uint64_t next_deadline_ns() const override { return std::min(next_q_, next_r_); }

 private:
  Experiment& e_;
  uint64_t sample_ns_, rate_ns_;
  uint64_t next_q_, next_r_;
};

// Wakes the run at the next flow's start time, so a flow starts when its spec says and not at the next
// sample.
class Experiment::Starter final : public sim::SimNode {
 public:
  explicit Starter(const Experiment& e) : e_(e) {}
  void poll() override {}
  uint64_t next_deadline_ns() const override {
    return e_.pending_.empty() ? kNever : e_.flows_[e_.pending_.back()]->spec.start_ns;
  }

 private:
  const Experiment& e_;
};

namespace {

class PfcStorm final : public sim::SimNode {
 public:
  PfcStorm(sim::SimNetwork& net, sim::SimPort& port, uint8_t prio, uint64_t start, uint64_t period)
      : net_(net), port_(port), prio_(prio), next_(start), period_(period) {}
  void poll() override {
    if (net_.now_ns() < next_) return;
    PktBuf* b;
    if (port_.alloc_burst(&b, 1) == 1) {
      fabric::PfcFrame p;
      p.enable = static_cast<uint8_t>(1u << prio_);
      p.quanta[prio_] = 0xFFFF;
      b->len = fabric::build_pfc(b->data, port_.mac(), p);
      if (port_.tx_burst(&b, 1) != 1) port_.free_burst(&b, 1);
    }
    next_ += period_;
  }
  uint64_t next_deadline_ns() const override { return next_; }

 private:
  sim::SimNetwork& net_;
  sim::SimPort& port_;
  uint8_t prio_;
  uint64_t next_, period_;
};

}  // namespace

void Experiment::add_pfc_storm(uint32_t host, uint8_t prio, uint64_t start_ns, uint64_t period_ns) {
  extra_nodes_.push_back(std::make_unique<PfcStorm>(net_, port(host), prio, start_ns, period_ns));
  net_.add_node(*extra_nodes_.back(), {});
}

// drive() wakes every host it posts to, so the network may keep each node's deadline between polls.
Experiment::Experiment(uint64_t seed) : net_(seed) { net_.set_cached_deadlines(true); }
Experiment::~Experiment() = default;

size_t Experiment::hosts() const { return hosts_.size(); }
sim::SimPort& Experiment::port(uint32_t h) { return *hosts_.at(h)->port; }
Device& Experiment::device(uint32_t h) { return *hosts_.at(h)->dev; }

uint32_t Experiment::add_host(const HostConfig& cfg) {
  const auto idx = static_cast<uint32_t>(hosts_.size());
  auto h = std::make_unique<Host>();
  h->cfg = cfg;
  h->mem.resize(cfg.mem_bytes);
  DeviceConfig dc;
  dc.name = "sim" + std::to_string(idx);
  dc.gid = wire::ipv4_mapped(0x0A000000u + idx + 1);
  dc.mac = mac_for_gid(dc.gid);
  dc.link_rate_bps = cfg.rate_bps;
  dc.cc = cfg.cc;
  dc.cc_params = cfg.cc_params;
  dc.selective_repeat = cfg.selective_repeat;
  sim::PortConfig pc;
  pc.mac = wire::mac_to_u64(dc.mac);
  pc.pool_frames = 512;
  pc.tx_ring_frames = 64;
  h->port = &net_.add_port(pc);
  PacketIo* io = h->port;
  if (cfg.cnp_loss > 0) {
    h->lossy = std::make_unique<CnpLossyPort>(*h->port, cfg.cnp_loss, net_.seed() * 1000003 + idx);
    io = h->lossy.get();
  }
  h->dev = std::make_unique<Device>(dc, io, &net_.clock());
  if (h->dev->alloc_pd(&h->pd) || h->dev->create_cq(8192, &h->cq) ||
      h->dev->reg_mr(h->pd, h->mem.data(), h->mem.size(), kAccessAll, &h->mr))
    throw std::runtime_error("host setup failed");
  Host* raw = h.get();
  h->port->set_rx_tap([this, raw](const PktBuf& b, uint64_t) {
    const fabric::FrameClass c = fabric::classify(b.data, b.len, 0);
    if (!c.roce_request) return;
    const uint32_t dqpn = wire::bth_dqpn(*reinterpret_cast<const wire::Bth*>(b.data + c.bth_offset));
    if (auto it = raw->rx_flows.find(dqpn); it != raw->rx_flows.end()) flows_[it->second]->rx_bytes += b.len;
  });
  net_.add_node(*h, {h->port});
  hosts_.push_back(std::move(h));
  return idx;
}

uint32_t Experiment::add_flow(const FlowSpec& spec) {
  Host& a = *hosts_.at(spec.src);
  Host& b = *hosts_.at(spec.dst);
  if (spec.msg_bytes > a.mem.size() || spec.msg_bytes > b.mem.size())
    throw std::invalid_argument("flow message larger than the host's memory");
  if (spec.transient && spec.bytes == 0) throw std::invalid_argument("a transient flow must be finite");
  auto f = std::make_unique<Flow>();
  f->spec = spec;
  const auto idx = static_cast<uint32_t>(flows_.size());
  flows_.push_back(std::move(f));
  if (!spec.transient) wire(idx);
  return idx;
}

void Experiment::wire(uint32_t idx) {
  Flow& f = *flows_[idx];
  const FlowSpec& spec = f.spec;
  Host& a = *hosts_.at(spec.src);
  Host& b = *hosts_.at(spec.dst);
  auto make_qp = [](Host& h) {
    QpInitAttr init;
    init.type = QpType::kRc;
    init.send_cq = init.recv_cq = h.cq;
    init.cap = QpCap{256, 16, 1, 1, 0};
    Qp* qp = nullptr;
    if (h.dev->create_qp(h.pd, init, &qp)) throw std::runtime_error("create_qp failed");
    return qp;
  };
  f.sq = make_qp(a);
  f.rq = make_qp(b);
  const Mtu mtu = a.cfg.mtu;
  auto bring_up = [&spec, mtu](Qp* qp, const Gid& dgid, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn) {
    QpAttr at;
    at.qp_state = QpState::kInit;
    at.port_num = 1;
    at.qp_access_flags = kAccessAll;
    if (qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags)) return false;
    at.qp_state = QpState::kRtr;
    at.path_mtu = mtu;
    at.dest_qp_num = dqpn;
    at.rq_psn = rq_psn;
    at.ah.dgid = dgid;
    at.ah.traffic_class = kRoceDscp << 2;
    at.ah.src_port_entropy = spec.sport;
    at.max_dest_rd_atomic = 16;
    at.min_rnr_timer = 1;
    if (qp->modify(
            at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer))
      return false;
    at.qp_state = QpState::kRts;
    at.sq_psn = sq_psn;
    at.timeout = spec.timeout;
    at.retry_cnt = spec.retry_cnt;
    at.rnr_retry = 7;
    at.max_rd_atomic = 16;
    return qp->modify(at, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic) ==
           0;
  };
  if (!bring_up(f.sq, b.dev->config().gid, f.rq->qpn(), 1000, 5000) ||
      !bring_up(f.rq, a.dev->config().gid, f.sq->qpn(), 5000, 1000))
    throw std::runtime_error("connecting a flow's QPs failed");
  b.rx_flows[f.rq->qpn()] = idx;
}

void Experiment::unwire(uint32_t idx) {
  Flow& f = *flows_[idx];
  hosts_[f.spec.dst]->rx_flows.erase(f.rq->qpn());
  hosts_[f.spec.src]->dev->destroy_qp(f.sq);
  hosts_[f.spec.dst]->dev->destroy_qp(f.rq);
  f.sq = f.rq = nullptr;
}

void Experiment::add_collective(const CollectiveSpec& spec, const FlowSpec& qp) {
  if (coll_) throw std::invalid_argument("one collective per experiment");
  coll_ = std::make_unique<Collective>(spec);
  for (size_t k = 0; k < coll_->edges().size(); ++k) {
    FlowSpec f = qp;
    f.src = coll_->edges()[k].src;
    f.dst = coll_->edges()[k].dst;
    f.bytes = coll_->total_bytes(k);
    f.start_ns = 0;
    f.sport = spec.sport;
    f.msg_bytes = static_cast<uint32_t>(std::min<uint64_t>(spec.msg_bytes, coll_->chunk_bytes()));
    f.depth = spec.depth;
    f.transient = false;
    const uint32_t idx = add_flow(f);
    flows_[idx]->coll_k = static_cast<int32_t>(k);
    coll_flows_.push_back(idx);
  }
  coll_acked_.assign(coll_flows_.size(), 0);
}

void Experiment::watch(const std::string& name, sim::SimSwitch& sw, uint32_t port) {
  if (!sw.fabric()) throw std::invalid_argument("watch: switch without the fabric model");
  watches_.push_back(Watch{name, &sw, port});
}

bool Experiment::drive() {
  const uint64_t now = net_.now_ns();
  Wc wc[64];
  for (auto& h : hosts_) {
    int n;
    while ((n = h->cq->poll(64, wc)) > 0) {
      for (int i = 0; i < n; ++i) {
        Flow& f = *flows_.at(wc[i].wr_id >> 32);
        --f.outstanding;
        if (wc[i].status != WcStatus::kSuccess) {
          f.failed = true;
          continue;
        }
        f.acked += wc[i].wr_id & 0xFFFFFFFF;
        if (f.spec.bytes != 0 && f.acked >= f.spec.bytes && f.fct_ns == 0) f.fct_ns = now - f.spec.start_ns;
      }
    }
  }
  if (coll_) {
    for (size_t k = 0; k < coll_flows_.size(); ++k) coll_acked_[k] = flows_[coll_flows_[k]]->acked;
    coll_->update(now, coll_acked_);
  }
  while (!pending_.empty() && flows_[pending_.back()]->spec.start_ns <= now) {
    const uint32_t idx = pending_.back();
    pending_.pop_back();
    if (flows_[idx]->sq == nullptr) wire(idx);
    active_.push_back(idx);
  }
  bool all_done = pending_.empty();
  size_t keep = 0;  // active_ is compacted in place, in order
  for (size_t k = 0; k < active_.size(); ++k) {
    const uint32_t i = active_[k];
    Flow& f = *flows_[i];
    if (f.fct_ns != 0 || f.failed) {
      if (f.outstanding == 0) {
        f.done = true;
        if (f.spec.transient) unwire(i);
        continue;
      }
      active_[keep++] = i;
      continue;
    }
    active_[keep++] = i;
    all_done = false;
    bool posted = false;
    // A collective's flow may post only the steps whose inputs have arrived.
    const uint64_t limit =
        f.coll_k >= 0 ? coll_->allowed(static_cast<size_t>(f.coll_k), coll_acked_) : f.spec.bytes;
    while (f.outstanding < f.spec.depth && (limit == 0 || f.posted < limit)) {
      const uint32_t len = static_cast<uint32_t>(
          limit == 0 ? f.spec.msg_bytes : std::min<uint64_t>(f.spec.msg_bytes, limit - f.posted));
      Host& a = *hosts_[f.spec.src];
      Host& b = *hosts_[f.spec.dst];
      Sge sge{reinterpret_cast<uint64_t>(a.mem.data()), len, a.mr->lkey};
      SendWr wr;
      wr.wr_id = uint64_t{i} << 32 | len;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = WrOpcode::kRdmaWrite;
      wr.send_flags = kSendSignaled;
      wr.remote_addr = reinterpret_cast<uint64_t>(b.mem.data());
      wr.rkey = b.mr->rkey;
      if (f.sq->post_send(wr) != 0) {
        f.failed = true;
        break;
      }
      f.posted += len;
      ++f.outstanding;
      posted = true;
    }
    if (posted) net_.wake(*hosts_[f.spec.src]);
  }
  active_.resize(keep);
  return all_done && !flows_.empty();
}

void Experiment::capture(const std::string& path) {
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* d = dead ? pcap_dump_open(dead, path.c_str()) : nullptr;
  if (d == nullptr) {
    const std::string why = dead ? pcap_geterr(dead) : "pcap_open_dead failed";
    if (dead) pcap_close(dead);
    throw std::runtime_error("capture " + path + ": " + why);
  }
  pcap_ = std::shared_ptr<void>(d, [dead](void* p) {
    pcap_dump_close(static_cast<pcap_dumper_t*>(p));
    pcap_close(dead);
  });
  for (auto& h : hosts_)
    h->port->set_wire_tap([d](const PktBuf& b, uint64_t now) {
      pcap_pkthdr ph{};
      ph.ts.tv_sec = static_cast<time_t>(now / 1'000'000'000);
      ph.ts.tv_usec = static_cast<suseconds_t>(now % 1'000'000'000);  // nanoseconds in a nano-precision file
      ph.caplen = ph.len = b.len;
      pcap_dump(reinterpret_cast<u_char*>(d), &ph, b.data);
    });
}

uint64_t Experiment::pause_frames() const {
  uint64_t n = 0;
  for (const auto& s : net_.switches())
    if (s->fabric())
      for (uint32_t p = 0; p < s->port_count(); ++p)
        n += s->port_counters(p).pfc_xoff_sent + s->port_counters(p).pfc_xon_sent;
  return n;
}

uint64_t Experiment::drops() const {
  uint64_t n = 0;
  for (const auto& s : net_.switches()) {
    n += s->counters().no_buffer + s->counters().unknown_dst;
    if (s->fabric())
      for (uint32_t p = 0; p < s->port_count(); ++p) {
        const sim::SwitchPortCounters& c = s->port_counters(p);
        n += c.drop_buffer + c.drop_threshold + c.drop_headroom + c.drop_credit;
      }
  }
  for (const auto& l : net_.links()) n += l->counters().queue_dropped + l->counters().lost;
  for (const auto& p : net_.ports()) n += p->counters().rx_no_buffer;
  return n;
}

void Experiment::sample_queues(uint64_t now) {
  QueueRow r{now, {}};
  for (const Watch& w : watches_) r.bytes.push_back(w.sw->fabric_queue(w.port).bytes());
  queues_.push_back(std::move(r));
}

void Experiment::sample_rates(uint64_t now) {
  RateRow r{now, {}, {}, pause_frames(), 0, 0, drops()};
  const double dt = rates_.empty() ? 0 : static_cast<double>(now - rates_.back().t_ns);
  last_rx_.resize(flows_.size(), 0);
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = *flows_[i];
    r.gbps.push_back(dt > 0 ? static_cast<double>(f.rx_bytes - last_rx_[i]) * 8 / dt : 0);
    last_rx_[i] = f.rx_bytes;
    const uint64_t cc = f.sq != nullptr && f.sq->cc() ? f.sq->cc()->rate_bps : 0;
    r.cc_gbps.push_back(static_cast<double>(cc ? cc : hosts_[f.spec.src]->cfg.rate_bps) / 1e9);
  }
  for (const auto& h : hosts_) {
    r.cnp_sent += h->dev->counters()[Counter::kCnpSent];
    r.ecn_marked += h->dev->counters()[Counter::kEcnMarked];
  }
  rates_.push_back(std::move(r));
}

double Experiment::ideal_fct_ns(const Flow& f) const {
  const uint64_t rate = hosts_[f.spec.src]->cfg.rate_bps;
  // Payload plus headers (~62 bytes per 4096-byte packet) at line rate, plus one propagation RTT estimate.
  const double pkts = std::ceil(static_cast<double>(f.spec.bytes) / 4096);
  return (static_cast<double>(f.spec.bytes) + pkts * 62) * 8e9 / static_cast<double>(rate) + 4000;
}

std::vector<Experiment::FlowResult> Experiment::flow_results() const {
  std::vector<FlowResult> out;
  for (const auto& f : flows_)
    out.push_back(FlowResult{f->spec, f->rx_bytes, f->fct_ns,
                             f->fct_ns ? static_cast<double>(f->fct_ns) / ideal_fct_ns(*f) : 0});
  return out;
}

Summary Experiment::run(uint64_t duration_ns, uint64_t sample_ns, uint64_t rate_ns) {
  sampler_ = std::make_unique<Sampler>(*this, sample_ns, rate_ns, sample_start_ns_);
  net_.add_node(*sampler_);
  pending_.clear();
  active_.clear();
  for (uint32_t i = 0; i < flows_.size(); ++i) pending_.push_back(i);
  // The next flow to start at the back: latest start first, equal starts in reverse index order, so flows
  // become active (and are driven) in index order.
  std::sort(pending_.begin(), pending_.end(), [this](uint32_t x, uint32_t y) {
    const uint64_t sx = flows_[x]->spec.start_ns, sy = flows_[y]->spec.start_ns;
    return sx != sy ? sx > sy : x > y;
  });
  starter_ = std::make_unique<Starter>(*this);
  net_.add_node(*starter_);
  last_rx_.assign(flows_.size(), 0);
  // Per-rate-row cumulative state needed for the window: rx bytes per flow and bottleneck tx bytes.
  std::vector<std::vector<uint64_t>> rx_at;
  const sim::Link* bottleneck = watches_.empty() ? nullptr : &watches_[0].sw->egress(watches_[0].port);
  const uint64_t t0 = duration_ns / 5;
  std::vector<uint64_t> rx0(flows_.size(), 0);
  uint64_t tx0 = 0;
  bool window_started = false;
  const sim::RunStatus st = net_.run_until(
      [&] {
        if (!window_started && net_.now_ns() >= t0) {
          window_started = true;
          for (size_t i = 0; i < flows_.size(); ++i) rx0[i] = flows_[i]->rx_bytes;
          if (bottleneck) tx0 = bottleneck->counters().sent_bytes;
        }
        return drive();
      },
      duration_ns);
  Summary s;
  s.status = sim::run_status_name(st);
  const uint64_t end = net_.now_ns();
  const double window = static_cast<double>(end - std::min(end, t0));
  s.window_us = window / 1000;
  std::vector<double> long_rates;
  double lo = 1e300, hi = 0;
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = *flows_[i];
    if (f.coll_k >= 0) continue;
    if (f.spec.bytes != 0) {
      ++s.finite_flows;
      if (f.fct_ns) ++s.finished_flows;
      continue;
    }
    const double g = window > 0 ? static_cast<double>(f.rx_bytes - rx0[i]) * 8 / window : 0;
    long_rates.push_back(g);
    s.total_gbps += g;
    lo = std::min(lo, g);
    hi = std::max(hi, g);
  }
  s.min_flow_gbps = long_rates.empty() ? 0 : lo;
  s.max_flow_gbps = hi;
  s.jain = jain_index(long_rates);
  if (bottleneck && window > 0 && bottleneck->config().rate_bps)
    s.utilisation = static_cast<double>(bottleneck->counters().sent_bytes - tx0) * 8e9 /
                    (static_cast<double>(bottleneck->config().rate_bps) * window);
  if (!watches_.empty()) {
    std::vector<double> q;
    for (const QueueRow& r : queues_)
      if (r.t_ns >= t0) q.push_back(static_cast<double>(r.bytes[0]) / 1024);
    s.q_p50_kb = percentile(q, 50);
    s.q_p99_kb = percentile(q, 99);
    s.q_max_kb = percentile(q, 100);
  }
  s.drops = drops();
  s.pause_frames = pause_frames();
  for (const auto& l : net_.links())
    if (const auto* fq = dynamic_cast<const sim::FabricQueue*>(&l->queue()))
      s.paused_us += static_cast<double>(fq->stats().paused_ns) / 1000;
  for (const auto& h : hosts_) {
    s.cnp_sent += h->dev->counters()[Counter::kCnpSent];
    s.cnp_handled += h->dev->counters()[Counter::kCnpRcvd];
    s.ecn_marked += h->dev->counters()[Counter::kEcnMarked];
    s.retransmits += h->dev->counters()[Counter::kRetransmits];
  }
  if (coll_) {
    s.has_collective = true;
    s.collective = coll_->result(0);
  }
  std::vector<double> slow;
  const std::vector<FlowResult> results = flow_results();
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].fct_ns && flows_[i]->coll_k < 0) slow.push_back(results[i].slowdown);
  s.fct_slowdown_p50 = percentile(slow, 50);
  s.fct_slowdown_p99 = percentile(slow, 99);
  return s;
}

}  // namespace uroce::exp
