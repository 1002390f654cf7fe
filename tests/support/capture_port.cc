#include "tests/support/capture_port.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace uroce::test {

using namespace wire;

CapturePort::CapturePort(const Clock* clock, uint32_t pool_frames, uint16_t frame_cap)
    : clock_(clock),
      frame_cap_(frame_cap),
      storage_(static_cast<size_t>(pool_frames) * frame_cap),
      bufs_(pool_frames),
      int_(pool_frames) {
  for (uint32_t i = 0; i < pool_frames; ++i) {
    bufs_[i].data = storage_.data() + static_cast<size_t>(i) * frame_cap;
    bufs_[i].cap = frame_cap;
    bufs_[i].telemetry = &int_[i];
    free_.push_back(&bufs_[i]);
  }
}

uint16_t CapturePort::alloc_burst(PktBuf** bufs, uint16_t n) {
  uint16_t k = 0;
  for (; k < n && !free_.empty(); ++k) {
    bufs[k] = free_.back();
    free_.pop_back();
    bufs[k]->len = 0;
    bufs[k]->telemetry->hops = 0;
  }
  return k;
}

uint16_t CapturePort::tx_burst(PktBuf** bufs, uint16_t n) {
  if (refuse_tx) return 0;
  for (uint16_t i = 0; keep_sent && i < n; ++i) {
    Emitted e;
    e.time_ns = clock_->now_ns();
    e.bytes.assign(bufs[i]->data, bufs[i]->data + bufs[i]->len);
    e.telemetry = *bufs[i]->telemetry;
    ParsedPacket pkt;
    e.verdict = parse_frame(e.bytes.data(), e.bytes.size(), &pkt);
    if (e.verdict == RxDrop::kNone) {
      e.h = decode_headers(pkt);
      e.payload.assign(pkt.payload(), pkt.payload() + pkt.payload_len);
    }
    sent_.push_back(std::move(e));
  }
  free_burst(bufs, n);
  return n;
}

uint16_t CapturePort::rx_burst(PktBuf** bufs, uint16_t n) {
  uint16_t k = 0;
  while (k < n && !rx_.empty() && !free_.empty()) {
    const std::vector<uint8_t>& f = rx_.front();
    if (f.size() > frame_cap_) throw std::length_error("injected frame larger than a port buffer");
    PktBuf* b = free_.back();
    free_.pop_back();
    std::memcpy(b->data, f.data(), f.size());
    b->len = static_cast<uint16_t>(f.size());
    *b->telemetry = rx_int_.front();
    bufs[k++] = b;
    rx_.pop_front();
    rx_int_.pop_front();
  }
  return k;
}

void CapturePort::free_burst(PktBuf** bufs, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) {
    bufs[i]->len = 0;
    free_.push_back(bufs[i]);
  }
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 13 + seed * 101 + (i >> 8));
  return p;
}

Gid ProtoEnv::local_gid() { return ipv4_mapped(0x0A000001); }
Gid ProtoEnv::peer_gid() { return ipv4_mapped(0x0A000002); }

ProtoEnv::ProtoEnv(const ProtoOptions& o) : opt(o), port(&clock), mem(o.mem_bytes) {
  DeviceConfig cfg;
  cfg.gid = local_gid();
  cfg.mac = mac_for_gid(cfg.gid);
  cfg.cc = o.cc;
  cfg.cc_params = o.cc_params;
  cfg.selective_repeat = o.selective_repeat;
  cfg.ack_hold_ns = o.ack_hold_ns;
  dev = std::make_unique<Device>(cfg, &port, &clock);
  if (dev->alloc_pd(&pd) || dev->create_cq(4096, &cq) ||
      dev->reg_mr(pd, mem.data(), mem.size(),
                  kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic, &mr))
    throw std::runtime_error("ProtoEnv: device setup failed");
  if (o.srq && dev->create_srq(pd, o.max_wr, o.max_sge, 0, &srq))
    throw std::runtime_error("ProtoEnv: create_srq failed");
  QpInitAttr init;
  init.type = o.type;
  init.send_cq = init.recv_cq = cq;
  init.srq = srq;
  init.cap = QpCap{o.max_wr, o.max_wr, o.max_sge, o.max_sge, o.max_inline};
  if (dev->create_qp(pd, init, &qp)) throw std::runtime_error("ProtoEnv: create_qp failed");
  if (o.to_rts && connect(qp)) throw std::runtime_error("ProtoEnv: QP did not reach RTS");
}

ProtoEnv::~ProtoEnv() = default;

int ProtoEnv::connect(Qp* q) {
  const bool rc = q->type() == QpType::kRc;
  const bool ud = q->type() == QpType::kUd;
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.port_num = 1;
  a.qp_access_flags = opt.access;
  a.qkey = opt.qkey;
  if (int e = q->modify(a, kQpState | kQpPkeyIndex | kQpPort | (ud ? kQpQkey : kQpAccessFlags))) return e;
  a.qp_state = QpState::kRtr;
  a.path_mtu = opt.mtu;
  a.dest_qp_num = opt.peer_qpn;
  a.rq_psn = opt.rq_psn;
  a.ah.dgid = peer_gid();
  a.max_dest_rd_atomic = opt.max_dest_rd_atomic;
  a.min_rnr_timer = opt.min_rnr_timer;
  uint32_t mask = kQpState;
  if (!ud) mask |= kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
  if (rc) mask |= kQpMaxDestRdAtomic | kQpMinRnrTimer;
  if (int e = q->modify(a, mask)) return e;
  a.qp_state = QpState::kRts;
  a.sq_psn = opt.sq_psn;
  a.timeout = opt.timeout;
  a.retry_cnt = opt.retry_cnt;
  a.rnr_retry = opt.rnr_retry;
  a.max_rd_atomic = opt.max_rd_atomic;
  mask = kQpState | kQpSqPsn;
  if (rc) mask |= kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic;
  return q->modify(a, mask);
}

