// bench_memif: raw memif between two DpdkPorts, the baseline later end-to-end benchmarks divide by.
//
//   throughput  one thread transmits fixed-size frames as fast as the ring takes them, another receives and
//               frees them; frames/s and Gb/s (Ethernet frame bytes, no preamble/IFG) at the receiver.
//   ping-pong   one frame bounces between the two ports (the echo side transmits the buffer it received);
//               round-trip latency median, p99, p99.9.
// Both ports live in one process with one thread each, which is what two processes joined by memif do
// too: memif copies every frame into the shared ring on tx and out of it on rx either way.
// Same-run baselines: memcpy of the frame size (memif does two per frame) and TCP loopback ping-pong.
// Then the same link with uroce's own memif client (pmd_glue/memif_client.h) in place of DPDK's: it builds
// and reads frames in the shared region, so only the server's PMD copies; rows start with "own" and are
// compared with DPDK's client of the same run.
//
//   bench_memif [--ms=200] [--trials=5] [--rtts=100000] [--register=1] [--pin=1]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "pmd_glue/dpdk_eal.h"
#include "pmd_glue/dpdk_port.h"
#include "pmd_glue/memif_client.h"
#include "tests/support/cpus.h"

using namespace uroce;
using namespace uroce::glue;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int ms = 200;
  int trials = 5;
  int rtts = 100000;
  bool register_threads = true;
  bool pin = true;
};

// With --pin (default) the transmitting thread runs on the first allowed cpu and the receiving/echoing
// thread on the second, as testpmd pins its forwarding lcores. Unpinned, the scheduler sometimes puts
// both spinning threads on one cpu, and throughput collapses to one ring (1024 frames) per pair of
// time slices: ~0.13 Mframes/s whatever the frame size.
int g_cpu_tx = -1, g_cpu_rx = -1;

void pin_to(int cpu) {
  if (cpu >= 0) uroce::test::pin_this_thread(cpu);
}

void choose_cpus() {
  const std::vector<int> cpus = uroce::test::allowed_cpus();
  if (cpus.size() < 2) return;  // one cpu: nothing to separate
  g_cpu_tx = cpus[0];
  g_cpu_rx = cpus[1];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return sorted[i];
}

void write_header(PktBuf* b, uint16_t len) {
  std::memset(b->data, 0x02, 12);  // locally administered unicast MACs
  b->data[12] = 0x88;
  b->data[13] = 0xB5;
  b->len = len;
}

// ---- throughput ----

struct Rate {
  double mpps, gbps;
};

Rate throughput_trial(PacketIo& tx, PacketIo& rx, uint16_t len, int ms, bool reg) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> received{0};
  std::thread sink([&] {
    pin_to(g_cpu_rx);
    if (reg) Eal::register_thread();
    PktBuf* bufs[kBurst];
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint16_t k = rx.rx_burst(bufs, kBurst);
      if (k == 0) continue;
      rx.free_burst(bufs, k);
      n += k;
      received.store(n, std::memory_order_relaxed);
    }
    for (uint16_t k; (k = rx.rx_burst(bufs, kBurst)) > 0;) rx.free_burst(bufs, k);
  });

  PktBuf* bufs[kBurst];
  const auto warm = Clock::now() + std::chrono::milliseconds(30);
  const auto end = warm + std::chrono::milliseconds(ms);
  uint64_t at_start = 0;
  Clock::time_point t0;
  bool measuring = false;
  for (;;) {
    const uint16_t n = tx.alloc_burst(bufs, kBurst);
    for (uint16_t i = 0; i < n; ++i) write_header(bufs[i], len);
    const uint16_t k = tx.tx_burst(bufs, n);
    tx.free_burst(bufs + k, n - k);
    const auto now = Clock::now();
    if (!measuring && now >= warm) {
      measuring = true;
      t0 = now;
      at_start = received.load(std::memory_order_relaxed);
    }
    if (now >= end) break;
  }
  const uint64_t got = received.load(std::memory_order_relaxed) - at_start;
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  sink.join();
  const double pps = static_cast<double>(got) / secs;
  return {pps / 1e6, pps * len * 8 / 1e9};
}

