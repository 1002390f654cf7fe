#include "tests/sim/workload.h"

#include <cstring>
#include <deque>
#include <random>
#include <sstream>

namespace uroce::test {

namespace {

constexpr uint32_t kMaxSges = 4;
constexpr uint32_t kGap = 64;  // up to this many unused bytes between the SGEs of one buffer

enum class Op : uint8_t { kSend, kWrite, kWriteImm, kRead, kAtomic };

uint8_t pattern(uint64_t msg, uint64_t i) { return static_cast<uint8_t>(msg * 131 + i + (i >> 8) * 7); }

struct Buffer {
  Sge sge[kMaxSges];
  uint32_t n = 0;
};

struct Pending {
  Op op;
  uint64_t msg;
  uint32_t len;
  uint32_t slot;
  uint64_t remote_off;  // WRITE: in b's target slot; READ: in b's read source
  uint64_t expect;      // ATOMIC: the value fetched
  uint32_t imm;
  Buffer local;
};

class Workload {
 public:
  explicit Workload(const WorkloadConfig& c)
      : cfg_(c),
        net_(c.seed),
        rng_(c.seed * 0x9E3779B97F4A7C15ull + 1),
        slot_(c.max_len + kMaxSges * kGap + 64),
        a_(net_, 1, opts(c.sr_requester)),
        b_(net_, 2, opts(c.sr_responder)) {
    net_.connect(*a_.port, *b_.port, c.link);
    qa_ = a_.create_qp(QpType::kRc, 4 * c.depth, kMaxSges);
    qb_ = b_.create_qp(QpType::kRc, 4 * c.depth, kMaxSges);
    RcOptions o;
    o.mtu = c.mtu;
    o.timeout = c.timeout;
    o.max_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(c.depth, 16));
    if (connect_qps(a_, qa_, b_, qb_, o)) fail("connect failed");
    read_src_ = 2 * c.depth * slot_;
    atomic_off_ = read_src_ + c.max_len + 64;
    for (uint64_t i = 0; i < c.max_len; ++i) *b_.mem_at(read_src_ + i) = pattern(~0ull, i);
    std::memcpy(b_.mem_at(atomic_off_), &counter_, 8);
    for (uint32_t r = 0; r < c.depth; ++r) post_recv(r);
  }

  WorkloadResult run() {
    const uint64_t start = net_.now_ns();
    const auto status = net_.run_until([this] { return step(); }, start + cfg_.max_virtual_ns);
    if (res_.error.empty() && res_.completed < cfg_.messages)
      fail(std::string("stopped early: ") + sim::run_status_name(status) + "; " + qa_->debug_state() + "; " +
           qb_->debug_state());
    res_.ok = res_.error.empty();
    res_.virtual_ns = net_.now_ns() - start;
    res_.retransmits = a_.dev->counters()[Counter::kRetransmits] + b_.dev->counters()[Counter::kRetransmits];
    const auto both = [this](Counter c) { return a_.dev->counters()[c] + b_.dev->counters()[c]; };
    res_.timeouts = both(Counter::kTimeouts);
    res_.seq_naks = both(Counter::kSeqNakRcvd);
    res_.sr_held = both(Counter::kSrHeld);
    res_.sr_released = both(Counter::kSrReleased);
    res_.sr_retransmits = both(Counter::kSrRetransmits);
    res_.sr_naks = both(Counter::kSrNakSent);
    res_.icrc_drops = a_.dev->rx_drops()[wire::RxDrop::kIcrc] + b_.dev->rx_drops()[wire::RxDrop::kIcrc];
    for (const auto& l : net_.links()) {
      res_.link_lost += l->counters().lost;
      res_.link_corrupted += l->counters().corrupted;
      res_.link_duplicated += l->counters().duplicated;
      res_.link_reordered += l->counters().reordered;
    }
    return res_;
  }

 private:
  EndpointOptions opts(bool sr) const {
    EndpointOptions o;
    o.device.selective_repeat = sr;
    o.mem_bytes = 2 * cfg_.depth * slot_ + cfg_.max_len + 4096;
    return o;
  }

