#include "tools/exp/rt_report.h"

#include <algorithm>
#include <cstdio>

#include "tools/exp/experiment.h"

namespace uroce::exp::rt {

namespace {

constexpr uint64_t kMinFlowBytes = 1'000'000;

uint64_t rx_of(const EngineSample& s, uint32_t qpn) {
  for (const QpSample& q : s.qps)
    if (q.qpn == qpn) return q.rx_bytes;
  return 0;
}

// The senders' CC rates by QP number at time t (their latest samples then), read forward in time: one
// cursor per sender series.
class CcRates {
 public:
  explicit CcRates(const Measured& m) : m_(m), next_(m.tx_series.size(), 0) {}
  void advance(double t) {
    for (size_t i = 0; i < m_.tx_series.size(); ++i)
      for (; next_[i] < m_.tx_series[i].size() && m_.tx_series[i][next_[i]].first <= t; ++next_[i])
        for (const QpSample& q : m_.tx_series[i][next_[i]].second)
          gbps_[q.qpn] = static_cast<double>(q.cc_rate_bps) / 1e9;
  }
  double of(uint32_t sender_qpn) const {
    const auto it = gbps_.find(sender_qpn);
    return it == gbps_.end() ? 0 : it->second;
  }

 private:
  const Measured& m_;
  std::vector<size_t> next_;
  std::map<uint32_t, double> gbps_;
};

// A counter of the senders' ports summed at each switch sample: per port the last value seen, also after its
// process exited and the port went away. `pauses` (uroced stopped reading the port) and the PFC frames it
// sent the senders (pfc_xoff_sent + pfc_xon_sent, what the simulator counts as pause frames).
std::vector<uint64_t> sender_sum_by_sample(const Measured& m, std::initializer_list<const char*> keys) {
  std::map<pid_t, uint64_t> last;
  uint64_t sum = 0;
  std::vector<uint64_t> out;
  for (const SwitchSample& s : m.sw) {
    for (const PortSample& p : s.ports)
      if (p.pid != m.receiver) {
        uint64_t v = 0;
        for (const char* k : keys) v += p.num(k);
        uint64_t& l = last[p.pid];
        if (v > l) sum += v - l;
        l = std::max(l, v);
      }
    out.push_back(sum);
  }
  return out;
}

}  // namespace

Report analyse(const Measured& m, double rate_interval_s) {
  Report r;
  if (m.rx.empty()) return r;
  // Flows: the receiver's QPs that moved data, in QP number order (as last seen: the receiver may destroy
  // its QPs before its last sample).
  std::map<uint32_t, QpSample> seen;
  for (const EngineSample& s : m.rx)
    for (const QpSample& q : s.qps) seen[q.qpn] = q;
  std::vector<QpSample> flows;
  for (const auto& [qpn, q] : seen)
    if (q.rx_bytes > kMinFlowBytes) flows.push_back(q);
  std::map<uint32_t, size_t> sender_of;  // sender QPN -> index of its process in m.senders
  for (size_t i = 0; i < m.senders.size(); ++i)
    if (const auto it = m.tx.find(m.senders[i]); it != m.tx.end())
      for (const QpSample& q : it->second.qps) sender_of[q.qpn] = i;
  for (const QpSample& f : flows) {
    const auto it = sender_of.find(f.dest_qpn);
    r.series.flow_labels.push_back((it == sender_of.end() ? "qp " + std::to_string(f.dest_qpn)
                                                          : "sender " + std::to_string(it->second)) +
                                   " -> receiver");
  }
  const std::string port = [&] {
    for (const SwitchSample& s : m.sw)
      if (const PortSample* p = s.port_of(m.receiver)) return p->kv.count("port") ? p->kv.at("port") : "";
    return std::string();
  }();
  r.series.queue_names.push_back("uroced." + (port.empty() ? std::string("receiver") : port));
  r.series.kmin_kib = static_cast<double>(m.kmin_bytes) / 1024;
  r.series.kmax_kib = static_cast<double>(m.kmax_bytes) / 1024;
  r.series.xoff_kib = static_cast<double>(m.pause_bytes) / 1024;
  r.series.xoff_label = "pause (per ingress)";

  // Rates over rate_interval_s, from the receiver's cumulative counters and its own clock.
  const std::vector<uint64_t> pauses = sender_sum_by_sample(m, {"pauses"});
  const std::vector<uint64_t> pfc = sender_sum_by_sample(m, {"pfc_xoff_sent", "pfc_xon_sent"});
  CcRates cc(m);
  size_t sw_i = 0;
  const EngineSample* anchor = &m.rx.front();
  for (const EngineSample& s : m.rx) {
    if (s.t_s - anchor->t_s < rate_interval_s || s.time_ns <= anchor->time_ns) continue;
    Series::RateRow row;
    row.t_us = (s.t_s - m.t0_s) * 1e6;
    const double dt_ns = static_cast<double>(s.time_ns - anchor->time_ns);
    cc.advance(s.t_s);
    for (const QpSample& f : flows) {
      const uint64_t a = rx_of(*anchor, f.qpn), b = rx_of(s, f.qpn);
      row.gbps.push_back(b > a ? static_cast<double>(b - a) * 8 / dt_ns : 0);
      row.cc_gbps.push_back(cc.of(f.dest_qpn));
    }
    while (sw_i + 1 < m.sw.size() && m.sw[sw_i + 1].t_s <= s.t_s) ++sw_i;
    if (!m.sw.empty()) {
      row.pause_frames = pfc[sw_i];
      if (const PortSample* p = m.sw[sw_i].port_of(m.receiver)) {
        row.ecn_marked = p->num("ecn_marked");
        row.drops = p->num("drop_queue_full") + p->num("drop_loss");
      }
    }
    row.cnp_sent = s.device.count("cnp_sent") ? s.device.at("cnp_sent") : 0;
    r.series.rates.push_back(std::move(row));
    anchor = &s;
  }
  std::vector<double> intervals;
  for (const SwitchSample& s : m.sw)
    if (const PortSample* p = s.port_of(m.receiver)) {
      if (!r.series.queues.empty())
        intervals.push_back((s.t_s - m.t0_s) * 1e3 - r.series.queues.back().t_us / 1e3);
      r.series.queues.push_back(
          {(s.t_s - m.t0_s) * 1e6, {static_cast<double>(p->num("queue_bytes")) / 1024}});
    }
  r.sample_interval_ms = percentile(intervals, 50);

  // The traffic phase and its last 80%.
  double tbeg = -1, tend = -1;
  for (const auto& row : r.series.rates)
    if (std::any_of(row.gbps.begin(), row.gbps.end(), [](double g) { return g > 0; })) {
      if (tbeg < 0) tbeg = row.t_us;
      tend = row.t_us;
    }
  if (tbeg >= 0 && tend > tbeg) {
    const double cut_us = tbeg + 0.2 * (tend - tbeg);
    const EngineSample *first = nullptr, *last = nullptr;
    for (const EngineSample& s : m.rx) {
      const double t = (s.t_s - m.t0_s) * 1e6;
      if (t >= cut_us && !first) first = &s;
      if (t <= tend) last = &s;
    }
    if (first && last && last->time_ns > first->time_ns) {
      const double dt_ns = static_cast<double>(last->time_ns - first->time_ns);
      r.window_s = dt_ns / 1e9;
      for (const QpSample& f : flows) {
        const uint64_t a = rx_of(*first, f.qpn), b = rx_of(*last, f.qpn);
        r.flow_gbps.push_back(b > a ? static_cast<double>(b - a) * 8 / dt_ns : 0);
        r.total_gbps += r.flow_gbps.back();
      }
    }
    r.jain = jain_index(r.flow_gbps);
    std::vector<double> q;
    for (const auto& row : r.series.queues)
      if (row.t_us >= cut_us && row.t_us <= tend) q.push_back(row.kib[0]);
    r.queue_samples = q.size();
    r.q_p50_kib = percentile(q, 50);
    r.q_p99_kib = percentile(q, 99);
    r.q_max_kib = percentile(q, 100);
  }
  if (!m.sw.empty()) {
    r.pauses = pauses.back();
    r.pfc_frames = pfc.back();
    for (auto it = m.sw.rbegin(); it != m.sw.rend();
         ++it)  // the port's last sample (it goes with its process)
      if (const PortSample* p = it->port_of(m.receiver)) {
        r.ecn_marked = p->num("ecn_marked");
        r.drops = p->num("drop_queue_full") + p->num("drop_loss");
        break;
      }
  }
  r.cnp_sent = m.rx.back().device.count("cnp_sent") ? m.rx.back().device.at("cnp_sent") : 0;
  for (const auto& [pid, s] : m.tx) {
    if (s.device.count("cnp_handled")) r.cnp_handled += s.device.at("cnp_handled");
    if (s.device.count("cc_rate_changes")) r.cc_rate_changes += s.device.at("cc_rate_changes");
  }
  return r;
}

std::string summary_line(const Measured& m, const Report& r, uint64_t port_rate_bps,
                         const std::string& rate) {
  char buf[512];
  std::string per_flow;
  for (double g : r.flow_gbps) {
    std::snprintf(buf, sizeof buf, "%s%.3f", per_flow.empty() ? "" : " ", g);
    per_flow += buf;
  }
  std::string share = "unlimited port";
  if (port_rate_bps) {
    std::snprintf(buf, sizeof buf, "%.1f%% of %s",
                  100 * r.total_gbps * 1e9 / static_cast<double>(port_rate_bps), rate.c_str());
    share = buf;
  }
  std::string ecn = "ECN off";
  if (m.kmax_bytes)
    ecn = "Kmin/Kmax " + std::to_string(m.kmin_bytes / 1024) + "/" + std::to_string(m.kmax_bytes / 1024);
  std::snprintf(
      buf, sizeof buf,
      "%-18s flows %zu  throughput %.3f Gb/s (%s)  per flow %s  Jain %.3f  queue p50/p99/max "
      "%.0f/%.0f/%.0f KiB (%s, %zu samples ~%.1f ms apart)  ecn_marked %lu  pauses %lu  pfc_frames %lu  "
      "drops %lu  "
      "cnp_sent %lu  cnp_handled %lu  cc_rate_changes %lu  client exit %d",
      m.name.c_str(), r.flow_gbps.size(), r.total_gbps, share.c_str(), per_flow.c_str(), r.jain, r.q_p50_kib,
      r.q_p99_kib, r.q_max_kib, ecn.c_str(), r.queue_samples, r.sample_interval_ms,
      static_cast<unsigned long>(r.ecn_marked), static_cast<unsigned long>(r.pauses),
      static_cast<unsigned long>(r.pfc_frames), static_cast<unsigned long>(r.drops),
      static_cast<unsigned long>(r.cnp_sent), static_cast<unsigned long>(r.cnp_handled),
      static_cast<unsigned long>(r.cc_rate_changes), m.client_exit);
  return buf;
}

}  // namespace uroce::exp::rt
