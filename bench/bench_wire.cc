// Wire-layer micro-benchmarks, each next to a baseline measured in the same run:
//   - ICRC (icrc_roce_v2 over a whole RC SEND frame) vs memcpy of the same payload size. The datapath
//     checksums payload where it lies instead of copying it; a copy is the per-byte cost to compare with.
//     Target: at 4 KiB the ICRC reaches at least half of memcpy's throughput.
//   - raw CRC-32: crc32_update (the kernel the dispatcher picked), the fused copy + CRC the transmit path
//     uses (crc32_copy_update), and every kernel of crc32_kernels() this CPU runs, each next to memcpy of
//     the same size; zlib's crc32 as the reference implementation; the ICRC of a frame with each of our
//     kernels and ISA-L's dispatcher; the carry-less multiplier's ceiling on YMM and ZMM registers.
//   - per packet: build_headers + build_trailer and parse_frame (ICRC verify included) for a 1 KiB payload,
//     and parse_frame of a header-only ACK; a payload copied into a frame and the frame sealed, fused copy
//     + CRC against copy then one pass (BM_CopyAndSeal/SIZE/0 and /1), from 64 bytes to 4 KiB.
// Every benchmark runs 5 repetitions; the summary uses medians and shows the spread (stddev / mean). Rates
// and times are CPU time (Google Benchmark's default for rates), which a busy 2-core machine disturbs least.
//
// Run: build/release/bench/bench_wire   (Google Benchmark flags such as --benchmark_filter work as usual)
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/support/frames.h"
#include "transport/wire/crc32_avx2.h"
#include "transport/wire/crc32_kernels.h"
#include "transport/wire/packet.h"

namespace {

using namespace uroce::wire;

constexpr int kRepetitions = 5;
constexpr int64_t kSizes[] = {64, 1024, 4096};
constexpr int64_t kPacketPayload = 1024;

// An RC SEND ONLY frame over IPv4 carrying `payload_len` bytes.
std::vector<uint8_t> send_frame(size_t payload_len) {
  const auto h = uroce::test::sample_headers(op::kRcSendOnly, false, false);
  return uroce::test::make_frame(h, uroce::test::sample_payload(op::kRcSendOnly, payload_len));
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 13 + 5);
  return v;
}

// --- Per-byte costs. Bytes processed = the payload size, so all four are comparable per packet size. ---

