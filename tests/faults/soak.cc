// soak: a long mixed-verbs run between two processes with every byte checked.
//
//   soak server TCP_PORT SEED
//   soak client HOST TCP_PORT SEED SECONDS
//
// The two sides exchange QP numbers, GIDs, addresses and rkeys over one TCP connection, then the client
// drives one RC QP for SECONDS: SEND, RDMA WRITE followed by a READ of the same bytes, RDMA WRITE with
// immediate, READ of a region the server filled at start, FETCH_ADD and CMP_SWP, with sizes log-uniform in
// 1 B .. 1 MiB gathered from / scattered to 1..4 SGEs separated by guard gaps. Up to kWindow operations are
// in flight.
//
// Both sides draw the same operation stream from SEED (OpStream), so the server knows what every SEND and
// WRITE WITH IMMEDIATE it receives must hold without being told: it checks the length, the immediate and
// every byte, plus guard bytes past the end. The client checks every READ byte, that the bytes around each
// scattered SGE stayed untouched, and every atomic's original value against its own model of the two
// remote counters (the responder executes them in order, and a retransmitted atomic must not run twice).
// At the end the client reads both counters back and sends the number of operations over TCP; the server
// answers once it has checked every receive that number implies.
//
// Exit 0 only when everything matched; the client prints one summary line (operations per kind, bytes).
// On a failure it prints what it knows (operation, kind, size, SGE, byte, completion status, QP state).
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kMaxLen = 1 << 20;
constexpr int kMaxSges = 4;
constexpr uint32_t kGap = 64;                    // guard bytes between and after SGEs
constexpr uint32_t kSlot = kMaxLen + 8 * kGap;   // room for one operation's SGEs and gaps
constexpr int kWindow = 8;                       // operations in flight (client)
constexpr int kRecvs = 8;                        // receives posted (server)
constexpr int kImmSlots = kRecvs + kWindow + 4;  // WRITE WITH IMM targets, reused only when safe
constexpr uint32_t kStaticLen = 2 << 20;         // the region READs read
constexpr uint8_t kGuard = 0xEE;
constexpr uint64_t kStaticKey = 0x5354415449430000;  // pattern key of the static region

// Server memory: recv buffers | WRITE+READ targets (one per window slot) | WRITE WITH IMM targets | static
// region | two atomic counters.
constexpr size_t kSrvRecv = 0, kSrvRw = kSrvRecv + size_t{kRecvs} * kSlot,
                 kSrvImm = kSrvRw + size_t{kWindow} * kSlot, kSrvStatic = kSrvImm + size_t{kImmSlots} * kSlot,
                 kSrvAtomic = kSrvStatic + kStaticLen, kSrvBytes = kSrvAtomic + 64;
// Client memory: per window slot a source area and a scatter area; atomic results.
constexpr size_t kCliSrc = 0, kCliDst = size_t{kWindow} * kSlot, kCliAtomic = 2 * size_t{kWindow} * kSlot,
                 kCliBytes = kCliAtomic + 8 * kWindow;

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The byte at position `pos` of the data stream `key`: any slice of a stream can be produced or checked
// on its own.
inline uint8_t pattern(uint64_t key, uint64_t pos) {
  return static_cast<uint8_t>(splitmix(key ^ (pos >> 3) * 0xD1B54A32D192ED03ULL) >> (8 * (pos & 7)));
}
void fill(uint8_t* dst, uint64_t key, uint64_t pos, uint32_t len) {
  for (uint32_t i = 0; i < len; ++i) dst[i] = pattern(key, pos + i);
}
// Index of the first byte that differs, or -1.
int64_t check(const uint8_t* src, uint64_t key, uint64_t pos, uint32_t len) {
  for (uint32_t i = 0; i < len; ++i)
    if (src[i] != pattern(key, pos + i)) return i;
  return -1;
}
int64_t check_guard(const uint8_t* p, uint32_t len) {
  for (uint32_t i = 0; i < len; ++i)
    if (p[i] != kGuard) return i;
  return -1;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() { return splitmix(s_++); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }

 private:
  uint64_t s_;
};

