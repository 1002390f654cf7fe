#include "tests/support/sim_env.h"

#include <stdexcept>

namespace uroce::test {

namespace {

uint64_t mac_u64(const wire::MacAddr& m) {
  uint64_t v = 0;
  for (uint8_t b : m) v = v << 8 | b;
  return v;
}

}  // namespace

Endpoint::Endpoint(sim::SimNetwork& net, uint8_t n, const EndpointOptions& opt) : mem(opt.mem_bytes) {
  DeviceConfig cfg = opt.device;
  if (cfg.gid == Gid{}) cfg.gid = wire::ipv4_mapped(0x0A000000u | n);
  if (cfg.mac == wire::MacAddr{}) cfg.mac = mac_for_gid(cfg.gid);
  sim::PortConfig pc;
  pc.mac = mac_u64(cfg.mac);
  pc.pool_frames = 4096;
  pc.tx_ring_frames = 64;  // a NIC's tx ring: the backlog stays in the send queues, not on the wire
  port = &net.add_port(pc);
  dev = std::make_unique<Device>(cfg, port, &net.clock());
  if (dev->alloc_pd(&pd) || dev->create_cq(opt.cqe, &cq) ||
      dev->reg_mr(pd, mem.data(), mem.size(),
                  kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic, &mr))
    throw std::runtime_error("endpoint setup failed");
  net.add_node(*this, {port});
}

Endpoint::~Endpoint() = default;

Qp* Endpoint::create_qp(QpType type, uint32_t max_wr, uint32_t max_sge, Srq* srq, uint32_t max_inline) {
  QpInitAttr init;
  init.type = type;
  init.send_cq = init.recv_cq = cq;
  init.srq = srq;
  init.cap = QpCap{max_wr, max_wr, max_sge, max_sge, max_inline};
  Qp* qp = nullptr;
  if (dev->create_qp(pd, init, &qp)) throw std::runtime_error("create_qp failed");
  return qp;
}

std::vector<Wc> Endpoint::poll_cq(Cq* q) {
  std::vector<Wc> out(64);
  out.resize(static_cast<size_t>((q ? q : cq)->poll(64, out.data())));
  return out;
}

int connect_qps(Endpoint& a, Qp* qa, Endpoint& b, Qp* qb, const RcOptions& o) {
  auto bring_up = [&o](Qp* qp, const Gid& dgid, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn) {
    const bool rc = qp->type() == QpType::kRc;
    // XRC: an initiator is RC without the responder half, a target RC without the requester half.
    const bool responder = rc && qp->xrc() != XrcRole::kInitiator;
    const bool requester = rc && qp->xrc() != XrcRole::kTarget;
    QpAttr at;
    at.qp_state = QpState::kInit;
    at.port_num = 1;
    at.qp_access_flags = o.access;
    if (int e = qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags)) return e;
    at.qp_state = QpState::kRtr;
    at.path_mtu = o.mtu;
    at.dest_qp_num = dqpn;
    at.rq_psn = rq_psn;
    at.ah.dgid = dgid;
    at.max_dest_rd_atomic = o.max_rd_atomic;
    at.min_rnr_timer = o.min_rnr_timer;
    uint32_t mask = kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
    if (responder) mask |= kQpMaxDestRdAtomic | kQpMinRnrTimer;
    if (int e = qp->modify(at, mask)) return e;
    at.qp_state = QpState::kRts;
    at.sq_psn = sq_psn;
    at.timeout = o.timeout;
    at.retry_cnt = o.retry_cnt;
    at.rnr_retry = o.rnr_retry;
    at.max_rd_atomic = o.max_rd_atomic;
    mask = kQpState | kQpSqPsn;
    if (rc) mask |= kQpTimeout;
    if (requester) mask |= kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic;
    return qp->modify(at, mask);
  };
  if (int e = bring_up(qa, b.gid(), qb->qpn(), o.sq_psn_a, o.sq_psn_b)) return e;
  return bring_up(qb, a.gid(), qa->qpn(), o.sq_psn_b, o.sq_psn_a);
}

int ud_to_rts(Qp* qp, uint32_t qkey) {
  QpAttr at;
  at.qp_state = QpState::kInit;
  at.port_num = 1;
  at.qkey = qkey;
  if (int e = qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpQkey)) return e;
  at.qp_state = QpState::kRtr;
  if (int e = qp->modify(at, kQpState)) return e;
  at.qp_state = QpState::kRts;
  at.sq_psn = 0;
  return qp->modify(at, kQpState | kQpSqPsn);
}

std::vector<Wc> run_for_completions(sim::SimNetwork& net, Endpoint& ep, size_t n, uint64_t max_ns) {
  std::vector<Wc> got;
  net.run_until(
      [&] {
        for (const Wc& wc : ep.poll_cq()) got.push_back(wc);
        return got.size() >= n;
      },
      net.now_ns() + max_ns);
  return got;
}

}  // namespace uroce::test
