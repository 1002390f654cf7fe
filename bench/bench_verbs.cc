// The cost of a small message through the whole provider, as an application pays it: libibverbs' calls,
// the verbs layer, the engine's passes and both ends of the transport, with no wire in between (both QPs on
// one device, the in-process loopback port, one thread). Beside it, in the same run, the transport alone
// doing the sender's half of the same work (bench_engine's BM_SendBurst: the requester's cost per message on
// a port that keeps nothing):
//   - BM_VerbsSendRecv: ib_send_bw 64 B's pattern, both ends: 32 receives posted one ibv_post_recv each,
//     32 SENDs of 64 bytes posted one ibv_post_send each (the last signaled), both CQs polled until the 32
//     receives and the send have completed. Items are messages.
//   - BM_VerbsWriteAndPoll: one 64-byte RDMA WRITE posted, signaled, and polled to its completion.
//   - BM_TransportSendBurst: the baseline above.
// The verbs figure minus the baseline is what the verbs layer, the receiver's half and the loopback cost.
//
// Run (needs the device nodes, `uroce setup` once as root):
//   UROCE_PORT=loopback build/release/tools/uroce run -- build/release/bench/bench_verbs
#include <benchmark/benchmark.h>

#include <memory>

#include "bench/send_burst.h"
#include "tests/support/capture_port.h"
#include "tests/verbs/verbs_env.h"

namespace {

using namespace uroce;

constexpr int kRepetitions = 5;
constexpr uint32_t kBurst = 32;

// Two connected RC QPs on one device.
struct Pair {
  test::VerbsSide a, b;
  bool ok = false;
  Pair() {
    test::make_side(&a, IBV_QPT_RC, 1 << 16);
    if (!a.qp) return;
    b.ctx = a.ctx;  // one device: the loopback port joins its own QPs
    test::make_side(&b, IBV_QPT_RC, 1 << 16);
    ok = b.qp && test::connect_rc(a, b) == 0;
  }
  ~Pair() { b.ctx = nullptr; }  // closed by a
};

// Polls until `n` completions have arrived; false on an error completion or after ~100 million empty polls.
bool drain(ibv_cq* cq, uint32_t n) {
  ibv_wc wc[16];
  for (uint64_t spins = 0; n && spins < 100'000'000; ++spins) {
    const int got = ibv_poll_cq(cq, 16, wc);
    if (got < 0) return false;
    for (int i = 0; i < got; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) return false;
    n -= static_cast<uint32_t>(got);
  }
  return n == 0;
}

void BM_VerbsSendRecv(benchmark::State& state) {
  Pair p;
  if (!p.ok) return state.SkipWithError("no uroce device or QP setup failed: run under `uroce run`");
  ibv_sge send{reinterpret_cast<uintptr_t>(p.a.buf.data()), 64, p.a.mr->lkey};
  ibv_sge recv{reinterpret_cast<uintptr_t>(p.b.buf.data()), 64, p.b.mr->lkey};
  for (auto _ : state) {
    for (uint32_t i = 0; i < kBurst; ++i)
      if (test::post_recv(p.b.qp, &recv, 1, i) != 0) return state.SkipWithError("post_recv failed");
    for (uint32_t i = 0; i < kBurst; ++i)
      if (test::post_send(p.a.qp, IBV_WR_SEND, &send, 1, 0, 0, i + 1 == kBurst ? IBV_SEND_SIGNALED : 0, i) !=
          0)
        return state.SkipWithError("post_send failed");
    if (!drain(p.b.cq, kBurst) || !drain(p.a.cq, 1)) return state.SkipWithError("completions missing");
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
}
BENCHMARK(BM_VerbsSendRecv)->Repetitions(kRepetitions)->ReportAggregatesOnly();

void BM_VerbsWriteAndPoll(benchmark::State& state) {
  Pair p;
  if (!p.ok) return state.SkipWithError("no uroce device or QP setup failed: run under `uroce run`");
  ibv_sge sge{reinterpret_cast<uintptr_t>(p.a.buf.data()), 64, p.a.mr->lkey};
  const uint64_t raddr = reinterpret_cast<uintptr_t>(p.b.buf.data());
  for (auto _ : state) {
    if (test::post_send(p.a.qp, IBV_WR_RDMA_WRITE, &sge, 1, raddr, p.b.mr->rkey) != 0)
      return state.SkipWithError("post_send failed");
    if (!drain(p.a.cq, 1)) return state.SkipWithError("completion missing");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerbsWriteAndPoll)->Repetitions(kRepetitions)->ReportAggregatesOnly();

// The baseline: the requester's half in the transport alone (bench_engine's BM_SendBurst).
void BM_TransportSendBurst(benchmark::State& state) {
  test::ProtoEnv env;
  bench::prepare_send_burst(&env);
  uint32_t psn = env.opt.sq_psn;
  for (auto _ : state)
    if (!bench::send_burst(env, kBurst, &psn)) return state.SkipWithError("post failed or no completion");
  state.SetItemsProcessed(state.iterations() * kBurst);
}
BENCHMARK(BM_TransportSendBurst)->Repetitions(kRepetitions)->ReportAggregatesOnly();

}  // namespace

BENCHMARK_MAIN();