enum class Kind { kSend, kWriteRead, kWriteImm, kRead, kFetchAdd, kCmpSwap, kCount };
const char* kKindNames[] = {"send", "write_read", "write_imm", "read", "fetch_add", "cmp_swap"};

struct Op {
  uint64_t n = 0;
  Kind kind = Kind::kSend;
  uint32_t len = 0;  // bytes (8 for atomics)
  int nsge = 1;
  uint32_t sge_len[kMaxSges] = {};
  uint32_t sge_off[kMaxSges] = {};  // offsets in the client's slot (gaps of kGap before each)
  uint64_t key = 0;                 // data stream of the payload
  uint64_t remote_off = 0;          // offset in the server's memory (WRITE, READ, atomics)
  uint64_t add = 0, compare = 0, swap = 0;
  bool compare_hits = false;
  uint32_t recv_index = 0;  // SEND / WRITE IMM: which of the receive-consuming operations this is
};

// The operation stream both sides draw. Nothing in it depends on timing, so the server replays exactly the
// client's stream.
class OpStream {
 public:
  explicit OpStream(uint64_t seed) : rng_(seed), seed_(seed) {}
  Op next() {
    Op op;
    op.n = n_++;
    op.kind = static_cast<Kind>(rng_.below(static_cast<uint32_t>(Kind::kCount)));
    op.key = splitmix(seed_ ^ (op.n * 0x9E3779B97F4A7C15ULL) ^ 0xDA7A);
    const int slot = static_cast<int>(op.n % kWindow);
    if (op.kind == Kind::kFetchAdd || op.kind == Kind::kCmpSwap) {
      op.len = 8;
      op.remote_off = kSrvAtomic + (op.kind == Kind::kFetchAdd ? 0 : 8);
      op.add = rng_.next() >> rng_.below(64);
      op.compare_hits = rng_.below(2) == 0;
      op.compare = rng_.next();
      op.swap = rng_.next();
      return op;
    }
    // Log-uniform size: a power-of-two band, then uniform in it, capped at 1 MiB.
    const uint32_t band = rng_.below(21);
    op.len = std::min<uint32_t>(kMaxLen, (1u << band) + rng_.below(1u << band));
    op.nsge = 1 + static_cast<int>(rng_.below(kMaxSges));
    if (static_cast<uint32_t>(op.nsge) > op.len) op.nsge = static_cast<int>(op.len);
    uint32_t left = op.len, off = 0;
    for (int i = 0; i < op.nsge; ++i) {
      const int rest = op.nsge - i - 1;
      const uint32_t l = rest == 0 ? left : 1 + rng_.below(left - static_cast<uint32_t>(rest));
      off += 1 + rng_.below(kGap - 1);  // a gap of 1..kGap-1 guard bytes first
      op.sge_off[i] = off;
      op.sge_len[i] = l;
      off += l;
      left -= l;
    }
    switch (op.kind) {
      case Kind::kWriteRead:
        op.remote_off = kSrvRw + size_t(slot) * kSlot + rng_.below(kSlot - op.len);
        break;
      case Kind::kRead:
        op.remote_off = kSrvStatic + rng_.below(kStaticLen - op.len + 1);
        break;
      case Kind::kWriteImm:
        op.remote_off = kSrvImm + size_t(recvs_ % kImmSlots) * kSlot + rng_.below(kSlot - op.len);
        [[fallthrough]];
      case Kind::kSend:
        op.recv_index = recvs_++;
        break;
      default:
        break;
    }
    return op;
  }
  uint64_t drawn() const { return n_; }
  uint32_t recvs() const { return recvs_; }

 private:
  Rng rng_;
  uint64_t seed_;
  uint64_t n_ = 0;
  uint32_t recvs_ = 0;
};

[[noreturn]] void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "soak: FAIL: ");
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
  // SOAK_HOLD_ON_FAIL=SECONDS keeps the failed process (and its QP) around so `uroce stats` can show it.
  if (const char* hold = std::getenv("SOAK_HOLD_ON_FAIL")) sleep(static_cast<unsigned>(std::atoi(hold)));
  std::exit(1);
}