  void fail(const std::string& what) {
    if (!res_.error.empty()) return;
    std::ostringstream s;
    s << what << " (seed " << cfg_.seed << ", message " << res_.completed << ")";
    res_.error = s.str();
  }

  uint32_t rand(uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_); }

  // A random layout of `len` bytes over 1..4 SGEs with gaps, inside slot `base` of endpoint `ep`.
  Buffer layout(Endpoint& ep, uint64_t base, uint32_t len) {
    Buffer b;
    b.n = std::min<uint32_t>(rand(1, kMaxSges), std::max<uint32_t>(len, 1));
    uint64_t off = base;
    uint32_t left = len;
    for (uint32_t i = 0; i < b.n; ++i) {
      const uint32_t part = i + 1 == b.n ? left : rand(0, left);
      off += rand(0, kGap);
      b.sge[i] = ep.sge(off, part);
      off += part;
      left -= part;
    }
    return b;
  }

  static void gather(const Buffer& b, uint8_t* out, uint32_t len) { sge_gather(b.sge, b.n, 0, out, len); }

  void post_recv(uint32_t r) {
    recv_bufs_[r] = layout(b_, (cfg_.depth + r) * slot_, cfg_.max_len);
    if (qb_->post_recv(RecvWr{r, recv_bufs_[r].sge, recv_bufs_[r].n})) fail("post_recv");
  }

  Op pick() {
    const uint32_t w[] = {cfg_.w_send, cfg_.w_write, cfg_.w_write_imm, cfg_.w_read, cfg_.w_atomic};
    uint32_t x = rand(0, w[0] + w[1] + w[2] + w[3] + w[4] - 1);
    for (int i = 0; i < 5; ++i) {
      if (x < w[i]) return static_cast<Op>(i);
      x -= w[i];
    }
    return Op::kSend;
  }

  uint32_t pick_len() {
    const double lg =
        std::uniform_real_distribution<double>(std::log2(cfg_.min_len), std::log2(cfg_.max_len))(rng_);
    return std::clamp<uint32_t>(static_cast<uint32_t>(std::exp2(lg)), cfg_.min_len, cfg_.max_len);
  }

  void post_one() {
    Pending p{};
    p.op = pick();
    p.msg = posted_;
    p.slot = static_cast<uint32_t>(posted_ % cfg_.depth);
    p.len = p.op == Op::kAtomic ? 8 : pick_len();
    p.local = layout(a_, p.slot * slot_, p.len);
    if (p.op == Op::kAtomic) p.local = Buffer{{a_.sge(p.slot * slot_, 8)}, 1};  // one 8-byte SGE
    SendWr wr;
    wr.wr_id = posted_;
    wr.sg_list = p.local.sge;
    wr.num_sge = p.local.n;
    wr.send_flags = kSendSignaled;
    wr.rkey = b_.mr->rkey;
    switch (p.op) {
      case Op::kSend:
      case Op::kWrite:
      case Op::kWriteImm: {
        std::vector<uint8_t> data(p.len);
        for (uint32_t i = 0; i < p.len; ++i) data[i] = pattern(p.msg, i);
        sge_scatter(p.local.sge, p.local.n, 0, data.data(), p.len);
        p.remote_off = p.slot * slot_ + rand(0, kGap);
        wr.remote_addr = b_.addr(p.remote_off);
        p.imm = static_cast<uint32_t>(p.msg * 2654435761u);
        wr.imm_data_be = p.imm;
        wr.opcode = p.op == Op::kSend    ? WrOpcode::kSend
                    : p.op == Op::kWrite ? WrOpcode::kRdmaWrite
                                         : WrOpcode::kRdmaWriteWithImm;
        if (p.op != Op::kWrite) recv_expect_.push_back(p);
        break;
      }
      case Op::kRead:
        p.remote_off = read_src_ + rand(0, cfg_.max_len - p.len);
        wr.remote_addr = b_.addr(p.remote_off);
        wr.opcode = WrOpcode::kRdmaRead;
        break;
      case Op::kAtomic: {
        const uint64_t add = rng_() >> 20;
        p.expect = counter_;
        counter_ += add;
        wr.opcode = WrOpcode::kAtomicFetchAndAdd;
        wr.remote_addr = b_.addr(atomic_off_);
        wr.compare_add = add;
        break;
      }
    }
    if (qa_->post_send(wr)) return fail("post_send");
    inflight_.push_back(p);
    ++posted_;
  }

