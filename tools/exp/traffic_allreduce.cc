// uroce-traffic allreduce RANK RANKS PORT BYTES SECONDS: one rank of a ring AllReduce (sum of floats) over
// RC QPs, as NCCL's ring algorithm moves the data: the buffer is cut into RANKS chunks; RANKS-1
// reduce-scatter steps each send one chunk to the next rank and add the chunk received from the previous one,
// then RANKS-1 all-gather steps pass the reduced chunks around. Each step is one RDMA WRITE WITH IMMEDIATE
// (the step number) into the next rank's landing slot for that step (two sets of slots, by iteration parity,
// so a rank one iteration ahead never overwrites a slot its successor has not read yet).
//
// Rank r listens on 127.0.0.1:PORT+r for its predecessor and connects to PORT+(r+1)%RANKS, swapping QPN,
// PSN, GID, address and rkey as perftest does. Every rank starts with all elements r+1; after the first
// iteration each element must be RANKS(RANKS+1)/2 (checked). Rank 0 then turns SECONDS into a number of
// iterations from how long two more took and passes it around the ring (every rank must run as many).
// It prints the bus bandwidth as nccl-tests defines it: algbw = BYTES / time per iteration,
// busbw = algbw * 2(RANKS-1)/RANKS.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "tools/exp/traffic.h"

namespace uroce_traffic {

namespace {

constexpr int kPaceIterations = 2;

// The successor may not listen yet: retry for up to 30 s.
int connect_to(uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int tries = 0; tries < 3000; ++tries) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  die("cannot connect to port %u", port);
}

// Waits for one completion of `opcode` (IBV_WC_RDMA_WRITE for our WRITE, IBV_WC_RECV_RDMA_WITH_IMM for the
// predecessor's); the other kind may arrive meanwhile and is counted in *early.
void wait_for(ibv_cq* cq, ibv_wc_opcode opcode, int* early_sends, int* early_recvs) {
  int* mine = opcode == IBV_WC_RDMA_WRITE ? early_sends : early_recvs;
  while (*mine == 0) {
    ibv_wc wc[8];
    const int n = ibv_poll_cq(cq, 8, wc);
    if (n < 0) die("ibv_poll_cq");
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS)
        die("completion %s (%d)", ibv_wc_status_str(wc[i].status), wc[i].status);
      ++*(wc[i].opcode == IBV_WC_RDMA_WRITE ? early_sends : early_recvs);
    }
  }
  --*mine;
}

void post_recv(ibv_qp* qp) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_recv(qp, &wr, &bad)) die("ibv_post_recv");
}

}  // namespace