// `opt.trials` throughput trials of one direction: median [min, max] of frames/s and Gb/s, as the rows print.
struct Trials {
  double mpps, mpps_min, mpps_max, gbps, gbps_min, gbps_max;
  void print_cols() const {
    std::printf("%8.3f [%5.3f, %5.3f] %8.2f [%6.2f, %6.2f]", mpps, mpps_min, mpps_max, gbps, gbps_min,
                gbps_max);
  }
};

Trials run_trials(PacketIo& tx, PacketIo& rx, uint16_t len, const Options& opt) {
  std::vector<double> mpps, gbps;
  for (int t = 0; t < opt.trials; ++t) {
    const Rate r = throughput_trial(tx, rx, len, opt.ms, opt.register_threads);
    mpps.push_back(r.mpps);
    gbps.push_back(r.gbps);
  }
  const auto [mn, mx] = std::minmax_element(mpps.begin(), mpps.end());
  const auto [gn, gx] = std::minmax_element(gbps.begin(), gbps.end());
  return {median(mpps), *mn, *mx, median(gbps), *gn, *gx};
}

// ---- ping-pong ----

std::vector<double> pingpong(PacketIo& a, PacketIo& b, uint16_t len, int rtts, bool reg) {
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    pin_to(g_cpu_rx);
    if (reg) Eal::register_thread();
    PktBuf* bufs[kBurst];
    while (!stop.load(std::memory_order_relaxed)) {
      const uint16_t k = b.rx_burst(bufs, kBurst);
      uint16_t sent = 0;
      while (sent < k) sent += b.tx_burst(bufs + sent, k - sent);
    }
  });
  std::vector<double> us;
  us.reserve(rtts);
  PktBuf* buf;
  const int warmup = std::max(1000, rtts / 20);
  for (int i = 0; i < warmup + rtts; ++i) {
    while (a.alloc_burst(&buf, 1) != 1) {
    }
    write_header(buf, len);
    const auto t0 = Clock::now();
    while (a.tx_burst(&buf, 1) != 1) {
    }
    while (a.rx_burst(&buf, 1) != 1) {
    }
    const auto t1 = Clock::now();
    a.free_burst(&buf, 1);
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  stop = true;
  echo.join();
  PktBuf* bufs[kBurst];
  for (uint16_t k; (k = b.rx_burst(bufs, kBurst)) > 0;) b.free_burst(bufs, k);
  std::sort(us.begin(), us.end());
  return us;
}

// ---- baselines ----

double memcpy_gbytes_per_s(size_t len) {
  // A working set the size of a memif ring's buffers (1024 x len), so caches behave as they do for memif.
  const size_t slots = 1024;
  std::vector<uint8_t> src(slots * len, 1), dst(slots * len);
  size_t bytes = 0;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::milliseconds(100);
  while (Clock::now() < end)
    for (size_t i = 0; i < slots; ++i, bytes += len) std::memcpy(&dst[i * len], &src[i * len], len);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  volatile uint8_t sink = dst[len - 1];
  (void)sink;
  return static_cast<double>(bytes) / secs / 1e9;
}