  void check_send_completion(const Wc& wc) {
    if (inflight_.empty()) return fail("completion with nothing in flight");
    const Pending p = inflight_.front();
    inflight_.pop_front();
    if (wc.status != WcStatus::kSuccess)
      return fail(std::string("send WC status ") + wc_status_name(wc.status));
    if (wc.wr_id != p.msg) return fail("completion out of order");
    std::vector<uint8_t> got(p.len);
    if (p.op == Op::kWrite || p.op == Op::kWriteImm) {
      std::memcpy(got.data(), b_.mem_at(p.remote_off), p.len);
      for (uint32_t i = 0; i < p.len; ++i)
        if (got[i] != pattern(p.msg, i)) return fail("WRITE data differs at byte " + std::to_string(i));
    } else if (p.op == Op::kRead) {
      gather(p.local, got.data(), p.len);
      const uint64_t base = p.remote_off - read_src_;
      for (uint32_t i = 0; i < p.len; ++i)
        if (got[i] != pattern(~0ull, base + i)) return fail("READ data differs at byte " + std::to_string(i));
    } else if (p.op == Op::kAtomic) {
      uint64_t orig;
      gather(p.local, reinterpret_cast<uint8_t*>(&orig), 8);
      if (orig != p.expect) return fail("FETCH_ADD returned a value applied twice or lost");
    }
    ++res_.completed;
    res_.bytes += p.len;
  }

  void check_recv_completion(const Wc& wc) {
    if (recv_expect_.empty()) return fail("receive completion nobody sent");
    const Pending p = recv_expect_.front();
    recv_expect_.pop_front();
    if (wc.status != WcStatus::kSuccess)
      return fail(std::string("recv WC status ") + wc_status_name(wc.status));
    const uint32_t r = static_cast<uint32_t>(wc.wr_id);
    if (r != next_recv_) return fail("receive WQEs consumed out of order");
    next_recv_ = (next_recv_ + 1) % cfg_.depth;
    if (wc.byte_len != p.len) return fail("receive byte_len " + std::to_string(wc.byte_len));
    if (p.op == Op::kWriteImm) {
      if (wc.opcode != WcOpcode::kRecvRdmaWithImm || !(wc.wc_flags & kWcWithImm) || wc.imm_data_be != p.imm)
        return fail("WRITE_IMM receive completion wrong");
    } else {
      if (wc.opcode != WcOpcode::kRecv) return fail("SEND receive completion opcode");
      std::vector<uint8_t> got(p.len);
      gather(recv_bufs_[r], got.data(), p.len);
      for (uint32_t i = 0; i < p.len; ++i)
        if (got[i] != pattern(p.msg, i)) return fail("SEND data differs at byte " + std::to_string(i));
    }
    post_recv(r);
  }

  // Called by the simulator after every round.
  bool step() {
    for (const Wc& wc : b_.poll_cq()) check_recv_completion(wc);
    for (const Wc& wc : a_.poll_cq()) check_send_completion(wc);
    while (res_.error.empty() && posted_ < cfg_.messages && inflight_.size() < cfg_.depth) post_one();
    return !res_.error.empty() || res_.completed == cfg_.messages;
  }

  WorkloadConfig cfg_;
  sim::SimNetwork net_;
  std::mt19937_64 rng_;
  uint64_t slot_;
  Endpoint a_, b_;
  Qp* qa_ = nullptr;
  Qp* qb_ = nullptr;
  uint64_t read_src_ = 0, atomic_off_ = 0;
  uint64_t counter_ = 0x1000;
  uint64_t posted_ = 0;
  uint32_t next_recv_ = 0;
  std::deque<Pending> inflight_, recv_expect_;
  Buffer recv_bufs_[64];
  WorkloadResult res_;
};

}  // namespace

WorkloadResult run_workload(const WorkloadConfig& cfg) { return Workload(cfg).run(); }

}  // namespace uroce::test
