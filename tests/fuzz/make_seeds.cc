// Writes the seed corpus for fuzz_parse_frame: one valid frame per opcode x IPv4/IPv6 x VLAN/untagged,
// built with the test helpers. Payload lengths vary between seeds so that every pad count (0..3) appears.
//
// Usage: make_seeds DIR   (DIR must exist; files are named OPCODE-ipv4|ipv6[-vlan].bin)
#include <cstdio>
#include <string>

#include "tests/support/frames.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  for (uint8_t o : uroce::test::all_opcodes()) {
    for (bool ipv6 : {false, true}) {
      for (bool vlan : {false, true}) {
        const auto h = uroce::test::sample_headers(o, ipv6, vlan);
        const auto frame = uroce::test::make_frame(h, uroce::test::sample_payload(o, 60 + written % 4));
        const std::string path =
            dir + "/" + uroce::wire::op_name(o) + (ipv6 ? "-ipv6" : "-ipv4") + (vlan ? "-vlan" : "") + ".bin";
        FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr || std::fwrite(frame.data(), 1, frame.size(), f) != frame.size() ||
            std::fclose(f) != 0) {
          std::perror(path.c_str());
          return 1;
        }
        ++written;
      }
    }
  }
  std::printf("make_seeds: wrote %d frames to %s\n", written, dir.c_str());
  return 0;
}
