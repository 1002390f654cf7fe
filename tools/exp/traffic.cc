// uroce-traffic: RDMA WRITE load between separate processes, for `uroce exp --realtime` (run under
// `uroce run`, one process per role).
//
//   uroce-traffic server PORT CLIENTS [MSG_BYTES]
//   uroce-traffic client HOST PORT MSG_BYTES SECONDS [DEPTH]
//   uroce-traffic allreduce RANK RANKS PORT BYTES SECONDS   (traffic_allreduce.cc: one rank of a ring
//   AllReduce)
//
// The server holds one RC QP per client, all on one device, so every flow ends at the same port of the host
// switch (through uroced each process has its own port: an N:1 incast needs one receiver process). It
// accepts CLIENTS out-of-band TCP connections on 127.0.0.1:PORT (as perftest does) and swaps QPN, PSN, GID,
// address and rkey over each; it then posts nothing and polls nothing (WRITEs need no receive), and exits
// once every client has reported its count on its TCP connection.
//
// A client WRITEs MSG_BYTES messages into the server's buffer for SECONDS, DEPTH in flight, sleeping on its
// completion channel between completions (a busy poller per sender would starve the others and the switch
// on a small machine). It prints "client: N writes, B bytes in T s: G Gb/s" and exits 0 only when every
// WRITE completed successfully.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tools/exp/traffic.h"

namespace uroce_traffic {

[[noreturn]] void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "uroce-traffic: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::exit(1);
}

int listen_on(uint16_t port, int backlog) {
  const int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa) || listen(ls, backlog))
    die("listen on port %u: %s", port, std::strerror(errno));
  return ls;
}

void send_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = send(fd, b, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("send: %s", std::strerror(errno));
    b += r;
    n -= static_cast<size_t>(r);
  }
}

bool recv_all(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = recv(fd, b, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void open_device(Device* d, size_t bytes, int cqe, bool channel) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) die("no RDMA device (run under `uroce run`)");
  d->ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (!d->ctx) die("ibv_open_device failed");
  d->pd = ibv_alloc_pd(d->ctx);
  if (channel && !(d->channel = ibv_create_comp_channel(d->ctx))) die("ibv_create_comp_channel");
  d->cq = ibv_create_cq(d->ctx, cqe, nullptr, d->channel, 0);
  d->mem.assign(bytes, 0);
  if (!d->pd || !d->cq) die("PD/CQ");
  d->mr = ibv_reg_mr(d->pd, d->mem.data(), bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!d->mr) die("ibv_reg_mr");
  ibv_port_attr pa{};
  if (ibv_query_port(d->ctx, 1, &pa)) die("ibv_query_port");
  d->mtu = pa.active_mtu;
  if (ibv_query_gid(d->ctx, 1, 0, &d->gid)) die("ibv_query_gid");
}

ibv_qp* create_qp(Device& d, uint32_t send_wr, uint32_t recv_wr, Wire* local) {
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = d.cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = send_wr;
  ia.cap.max_recv_wr = recv_wr;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(d.pd, &ia);
  if (!qp) die("ibv_create_qp");
  std::random_device rd;
  *local = Wire{qp->qp_num, rd() & 0xFFFFFF, d.mr->rkey, 0, reinterpret_cast<uintptr_t>(d.mem.data()), {}};
  std::memcpy(local->gid, d.gid.raw, 16);
  return qp;
}

void connect_qp(ibv_qp* qp, const Device& d, const Wire& local, const Wire& remote) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    die("modify_qp INIT");
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = d.mtu;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid, 16);
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    die("modify_qp RTR");
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = local.psn;
  // 67 ms local ACK timeout, 7 retries (~0.5 s without progress), as perftest: a loaded 2-core machine
  // leaves a process unscheduled for tens of milliseconds.
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_MAX_QP_RD_ATOMIC))
    die("modify_qp RTS");
}

}  // namespace uroce_traffic

namespace {

using namespace uroce_traffic;

int server(uint16_t port, int clients, size_t msg) {
  Device d;
  open_device(&d, msg, 16, false);
  const int ls = listen_on(port, clients);
  std::vector<int> fds;
  std::vector<ibv_qp*> qps;
  for (int i = 0; i < clients; ++i) {
    const int fd = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) die("accept: %s", std::strerror(errno));
    Wire local{}, remote{};
    ibv_qp* qp = create_qp(d, 1, 1, &local);
    if (!recv_all(fd, &remote, sizeof remote)) die("client %d closed during the exchange", i);
    connect_qp(qp, d, local, remote);
    send_all(fd, &local, sizeof local);
    fds.push_back(fd);
    qps.push_back(qp);
  }
  close(ls);
  std::printf("server: %d clients connected\n", clients);
  std::fflush(stdout);
  // Each client sends its count of completed WRITEs when it is done; the server answers so that the
  // client's QP is not torn down under the last ACKs' feet, and leaves once all have reported.
  uint64_t total = 0;
  int failed = 0;
  for (int fd : fds) {
    uint64_t n = 0;
    if (!recv_all(fd, &n, sizeof n)) {
      ++failed;
    } else {
      total += n;
      send_all(fd, &n, sizeof n);
    }
    close(fd);
  }
  std::printf("server: %d clients reported %" PRIu64 " writes%s\n", clients - failed, total,
              failed ? " (some closed without a report)" : "");
  for (ibv_qp* qp : qps) ibv_destroy_qp(qp);
  ibv_dereg_mr(d.mr);
  ibv_destroy_cq(d.cq);
  ibv_dealloc_pd(d.pd);
  ibv_close_device(d.ctx);
  return failed ? 1 : 0;
}