struct Wire {  // what each side tells the other
  uint32_t qpn, psn, rkey, pad;
  uint64_t addr;
  uint8_t gid[16];
};

void write_all(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  while (n) {
    const ssize_t w = write(fd, c, n);
    if (w <= 0) die("TCP write: %s", std::strerror(errno));
    c += w;
    n -= static_cast<size_t>(w);
  }
}
bool read_all(int fd, void* p, size_t n) {
  auto* c = static_cast<uint8_t*>(p);
  while (n) {
    const ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

struct Verbs {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  uint8_t* mem = nullptr;
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t rd_atomic = 1;
  Wire local{};
};

void open_verbs(Verbs* v, size_t bytes, uint64_t seed) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) die("no RDMA device (run under `uroce run`)");
  v->ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (!v->ctx) die("ibv_open_device failed");
  v->pd = ibv_alloc_pd(v->ctx);
  v->cq = ibv_create_cq(v->ctx, 4 * kWindow + kRecvs + 16, nullptr, nullptr, 0);
  bytes = (bytes + 4095) / 4096 * 4096;  // aligned_alloc wants a multiple of the alignment
  v->mem = static_cast<uint8_t*>(aligned_alloc(4096, bytes));
  if (!v->pd || !v->cq || !v->mem) die("PD/CQ/memory");
  std::memset(v->mem, kGuard, bytes);
  v->mr = ibv_reg_mr(
      v->pd, v->mem, bytes,
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = v->cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = 2 * kWindow + 4;
  ia.cap.max_recv_wr = kRecvs;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = kMaxSges;
  v->qp = ibv_create_qp(v->pd, &ia);
  if (!v->mr || !v->qp) die("MR/QP");
  ibv_port_attr pa{};
  if (ibv_query_port(v->ctx, 1, &pa)) die("ibv_query_port");
  v->mtu = pa.active_mtu;
  ibv_device_attr da{};
  if (ibv_query_device(v->ctx, &da)) die("ibv_query_device");
  v->rd_atomic = static_cast<uint8_t>(std::clamp(std::min(da.max_qp_rd_atom, da.max_qp_init_rd_atom), 1, 16));
  ibv_gid gid{};
  if (ibv_query_gid(v->ctx, 1, 0, &gid)) die("ibv_query_gid");
  v->local.qpn = v->qp->qp_num;
  v->local.psn = static_cast<uint32_t>(splitmix(seed ^ v->qp->qp_num)) & 0xFFFFFF;
  v->local.rkey = v->mr->rkey;
  v->local.addr = reinterpret_cast<uintptr_t>(v->mem);
  std::memcpy(v->local.gid, gid.raw, 16);
}

void connect_qp(Verbs* v, const Wire& r) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    die("INIT");
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = v->mtu;
  a.dest_qp_num = r.qpn;
  a.rq_psn = r.psn;
  a.max_dest_rd_atomic = v->rd_atomic;
  a.min_rnr_timer = 1;  // 0.01 ms: a SEND that finds no receive retries soon
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.grh.sgid_index = 0;
  std::memcpy(a.ah_attr.grh.dgid.raw, r.gid, 16);
  if (ibv_modify_qp(v->qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    die("RTR");
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = v->local.psn;
  // 67 ms local ACK timeout, 7 retries: under 1% loss a packet lost 8 times in a row is ~1e-16, and the
  // ~0.5 s without progress they allow outlasts the scheduling stalls of a loaded 2-core machine (uroced
  // not run for 50 ms at a time was seen in CI; 16.8 ms x 7 did not outlast a few of those).
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;  // infinite: the server reposts receives as fast as it checks them
  a.max_rd_atomic = v->rd_atomic;
  if (ibv_modify_qp(v->qp, &a,
                    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_MAX_QP_RD_ATOMIC))
    die("RTS");
}

const char* qp_state_name(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia)) return "?";
  static const char* names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return a.qp_state <= IBV_QPS_ERR ? names[a.qp_state] : "?";
}