// Source and destination of n bytes, page-aligned plus 0 and 2048 bytes, the source filled. The layout is
// fixed because it matters: on this AMD EPYC, glibc's memcpy of 4 KiB runs ~30x slower (2 GB/s) when
// dst - src = 16 (mod 4096), which is what two vectors allocated back to back give.
struct CopyBuffers {
  explicit CopyBuffers(size_t n) : mem(2 * n + 3 * 4096) {
    src = mem.data() + (-reinterpret_cast<uintptr_t>(mem.data()) & 4095);
    dst = src + (n + 4095) / 4096 * 4096 + 2048;
    const auto data = pattern(n);
    std::memcpy(src, data.data(), n);
  }
  std::vector<uint8_t> mem;
  uint8_t* src;
  uint8_t* dst;
};

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  CopyBuffers b(n);
  uint8_t* src = b.src;
  uint8_t* dst = b.dst;
  for (auto _ : state) {
    benchmark::DoNotOptimize(dst);
    std::memcpy(dst, src, n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

// The ICRC of a whole frame: masked IP/UDP/BTH prefix, then everything after the BTH. With k null, as the
// datapath runs it (icrc_roce_v2, the dispatcher's kernel); else with that kernel of crc32_kernels(): in one
// pass where the kernel has a gather, else a masked copy of the headers and one call per piece.
void BM_IcrcKernel(benchmark::State& state, const Crc32Kernel* k) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto frame = send_frame(n);
  ParsedPacket pkt;
  if (parse_frame(frame.data(), frame.size(), &pkt) != RxDrop::kNone) state.SkipWithError("bad frame");
  const uint8_t* ip = frame.data() + pkt.l3_off;
  const uint8_t* after_bth = frame.data() + pkt.bth_off + sizeof(Bth);
  const ConstBytes rest[1] = {
      {after_bth, static_cast<size_t>(frame.data() + pkt.frame_len - kIcrcLen - after_bth)}};
  for (auto _ : state) {
    benchmark::DoNotOptimize(frame.data());
    uint32_t crc = k != nullptr ? icrc_roce_v2_with(*k, ip, rest) : icrc_roce_v2(ip, rest);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

void BM_Icrc(benchmark::State& state) { BM_IcrcKernel(state, nullptr); }

void BM_Crc32Update(benchmark::State& state) {
  const auto buf = pattern(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    uint32_t crc = crc32_update(0, buf);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// CRC and copy in one pass (the transmit path's gather), with BM_Memcpy's buffer layout.
void BM_Crc32CopyUpdate(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  CopyBuffers b(n);
  uint8_t* src = b.src;
  uint8_t* dst = b.dst;
  for (auto _ : state) {
    benchmark::DoNotOptimize(dst);
    uint32_t crc = crc32_copy_update(0, dst, ConstBytes(src, n));
    benchmark::DoNotOptimize(crc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

// One kernel of crc32_kernels(), called directly (registered in main for each kernel this CPU runs).
void BM_Crc32Kernel(benchmark::State& state, const Crc32Kernel* k) {
  const auto buf = pattern(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    uint32_t crc = k->update(0, buf.data(), buf.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_Crc32Zlib(benchmark::State& state) {
  const auto buf = pattern(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    uLong crc = crc32(0, buf.data(), static_cast<uInt>(buf.size()));
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// The carry-less multiplier's own limit for a folding CRC: 8 independent chains of VPCLMULQDQ on YMM (enough
// to hide its latency), each instruction counted as the 16 input bytes it folds in crc32_avx2. No kernel
// that folds with it runs faster on this CPU; registered only where the CPU has it.
__attribute__((target("avx2,pclmul,vpclmulqdq"))) void BM_ClmulCeiling(benchmark::State& state) {
  const __m256i k = _mm256_set1_epi64x(0x1DB710641);
  __m256i a0 = _mm256_set1_epi64x(1), a1 = _mm256_set1_epi64x(2), a2 = _mm256_set1_epi64x(3),
          a3 = _mm256_set1_epi64x(4), a4 = _mm256_set1_epi64x(5), a5 = _mm256_set1_epi64x(6),
          a6 = _mm256_set1_epi64x(7), a7 = _mm256_set1_epi64x(8);
  constexpr int kRounds = 64;
  for (auto _ : state) {
    for (int r = 0; r < kRounds; ++r) {
      a0 = _mm256_clmulepi64_epi128(a0, k, 0x00);
      a1 = _mm256_clmulepi64_epi128(a1, k, 0x11);
      a2 = _mm256_clmulepi64_epi128(a2, k, 0x00);
      a3 = _mm256_clmulepi64_epi128(a3, k, 0x11);
      a4 = _mm256_clmulepi64_epi128(a4, k, 0x00);
      a5 = _mm256_clmulepi64_epi128(a5, k, 0x11);
      a6 = _mm256_clmulepi64_epi128(a6, k, 0x00);
      a7 = _mm256_clmulepi64_epi128(a7, k, 0x11);
      // Keeps the eight chains in registers and every multiply in place.
      asm volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7));
    }
  }
  state.SetBytesProcessed(state.iterations() * kRounds * 8 * 16);
}

// The same on ZMM (four 128-bit lanes per instruction), each instruction counted as the 32 bytes it folds in
// crc32_avx512; registered only where the CPU has it.
__attribute__((target("avx512f,pclmul,vpclmulqdq"))) void BM_ClmulCeilingZmm(benchmark::State& state) {
  const __m512i k = _mm512_set1_epi64(0x1DB710641);
  __m512i a0 = _mm512_set1_epi64(1), a1 = _mm512_set1_epi64(2), a2 = _mm512_set1_epi64(3),
          a3 = _mm512_set1_epi64(4), a4 = _mm512_set1_epi64(5), a5 = _mm512_set1_epi64(6),
          a6 = _mm512_set1_epi64(7), a7 = _mm512_set1_epi64(8);
  constexpr int kRounds = 64;
  for (auto _ : state) {
    for (int r = 0; r < kRounds; ++r) {
      a0 = _mm512_clmulepi64_epi128(a0, k, 0x00);
      a1 = _mm512_clmulepi64_epi128(a1, k, 0x11);
      a2 = _mm512_clmulepi64_epi128(a2, k, 0x00);
      a3 = _mm512_clmulepi64_epi128(a3, k, 0x11);
      a4 = _mm512_clmulepi64_epi128(a4, k, 0x00);
      a5 = _mm512_clmulepi64_epi128(a5, k, 0x11);
      a6 = _mm512_clmulepi64_epi128(a6, k, 0x00);
      a7 = _mm512_clmulepi64_epi128(a7, k, 0x11);
      asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));
    }
  }
  state.SetBytesProcessed(state.iterations() * kRounds * 8 * 32);
}

// --- Per-packet costs (time per iteration = ns per packet). ---

// Transmit: headers into one buffer, pad + ICRC into another; the payload stays where it is.
void BM_BuildPacket(benchmark::State& state) {
  const auto h = uroce::test::sample_headers(op::kRcSendOnly, false, false);
  const auto payload = pattern(kPacketPayload);
  const ConstBytes pieces[1] = {payload};
  uint8_t hdrs[128];
  uint8_t trailer[8];
  for (auto _ : state) {
    benchmark::DoNotOptimize(payload.data());
    const size_t hlen = build_headers(h, kPacketPayload, hdrs);
    build_trailer(hdrs, hlen, pieces, trailer);
    benchmark::DoNotOptimize(hdrs);
    benchmark::DoNotOptimize(trailer);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kPacketPayload);
}

// A frame's payload copied in and the frame sealed, the two ways the transmit path can: copy + CRC fused
// after a CRC pass over the headers (/0), or a plain copy and one CRC pass over the frame (/1, seal_frame).
// The datapath seals frames of up to params::kSealWholeFrame payload bytes whole; this shows where that pays.
void BM_CopyAndSeal(benchmark::State& state) {
  const auto len = static_cast<uint32_t>(state.range(0));
  const bool whole = state.range(1) != 0;
  const auto h = uroce::test::sample_headers(op::kRcSendOnly, false, false);
  const auto payload = pattern(len);
  std::vector<uint8_t> frame(128 + len + 8);
  for (auto _ : state) {
    benchmark::DoNotOptimize(payload.data());
    const size_t hl = build_headers(h, len, frame.data());
    if (whole) {
      std::memcpy(frame.data() + hl, payload.data(), len);
      seal_frame(frame.data(), hl, len);
    } else {
      const uint32_t crc =
          crc32_copy_update(icrc_after_headers(frame.data(), hl), frame.data() + hl, payload);
      finish_trailer(crc, len, frame.data() + hl + len);
    }
    benchmark::DoNotOptimize(frame.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * len);
}

void parse_loop(benchmark::State& state, const std::vector<uint8_t>& frame) {
  ParsedPacket pkt;
  if (parse_frame(frame.data(), frame.size(), &pkt) != RxDrop::kNone) state.SkipWithError("frame rejected");
  for (auto _ : state) {
    benchmark::DoNotOptimize(frame.data());
    RxDrop r = parse_frame(frame.data(), frame.size(), &pkt);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(pkt);
  }
}

// Receive: every header check plus the ICRC over the whole frame.
void BM_ParseFrame(benchmark::State& state) {
  parse_loop(state, send_frame(kPacketPayload));
  state.SetBytesProcessed(state.iterations() * kPacketPayload);
}

void BM_ParseAck(benchmark::State& state) {
  parse_loop(state, uroce::test::make_frame(uroce::test::sample_headers(op::kRcAck, false, false), {}));
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : kSizes) b->Arg(n);
  b->Repetitions(kRepetitions)->ReportAggregatesOnly(true);
}
void per_packet(benchmark::internal::Benchmark* b) {
  b->Repetitions(kRepetitions)->ReportAggregatesOnly(true);
}

BENCHMARK(BM_Memcpy)->Apply(sizes);
BENCHMARK(BM_Icrc)->Apply(sizes);
BENCHMARK(BM_Crc32Update)->Apply(sizes);
BENCHMARK(BM_Crc32CopyUpdate)->Apply(sizes);
BENCHMARK(BM_Crc32Zlib)->Apply(sizes);
BENCHMARK(BM_BuildPacket)->Apply(per_packet);
BENCHMARK(BM_CopyAndSeal)->ArgsProduct({{64, 128, 256, 512, 1024, 2048, 4096}, {0, 1}})->Apply(per_packet);
BENCHMARK(BM_ParseFrame)->Apply(per_packet);
BENCHMARK(BM_ParseAck)->Apply(per_packet);

// Prints the usual console table and keeps each benchmark's aggregates for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  SummaryReporter() : ConsoleReporter(OO_Tabular) {}
  enum Agg { kMedian, kMean, kStddev, kNumAgg };
  struct Stats {
    double bytes_per_s[kNumAgg] = {};
    double ns[kNumAgg] = {};  // CPU time per iteration (= per packet), like the rates
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const Agg a = r.aggregate_name == "median"   ? kMedian
                    : r.aggregate_name == "mean"   ? kMean
                    : r.aggregate_name == "stddev" ? kStddev
                                                   : kNumAgg;
      if (r.run_type != Run::RT_Aggregate || a == kNumAgg || r.error_occurred) continue;
      Stats& s = stats_[r.run_name.function_name + (r.run_name.args.empty() ? "" : "/" + r.run_name.args)];
      const auto it = r.counters.find("bytes_per_second");
      s.bytes_per_s[a] = it == r.counters.end() ? 0 : it->second.value;
      s.ns[a] = r.GetAdjustedCPUTime() * 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
    }
  }

  const Stats* find(const std::string& name) const {
    const auto it = stats_.find(name);
    return it == stats_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, Stats> stats_;
};

// "12.3 GB/s +- 1.2%" from a benchmark's median and stddev / mean.
std::string rate(const SummaryReporter::Stats* s) {
  if (s == nullptr) return "n/a";
  char buf[48];
  const double* b = s->bytes_per_s;
  std::snprintf(buf, sizeof(buf), "%6.2f GB/s +-%4.1f%%", b[0] / 1e9, b[1] > 0 ? 100 * b[2] / b[1] : 0.0);
  return buf;
}

double ratio(const SummaryReporter::Stats* a, const SummaryReporter::Stats* b) {
  return a != nullptr && b != nullptr && b->bytes_per_s[0] > 0 ? a->bytes_per_s[0] / b->bytes_per_s[0] : 0;
}

std::string size_name(int64_t n) {
  return n >= 1024 ? std::to_string(n / 1024) + " KiB" : std::to_string(n) + " B";
}

void print_summary(const SummaryReporter& rep) {
  std::printf("\nSummary: medians of %d repetitions, ratios within this run (spread = stddev / mean)\n",
              kRepetitions);
  std::printf("CRC-32 kernel the dispatcher picked on this CPU: %s\n", crc32_chosen().name);
  std::printf("%-7s %-20s %-20s %-12s %-20s %-20s %s\n", "size", "memcpy", "icrc (frame)", "icrc/memcpy",
              "crc32_update", "copy + crc32", "copy+crc/memcpy");
  for (int64_t n : kSizes) {
    const std::string arg = "/" + std::to_string(n);
    const auto* mem = rep.find("BM_Memcpy" + arg);
    const auto* icrc = rep.find("BM_Icrc" + arg);
    const auto* upd = rep.find("BM_Crc32Update" + arg);
    const auto* copy = rep.find("BM_Crc32CopyUpdate" + arg);
    std::printf("%-7s %-20s %-20s %-12.2f %-20s %-20s %.2f\n", size_name(n).c_str(), rate(mem).c_str(),
                rate(icrc).c_str(), ratio(icrc, mem), rate(upd).c_str(), rate(copy).c_str(),
                ratio(copy, mem));
  }
  std::printf(
      "\nCRC-32 per kernel, then the ICRC of a frame per kernel (x memcpy of the same size in this "
      "run):\n%-18s",
      "kernel");
  for (int64_t n : kSizes) std::printf(" %-30s", size_name(n).c_str());
  std::printf("\n");
  std::vector<std::pair<std::string, std::string>> rows;  // label, benchmark name
  for (const Crc32Kernel& k : crc32_kernels())
    if (k.runs()) rows.emplace_back(k.name, std::string("BM_Crc32/") + k.name);
  rows.emplace_back("zlib", "BM_Crc32Zlib");
  for (const Crc32Kernel& k : crc32_kernels())
    if (k.runs() && rep.find(std::string("BM_IcrcKernel/") + k.name + "/4096") != nullptr)
      rows.emplace_back(std::string("icrc ") + k.name, std::string("BM_IcrcKernel/") + k.name);
  for (const auto& [label, bm] : rows) {
    std::printf("%-18s", label.c_str());
    for (int64_t n : kSizes) {
      const std::string arg = "/" + std::to_string(n);
      const auto* s = rep.find(bm + arg);
      char cell[64];
      std::snprintf(cell, sizeof(cell), "%s (%.2f)", rate(s).c_str(), ratio(s, rep.find("BM_Memcpy" + arg)));
      std::printf(" %-30s", cell);
    }
    std::printf("\n");
  }
  const char* names[][2] = {{"BM_BuildPacket", "build_headers + build_trailer, 1 KiB payload"},
                            {"BM_ParseFrame", "parse_frame incl. ICRC verify, 1 KiB payload"},
                            {"BM_ParseAck", "parse_frame, header-only ACK"}};
  for (const auto& [bm, what] : names) {
    const auto* s = rep.find(bm);
    if (s == nullptr) continue;
    std::printf("%-48s %7.1f ns/packet +-%.1f%%\n", what, s->ns[0],
                s->ns[1] > 0 ? 100 * s->ns[2] / s->ns[1] : 0);
  }
  if (const auto* ceil = rep.find("BM_ClmulCeiling")) {
    std::printf(
        "Folding-CRC ceiling on this CPU (VPCLMULQDQ throughput, 16 bytes each): %s = %.2f x memcpy at 4 "
        "KiB\n",
        rate(ceil).c_str(), ratio(ceil, rep.find("BM_Memcpy/4096")));
  }
  if (const auto* ceil = rep.find("BM_ClmulCeilingZmm")) {
    std::printf(
        "Folding-CRC ceiling on ZMM registers (VPCLMULQDQ throughput, 32 bytes each): %s = %.2f x memcpy at "
        "4 KiB\n",
        rate(ceil).c_str(), ratio(ceil, rep.find("BM_Memcpy/4096")));
  }
  const double r4k = ratio(rep.find("BM_Icrc/4096"), rep.find("BM_Memcpy/4096"));
  if (r4k > 0)
    std::printf("Target (ICRC at 4 KiB >= 0.5 x memcpy throughput): %s, ratio %.2f\n",
                r4k >= 0.5 ? "MET" : "NOT MET", r4k);
  // How far the datapath's ICRC is from what the widest multiplier this CPU has allows, so that a miss is
  // read as the CPU's or the kernel's.
  const auto* zmm = rep.find("BM_ClmulCeilingZmm");
  const auto* best = zmm != nullptr ? zmm : rep.find("BM_ClmulCeiling");
  if (best != nullptr && r4k > 0) {
    const double reach = ratio(best, rep.find("BM_Memcpy/4096"));
    std::printf(
        "ICRC at 4 KiB is %.2f x the folding ceiling; the ceiling is %.2f x memcpy, so the target is %s\n",
        ratio(rep.find("BM_Icrc/4096"), best), reach,
        reach >= 0.5 ? "within this CPU's reach" : "beyond this CPU's multiplier");
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (const Crc32Kernel& k : crc32_kernels())
    if (k.runs())
      benchmark::RegisterBenchmark((std::string("BM_Crc32/") + k.name).c_str(), BM_Crc32Kernel, &k)
          ->Apply(sizes);
  for (const Crc32Kernel& k : crc32_kernels())
    if (k.runs() && (k.gather != nullptr || std::string(k.name) == "isal"))
      benchmark::RegisterBenchmark((std::string("BM_IcrcKernel/") + k.name).c_str(), BM_IcrcKernel, &k)
          ->Apply(sizes);
  if (crc32_avx2_runs()) benchmark::RegisterBenchmark("BM_ClmulCeiling", BM_ClmulCeiling)->Apply(per_packet);
  if (crc32_avx512_runs())
    benchmark::RegisterBenchmark("BM_ClmulCeilingZmm", BM_ClmulCeilingZmm)->Apply(per_packet);
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_summary(reporter);
  benchmark::Shutdown();
  return 0;
}
