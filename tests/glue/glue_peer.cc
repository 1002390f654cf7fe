// glue_peer: the other side of the glue tests, run as a separate process.
//
//   glue_peer echo SPEC [IDLE_MS]     open SPEC, return every test frame to its sender until told to stop
//   glue_peer pair SPEC_A SPEC_B      open two ports and exchange every standard size both ways
//                                     (af_packet and tap tests run this inside a network namespace)
//   glue_peer affinity                init EAL and report whether this thread's cpu affinity changed
//   glue_peer preinit                 start EAL the way a DPDK application would, then open ring ports
// Exit status: 0 pass, 1 fail, 2 usage.
#include <rte_eal.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pmd_glue/dpdk_eal.h"
#include "pmd_glue/dpdk_port.h"
#include "tests/glue/frame_exchange.h"

using namespace uroce::glue;

namespace {

void print_stats(const char* name, const DpdkPort& p) {
  const auto s = p.stats();
  std::fprintf(stderr,
               "  %s (%s, max frame %u): rx %llu frames %llu bytes, tx %llu frames %llu bytes, missed %llu, "
               "rx errors %llu, tx errors %llu, no mbuf %llu, oversize %llu, linearised %llu; pool %u/%u\n",
               name, p.spec().text.c_str(), p.max_frame(), (unsigned long long)s.rx_frames,
               (unsigned long long)s.rx_bytes, (unsigned long long)s.tx_frames,
               (unsigned long long)s.tx_bytes, (unsigned long long)s.rx_missed,
               (unsigned long long)s.rx_errors, (unsigned long long)s.tx_errors,
               (unsigned long long)s.rx_nombuf, (unsigned long long)s.rx_oversize,
               (unsigned long long)s.rx_linearised, p.pool_available(), p.pool_size());
}

int echo(const std::string& spec, int idle_ms) {
  std::string err;
  auto port = DpdkPort::open(spec, &err);
  if (!port) {
    std::fprintf(stderr, "glue_peer: %s\n", err.c_str());
    return 1;
  }
  if (!port->wait_link_up(std::chrono::seconds(5))) {
    std::fprintf(stderr, "glue_peer: link of %s did not come up\n", spec.c_str());
    return 1;
  }
  uint64_t echoed = 0;
  const bool stopped = test::echo_until_stop(*port, idle_ms, &echoed);
  std::printf("glue_peer echo: %llu frames echoed, %s; pool %u/%u\n", static_cast<unsigned long long>(echoed),
              stopped ? "stopped" : "idle timeout", port->pool_available(), port->pool_size());
  return stopped ? 0 : 1;
}

int pair(const std::string& spec_a, const std::string& spec_b) {
  std::string err;
  auto a = DpdkPort::open(spec_a, &err);
  if (!a) {
    std::fprintf(stderr, "glue_peer: %s\n", err.c_str());
    return 1;
  }
  auto b = DpdkPort::open(spec_b, &err);
  if (!b) {
    std::fprintf(stderr, "glue_peer: %s\n", err.c_str());
    return 1;
  }
  if (!a->wait_link_up(std::chrono::seconds(3)) || !b->wait_link_up(std::chrono::seconds(3))) {
    std::fprintf(stderr, "glue_peer: links: a %s, b %s\n", a->link_up() ? "up" : "down",
                 b->link_up() ? "up" : "down");
    return 1;
  }
  const uint16_t max = std::min(a->max_frame(), b->max_frame());
  std::vector<uint16_t> lens;
  for (int rep = 0; rep < 4; ++rep)
    for (uint16_t s : test::standard_sizes(max)) lens.push_back(s);
  test::ExchangeStats ab, ba;
  if (!test::exchange(*a, *b, 0xA, 0xA, lens, &err, &ab, a.get()) ||
      !test::exchange(*b, *a, 0xB, 0xB, lens, &err, &ba, b.get())) {
    std::fprintf(stderr, "glue_peer: %s\n", err.c_str());
    print_stats("a", *a);
    print_stats("b", *b);
    return 1;
  }
  std::string irq = "none";
  for (auto [tx, rx] : {std::pair{a.get(), b.get()}, std::pair{b.get(), a.get()}}) {
    if (rx->rx_event_fd() < 0) continue;
    if (!test::check_rx_interrupt(*tx, *rx, &err)) {
      std::fprintf(stderr, "glue_peer: rx interrupt of %s: %s\n", rx->spec().text.c_str(), err.c_str());
      return 1;
    }
    irq = rx->spec().text + " ok";
  }
  std::printf(
      "glue_peer pair: %s <-> %s: max frame %u (a %u, b %u), %llu+%llu frames intact, %llu+%llu other "
      "frames ignored; rx interrupt: %s\n",
      spec_a.c_str(), spec_b.c_str(), max, a->max_frame(), b->max_frame(),
      static_cast<unsigned long long>(ab.frames), static_cast<unsigned long long>(ba.frames),
      static_cast<unsigned long long>(ab.ignored), static_cast<unsigned long long>(ba.ignored), irq.c_str());
  return 0;
}

int affinity() {
  cpu_set_t before, after;
  sched_getaffinity(0, sizeof(before), &before);
  std::string err;
  if (!Eal::ensure(&err)) {
    std::fprintf(stderr, "glue_peer: %s\n", err.c_str());
    return 1;
  }
  sched_getaffinity(0, sizeof(after), &after);
  const bool same = CPU_EQUAL(&before, &after);
  std::printf("glue_peer affinity: %d cpus before, %d after, %s; EAL init %.3f s\n", CPU_COUNT(&before),
              CPU_COUNT(&after), same ? "unchanged" : "CHANGED", Eal::init_seconds());
  return same ? 0 : 1;
}

int preinit() {
  const char* args[] = {"app",      "--no-huge",      "-m",       "64",    "--no-shconf",
                        "--no-pci", "--no-telemetry", "--lcores", "0@(0)", "--log-level=error"};
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    std::fprintf(stderr, "glue_peer: the application's own rte_eal_init failed\n");
    return 1;
  }
  std::string err;
  auto a = DpdkPort::open("ring:preinit", &err);
  auto b = a ? DpdkPort::open("ring:preinit", &err) : nullptr;
  if (!b || !test::exchange(*a, *b, 1, 1, std::vector<uint16_t>(64, 1000), &err)) {
    std::fprintf(stderr, "glue_peer: %s\n", err.c_str());
    return 1;
  }
  std::printf("glue_peer preinit: ports work on the application's EAL (%s)\n", Eal::args().front().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "echo" && (argc == 3 || argc == 4))
    return echo(argv[2], argc == 4 ? std::atoi(argv[3]) : 10000);
  if (mode == "pair" && argc == 4) return pair(argv[2], argv[3]);
  if (mode == "affinity" && argc == 2) return affinity();
  if (mode == "preinit" && argc == 2) return preinit();
  std::fprintf(stderr, "usage: glue_peer echo SPEC [IDLE_MS] | pair SPEC_A SPEC_B | affinity | preinit\n");
  return 2;
}