// ---- server ----

void post_recv(Verbs* v, int i) {
  // Three SGEs per receive (4 KiB, 100 B, the rest), so SENDs scatter across SGE boundaries.
  uint8_t* base = v->mem + kSrvRecv + size_t(i) * kSlot;
  ibv_sge sg[3] = {{reinterpret_cast<uintptr_t>(base), 4096, v->mr->lkey},
                   {reinterpret_cast<uintptr_t>(base + 4096), 100, v->mr->lkey},
                   {reinterpret_cast<uintptr_t>(base + 4196), kSlot - 4196, v->mr->lkey}};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = static_cast<uint64_t>(i);
  wr.sg_list = sg;
  wr.num_sge = 3;
  if (ibv_post_recv(v->qp, &wr, &bad)) die("ibv_post_recv");
}

int run_server(int tcp_port, uint64_t seed) {
  Verbs v;
  open_verbs(&v, kSrvBytes, seed);
  fill(v.mem + kSrvStatic, kStaticKey ^ seed, 0, kStaticLen);
  std::memset(v.mem + kSrvAtomic, 0, 16);
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(tcp_port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa) || listen(ls, 1))
    die("listen: %s", strerror(errno));
  const int fd = accept(ls, nullptr, nullptr);
  close(ls);
  Wire remote{};
  if (fd < 0 || !read_all(fd, &remote, sizeof remote)) die("no client");
  connect_qp(&v, remote);
  for (int i = 0; i < kRecvs; ++i) post_recv(&v, i);  // before the client learns it may send
  write_all(fd, &v.local, sizeof v.local);

  OpStream stream(seed);
  uint32_t checked = 0;
  int64_t expect_recvs = -1;  // known once the client says how many operations it ran
  uint64_t bytes = 0;
  auto last_progress = std::chrono::steady_clock::now();
  uint64_t spins = 0;
  while (expect_recvs < 0 || checked < expect_recvs) {
    ibv_wc wc[16];
    const int n = ibv_poll_cq(v.cq, 16, wc);
    if (n < 0) die("ibv_poll_cq");
    for (int k = 0; k < n; ++k) {
      if (wc[k].status != IBV_WC_SUCCESS)
        die("server completion %s (status %d) after %u receives; QP %s", ibv_wc_status_str(wc[k].status),
            wc[k].status, checked, qp_state_name(v.qp));
      Op op;
      do op = stream.next();
      while (op.kind != Kind::kSend && op.kind != Kind::kWriteImm);
      const uint8_t* data =
          op.kind == Kind::kSend ? v.mem + kSrvRecv + wc[k].wr_id * kSlot : v.mem + op.remote_off;
      const bool imm = op.kind == Kind::kWriteImm;
      if (wc[k].opcode != (imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV))
        die("op %" PRIu64 ": receive opcode %d, expected %s", op.n, wc[k].opcode, kKindNames[int(op.kind)]);
      if (imm &&
          (!(wc[k].wc_flags & IBV_WC_WITH_IMM) || ntohl(wc[k].imm_data) != static_cast<uint32_t>(op.n)))
        die("op %" PRIu64 ": immediate %u, expected %u", op.n, ntohl(wc[k].imm_data),
            static_cast<uint32_t>(op.n));
      if (!imm && wc[k].byte_len != op.len)
        die("op %" PRIu64 ": SEND of %u bytes arrived as %u", op.n, op.len, wc[k].byte_len);
      if (const int64_t bad = check(data, op.key, 0, op.len); bad >= 0)
        die("op %" PRIu64 " (%s, %u bytes): byte %" PRId64 " is 0x%02x, expected 0x%02x", op.n,
            kKindNames[int(op.kind)], op.len, bad, data[bad], pattern(op.key, bad));
      const uint32_t tail =
          std::min<uint32_t>(kGap, kSlot - op.len - (imm ? op.remote_off - kSrvImm : 0) % kSlot);
      if (const int64_t bad = check_guard(data + op.len, tail); bad >= 0)
        die("op %" PRIu64 " (%s, %u bytes): byte %" PRId64 " past the end was written", op.n,
            kKindNames[int(op.kind)], op.len, bad);
      std::memset(const_cast<uint8_t*>(data), kGuard, op.len);
      post_recv(&v, static_cast<int>(wc[k].wr_id));
      bytes += op.len;
      ++checked;
      last_progress = std::chrono::steady_clock::now();
    }
    if (expect_recvs < 0 && ++spins % 1024 == 0) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) > 0) {
        uint64_t ops = 0;
        if (!read_all(fd, &ops, sizeof ops)) die("client went away after %u receives", checked);
        OpStream count(seed);
        while (count.drawn() < ops) count.next();
        expect_recvs = count.recvs();
      }
    }
    if (std::chrono::steady_clock::now() - last_progress > std::chrono::seconds(30))
      die("no receive for 30 s (%u checked, expected %" PRId64 "); QP %s", checked, expect_recvs,
          qp_state_name(v.qp));
  }
  write_all(fd, &checked, sizeof checked);
  char ack;
  (void)!read(fd, &ack, 1);  // the client closes once it has the answer: the QP stays up until then
  std::printf("soak server: %u receives checked, %" PRIu64 " bytes\n", checked, bytes);
  ibv_destroy_qp(v.qp);
  ibv_dereg_mr(v.mr);
  ibv_destroy_cq(v.cq);
  ibv_dealloc_pd(v.pd);
  ibv_close_device(v.ctx);
  free(v.mem);
  close(fd);
  return 0;
}

