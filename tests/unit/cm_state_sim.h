// Two CM agents back to back in virtual time, for cm_state_test.cc: every MAD either agent queues goes onto
// a wire with a delay, where a test's `fate` may drop or duplicate it; run_until() moves the clock from one
// due item (a delivery or an agent timer) to the next.
#pragma once

#include <functional>
#include <vector>

#include "transport/clock.h"
#include "transport/cm/cm.h"

namespace uroce::cm::test {

constexpr uint64_t kMs = 1'000'000;

enum class Fate { kDeliver, kDrop, kDuplicate };

struct Sent {
  uint64_t at;
  bool from_a;
  CmMad mad;
};

struct Seen {
  uint64_t at;
  Event ev;
};

class BackToBack {
 public:
  // Both agents wait `no_listener_grace_ns` for a listener before answering a REQ with REJ 8.
  explicit BackToBack(uint64_t no_listener_grace_ns = AgentConfig{}.no_listener_grace_ns)
      : a(cfg(0x0002c9fffe000001ull, 1, no_listener_grace_ns), clock, rng(1)),
        b(cfg(0x0002c9fffe000002ull, 2, no_listener_grace_ns), clock, rng(2)) {
    ga = wire::ipv4_mapped(0xC0A80001);
    gb = wire::ipv4_mapped(0xC0A80002);
  }

  ManualClock clock;
  CmAgent a, b;
  Gid ga, gb;
  uint64_t delay_ns = 1 * kMs;
  std::function<Fate(const Sent&)> fate = [](const Sent&) { return Fate::kDeliver; };
  std::vector<Sent> sent;  // every MAD put on the wire, decoded
  std::vector<Seen> ev_a, ev_b;

  // Delivers, polls and collects until nothing is due at or before `t`; the clock ends at `t`.
  void run_until(uint64_t t) {
    for (;;) {
      drain();
      uint64_t next = std::min(a.next_deadline_ns(), b.next_deadline_ns());
      for (const auto& f : flight_) next = std::min(next, f.at);
      if (next > t) break;
      clock.set(std::max(next, clock.now_ns()));
      deliver_due();
      a.poll();
      b.poll();
    }
    clock.set(std::max(t, clock.now_ns()));
    drain();
  }
  void run_for(uint64_t dt) { run_until(clock.now_ns() + dt); }

  // The MADs sent so far with this attribute, in order.
  std::vector<Sent> sent_of(AttrId attr, int from_a = -1) const {
    std::vector<Sent> out;
    for (const auto& s : sent)
      if (attr_of(s.mad.body) == attr && (from_a < 0 || s.from_a == (from_a == 1))) out.push_back(s);
    return out;
  }

  // Default active-side parameters towards b.
  ConnectParams params(uint64_t service_id) const {
    ConnectParams p;
    p.service_id = service_id;
    p.path.sgid = ga;
    p.path.dgid = gb;
    p.path.flow_label = 0x12345;
    p.path.traffic_class = 0x68;
    p.cma_hdr.src_port = 0x93d7;
    p.cma_hdr.src_ip = ga;
    p.cma_hdr.dst_ip = gb;
    p.qpn = 0x11;
    p.starting_psn = 0xe1a47d;
    p.responder_resources = 1;
    p.initiator_depth = 2;
    p.private_data = {'h', 'e', 'l', 'l', 'o'};
    return p;
  }

 private:
  struct InFlight {
    uint64_t at;
    bool to_b;
    MadBytes mad;
  };
  std::vector<InFlight> flight_;

  static AgentConfig cfg(uint64_t guid, uint32_t index, uint64_t no_listener_grace_ns) {
    AgentConfig c;
    c.local_guid = guid;
    c.id_index = index;
    c.no_listener_grace_ns = no_listener_grace_ns;
    return c;
  }
  static std::function<uint32_t()> rng(uint32_t seed) {
    return [s = seed * 0x9E3779B9u]() mutable {
      s ^= s << 13;
      s ^= s >> 17;
      s ^= s << 5;
      return s;
    };
  }

  void take(CmAgent& from, bool from_a) {
    OutMad m;
    while (from.pop_mad(&m)) {
      Sent s{clock.now_ns(), from_a, {}};
      if (decode_mad(m.mad, &s.mad) != MadError::kOk) continue;
      sent.push_back(s);
      const Gid& dst = from_a ? gb : ga;
      if (m.to.gid != dst) continue;  // nobody there
      const Fate f = fate(s);
      if (f == Fate::kDrop) continue;
      flight_.push_back({clock.now_ns() + delay_ns, from_a, m.mad});
      if (f == Fate::kDuplicate) flight_.push_back({clock.now_ns() + delay_ns, from_a, m.mad});
    }
  }
  void drain() {
    take(a, true);
    take(b, false);
    Event e;
    while (a.pop_event(&e)) ev_a.push_back({clock.now_ns(), e});
    while (b.pop_event(&e)) ev_b.push_back({clock.now_ns(), e});
  }
  void deliver_due() {
    std::vector<InFlight> due, later;
    for (auto& f : flight_) (f.at <= clock.now_ns() ? due : later).push_back(f);
    flight_ = std::move(later);
    for (const auto& f : due) {
      if (f.to_b)
        b.on_mad(Address{ga, kGsiQpn}, f.mad);
      else
        a.on_mad(Address{gb, kGsiQpn}, f.mad);
      drain();
    }
  }
};

}  // namespace uroce::cm::test