void ProtoEnv::unlimited_credits() {
  inject_ack((opt.sq_psn - 1) & 0xFFFFFF, AethKind::kAck, 31);
  run();
}

void ProtoEnv::fill(size_t off, size_t len, uint8_t seed) {
  const std::vector<uint8_t> p = pattern(len, seed);
  std::copy(p.begin(), p.end(), mem.begin() + static_cast<std::ptrdiff_t>(off));
}

std::vector<uint8_t> ProtoEnv::bytes(size_t off, size_t len) const {
  return {mem.begin() + static_cast<std::ptrdiff_t>(off),
          mem.begin() + static_cast<std::ptrdiff_t>(off + len)};
}

uint64_t ProtoEnv::u64(size_t off) const {
  uint64_t v;
  std::memcpy(&v, mem.data() + off, 8);
  return v;
}

void ProtoEnv::set_u64(size_t off, uint64_t v) { std::memcpy(mem.data() + off, &v, 8); }

int ProtoEnv::post_recv(size_t off, uint32_t len, uint64_t wr_id) {
  const Sge s = sge(off, len);
  const RecvWr wr{wr_id, &s, 1};
  return srq ? dev->post_srq_recv(srq, wr) : qp->post_recv(wr);
}

int ProtoEnv::post(WrOpcode op, size_t off, uint32_t len, uint64_t wr_id, uint64_t remote_addr, uint32_t rkey,
                   uint32_t flags) {
  const Sge s = sge(off, len);
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.send_flags = flags;
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  return qp->post_send(wr);
}

std::vector<Wc> ProtoEnv::poll() {
  std::vector<Wc> out;
  Wc batch[64];
  for (int got; (got = cq->poll(64, batch)) > 0;) out.insert(out.end(), batch, batch + got);
  return out;
}

std::vector<AsyncEvent> ProtoEnv::events() {
  std::vector<AsyncEvent> out;
  AsyncEvent ev;
  while (dev->get_async_event(&ev)) out.push_back(ev);
  return out;
}

PacketHeaders ProtoEnv::peer_headers(uint8_t opcode, uint32_t psn) const {
  PacketHeaders h;
  h.eth.dst = mac_for_gid(local_gid());
  h.eth.src = mac_for_gid(peer_gid());
  h.ip.src = peer_gid();
  h.ip.dst = local_gid();
  h.udp_sport = 0xC0DE;
  h.bth.opcode = opcode;
  h.bth.dqpn = qp->qpn();
  h.bth.psn = psn;
  h.deth = {opt.qkey, opt.peer_qpn};
  return h;
}

void ProtoEnv::inject(const PacketHeaders& h, std::span<const uint8_t> payload,
                      const cc::IntStack& telemetry) {
  std::vector<uint8_t> f(headers_len(h) + payload.size() + trailer_len(payload.size()));
  f.resize(build_frame(h, ConstBytes(payload.data(), payload.size()), f.data()));
  port.inject(std::move(f), telemetry);
}

void ProtoEnv::inject_ack(uint32_t psn, AethKind kind, uint8_t value, uint32_t msn) {
  PacketHeaders h = peer_headers(op::kRcAck, psn);
  h.aeth = {aeth_syndrome(kind, value), msn};
  inject(h);
}

void ProtoEnv::inject_read_resp(uint8_t opcode, uint32_t psn, std::span<const uint8_t> payload,
                                uint32_t msn) {
  PacketHeaders h = peer_headers(opcode, psn);
  h.aeth = {aeth_syndrome(AethKind::kAck, 31), msn};
  inject(h, payload);
}

void ProtoEnv::inject_atomic_ack(uint32_t psn, uint64_t orig, uint32_t msn) {
  PacketHeaders h = peer_headers(op::kRcAtomicAck, psn);
  h.aeth = {aeth_syndrome(AethKind::kAck, 31), msn};
  h.atomic_ack_orig = orig;
  inject(h);
}

std::vector<Emitted> ProtoEnv::run() {
  // A pass that handles nothing ends the run; the cap only guards a test against a livelocked engine.
  for (int i = 0; i < 100000 && (dev->progress() || port.rx_pending()); ++i) {
  }
  return port.take();
}

std::vector<Emitted> ProtoEnv::advance(uint64_t ns) {
  clock.advance(ns);
  return run();
}

std::vector<Emitted> ProtoEnv::next() {
  const uint64_t d = dev->next_deadline();
  if (d != kNever && d > clock.now_ns()) clock.set(d);
  return run();
}

}  // namespace uroce::test