// ---- client ----

struct Client {
  Verbs v;
  Wire remote{};
  uint64_t seed = 0;
  uint64_t fetch_add_model = 0, cmp_swap_model = 0;
  Op inflight[kWindow];
  uint64_t expect_atomic[kWindow] = {};
  uint64_t count[int(Kind::kCount)] = {};
  uint64_t bytes = 0;
};

ibv_sge sge_at(Client& c, size_t base, const Op& op, int i) {
  return {reinterpret_cast<uintptr_t>(c.v.mem + base + op.sge_off[i]), op.sge_len[i], c.v.mr->lkey};
}

void post(Client& c, Op& op) {
  const int slot = static_cast<int>(op.n % kWindow);
  const size_t src = kCliSrc + size_t(slot) * kSlot, dst = kCliDst + size_t(slot) * kSlot;
  ibv_sge s_sg[kMaxSges], d_sg[kMaxSges], a_sg;
  uint32_t pos = 0;
  for (int i = 0; i < op.nsge; ++i) {
    fill(c.v.mem + src + op.sge_off[i], op.key, pos, op.sge_len[i]);
    pos += op.sge_len[i];
    s_sg[i] = sge_at(c, src, op, i);
    d_sg[i] = sge_at(c, dst, op, i);
  }
  ibv_send_wr wr[2] = {};
  wr[0].wr_id = op.n;
  wr[0].send_flags = IBV_SEND_SIGNALED;
  wr[0].sg_list = s_sg;
  wr[0].num_sge = op.nsge;
  wr[0].wr.rdma.remote_addr = c.remote.addr + op.remote_off;
  wr[0].wr.rdma.rkey = c.remote.rkey;
  switch (op.kind) {
    case Kind::kSend:
      wr[0].opcode = IBV_WR_SEND;
      break;
    case Kind::kWriteImm:
      wr[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr[0].imm_data = htonl(static_cast<uint32_t>(op.n));
      break;
    case Kind::kWriteRead:
      // The WRITE unsignaled, then a READ of the same remote bytes (ordered after it on the QP).
      wr[0].opcode = IBV_WR_RDMA_WRITE;
      wr[0].send_flags = 0;
      wr[0].next = &wr[1];
      wr[1] = wr[0];
      wr[1].next = nullptr;
      wr[1].opcode = IBV_WR_RDMA_READ;
      wr[1].send_flags = IBV_SEND_SIGNALED;
      wr[1].sg_list = d_sg;
      std::memset(c.v.mem + dst, kGuard, kSlot);
      break;
    case Kind::kRead:
      wr[0].opcode = IBV_WR_RDMA_READ;
      wr[0].sg_list = d_sg;
      std::memset(c.v.mem + dst, kGuard, kSlot);
      break;
    case Kind::kFetchAdd:
    case Kind::kCmpSwap: {
      a_sg = {reinterpret_cast<uintptr_t>(c.v.mem + kCliAtomic + 8 * slot), 8, c.v.mr->lkey};
      std::memset(c.v.mem + kCliAtomic + 8 * slot, kGuard, 8);
      wr[0].sg_list = &a_sg;
      wr[0].num_sge = 1;
      wr[0].wr.atomic.remote_addr = c.remote.addr + op.remote_off;
      wr[0].wr.atomic.rkey = c.remote.rkey;
      if (op.kind == Kind::kFetchAdd) {
        wr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        wr[0].wr.atomic.compare_add = op.add;
        c.expect_atomic[slot] = c.fetch_add_model;
        c.fetch_add_model += op.add;
      } else {
        wr[0].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        if (op.compare_hits) op.compare = c.cmp_swap_model;
        wr[0].wr.atomic.compare_add = op.compare;
        wr[0].wr.atomic.swap = op.swap;
        c.expect_atomic[slot] = c.cmp_swap_model;
        if (op.compare == c.cmp_swap_model) c.cmp_swap_model = op.swap;
      }
      break;
    }
    default:
      break;
  }
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(c.v.qp, wr, &bad))
    die("ibv_post_send op %" PRIu64 ": %s", op.n, std::strerror(rc));
  c.inflight[slot] = op;
}

