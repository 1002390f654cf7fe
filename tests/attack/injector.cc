// injector: the attacker's end of a memif pair with the victim, for the memif variant of the wire attacks.
// attack.py writes the crafted frames to a pcap file (scapy's wrpcap) and has this process replay them:
//   attack_injector SPEC     open SPEC (e.g. memif:socket=PATH,role=client), wait for the link, print
//                            {"ready":true}; then, on stdin, one command a line:
//     send PATH              transmit every frame of the pcap file PATH in order; answer {"sent":N}
//     exit
// Every frame received from the victim is printed as {"rx":"<hex>"} the moment it arrives, so attack.py
// sniffs the victim's ACKs and NAKs through the same process. Exit status: 0 after exit, 1 on a port error.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "pmd_glue/dpdk_port.h"
#include "tests/support/pcap_io.h"

using namespace uroce;

namespace {

using Clock = std::chrono::steady_clock;

// Transmits one frame, retrying a refused burst for up to a second; false if it never went out.
bool send_frame(glue::DpdkPort& port, const std::vector<uint8_t>& f) {
  PktBuf* b = nullptr;
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  while (port.alloc_burst(&b, 1) != 1)
    if (Clock::now() > deadline) return false;
  if (f.size() > b->cap) {
    port.free_burst(&b, 1);
    return false;
  }
  std::memcpy(b->data, f.data(), f.size());
  b->len = static_cast<uint16_t>(f.size());
  while (port.tx_burst(&b, 1) != 1)
    if (Clock::now() > deadline) {
      port.free_burst(&b, 1);
      return false;
    }
  return true;
}

void print_rx(glue::DpdkPort& port) {
  PktBuf* bufs[kBurst];
  const uint16_t n = port.rx_burst(bufs, kBurst);
  static const char kHex[] = "0123456789abcdef";
  std::string line;
  for (uint16_t i = 0; i < n; ++i) {
    line = "{\"rx\":\"";
    for (uint16_t j = 0; j < bufs[i]->len; ++j) {
      line += kHex[bufs[i]->data[j] >> 4];
      line += kHex[bufs[i]->data[j] & 15];
    }
    line += "\"}\n";
    std::fputs(line.c_str(), stdout);
  }
  port.free_burst(bufs, n);
  if (n) std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: attack_injector SPEC\n");
    return 2;
  }
  std::string err;
  auto port = glue::DpdkPort::open(argv[1], &err);
  if (!port) {
    std::fprintf(stderr, "attack_injector: %s\n", err.c_str());
    return 1;
  }
  if (!port->wait_link_up(std::chrono::seconds(10))) {
    std::fprintf(stderr, "attack_injector: the link of %s did not come up\n", argv[1]);
    return 1;
  }
  std::printf("{\"ready\":true}\n");
  std::fflush(stdout);
  std::string pending;
  for (;;) {
    print_rx(*port);
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, 0) != 1) {
      usleep(50);  // a test tool: a short nap between polls keeps it off the shared cores
      continue;
    }
    char buf[4096];
    const ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
    if (got <= 0) return 0;  // stdin closed: the test is over
    pending.append(buf, static_cast<size_t>(got));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line == "exit") return 0;
      if (line.rfind("send ", 0) == 0) {
        size_t sent = 0;
        try {
          for (const auto& f : test::read_pcap(line.substr(5)).frames) sent += send_frame(*port, f.bytes);
          std::printf("{\"sent\":%zu}\n", sent);
        } catch (const std::runtime_error& e) {
          std::printf("{\"sent\":0,\"error\":\"%s\"}\n", e.what());
        }
      } else {
        std::printf("{\"error\":\"unknown command\"}\n");
      }
      std::fflush(stdout);
    }
  }
}
