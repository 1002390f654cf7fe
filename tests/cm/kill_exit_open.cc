// kill_exit_open ADDR PORT: connects to an RDMA CM server (rping -s) with librdmacm's synchronous API, prints
// "connected", and returns from main with the connection still open: no rdma_disconnect, no destroy. What
// the server then sees is what the process's exit sends (a kernel: the DREQ when its rdma_cm file closes;
// under uroce: the provider CM's exit handler). Exits 1 when it cannot connect.
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kill_exit_open ADDR PORT\n");
    return 2;
  }
  rdma_addrinfo hints{};
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* res = nullptr;
  if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res)) {
    std::perror("rdma_getaddrinfo");
    return 1;
  }
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 1;
  rdma_cm_id* id = nullptr;
  if (rdma_create_ep(&id, res, nullptr, &attr)) {
    std::perror("rdma_create_ep");
    return 1;
  }
  // rping's server posts a receive and waits for the client's buffer advertisement: it stays connected.
  if (rdma_connect(id, nullptr)) {
    std::perror("rdma_connect");
    return 1;
  }
  std::printf("connected\n");
  std::fflush(stdout);
  return 0;
}