void complete(Client& c, const ibv_wc& wc) {
  const int slot = static_cast<int>(wc.wr_id % kWindow);
  const Op& op = c.inflight[slot];
  if (wc.status != IBV_WC_SUCCESS)
    die("op %" PRIu64 " (%s, %u bytes): completion %s (status %d, vendor_err 0x%x); QP %s", op.n,
        kKindNames[int(op.kind)], op.len, ibv_wc_status_str(wc.status), wc.status, wc.vendor_err,
        qp_state_name(c.v.qp));
  if (wc.wr_id != op.n) die("completion for wr_id %" PRIu64 ", expected op %" PRIu64, wc.wr_id, op.n);
  const uint8_t* dst = c.v.mem + kCliDst + size_t(slot) * kSlot;
  if (op.kind == Kind::kWriteRead || op.kind == Kind::kRead) {
    const uint64_t key = op.kind == Kind::kRead ? kStaticKey ^ c.seed : op.key;
    uint64_t pos = op.kind == Kind::kRead ? op.remote_off - kSrvStatic : 0;
    uint32_t end = 0;
    for (int i = 0; i < op.nsge; ++i) {
      const uint8_t* p = dst + op.sge_off[i];
      if (const int64_t bad = check_guard(dst + end, op.sge_off[i] - end); bad >= 0)
        die("op %" PRIu64 " (%s): guard byte before SGE %d overwritten", op.n, kKindNames[int(op.kind)], i);
      if (const int64_t bad = check(p, key, pos, op.sge_len[i]); bad >= 0)
        die("op %" PRIu64 " (%s, %u bytes, %d SGEs): SGE %d byte %" PRId64 " is 0x%02x, expected 0x%02x",
            op.n, kKindNames[int(op.kind)], op.len, op.nsge, i, bad, p[bad], pattern(key, pos + bad));
      pos += op.sge_len[i];
      end = op.sge_off[i] + op.sge_len[i];
    }
    if (check_guard(dst + end, kGap) >= 0)
      die("op %" PRIu64 ": guard byte after the last SGE overwritten", op.n);
  } else if (op.kind == Kind::kFetchAdd || op.kind == Kind::kCmpSwap) {
    uint64_t got;
    std::memcpy(&got, c.v.mem + kCliAtomic + 8 * slot, 8);
    if (got != c.expect_atomic[slot])
      die("op %" PRIu64 " (%s): original value 0x%" PRIx64 ", expected 0x%" PRIx64 " (executed twice?)", op.n,
          kKindNames[int(op.kind)], got, c.expect_atomic[slot]);
  }
  c.count[int(op.kind)]++;
  c.bytes += op.len;
}

