// victim: the target of the wire-attack suite (tests/attack/attack.py). A plain verbs program: it opens
// the first uroce device, creates one RC QP towards the attacker's GID/QPN/PSN given on the command line,
// registers a pattern-filled target region with guard pages on both sides (one mapping, so a write that
// runs past the region lands in a guard and is seen), prints one JSON line describing itself, then obeys
// one command per stdin line and answers each with one JSON line on stdout:
//   info                     the description again (after rereg: the new keys)
//   snap                     the target's current content becomes the reference `check` compares with
//   dereg [poison]           ibv_dereg_mr; with poison, then fill the region with 0xEE (a response that
//                            carries 0xEE bytes was read after the deregistration); takes a snap
//   munmap                   unmap the (deregistered) target: any later access to it would be a SIGSEGV
//   rereg                    ibv_rereg_mr (same range and access: new keys); takes a snap
//   check                    guards unchanged, target unchanged since the last snap, QP state, async events
//   dump OFF LEN             LEN target bytes at OFF as hex
//   write RADDR RKEY LEN     post a signalled RDMA WRITE of LEN bytes ('L'-pattern) to the attacker
//   poll MS                  wait up to MS ms for one completion of the victim's own work requests
//   exit
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string peer_ip;
  uint32_t peer_qpn = 0;
  uint32_t peer_psn = 0;  // the attacker's first request PSN: our rq_psn
  uint32_t psn = 0;       // our first request PSN
  size_t size = 65536;
  int rd_atomic = 4;
  int mtu = 1024;
};

uint8_t target_pattern(size_t i) { return static_cast<uint8_t>((i * 13 + 1) ^ 0x5a); }
uint8_t guard_pattern(size_t i) { return static_cast<uint8_t>(i * 7 + 3); }

[[noreturn]] void die(const char* what) {
  std::printf("{\"error\":\"%s: %s\"}\n", what, std::strerror(errno));
  std::fflush(stdout);
  std::exit(1);
}

const char* state_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "UNKNOWN";
  }
}

ibv_mtu mtu_enum(int bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return IBV_MTU_1024;
  }
}

class Victim {
 public:
  explicit Victim(const Options& o) : opt_(o) {}

  void setup() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    for (int i = 0; list && i < n && !ctx_; ++i)
      if (std::strncmp(ibv_get_device_name(list[i]), "uroce", 5) == 0) ctx_ = ibv_open_device(list[i]);
    if (list) ibv_free_device_list(list);
    if (!ctx_) die("no uroce device");
    pd_ = ibv_alloc_pd(ctx_);
    cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    if (!pd_ || !cq_) die("pd/cq");

    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_ = (opt_.size + page_ - 1) / page_ * page_;
    guard_ = 2 * page_;
    base_ = static_cast<uint8_t*>(
        mmap(nullptr, size_ + 2 * guard_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) die("mmap");
    target_ = base_ + guard_;
    for (size_t i = 0; i < guard_; ++i) base_[i] = target_[size_ + i] = guard_pattern(i);
    for (size_t i = 0; i < size_; ++i) target_[i] = target_pattern(i);
    snap();
    mr_ = ibv_reg_mr(pd_, target_, size_, kAccess);
    if (!mr_) die("ibv_reg_mr");
    local_.assign(1 << 20, 'L');
    local_mr_ = ibv_reg_mr(pd_, local_.data(), local_.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!local_mr_) die("ibv_reg_mr local");

    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap = ibv_qp_cap{16, 16, 1, 1, 0};
    qp_ = ibv_create_qp(pd_, &init);
    if (!qp_) die("ibv_create_qp");
    connect();
  }