std::vector<double> tcp_pingpong(size_t len, int rtts) {
  std::vector<double> us;
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof(sa);
  if (ls < 0 || bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &sl) != 0)
    return us;
  auto full = [](int fd, char* p, size_t n, bool rd) {
    while (n > 0) {
      const ssize_t r = rd ? read(fd, p, n) : write(fd, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  };
  std::thread server([&] {
    const int fd = accept(ls, nullptr, nullptr);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::vector<char> buf(len);
    while (full(fd, buf.data(), len, true) && full(fd, buf.data(), len, false)) {
    }
    close(fd);
  });
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
    std::vector<char> buf(len, 'x');
    for (int i = 0; i < rtts; ++i) {
      const auto t0 = Clock::now();
      if (!full(fd, buf.data(), len, false) || !full(fd, buf.data(), len, true)) break;
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  }
  close(fd);
  server.join();
  close(ls);
  std::sort(us.begin(), us.end());
  return us;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* key) -> const char* {
      const std::string k = std::string("--") + key + "=";
      return a.rfind(k, 0) == 0 ? argv[i] + k.size() : nullptr;
    };
    if (const char* v = val("ms"))
      o.ms = std::atoi(v);
    else if (const char* v = val("trials"))
      o.trials = std::atoi(v);
    else if (const char* v = val("rtts"))
      o.rtts = std::atoi(v);
    else if (const char* v = val("register"))
      o.register_threads = std::atoi(v) != 0;
    else {
      std::fprintf(stderr, "usage: %s [--ms=200] [--trials=5] [--rtts=100000] [--register=1] [--pin=1]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

// ---- uroce's own memif client ----

// A DPDK memif server linked to a MemifClient: 64 B and 4 KiB throughput both ways and the 64 B
// round trip, beside DPDK's client's figures of this run (4 KiB server -> client Gb/s, 64 B RTT median).
int own_client(const Options& opt, double dpdk_gbps, double dpdk_rtt) {
  char tmpl[] = "/tmp/uroce-bench-own-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string sock = dir + "/memif.sock";
  std::string err;
  {
    auto server = DpdkPort::open("memif:socket=" + sock + ",role=server", &err);
    MemifClientConfig cfg;
    cfg.socket = sock;
    auto client = server ? MemifClient::create(cfg, &err) : nullptr;
    if (!client || !client->wait_link_up(std::chrono::seconds(3)) ||
        !server->wait_link_up(std::chrono::seconds(3))) {
      std::fprintf(stderr, "bench_memif: own memif client: %s\n",
                   err.empty() ? "the link did not come up" : err.c_str());
      std::filesystem::remove_all(dir);
      return 1;
    }
    std::printf("\nuroce's own memif client against DPDK's server, %d trials x %d ms: median [min, max]\n",
                opt.trials, opt.ms);
    std::printf("%-18s %8s %22s %24s\n", "own", "frame B", "Mframes/s", "Gb/s");
    double own_gbps = 0;
    for (bool to_client : {true, false}) {
      for (uint16_t len : {uint16_t{64}, uint16_t{4096}}) {
        const Trials t =
            to_client ? run_trials(*server, *client, len, opt) : run_trials(*client, *server, len, opt);
        std::printf("%-18s %8u ", to_client ? "own server->client" : "own client->server", len);
        t.print_cols();
        std::printf("\n");
        if (to_client && len == 4096) own_gbps = t.gbps;
      }
    }
    const auto us = pingpong(*server, *client, 64, opt.rtts, opt.register_threads);
    std::printf("%-18s %8u round trip us: min %.2f median %.2f p99 %.2f p99.9 %.2f\n", "own ping-pong", 64,
                percentile(us, 0), percentile(us, 0.5), percentile(us, 0.99), percentile(us, 0.999));
    std::printf(
        "summary: own memif client, 4 KiB server -> client %.1f Gb/s = %.2f x DPDK's client (%.1f); "
        "64 B round trip median %.2f us = %.2f x DPDK's client (%.2f us)\n",
        own_gbps, dpdk_gbps > 0 ? own_gbps / dpdk_gbps : 0.0, dpdk_gbps, percentile(us, 0.5),
        dpdk_rtt > 0 ? percentile(us, 0.5) / dpdk_rtt : 0.0, dpdk_rtt);
  }
  std::filesystem::remove_all(dir);
  return 0;
}

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  std::string err;
  if (!Eal::ensure(&err)) {
    std::fprintf(stderr, "bench_memif: %s\n", err.c_str());
    return 1;
  }
  if (opt.pin) {
    choose_cpus();
    pin_to(g_cpu_tx);  // after EAL init, which must see (and keeps) the original affinity
  }
  char tmpl[] = "/tmp/uroce-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string sock = dir + "/memif.sock";
  int rc = 0;
  {
    auto server = DpdkPort::open("memif:socket=" + sock + ",role=server", &err);
    auto client = server ? DpdkPort::open("memif:socket=" + sock + ",role=client", &err) : nullptr;
    if (!server || !client || !server->wait_link_up(std::chrono::seconds(3))) {
      std::fprintf(stderr, "bench_memif: %s\n", err.empty() ? "memif link did not come up" : err.c_str());
      std::filesystem::remove_all(dir);
      return 1;
    }
    std::printf("raw memif, one process, two threads (%u cpus), EAL init %.3f s, %s lcore registration\n",
                std::thread::hardware_concurrency(), Eal::init_seconds(),
                opt.register_threads ? "with" : "without");
    std::printf("\nthroughput (server -> client), %d trials x %d ms: median [min, max]\n", opt.trials,
                opt.ms);
    std::printf("%8s %22s %24s %18s\n", "frame B", "Mframes/s", "Gb/s", "memcpy GB/s");
    std::string summary = "summary: raw memif";
    double dpdk_gbps = 0, dpdk_rtt = 0;
    char part[160];
    for (uint16_t len : {uint16_t{64}, uint16_t{1024}, uint16_t{4096}, kMaxFrame}) {
      const Trials t = run_trials(*server, *client, len, opt);
      std::printf("%8u ", len);
      t.print_cols();
      std::printf(" %18.1f\n", memcpy_gbytes_per_s(len));
      if (len == 4096) dpdk_gbps = t.gbps;
      if (len != kMaxFrame) {
        std::snprintf(part, sizeof(part), " %uB %.2f Mfps %.1f Gb/s;", len, t.mpps, t.gbps);
        summary += part;
      }
    }

    std::printf("\nping-pong round trip, %d round trips: microseconds\n", opt.rtts);
    std::printf("%8s %-10s %8s %8s %8s %8s\n", "frame B", "path", "min", "median", "p99", "p99.9");
    for (uint16_t len : {uint16_t{64}, uint16_t{1024}, uint16_t{4096}}) {
      const auto us = pingpong(*server, *client, len, opt.rtts, opt.register_threads);
      std::printf("%8u %-10s %8.2f %8.2f %8.2f %8.2f\n", len, "memif", percentile(us, 0), percentile(us, 0.5),
                  percentile(us, 0.99), percentile(us, 0.999));
      const auto tcp = tcp_pingpong(len, std::min(opt.rtts, 20000));
      std::printf("%8u %-10s %8.2f %8.2f %8.2f %8.2f\n", len, "tcp lo", percentile(tcp, 0),
                  percentile(tcp, 0.5), percentile(tcp, 0.99), percentile(tcp, 0.999));
      if (len == 64) {
        dpdk_rtt = percentile(us, 0.5);
        std::snprintf(part, sizeof(part), " RTT 64B median %.2f us p99 %.2f us (TCP loopback %.2f us)",
                      percentile(us, 0.5), percentile(us, 0.99), percentile(tcp, 0.5));
        summary += part;
      }
    }
    std::printf("\n%s\n", summary.c_str());
    rc = own_client(opt, dpdk_gbps, dpdk_rtt);
    if (server->pool_available() != server->pool_size() || client->pool_available() != client->pool_size()) {
      std::fprintf(stderr, "bench_memif: mbufs leaked (server %u/%u, client %u/%u)\n",
                   server->pool_available(), server->pool_size(), client->pool_available(),
                   client->pool_size());
      rc = 1;
    }
  }
  std::filesystem::remove_all(dir);
  return rc;
}
