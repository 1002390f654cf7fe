// uroce-traffic's verbs helpers (traffic.cc), shared by its modes: the WRITE load (traffic.cc) and the ring
// AllReduce (traffic_allreduce.cc).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace uroce_traffic {

[[noreturn]] void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// What each side tells the other about its QP (fixed layout, host byte order: both ends are on this host).
struct Wire {
  uint32_t qpn, psn, rkey, pad;
  uint64_t addr;
  uint8_t gid[16];
};

// A TCP socket listening on loopback `port` (exits the program naming the port when it cannot).
int listen_on(uint16_t port, int backlog);
void send_all(int fd, const void* p, size_t n);
bool recv_all(int fd, void* p, size_t n);

struct Device {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<uint8_t> mem;
  ibv_mtu mtu = IBV_MTU_1024;
  ibv_gid gid{};
};

// The first device, a PD, a CQ of `cqe` entries (on a completion channel when `channel`), and `bytes` of
// memory registered for local and remote write.
void open_device(Device* d, size_t bytes, int cqe, bool channel);
// An RC QP on d's CQ; *local describes it and d's memory for the peer.
ibv_qp* create_qp(Device& d, uint32_t send_wr, uint32_t recv_wr, Wire* local);
// INIT -> RTR -> RTS towards `remote`.
void connect_qp(ibv_qp* qp, const Device& d, const Wire& local, const Wire& remote);

// traffic_allreduce.cc
int allreduce(int rank, int ranks, uint16_t port, size_t bytes, double seconds);

}  // namespace uroce_traffic
