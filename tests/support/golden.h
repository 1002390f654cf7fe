// Access to ../shared/golden: real RoCEv2 captures and ICRC vectors (see PROVENANCE.md there). The files
// are reference data the project may not redistribute, so they are read in place, never copied in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::test {

struct IcrcVector {
  std::string id;
  std::string kind;  // "RoCEv2/IPv4", "RoCEv2/IPv6", "RoCEv1", "native IB (...)"
  int opcode = 0;
  std::string opname;
  uint32_t psn = 0;
  uint32_t dqpn = 0;
  std::vector<uint8_t> frame;
  uint32_t expected_icrc = 0;  // CRC value; wire bytes are its little-endian encoding
  std::vector<uint8_t> icrc_input;
};

// The golden directory, or "" when it is not present beside the checkout.
std::string golden_dir();

std::vector<IcrcVector> load_icrc_vectors();

std::vector<uint8_t> from_hex(const std::string& hex);

}  // namespace uroce::test
