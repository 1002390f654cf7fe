#include "tools/exp/scenarios.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "tools/exp/text.h"

namespace uroce::exp {

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1'000'000;

struct Common {
  fabric::FabricConfig fabric;
  sim::LinkConfig link;
  HostConfig host;
  uint32_t msg_bytes;
};

uint32_t kb(Knobs& k, const std::string& key, uint64_t def_bytes) {
  const double v = k.num(key, static_cast<double>(def_bytes) / 1024);
  if (v < 0 || v > 1 << 21) throw std::invalid_argument("key '" + key + "': out of range");
  return static_cast<uint32_t>(v * 1024);
}

// Reads the knobs every scenario shares, starting from `fabric` as the scenario's defaults. With DCQCN,
// `dcqcn_profile` is the default of the `dcqcn` knob: "tuned" (settings for this simulation) or "firmware"
// (ConnectX firmware defaults, cc/dcqcn.cc, as the war stories run it).
Common common(RunOptions& o, const std::string& default_cc, fabric::FabricConfig fabric,
              const char* dcqcn_profile = "tuned") {
  Knobs& k = o.knobs;
  Common c;
  c.link.rate_bps = static_cast<uint64_t>(k.num("link_gbps", 100) * 1e9);
  c.link.delay_ns = static_cast<uint64_t>(k.num("delay_ns", 1000));
  if (c.link.rate_bps == 0) throw std::invalid_argument("key 'link_gbps': must be > 0");
  fabric.ecn.enabled = k.num("ecn", fabric.ecn.enabled) != 0;
  fabric.ecn.kmin_bytes = kb(k, "kmin_kb", fabric.ecn.kmin_bytes);
  fabric.ecn.kmax_bytes = kb(k, "kmax_kb", fabric.ecn.kmax_bytes);
  fabric.ecn.pmax = k.num("pmax", fabric.ecn.pmax);
  if (fabric.ecn.pmax < 0 || fabric.ecn.pmax > 1)
    throw std::invalid_argument("key 'pmax': must be in [0, 1]");
  if (fabric.ecn.kmax_bytes < fabric.ecn.kmin_bytes)
    throw std::invalid_argument("key 'kmax_kb': below kmin_kb");
  const std::string fc = k.str("fc", fabric::flow_control_name(fabric.flow_control));
  if (fc == "none") {
    fabric.flow_control = fabric::FlowControl::kNone;
  } else if (fc == "pfc") {
    fabric.flow_control = fabric::FlowControl::kPfc;
  } else if (fc == "credit") {
    fabric.flow_control = fabric::FlowControl::kCredit;
  } else {
    throw std::invalid_argument("key 'fc': '" + fc + "' is not none, pfc or credit");
  }
  fabric.pfc_xoff_bytes = kb(k, "xoff_kb", fabric.pfc_xoff_bytes);
  fabric.pfc_xon_bytes = kb(k, "xon_kb", fabric.pfc_xon_bytes);
  if (fabric.pfc_xon_bytes > fabric.pfc_xoff_bytes)
    throw std::invalid_argument("key 'xon_kb': above xoff_kb");
  fabric.pfc_headroom_bytes = kb(k, "headroom_kb", fabric.pfc_headroom_bytes);
  fabric.buffer_bytes = kb(k, "buffer_kb", fabric.buffer_bytes);
  fabric.credit_bytes = kb(k, "credit_kb", fabric.credit_bytes);
  fabric.dt_alpha = k.num("dt_alpha", fabric.dt_alpha);
  fabric.int_enabled = k.num("int", fabric.int_enabled) != 0;
  fabric.pfc_watchdog_ns = static_cast<uint64_t>(k.num("pfc_watchdog_us", 0) * 1000);
  c.fabric = fabric;
  c.host.cc = o.cc.empty() ? default_cc : o.cc;
  c.host.cc_params = k.cc_params();
  const std::string profile = c.host.cc == "dcqcn" ? k.str("dcqcn", dcqcn_profile) : "";
  if (profile != "" && profile != "tuned" && profile != "firmware")
    throw std::invalid_argument("key 'dcqcn': '" + profile + "' is not tuned or firmware");
  if (profile == "tuned") {
    // ConnectX's firmware defaults leave a 16:1 incast to PFC: back-to-back CNPs keep the target rate at
    // the line rate (clamp_tgt_rate 0), so fast recovery heads straight back there and the queue sits at the
    // pause threshold. The paper's rule (Rt = Rc at every cut) with faster, finer recovery settles it within
    // ~1 ms. cc.<key>=... overrides each.
    for (const auto& [key, v] : {std::pair<const char*, double>{"rpg_min_rate", 100},
                                 {"rpg_time_reset", 20},
                                 {"rpg_ai_rate", 100},
                                 {"rate_reduce_monitor_period", 10},
                                 {"clamp_tgt_rate", 1}}) {
      c.host.cc_params.emplace(key, v);
      k.note_default(std::string("cc.") + key, v);
    }
  }
  // HPCC's additive step (bytes per update); without it a flow never grows its window back after a cut.
  if (c.host.cc == "hpcc") {
    c.host.cc_params.emplace("w_ai", 500);
    k.note_default("cc.w_ai", 500);
  }
  c.host.rate_bps = c.link.rate_bps;
  c.msg_bytes = kb(k, "msg_kb", 256 * 1024);
  if (c.msg_bytes == 0 || c.msg_bytes > (64u << 20)) throw std::invalid_argument("key 'msg_kb': 1..65536");
  c.host.mem_bytes = c.msg_bytes;
  return c;
}

FlowSpec long_flow(uint32_t src, uint32_t dst, const Common& c) {
  FlowSpec f;
  f.src = src;
  f.dst = dst;
  f.msg_bytes = c.msg_bytes;
  return f;
}

uint32_t count(Knobs& k, const std::string& key, double def, uint32_t lo, uint32_t hi) {
  const double v = k.num(key, def);
  if (v < lo || v > hi || v != static_cast<uint32_t>(v))
    throw std::invalid_argument("key '" + key + "': must be an integer in " + std::to_string(lo) + ".." +
                                std::to_string(hi));
  return static_cast<uint32_t>(v);
}

// N senders -> host 0 through one switch; the bottleneck is the switch port to host 0.
Variant incast_variant(const std::string& name, uint32_t n, const Common& c) {
  return Variant{name, [n, c](Experiment& e) {
                   sim::SimSwitch& sw = build_star(e, n + 1, c.host, c.fabric, c.link);
                   for (uint32_t i = 1; i <= n; ++i) e.add_flow(long_flow(i, 0, c));
                   e.watch("to_receiver", sw, 0);
                 }};
}

std::vector<Variant> incast(RunOptions& o) {
  const uint32_t n = count(o.knobs, "n", 16, 2, 64);
  const Common c = common(o, "dcqcn", default_fabric());
  return {incast_variant("incast" + std::to_string(n), n, c)};
}

std::vector<Variant> fair2(RunOptions& o) {
  const uint64_t join =
      static_cast<uint64_t>(o.knobs.num("join_us", static_cast<double>(o.duration_ns / 10 / kUs))) * kUs;
  const Common c = common(o, "dcqcn", default_fabric());
  return {Variant{"fair2", [join, c](Experiment& e) {
                    sim::SimSwitch& sw = build_star(e, 3, c.host, c.fabric, c.link);
                    e.add_flow(long_flow(1, 0, c));
                    FlowSpec late = long_flow(2, 0, c);
                    late.start_ns = join;
                    e.add_flow(late);
                    e.watch("to_receiver", sw, 0);
                  }}};
}

std::vector<Variant> pfc_vs_dcqcn(RunOptions& o) {
  const uint32_t n = count(o.knobs, "n", 16, 2, 64);
  fabric::FabricConfig f = default_fabric();
  Common with_cc = common(o, "dcqcn", f);
  Common pfc_only = with_cc;
  pfc_only.host.cc = "none";
  pfc_only.host.cc_params.clear();
  return {incast_variant("pfc-only", n, pfc_only), incast_variant(with_cc.host.cc + "+pfc", n, with_cc)};
}

// Leaves with `per_leaf` hosts each (host h on leaf h / per_leaf), every leaf joined to every spine; host
// links carry `down` from the leaf to the host and c.link the other way and between switches.
struct LeafSpine {
  std::vector<sim::SimSwitch*> leaves, spines;
  std::vector<uint32_t> host_port;        // the leaf port of host h
  std::vector<std::vector<uint32_t>> up;  // up[l][s]: leaf l's port toward spine s
};

LeafSpine build_leaf_spine(Experiment& e, uint32_t leaves, uint32_t spines, uint32_t per_leaf,
                           const Common& c, const sim::LinkConfig& down) {
  sim::SwitchConfig sc;
  sc.fabric = c.fabric;
  sc.buffer_frames = static_cast<uint32_t>(c.fabric.buffer_bytes / 1024 + 256);
  sim::SimNetwork& net = e.net();
  LeafSpine t;
  for (uint32_t l = 0; l < leaves; ++l) t.leaves.push_back(&net.add_switch(sc));
  for (uint32_t s = 0; s < spines; ++s) t.spines.push_back(&net.add_switch(sc));
  t.up.resize(leaves);
  for (uint32_t l = 0; l < leaves; ++l)
    for (uint32_t s = 0; s < spines; ++s)
      t.up[l].push_back(net.connect(*t.leaves[l], *t.spines[s], c.link).first);
  for (uint32_t h = 0; h < leaves * per_leaf; ++h)
    t.host_port.push_back(net.attach(e.port(e.add_host(c.host)), *t.leaves[h / per_leaf], c.link, down));
  net.compute_routes();
  return t;
}

// The collective scenarios' shape: knobs for the topology, the operation and the NIC's retransmission.
struct CollectiveKnobs {
  uint32_t leaves, per_leaf, spines;
  CollectiveSpec spec;
  FlowSpec qp;  // timeout and retry count of every QP
};

CollectiveKnobs collective_knobs(Knobs& k, CollectiveKind kind, double size_mb, uint32_t iters,
                                 uint32_t channels, uint32_t timeout) {
  CollectiveKnobs ck;
  ck.leaves = count(k, "leaves", 2, 1, 16);
  ck.per_leaf = count(k, "hosts_per_leaf", 4, 1, 32);
  ck.spines = count(k, "spines", 2, 1, 16);
  ck.spec.kind = kind;
  for (uint32_t h = 0; h < ck.leaves * ck.per_leaf; ++h) ck.spec.ranks.push_back(h);
  if (ck.spec.ranks.size() < 2) throw std::invalid_argument("a collective needs 2+ hosts");
  ck.spec.channels = count(k, "channels", channels, 1, 32);
  const double mb = k.num("size_mb", size_mb);
  if (mb <= 0 || mb > 65536) throw std::invalid_argument("key 'size_mb': 0..65536");
  ck.spec.bytes = static_cast<uint64_t>(mb * (1 << 20));
  ck.spec.iterations = count(k, "iters", iters, 2, 100000);
  ck.spec.warmup = 1;
  // NCCL sets every QP's local ACK timeout (IBA exponent: 4.096 us * 2^timeout) from NCCL_IB_TIMEOUT and
  // its retry count from NCCL_IB_RETRY_CNT (default 7).
  ck.qp.timeout = static_cast<uint8_t>(count(k, "nccl_ib_timeout", timeout, 1, 31));
  ck.qp.retry_cnt = static_cast<uint8_t>(count(k, "nccl_ib_retry_cnt", 7, 0, 7));
  return ck;
}

std::vector<Variant> ecn_threshold(RunOptions& o) {
  const std::string workload = o.knobs.str("workload", "alltoall");
  const double ratio = o.knobs.num("ratio", 30);
  if (ratio < 1) throw std::invalid_argument("key 'ratio': must be >= 1");
  char name[32];
  std::snprintf(name, sizeof name, "kmin-div%g", ratio);
  auto divided = [ratio](Common c) {
    c.fabric.ecn.kmin_bytes = static_cast<uint32_t>(c.fabric.ecn.kmin_bytes / ratio);
    c.fabric.ecn.kmax_bytes = static_cast<uint32_t>(c.fabric.ecn.kmax_bytes / ratio);
    return c;
  };
  if (workload == "incast") {
    const uint32_t n = count(o.knobs, "n", 2, 2, 64);
    const Common vendor = common(o, "dcqcn", default_fabric());
    return {incast_variant("vendor", n, vendor), incast_variant(name, n, divided(vendor))};
  }
  if (workload != "alltoall")
    throw std::invalid_argument("key 'workload': '" + workload + "' is not alltoall or incast");
  // AllToAll (an MoE layer's exchange) on a leaf-spine: no link is oversubscribed, but packets of several
  // senders meet at every receiver's port, a few at a time.
  CollectiveKnobs ck = collective_knobs(o.knobs, CollectiveKind::kAllToAll, 4, 4, 4, 12);
  // The switch vendor's RoCE default (NVIDIA Cumulus Linux and Onyx: absolute ECN thresholds of 150 KB and
  // 1.5 MB on the RoCE traffic class).
  fabric::FabricConfig fab = default_fabric();
  fab.ecn.kmin_bytes = 150'000;
  fab.ecn.kmax_bytes = 1'500'000;
  Common vendor = common(o, "dcqcn", fab, "firmware");
  ck.spec.msg_bytes = vendor.msg_bytes;
  // Each cut lowers the target rate too (the DCQCN paper's rule; ConnectX's clamp_tgt_rate 1), so a flow
  // cut by a spurious mark climbs back by additive increase instead of returning to its rate at once.
  if (vendor.host.cc == "dcqcn" && vendor.host.cc_params.emplace("clamp_tgt_rate", 1).second)
    o.knobs.note_default("cc.clamp_tgt_rate", 1);
  auto build = [ck](Common c) {
    return [ck, c](Experiment& e) {
      Common v = c;
      const LeafSpine t = build_leaf_spine(e, ck.leaves, ck.spines, ck.per_leaf, v, v.link);
      e.add_collective(ck.spec, ck.qp);
      e.watch("to_host0", *t.leaves[0], t.host_port[0]);
    };
  };
  return {Variant{"vendor", build(vendor)}, Variant{name, build(divided(vendor))}};
}

std::vector<Variant> incast_burst(RunOptions& o) {
  const uint32_t n = count(o.knobs, "n", 8, 1, 64);
  const uint32_t burst = kb(o.knobs, "burst_kb", 512 * 1024);
  const uint64_t at =
      static_cast<uint64_t>(o.knobs.num("burst_at_us", static_cast<double>(o.duration_ns * 2 / 5 / kUs))) *
      kUs;
  const Common c = common(o, "dcqcn", default_fabric());
  return {Variant{"long+burst", [n, burst, at, c](Experiment& e) {
                    sim::SimSwitch& sw = build_star(e, n + 2, c.host, c.fabric, c.link);
                    e.add_flow(long_flow(1, 0, c));
                    for (uint32_t i = 0; i < n; ++i) {
                      FlowSpec f = long_flow(2 + i, 0, c);
                      f.bytes = burst;
                      f.start_ns = at;
                      e.add_flow(f);
                    }
                    e.watch("to_receiver", sw, 0);
                  }}};
}

std::vector<Variant> ecmp(RunOptions& o) {
  const uint32_t spines = count(o.knobs, "spines", 4, 2, 16);
  const uint32_t qps = count(o.knobs, "qps", 8, 1, 64);
  const double host_gbps = o.knobs.num("host_gbps", 400);
  // A 400 Gb/s host link needs more PFC headroom: rate * (2 * delay) + two frames.
  fabric::FabricConfig fab = default_fabric();
  fab.pfc_headroom_bytes = 192 * 1024;
  Common c = common(o, "dcqcn", fab);
  sim::LinkConfig host_link = c.link;
  host_link.rate_bps = static_cast<uint64_t>(host_gbps * 1e9);
  c.host.rate_bps = host_link.rate_bps;
  auto build = [spines, qps, c, host_link](bool fixed) {
    return [spines, qps, c, host_link, fixed](Experiment& e) {
      sim::SwitchConfig sc;
      sc.fabric = c.fabric;
      sc.buffer_frames = static_cast<uint32_t>(c.fabric.buffer_bytes / 1024 + 256);
      sim::SimNetwork& net = e.net();
      sim::SimSwitch& leaf0 = net.add_switch(sc);
      sim::SimSwitch& leaf1 = net.add_switch(sc);
      std::vector<uint32_t> up;
      for (uint32_t s = 0; s < spines; ++s) {
        sim::SimSwitch& sp = net.add_switch(sc);
        up.push_back(net.connect(leaf0, sp, c.link).first);
        net.connect(leaf1, sp, c.link);
      }
      const uint32_t a = e.add_host(c.host), b = e.add_host(c.host);
      net.attach(e.port(a), leaf0, host_link);
      net.attach(e.port(b), leaf1, host_link);
      net.compute_routes();
      for (uint32_t q = 0; q < qps; ++q) {
        FlowSpec f = long_flow(a, b, c);
        if (fixed) f.sport = 0xC000;
        e.add_flow(f);
      }
      for (uint32_t s = 0; s < spines; ++s) e.watch("uplink" + std::to_string(s), leaf0, up[s]);
    };
  };
  return {Variant{"fixed-sport", build(true)}, Variant{"varying-sport", build(false)}};
}

std::vector<Variant> credit_vs_pfc(RunOptions& o) {
  const uint32_t n = count(o.knobs, "n", 16, 2, 64);
  fabric::FabricConfig f = default_fabric();
  f.ecn.enabled = false;
  Common pfc = common(o, "none", f);
  pfc.fabric.flow_control = fabric::FlowControl::kPfc;
  Common credit = pfc;
  credit.fabric.flow_control = fabric::FlowControl::kCredit;
  return {incast_variant("pfc", n, pfc), incast_variant("credit", n, credit)};
}

// Leaf-spine, 2 leaves x 4 hosts, 2 spines. Leaf 1: X (host 4, the stuck NIC), V1 (5), V2 (6), 7; leaf 0:
// senders 0..3. Flows: 0 -> X (the only traffic for X), 0 -> V1, 1 -> V2 (both innocent, crossing the
// spines), 2 -> 3 (innocent, within leaf 0), 7 -> V1 (innocent, within leaf 1). With storm_topo=star the
// original one-switch version: X = 0, V = 1, senders 2 and 3 (flows 2 -> X, 2 -> V, 3 -> V).
std::vector<Variant> pfc_storm(RunOptions& o) {
  const uint64_t at =
      static_cast<uint64_t>(o.knobs.num("storm_at_us", static_cast<double>(o.duration_ns * 2 / 5 / kUs))) *
      kUs;
  const std::string topo = o.knobs.str("storm_topo", "leaf-spine");
  if (topo != "leaf-spine" && topo != "star")
    throw std::invalid_argument("key 'storm_topo': '" + topo + "' is not leaf-spine or star");
  const Common plain = common(o, "dcqcn", default_fabric());
  Common guarded = plain;
  if (guarded.fabric.pfc_watchdog_ns == 0)
    guarded.fabric.pfc_watchdog_ns = static_cast<uint64_t>(o.knobs.num("watchdog_us", 200)) * kUs;
  auto build = [at, topo](const Common& c, bool storm) {
    return [c, at, topo, storm](Experiment& e) {
      if (topo == "star") {
        sim::SimSwitch& sw = build_star(e, 4, c.host, c.fabric, c.link);
        e.add_flow(long_flow(2, 0, c));
        e.add_flow(long_flow(2, 1, c));
        e.add_flow(long_flow(3, 1, c));
        if (storm) e.add_pfc_storm(0, 3, at, 100 * kUs);
        e.watch("to_X", sw, 0);
        e.watch("to_V", sw, 1);
        return;
      }
      const LeafSpine t = build_leaf_spine(e, 2, 2, 4, c, c.link);
      e.add_flow(long_flow(0, 4, c));
      e.add_flow(long_flow(0, 5, c));
      e.add_flow(long_flow(1, 6, c));
      e.add_flow(long_flow(2, 3, c));
      e.add_flow(long_flow(7, 5, c));
      if (storm) e.add_pfc_storm(4, 3, at, 100 * kUs);
      e.watch("to_X", *t.leaves[1], t.host_port[4]);
      e.watch("to_V1", *t.leaves[1], t.host_port[5]);
      e.watch("spine0_to_leaf1", *t.spines[0], 1);
      e.watch("leaf0_to_spine0", *t.leaves[0], t.up[0][0]);
    };
  };
  return {Variant{"healthy", build(plain, false)}, Variant{"storm", build(plain, true)},
          Variant{"storm+watchdog", build(guarded, true)}};
}

// Four switches in a ring, one host each; host i writes to host i+3. Routed clockwise over three hops (the
// long way: routes set by hand), every ring link carries three flows and every switch's ring ingress holds
// frames waiting for the next ring link: a cyclic buffer dependency. The other variant routes shortest paths.
std::vector<Variant> pfc_deadlock(RunOptions& o) {
  const Common c = common(o, "none", default_fabric());
  auto build = [c](bool cyclic) {
    return [c, cyclic](Experiment& e) {
      sim::SwitchConfig sc;
      sc.fabric = c.fabric;
      sc.buffer_frames = static_cast<uint32_t>(c.fabric.buffer_bytes / 1024 + 256);
      sim::SimNetwork& net = e.net();
      std::vector<sim::SimSwitch*> sw;
      for (int i = 0; i < 4; ++i) sw.push_back(&net.add_switch(sc));
      std::vector<uint32_t> cw(4);  // switch i's port toward switch i + 1
      for (int i = 0; i < 4; ++i) cw[i] = net.connect(*sw[i], *sw[(i + 1) % 4], c.link).first;
      for (int i = 0; i < 4; ++i) net.attach(e.port(e.add_host(c.host)), *sw[i], c.link);
      net.compute_routes();  // shortest paths: host i -> host i + 3 is one hop counter-clockwise
      if (cyclic)
        for (int j = 0; j < 4; ++j)
          for (uint32_t h = 0; h < 4; ++h)
            if (h != static_cast<uint32_t>(j)) sw[j]->set_route(e.port(h).mac(), {cw[j]});
      for (uint32_t i = 0; i < 4; ++i) e.add_flow(long_flow(i, (i + 3) % 4, c));
      for (int i = 0; i < 4; ++i) e.watch("ring" + std::to_string(i), *sw[i], cw[i]);
    };
  };
  return {Variant{"clockwise", build(true)}, Variant{"shortest-path", build(false)}};
}

// Ring AllReduce over a leaf-spine, lossless, with `loss` of the frames each NIC receives lost and go-back-N
// recovery, and the same loss with selective repeat.
std::vector<Variant> allreduce_loss(RunOptions& o) {
  Knobs& k = o.knobs;
  CollectiveKnobs ck = collective_knobs(k, CollectiveKind::kRingAllReduce, 4, 20, 8, 10);
  const double loss = k.num("loss", 0.001);
  if (loss < 0 || loss >= 1) throw std::invalid_argument("key 'loss': 0 <= loss < 1");
  const Common c = common(o, "dcqcn", default_fabric(), "firmware");
  ck.spec.msg_bytes = c.msg_bytes;
  auto build = [ck, c](double p, bool sr) {
    return [ck, c, p, sr](Experiment& e) {
      Common v = c;
      v.host.selective_repeat = sr;
      sim::LinkConfig down = v.link;
      down.loss = p;
      build_leaf_spine(e, ck.leaves, ck.spines, ck.per_leaf, v, down);
      e.add_collective(ck.spec, ck.qp);
    };
  };
  char name[48];
  std::snprintf(name, sizeof name, "loss%g-gbn", loss * 100);
  std::string gbn = name;
  std::snprintf(name, sizeof name, "loss%g-sr", loss * 100);
  return {Variant{"lossless", build(0, false)}, Variant{gbn, build(loss, false)},
          Variant{name, build(loss, true)}};
}

// N:1 incast with DCQCN where the senders lose `cnp_loss` of the CNPs sent to them, against all CNPs
// arriving and against a quarter of the loss (the remedy: CNPs on a class that is not dropped).
std::vector<Variant> cnp_loss(RunOptions& o) {
  const uint32_t n = count(o.knobs, "n", 16, 2, 64);
  const double p = o.knobs.num("cnp_loss", 0.5);
  if (p < 0 || p > 1) throw std::invalid_argument("key 'cnp_loss': 0..1");
  const Common c = common(o, "dcqcn", default_fabric());
  Common lossy = c, less = c;
  lossy.host.cnp_loss = p;
  less.host.cnp_loss = p / 4;
  char name[48];
  std::snprintf(name, sizeof name, "lose%g%%", p * 100);
  std::string lose = name;
  std::snprintf(name, sizeof name, "lose%g%%", p * 25);
  return {incast_variant("all-cnps", n, c), incast_variant(lose, n, lossy), incast_variant(name, n, less)};
}

std::vector<Variant> hpcc_incast(RunOptions& o) {
  const uint32_t n = count(o.knobs, "n", 16, 2, 64);
  fabric::FabricConfig f = default_fabric();
  f.int_enabled = true;
  f.ecn.enabled = false;
  const Common c = common(o, "hpcc", f);
  return {incast_variant(c.host.cc + "-incast" + std::to_string(n), n, c)};
}

}  // namespace

