// Simulated RC goodput against packet loss, go-back-N beside selective repeat: 1 MiB RDMA WRITEs, 4 KiB MTU,
// 16 in flight, on a 100 Gb/s link with 1 us propagation delay, in virtual time. Every figure is printed as
// a ratio to the lossless run measured in the same invocation. Deterministic: the same binary prints the
// same table.
//
// Usage: bench_goodput [messages per point, default 400]
#include <cstdio>
#include <cstdlib>

#include "tests/sim/workload.h"

using uroce::test::WorkloadResult;

int main(int argc, char** argv) {
  const uint32_t messages = argc > 1 ? static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10)) : 400;
  const double losses[] = {0, 0.0001, 0.001, 0.01, 0.05};
  std::printf("RC WRITE goodput vs random loss, %u x 1 MiB, MTU 4096, 100 Gb/s, 1 us delay\n", messages);
  std::printf(
      "go-back-N (the default) beside selective repeat (both ends on); each vs its own lossless run\n");
  std::printf("%8s | %12s %8s %8s %6s | %12s %8s %8s %6s\n", "loss", "GBN goodput", "vs 0%", "re-sent",
              "lost", "SR goodput", "vs 0%", "re-sent", "lost");
  double base[2] = {0, 0};
  int status = 0;
  for (double loss : losses) {
    double gbps[2] = {0, 0};
    uint64_t retx[2] = {0, 0}, lost[2] = {0, 0};
    for (int sr = 0; sr < 2; ++sr) {
      const WorkloadResult r = uroce::test::run_workload(uroce::test::goodput_workload(messages, loss, sr));
      if (!r.ok) {
        std::fprintf(stderr, "loss %g%s: %s\n", loss, sr ? " (SR)" : "", r.error.c_str());
        status = 1;
        continue;
      }
      gbps[sr] = static_cast<double>(r.bytes) * 8 / static_cast<double>(r.virtual_ns);
      if (loss == 0) base[sr] = gbps[sr];
      retx[sr] = r.retransmits;
      lost[sr] = r.link_lost;
    }
    std::printf("%7.2f%% | %7.2f Gb/s %7.1f%% %8lu %6lu | %7.2f Gb/s %7.1f%% %8lu %6lu\n", loss * 100,
                gbps[0], base[0] ? 100 * gbps[0] / base[0] : 0, static_cast<unsigned long>(retx[0]),
                static_cast<unsigned long>(lost[0]), gbps[1], base[1] ? 100 * gbps[1] / base[1] : 0,
                static_cast<unsigned long>(retx[1]), static_cast<unsigned long>(lost[1]));
  }
  return status;
}