  void print_info() {
    ibv_gid g{};
    ibv_query_gid(ctx_, 1, 0, &g);
    char gid[INET6_ADDRSTRLEN] = "";
    inet_ntop(AF_INET6, g.raw, gid, sizeof gid);
    std::printf("{\"pid\":%d,\"qpn\":%u,\"rkey\":%u,\"addr\":%" PRIu64
                ",\"len\":%zu,\"psn\":%u,\"gid\":\"%s\"}\n",
                getpid(), qp_->qp_num, mr_ ? mr_->rkey : 0,
                static_cast<uint64_t>(reinterpret_cast<uintptr_t>(target_)), size_, opt_.psn, gid);
  }

  // One command line; false on exit.
  bool command(const std::string& line) {
    char cmd[32] = "", arg[32] = "";
    uint64_t a = 0, b = 0, c = 0;
    std::sscanf(line.c_str(), "%31s", cmd);
    const std::string op = cmd;
    if (op == "exit") {
      std::printf("{\"ok\":true,\"cmd\":\"exit\"}\n");
      return false;
    }
    if (op == "info") {
      print_info();
    } else if (op == "snap") {
      snap();
      ok(op);
    } else if (op == "dereg") {
      std::sscanf(line.c_str(), "%*s %31s", arg);
      if (!mr_ || ibv_dereg_mr(mr_)) return fail(op);
      mr_ = nullptr;
      if (std::string(arg) == "poison") std::memset(target_, 0xEE, size_);
      snap();
      ok(op);
    } else if (op == "munmap") {
      if (mr_ || !mapped_ || munmap(target_, size_)) return fail(op);
      mapped_ = false;
      ok(op);
    } else if (op == "rereg") {
      if (!mr_ || ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, kAccess))
        return fail(op);
      snap();
      print_info();
    } else if (op == "check") {
      check();
    } else if (op == "dump" && std::sscanf(line.c_str(), "%*s %" SCNu64 " %" SCNu64, &a, &b) == 2) {
      if (!mapped_ || a + b > size_) return fail(op);
      std::string hex;
      char h[3];
      for (size_t i = 0; i < b; ++i) {
        std::snprintf(h, sizeof h, "%02x", target_[a + i]);
        hex += h;
      }
      std::printf("{\"ok\":true,\"cmd\":\"dump\",\"hex\":\"%s\"}\n", hex.c_str());
    } else if (op == "write" &&
               std::sscanf(line.c_str(), "%*s %" SCNu64 " %" SCNu64 " %" SCNu64, &a, &b, &c) == 3) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(local_.data()), static_cast<uint32_t>(c), local_mr_->lkey};
      ibv_send_wr wr{};
      ibv_send_wr* bad = nullptr;
      wr.wr_id = ++wr_id_;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = a;
      wr.wr.rdma.rkey = static_cast<uint32_t>(b);
      if (c > local_.size() || ibv_post_send(qp_, &wr, &bad)) return fail(op);
      ok(op);
    } else if (op == "poll" && std::sscanf(line.c_str(), "%*s %" SCNu64, &a) == 1) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(a);
      ibv_wc wc{};
      int got = 0;
      while ((got = ibv_poll_cq(cq_, 1, &wc)) == 0 && std::chrono::steady_clock::now() < end) usleep(200);
      if (got <= 0)
        std::printf("{\"ok\":true,\"cmd\":\"poll\",\"wc\":null}\n");
      else
        std::printf("{\"ok\":true,\"cmd\":\"poll\",\"wc\":{\"wr_id\":%" PRIu64 ",\"status\":\"%s\"}}\n",
                    wc.wr_id, ibv_wc_status_str(wc.status));
    } else {
      std::printf("{\"ok\":false,\"cmd\":\"%s\",\"error\":\"unknown command\"}\n", cmd);
    }
    return true;
  }

 private:
  static constexpr int kAccess =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

  void connect() {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      die("modify INIT");
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu_enum(opt_.mtu);
    a.dest_qp_num = opt_.peer_qpn;
    a.rq_psn = opt_.peer_psn;
    a.max_dest_rd_atomic = static_cast<uint8_t>(opt_.rd_atomic);
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    // The attacker's GID: its IPv4 address, IPv4-mapped.
    a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
    if (inet_pton(AF_INET, opt_.peer_ip.c_str(), &a.ah_attr.grh.dgid.raw[12]) != 1) die("bad --peer-ip");
    if (ibv_modify_qp(qp_, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      die("modify RTR");
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = opt_.psn;
    a.timeout = 16;  // ~270 ms: the attacker answers the victim's own requests well within it
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(qp_, &a,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_MAX_QP_RD_ATOMIC))
      die("modify RTS");
  }

  void snap() {
    if (mapped_) reference_.assign(target_, target_ + size_);
  }

  void check() {
    bool guards_ok = true;
    for (size_t i = 0; i < guard_; ++i)
      guards_ok = guards_ok && base_[i] == guard_pattern(i) && target_[size_ + i] == guard_pattern(i);
    long first_diff = -1;
    size_t changed = 0;
    if (mapped_)
      for (size_t i = 0; i < size_; ++i)
        if (target_[i] != reference_[i]) {
          if (first_diff < 0) first_diff = static_cast<long>(i);
          ++changed;
        }
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    const char* state =
        ibv_query_qp(qp_, &attr, IBV_QP_STATE, &init) ? "QUERY_FAILED" : state_name(attr.qp_state);
    // Async events so far (non-blocking: only when the async fd is readable).
    std::string events;
    pollfd p{ctx_->async_fd, POLLIN, 0};
    while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
      ibv_async_event ev{};
      if (ibv_get_async_event(ctx_, &ev)) break;
      events += std::string(events.empty() ? "" : ",") + "\"" + ibv_event_type_str(ev.event_type) + "\"";
      ibv_ack_async_event(&ev);
    }
    events_ += (events_.empty() || events.empty() ? "" : ",") + events;
    std::printf(
        "{\"ok\":true,\"cmd\":\"check\",\"guards_ok\":%s,\"target_same\":%s,\"changed\":%zu,\"first_diff\":%"
        "ld,"
        "\"mapped\":%s,\"registered\":%s,\"qp_state\":\"%s\",\"events\":[%s]}\n",
        guards_ok ? "true" : "false", changed == 0 ? "true" : "false", changed, first_diff,
        mapped_ ? "true" : "false", mr_ ? "true" : "false", state, events_.c_str());
  }

  void ok(const std::string& op) { std::printf("{\"ok\":true,\"cmd\":\"%s\"}\n", op.c_str()); }
  bool fail(const std::string& op) {
    std::printf("{\"ok\":false,\"cmd\":\"%s\",\"error\":\"%s\"}\n", op.c_str(), std::strerror(errno));
    return true;
  }

  Options opt_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_mr* local_mr_ = nullptr;
  std::vector<char> local_;
  size_t page_ = 0, size_ = 0, guard_ = 0;
  uint8_t* base_ = nullptr;
  uint8_t* target_ = nullptr;
  bool mapped_ = true;
  std::vector<uint8_t> reference_;
  std::string events_;
  uint64_t wr_id_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--peer-ip")
      o.peer_ip = v;
    else if (k == "--peer-qpn")
      o.peer_qpn = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--peer-psn")
      o.peer_psn = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--psn")
      o.psn = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--size")
      o.size = std::strtoul(v, nullptr, 0);
    else if (k == "--rd-atomic")
      o.rd_atomic = std::atoi(v);
    else if (k == "--mtu")
      o.mtu = std::atoi(v);
    else {
      std::fprintf(stderr, "victim: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.peer_ip.empty()) {
    std::fprintf(stderr,
                 "usage: victim --peer-ip IP --peer-qpn N --peer-psn N [--psn N] [--size N] "
                 "[--rd-atomic N] [--mtu N]\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Victim v(o);
  v.setup();
  v.print_info();
  std::string line;
  while (std::getline(std::cin, line))
    if (!v.command(line)) break;
  return 0;
}