int run_client(const char* host, int tcp_port, uint64_t seed, double seconds) {
  Client c;
  c.seed = seed;
  open_verbs(&c.v, kCliBytes, seed + 1);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(tcp_port));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("bad host %s", host);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa)) die("connect: %s", std::strerror(errno));
  write_all(fd, &c.v.local, sizeof c.v.local);
  if (!read_all(fd, &c.remote, sizeof c.remote)) die("server closed during the exchange");
  connect_qp(&c.v, c.remote);

  OpStream stream(seed);
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(seconds);
  uint64_t posted = 0, done = 0;
  auto last_progress = t0;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const bool more = now < deadline;
    if (more && posted - done < kWindow) {
      Op op = stream.next();
      post(c, op);
      ++posted;
      continue;
    }
    if (!more && done == posted) break;
    ibv_wc wc[16];
    const int n = ibv_poll_cq(c.v.cq, 16, wc);
    if (n < 0) die("ibv_poll_cq");
    for (int k = 0; k < n; ++k) complete(c, wc[k]);
    done += static_cast<uint64_t>(n);
    if (n) last_progress = now;
    if (now - last_progress > std::chrono::seconds(30))
      die("no completion for 30 s (%" PRIu64 " of %" PRIu64 " done); QP %s", done, posted,
          qp_state_name(c.v.qp));
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Read both counters back: their final values must be the model's.
  ibv_sge sg{reinterpret_cast<uintptr_t>(c.v.mem + kCliAtomic), 16, c.v.mr->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = ~0ull;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sg;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = c.remote.addr + kSrvAtomic;
  wr.wr.rdma.rkey = c.remote.rkey;
  if (ibv_post_send(c.v.qp, &wr, &bad)) die("final READ");
  ibv_wc wc{};
  for (int spins = 0; ibv_poll_cq(c.v.cq, 1, &wc) == 0; ++spins)
    if (spins > 100'000'000) die("final READ never completed");
  if (wc.status != IBV_WC_SUCCESS) die("final READ: %s", ibv_wc_status_str(wc.status));
  uint64_t fa, cs;
  std::memcpy(&fa, c.v.mem + kCliAtomic, 8);
  std::memcpy(&cs, c.v.mem + kCliAtomic + 8, 8);
  if (fa != c.fetch_add_model || cs != c.cmp_swap_model)
    die("remote counters 0x%" PRIx64 "/0x%" PRIx64 ", expected 0x%" PRIx64 "/0x%" PRIx64, fa, cs,
        c.fetch_add_model, c.cmp_swap_model);

  write_all(fd, &posted, sizeof posted);
  uint32_t checked = 0;
  if (!read_all(fd, &checked, sizeof checked)) die("server failed its checks (see its output)");
  if (checked != stream.recvs()) die("server checked %u receives, %u were sent", checked, stream.recvs());
  std::printf("soak client: %.1f s, %" PRIu64 " operations, %" PRIu64 " bytes (%.1f MB/s):", took, posted,
              c.bytes, c.bytes / took / 1e6);
  for (int k = 0; k < int(Kind::kCount); ++k) std::printf(" %s=%" PRIu64, kKindNames[k], c.count[k]);
  std::printf("; server checked %u receives\n", checked);
  close(fd);
  ibv_destroy_qp(c.v.qp);
  ibv_dereg_mr(c.v.mr);
  ibv_destroy_cq(c.v.cq);
  ibv_dealloc_pd(c.v.pd);
  ibv_close_device(c.v.ctx);
  free(c.v.mem);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc == 4 && std::string(argv[1]) == "server")
    return run_server(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 0));
  if (argc == 6 && std::string(argv[1]) == "client")
    return run_client(argv[2], std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 0), std::atof(argv[5]));
  std::fprintf(stderr, "usage: soak server TCP_PORT SEED | soak client HOST TCP_PORT SEED SECONDS\n");
  return 2;
}