void Knobs::set(const std::string& kv) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) throw std::invalid_argument("'" + kv + "' is not key=value");
  kv_[kv.substr(0, eq)] = kv.substr(eq + 1);
}

namespace {

// Shortest text that reads back as exactly `v`.
std::string exact_text(double v) {
  char buf[40];
  if (v == static_cast<double>(static_cast<long long>(v)) && v > -1e15 && v < 1e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return buf;
  }
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

void Knobs::note_default(const std::string& key, double value) {
  if (kv_.count(key) == 0) effective_[key] = Effective{exact_text(value), false};
}

double Knobs::num(const std::string& key, double def) {
  used_.insert(key);
  const auto it = kv_.find(key);
  if (it == kv_.end()) {
    effective_[key] = Effective{exact_text(def), false};
    return def;
  }
  effective_[key] = Effective{it->second, true};
  size_t n = 0;
  const double v = leading_number(it->second, &n);
  if (n == 0 || n != it->second.size())
    throw std::invalid_argument("key '" + key + "': '" + it->second + "' is not a number");
  return v;
}

std::string Knobs::str(const std::string& key, const std::string& def) {
  used_.insert(key);
  const auto it = kv_.find(key);
  effective_[key] = Effective{it == kv_.end() ? def : it->second, it != kv_.end()};
  return it == kv_.end() ? def : it->second;
}

cc::Params Knobs::cc_params() {
  cc::Params p;
  for (const auto& [k, v] : kv_) {
    if (k.rfind("cc.", 0) != 0) continue;
    p[k.substr(3)] = num(k, 0);
  }
  return p;
}

void Knobs::check() const {
  for (const auto& [k, v] : kv_)
    if (!used_.count(k)) throw std::invalid_argument("unknown key '" + k + "' for this scenario");
}

fabric::FabricConfig default_fabric() {
  fabric::FabricConfig f;
  f.enabled = true;
  f.ecn.enabled = true;
  f.ecn.kmin_bytes = 50 * 1024;
  f.ecn.kmax_bytes = 400 * 1024;
  f.ecn.pmax = 1.0;
  f.flow_control = fabric::FlowControl::kPfc;
  return f;
}

sim::SimSwitch& build_star(Experiment& e, uint32_t n, const HostConfig& host,
                           const fabric::FabricConfig& fabric, const sim::LinkConfig& link) {
  sim::SwitchConfig sc;
  sc.fabric = fabric;
  sc.buffer_frames = static_cast<uint32_t>(fabric.buffer_bytes / 1024 + 256);
  sim::SimSwitch& sw = e.net().add_switch(sc);
  for (uint32_t i = 0; i < n; ++i) e.net().attach(e.port(e.add_host(host)), sw, link);
  e.net().compute_routes();
  return sw;
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all = {
      {"incast",
       "N senders (n=2..64, default 16) write to one receiver through one switch at 100 Gb/s. Shows whether "
       "the congestion control (default DCQCN) shares the bottleneck fairly (Jain index over the last 80% of "
       "the run) while keeping it busy, and how deep the queue gets compared with the ECN thresholds "
       "(Kmin/Kmax); PFC catches what ECN does not, so drops stay at zero.",
       10 * kMs, incast},
      {"fair2",
       "Two long flows to one receiver; the second joins after join_us (default 10% of the run). Shows the "
       "first flow giving up half the link and both converging to the fair share of 50 Gb/s.",
       5 * kMs, fair2},
      {"pfc-vs-dcqcn",
       "The same N:1 incast twice: with PFC as the only defence (no congestion control) and with DCQCN on "
       "top "
       "of PFC. PFC alone keeps the fabric lossless by pausing the senders again and again (many pause "
       "frames, long paused time, a queue pinned near the XOFF thresholds); DCQCN slows the senders so that "
       "PFC rarely has to act.",
       3 * kMs, pfc_vs_dcqcn},
      {"ecn-threshold",
       "DCQCN with the vendor's ECN thresholds and with both divided by ratio (default 30), as operators "
       "have misconfigured them (and reported ~70% throughput loss). workload=alltoall (default): AllToAll "
       "of size_mb (default 4) MiB per rank, iters (default 4) operations, on a leaf-spine of leaves x "
       "hosts_per_leaf (2 x 4) hosts, channels (4) QPs per peer, Kmin 150 KB / Kmax 1.5 MB (NVIDIA's switch "
       "RoCE default), DCQCN at ConnectX firmware defaults except clamp_tgt_rate 1 (every cut lowers the "
       "target rate); "
       "nothing is oversubscribed, but a few packets meet at each receiver's port, and at 1/30 that already "
       "marks: flows are cut and climb back by additive increase. workload=incast: the 2:1 incast (n) of "
       "docs/cc-results.md with the tuned DCQCN (use --duration-us 5000). docs/war-stories.md.",
       100 * kMs, ecn_threshold},
      {"incast-burst",
       "A long flow to a receiver is hit by n (default 8) senders each writing burst_kb (default 512 KiB) to "
       "the same receiver at burst_at_us. Shows the long flow's rate dip and recovery, the queue spike, and "
       "the flow completion time slowdown of the burst flows.",
       4 * kMs, incast_burst},
      {"ecmp",
       "Leaf-spine with 2 leaves and `spines` spines (default 4) at 100 Gb/s; one host on each leaf with a "
       "host_gbps (default 400) link; qps (default 8) QPs between them. Switches pick an uplink by a hash of "
       "the IP addresses and UDP ports. With a fixed UDP source port every QP hashes onto the same uplink "
       "(polarization: ~100 Gb/s total); with the per-QP source port RoCEv2 prescribes they spread over the "
       "spines.",
       2 * kMs, ecmp},
      {"credit-vs-pfc",
       "N:1 incast without congestion control, made lossless once by PFC (pause frames when an ingress "
       "crosses XOFF) and once by InfiniBand-style link credits (a sender transmits only against credits "
       "in 64-byte blocks that the receiver returns as its buffer drains). Both lose nothing; credits need "
       "no pause frames and no headroom and bound each ingress to its advertised buffer.",
       3 * kMs, credit_vs_pfc},
      {"pfc-storm",
       "A NIC gone bad (a stuck receiver X) keeps sending PFC XOFF frames (from storm_at_us on, every 100 "
       "us). storm_topo=leaf-spine (default): 2 leaves x 4 hosts, 2 spines; X on leaf 1; flows 0 -> X, "
       "0 -> V1 and 1 -> V2 across the spines, 2 -> 3 within leaf 0, 7 -> V1 within leaf 1. Leaf 1 stops "
       "sending to X, frames for X hold the buffer of the spine ingresses, so leaf 1 pauses the spines, the "
       "spines pause leaf 0's uplinks, leaf 0 pauses senders 0 and 1: the innocent flows 1 and 2 stop three "
       "hops from the fault. storm_topo=star: the one-switch version (flows 2 -> X, 2 -> V, 3 -> V). Third "
       "variant: the storm with the switches' PFC watchdog (watchdog_us, default 200: a priority paused "
       "without "
       "a break that long is resumed and the device's PFC ignored while it goes on), which confines it. "
       "docs/war-stories.md.",
       3 * kMs, pfc_storm},
      {"pfc-deadlock",
       "Four switches in a ring with one host each; every host writes to the host three hops away and the "
       "routes send all traffic clockwise, so each ring link carries three flows and each switch's ring "
       "ingress holds frames that wait for the next ring link: a cyclic buffer dependency. Without "
       "congestion "
       "control PFC pauses propagate around the ring until every ring link is paused by the next one and "
       "throughput stays at zero for good (a PFC deadlock); with DCQCN the queues stay below XOFF.",
       3 * kMs, pfc_deadlock},
      {"hpcc-incast",
       "N:1 incast (default 16) with HPCC: switches stamp INT (timestamp, bytes sent, queue length, line "
       "rate) on data packets, the receiver echoes it in ACKs and the sender sets its window from the "
       "measured utilisation. HPCC aims at ~95% utilisation with a near-empty queue. Needs the 'hpcc' "
       "algorithm in cc/.",
       3 * kMs, hpcc_incast},
      {"allreduce-loss",
       "Ring AllReduce (nccl-tests' algbw and busbw) of size_mb (default 4) MiB on every host of a "
       "leaf-spine (leaves x hosts_per_leaf, default 2 x 4; spines 2; 100 Gb/s, 1 us links), channels "
       "(default 8) QPs per rank as NCCL's channels, iters operations (default 20, the first not measured), "
       "each starting when every rank finished the previous one. A step of a rank waits for the previous "
       "step's data from its ring neighbour, so the slowest flow sets the pace. Variants: lossless; loss "
       "(default 0.001) of the frames every NIC receives lost, go-back-N; the same with selective repeat. "
       "QPs take nccl_ib_timeout (IBA exponent, default 10: 4.096 us * 2^10 = 4.2 ms) and nccl_ib_retry_cnt "
       "(7); DCQCN at ConnectX firmware defaults. docs/war-stories.md.",
       10'000 * kMs, allreduce_loss},
      {"cnp-loss",
       "N:1 incast (default 16) with DCQCN (the tuned settings of docs/cc-results.md, under which it holds "
       "the queue) where the senders lose cnp_loss (default 0.5) of the CNPs sent to them, as CNPs on a "
       "lossy class or filtered by an ACL are: DCQCN goes blind, the queue climbs to the PFC threshold and "
       "pause frames multiply. Third variant: a quarter of the loss. docs/war-stories.md.",
       5 * kMs, cnp_loss},
  };
  return all;
}

const Scenario* find_scenario(const std::string& name) {
  for (const Scenario& s : scenarios())
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace uroce::exp
