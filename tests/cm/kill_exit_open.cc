// kill_exit_open ADDR PORT: connects to an RDMA CM server (rping -s) with librdmacm's synchronous API, prints
// "connected", and returns from main with the connection still open: no rdma_disconnect, no destroy. What
// the server then sees is what the process's exit sends (a kernel: the DREQ when its rdma_cm file closes;
// under uroce: the provider CM's exit handler). Exits 1 when it cannot connect.
//
// kill_exit_open ADDR PORT fork: the same, but once connected it forks a child that calls exit() at once,
// running the exit handlers the parent registered (as a forked worker of a server does); prints "child
// exited N" when it is gone, then waits for a line on stdin before it returns, so that the caller can see
// what the child's exit did to the parent's connection.
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  const bool fork_child = argc == 4 && std::strcmp(argv[3], "fork") == 0;
  if (argc != 3 && !fork_child) {
    std::fprintf(stderr, "usage: kill_exit_open ADDR PORT [fork]\n");
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
  if (fork_child) {
    const pid_t child = fork();
    if (child < 0) {
      std::perror("fork");
      return 1;
    }
    if (child == 0) std::exit(0);
    int status = 0;
    if (waitpid(child, &status, 0) != child) {
      std::perror("waitpid");
      return 1;
    }
    std::printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    std::fflush(stdout);
    char line[16];
    if (!std::fgets(line, sizeof line, stdin)) {
      // The caller closed stdin without a line: return all the same.
    }
  }
  return 0;
}
