// Fixture for the libibverbs-level tests: opens the uroce device through the system's libibverbs exactly as
// an application does (the test binary runs under `uroce run`), and builds connected QPs.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace uroce::test {

struct VerbsSide {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<uint8_t> buf;
  // A test that stopped early still releases everything, so no QP outlives the memory it writes into.
  ~VerbsSide();
};

// Opens the first uroce device (ASSERTs inside gtest on failure).
ibv_context* open_uroce();
ibv_gid gid0(ibv_context* ctx);

void make_side(VerbsSide* s, ibv_qp_type type, size_t buf_bytes = 1 << 20, ibv_srq* srq = nullptr,
               ibv_comp_channel* channel = nullptr);
void destroy_side(VerbsSide* s);

// RC/UC: both to RTS, each pointing at the other. Returns 0 or an errno.
int connect_rc(VerbsSide& a, VerbsSide& b, uint8_t timeout = 12, uint8_t retry_cnt = 7,
               uint8_t rnr_retry = 7);
int to_rts_ud(ibv_qp* qp, uint32_t qkey);

// Polls `cq` until `n` completions arrived or ~10 s passed.
std::vector<ibv_wc> poll_n(ibv_cq* cq, size_t n, int timeout_ms = 10000);

int post_send(ibv_qp* qp, ibv_wr_opcode op, ibv_sge* sges, int nsge, uint64_t raddr = 0, uint32_t rkey = 0,
              unsigned flags = IBV_SEND_SIGNALED, uint64_t wr_id = 1);
int post_recv(ibv_qp* qp, ibv_sge* sges, int nsge, uint64_t wr_id = 1);

// UD: two sides with their QPs in RTS on `qkey` (ASSERTs inside), an address handle on `from`'s PD for
// `to`'s GID 0, and a signaled SEND of one SGE to `to`'s QP.
void make_ud_pair(VerbsSide* a, VerbsSide* b, uint32_t qkey);
ibv_ah* ah_to(const VerbsSide& from, const VerbsSide& to);
int post_ud_send(ibv_qp* qp, ibv_ah* ah, uint32_t remote_qpn, uint32_t qkey, ibv_sge* sge);

}  // namespace uroce::test
