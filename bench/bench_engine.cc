// The transport engine's cost per pass and per message as the number of idle QPs grows, each beside the
// same benchmark with no idle QP, measured in the same run (the ratio is the figure):
//   - BM_EmptyPass/N: one Device::progress() that finds nothing to do, then next_deadline(), as a polling
//     application or the progress thread runs them between messages, with N connected idle RC QPs.
//   - BM_WriteAndAck/N: a 64-byte RDMA WRITE posted on one QP, sent, acknowledged and polled, with N idle
//     QPs beside it (the device on a capture port: no wire, no peer process).
//   - BM_SendBurst: the requester's cost per message as ib_send_bw 64 B loads it: a burst of 32 SENDs of 64
//     bytes (the last one signaled) posted, built, handed to a port that keeps nothing, acknowledged by one
//     ACK and polled. Items are messages.
// An application with many connections (MPI, UCX) has most of them idle at any moment; a pass should cost
// the same for it as for one with a single QP.
//
// Run: build/release/bench/bench_engine   (Google Benchmark flags such as --benchmark_filter work as usual)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "bench/send_burst.h"
#include "tests/support/capture_port.h"

namespace {

using namespace uroce;

constexpr int kRepetitions = 5;

// A device with its own connected QP (credits lifted) and `idle` more connected QPs that never send.
std::unique_ptr<test::ProtoEnv> env_with_idle(int64_t idle) {
  auto env = std::make_unique<test::ProtoEnv>();
  env->unlimited_credits();
  const QpInitAttr init = env->qp->init_attr();
  for (int64_t i = 0; i < idle; ++i) {
    Qp* q = nullptr;
    if (env->dev->create_qp(env->pd, init, &q) || env->connect(q)) return nullptr;
  }
  env->run();
  return env;
}

void BM_EmptyPass(benchmark::State& state) {
  auto env = env_with_idle(state.range(0));
  if (!env) return state.SkipWithError("QP setup failed");
  for (auto _ : state) {
    benchmark::DoNotOptimize(env->dev->progress());
    benchmark::DoNotOptimize(env->dev->next_deadline());
  }
}

void BM_WriteAndAck(benchmark::State& state) {
  auto env = env_with_idle(state.range(0));
  if (!env) return state.SkipWithError("QP setup failed");
  uint32_t psn = env->opt.sq_psn;
  // Polled into a small array, as an application polls: the test helper's poll() clears a 4096-entry
  // vector per call, which was ~70% of this loop.
  Wc wc[16];
  for (auto _ : state) {
    if (env->post(WrOpcode::kRdmaWrite, 0, 64, 1, 0x1000, 1) != 0) return state.SkipWithError("post failed");
    env->dev->progress();
    env->port.clear();
    env->inject_ack(psn);
    psn = (psn + 1) & 0xFFFFFF;
    env->dev->progress();
    if (env->cq->poll(16, wc) != 1) return state.SkipWithError("no completion");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SendBurst(benchmark::State& state) {
  constexpr uint32_t kBurst = 32;
  auto env = env_with_idle(0);
  if (!env) return state.SkipWithError("QP setup failed");
  env->port.keep_sent = false;
  uint32_t psn = env->opt.sq_psn;
  for (auto _ : state)
    if (!bench::send_burst(*env, kBurst, &psn)) return state.SkipWithError("post failed or no completion");
  state.SetItemsProcessed(state.iterations() * kBurst);
}
BENCHMARK(BM_SendBurst)->Repetitions(kRepetitions)->ReportAggregatesOnly();

// 0 idle QPs is each benchmark's same-run baseline.
void idle_qp_counts(benchmark::internal::Benchmark* b) {
  b->Arg(0)->Arg(100)->Arg(1000)->Arg(10000)->Repetitions(kRepetitions)->ReportAggregatesOnly();
}
BENCHMARK(BM_EmptyPass)->Apply(idle_qp_counts);
BENCHMARK(BM_WriteAndAck)->Apply(idle_qp_counts);

}  // namespace

BENCHMARK_MAIN();