int client(const char* host, uint16_t port, size_t msg, double seconds, int depth) {
  Device d;
  open_device(&d, msg, depth + 4, true);
  Wire local{}, remote{};
  ibv_qp* qp = create_qp(d, static_cast<uint32_t>(depth), 1, &local);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("bad host '%s'", host);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa)) die("connect: %s", std::strerror(errno));
  send_all(fd, &local, sizeof local);
  if (!recv_all(fd, &remote, sizeof remote)) die("server closed during the exchange");
  connect_qp(qp, d, local, remote);

  ibv_sge sge{reinterpret_cast<uintptr_t>(d.mem.data()), static_cast<uint32_t>(msg), d.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote.addr;
  wr.wr.rdma.rkey = remote.rkey;
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto end = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  uint64_t posted = 0, done = 0;
  if (ibv_req_notify_cq(d.cq, 0)) die("ibv_req_notify_cq");
  for (;;) {
    const bool more = clock::now() < end;
    while (more && posted - done < static_cast<uint64_t>(depth)) {
      ibv_send_wr* bad = nullptr;
      wr.wr_id = posted;
      if (const int rc = ibv_post_send(qp, &wr, &bad)) die("ibv_post_send: %s", std::strerror(rc));
      ++posted;
    }
    if (!more && done == posted) break;
    // Drain, re-arm, drain again (a completion between the two would otherwise raise no event), then sleep.
    ibv_wc wc[16];
    int n = 0;
    for (int pass = 0; pass < 2 && n == 0; ++pass) {
      n = ibv_poll_cq(d.cq, 16, wc);
      if (n == 0 && pass == 0 && ibv_req_notify_cq(d.cq, 0)) die("ibv_req_notify_cq");
    }
    if (n < 0) die("ibv_poll_cq");
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS)
        die("WRITE %" PRIu64 " completed with %s (%d)", wc[i].wr_id, ibv_wc_status_str(wc[i].status),
            wc[i].status);
      ++done;
    }
    if (n > 0) continue;
    ibv_cq* ev_cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(d.channel, &ev_cq, &ctx)) die("ibv_get_cq_event");
    ibv_ack_cq_events(ev_cq, 1);
    if (ibv_req_notify_cq(d.cq, 0)) die("ibv_req_notify_cq");
  }
  const double took = std::chrono::duration<double>(clock::now() - t0).count();
  const uint64_t bytes = done * msg;
  std::printf("client: %" PRIu64 " writes, %" PRIu64 " bytes in %.3f s: %.3f Gb/s\n", done, bytes, took,
              static_cast<double>(bytes) * 8 / took / 1e9);
  std::fflush(stdout);
  send_all(fd, &done, sizeof done);
  uint64_t echo = 0;
  recv_all(fd, &echo, sizeof echo);
  close(fd);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(d.mr);
  ibv_destroy_cq(d.cq);
  ibv_destroy_comp_channel(d.channel);
  ibv_dealloc_pd(d.pd);
  ibv_close_device(d.ctx);
  return 0;
}

long number(const char* s, long lo, long hi, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) die("bad %s '%s' (%ld..%ld)", what, s, lo, hi);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string role = argc > 1 ? argv[1] : "";
  if (role == "server" && (argc == 4 || argc == 5))
    return server(static_cast<uint16_t>(number(argv[2], 1, 65535, "port")),
                  static_cast<int>(number(argv[3], 1, 64, "client count")),
                  argc == 5 ? static_cast<size_t>(number(argv[4], 1, 1 << 30, "message size")) : 65536);
  if (role == "client" && (argc == 6 || argc == 7))
    return client(argv[2], static_cast<uint16_t>(number(argv[3], 1, 65535, "port")),
                  static_cast<size_t>(number(argv[4], 1, 1 << 30, "message size")),
                  static_cast<double>(number(argv[5], 1, 3600, "seconds")),
                  argc == 7 ? static_cast<int>(number(argv[6], 1, 256, "depth")) : 4);
  if (role == "allreduce" && argc == 7)
    return allreduce(static_cast<int>(number(argv[2], 0, 63, "rank")),
                     static_cast<int>(number(argv[3], 2, 64, "ranks")),
                     static_cast<uint16_t>(number(argv[4], 1, 65535, "port")),
                     static_cast<size_t>(number(argv[5], 1, 1 << 30, "bytes")),
                     static_cast<double>(number(argv[6], 1, 3600, "seconds")));
  std::fprintf(stderr,
               "usage: uroce-traffic server PORT CLIENTS [MSG_BYTES]\n"
               "       uroce-traffic client HOST PORT MSG_BYTES SECONDS [DEPTH]\n"
               "       uroce-traffic allreduce RANK RANKS PORT BYTES SECONDS\n");
  return 2;
}