int allreduce(int rank, int ranks, uint16_t port, size_t bytes, double seconds) {
  if (rank >= ranks) die("rank %d of %d", rank, ranks);
  const size_t chunk = (bytes / sizeof(float) + ranks - 1) / ranks * sizeof(float);
  bytes = chunk * ranks;
  const int steps = 2 * (ranks - 1);
  const size_t data = 0, slot_base = bytes;  // memory: data | landing slots [2][steps] of one chunk
  Device d;
  open_device(&d, bytes + 2 * steps * chunk, 4 * steps + 8, false);
  Wire next_local{}, prev_local{}, next_remote{}, prev_remote{};
  ibv_qp* next = create_qp(d, 4, 1, &next_local);
  ibv_qp* prev = create_qp(d, 1, 2 * steps + 2, &prev_local);

  const int ls = listen_on(static_cast<uint16_t>(port + rank), 1);
  const int to_next = connect_to(static_cast<uint16_t>(port + (rank + 1) % ranks));
  send_all(to_next, &next_local, sizeof next_local);
  const int from_prev = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  if (from_prev < 0) die("accept: %s", std::strerror(errno));
  if (!recv_all(from_prev, &prev_remote, sizeof prev_remote)) die("predecessor closed during the exchange");
  send_all(from_prev, &prev_local, sizeof prev_local);
  if (!recv_all(to_next, &next_remote, sizeof next_remote)) die("successor closed during the exchange");
  close(ls);
  connect_qp(next, d, next_local, next_remote);
  connect_qp(prev, d, prev_local, prev_remote);
  for (int i = 0; i < 2 * steps + 2; ++i) post_recv(prev);
  // Both ends of both QPs are ready before anyone writes: one byte each way on both connections.
  char b = 0;
  send_all(to_next, &b, 1);
  send_all(from_prev, &b, 1);
  if (!recv_all(to_next, &b, 1) || !recv_all(from_prev, &b, 1)) die("a neighbour left before the start");

  auto* vals = reinterpret_cast<float*>(d.mem.data() + data);
  const size_t per_chunk = chunk / sizeof(float);
  auto fill = [&] {
    for (size_t i = 0; i < bytes / sizeof(float); ++i) vals[i] = static_cast<float>(rank + 1);
  };
  int early_sends = 0, early_recvs = 0;
  auto one_iteration = [&](int it) {
    const int parity = it & 1;
    for (int step = 0; step < steps; ++step) {
      const bool reduce = step < ranks - 1;
      const int s = reduce ? step : step - (ranks - 1);
      const int send_idx = ((rank - s + (reduce ? 0 : 1)) % ranks + ranks) % ranks;
      const int recv_idx = ((rank - s - (reduce ? 1 : 0)) % ranks + ranks) % ranks;
      ibv_sge sge{reinterpret_cast<uintptr_t>(vals + send_idx * per_chunk), static_cast<uint32_t>(chunk),
                  d.mr->lkey};
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.imm_data = htonl(static_cast<uint32_t>(step));
      wr.wr.rdma.remote_addr = next_remote.addr + slot_base + (parity * steps + step) * chunk;
      wr.wr.rdma.rkey = next_remote.rkey;
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(next, &wr, &bad)) die("ibv_post_send: %s", std::strerror(rc));
      wait_for(d.cq, IBV_WC_RECV_RDMA_WITH_IMM, &early_sends, &early_recvs);
      post_recv(prev);
      const auto* in =
          reinterpret_cast<const float*>(d.mem.data() + slot_base + (parity * steps + step) * chunk);
      // Our WRITE reads chunk send_idx; the step's result goes to chunk recv_idx, which differs from it, but
      // the next step sends recv_idx: wait for the WRITE before leaving the step.
      float* out = vals + recv_idx * per_chunk;
      if (reduce) {
        for (size_t i = 0; i < per_chunk; ++i) out[i] += in[i];
      } else {
        std::memcpy(out, in, chunk);
      }
      wait_for(d.cq, IBV_WC_RDMA_WRITE, &early_sends, &early_recvs);
    }
  };
  fill();
  one_iteration(0);
  const float want = static_cast<float>(ranks * (ranks + 1) / 2);
  for (size_t i = 0; i < bytes / sizeof(float); ++i)
    if (vals[i] != want) die("element %zu is %g after the first iteration, expected %g", i, vals[i], want);
  // Two more untimed iterations measure the pace (the first one also warms the path up).
  const auto warm = std::chrono::steady_clock::now();
  for (int it = 1; it <= kPaceIterations; ++it) {
    fill();
    one_iteration(it);
  }
  const double pace_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - warm).count() / kPaceIterations;
  int32_t iterations = 0;
  if (rank == 0) {
    iterations = static_cast<int32_t>(std::clamp(seconds / std::max(pace_s, 1e-6), 1.0, 1e6));
  } else if (!recv_all(from_prev, &iterations, sizeof iterations)) {
    die("predecessor left before the iteration count");
  }
  if ((rank + 1) % ranks != 0) send_all(to_next, &iterations, sizeof iterations);
  const auto t0 = std::chrono::steady_clock::now();
  for (int it = 1 + kPaceIterations; it <= iterations + kPaceIterations; ++it) {
    fill();
    one_iteration(it);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double algbw = static_cast<double>(bytes) * iterations * 8 / took / 1e9;
  std::printf(
      "allreduce: rank %d of %d, %zu bytes x %d in %.3f s: algbw %.3f Gb/s busbw %.3f Gb/s, sums checked\n",
      rank, ranks, bytes, iterations, took, algbw, algbw * 2 * (ranks - 1) / ranks);
  std::fflush(stdout);
  // Leave together: the predecessor may still wait for our last ACKs.
  send_all(to_next, &b, 1);
  send_all(from_prev, &b, 1);
  recv_all(to_next, &b, 1);
  recv_all(from_prev, &b, 1);
  close(to_next);
  close(from_prev);
  ibv_destroy_qp(next);
  ibv_destroy_qp(prev);
  ibv_dereg_mr(d.mr);
  ibv_destroy_cq(d.cq);
  ibv_dealloc_pd(d.pd);
  ibv_close_device(d.ctx);
  return 0;
}

}  // namespace uroce_traffic
