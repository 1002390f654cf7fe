// Sample frames for tests, fuzz seeds and benchmarks: every opcode, IPv4/IPv6, with or without VLAN.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/wire/packet.h"

namespace uroce::test {

// Every opcode uroce sends or accepts (RC, UC, UD and CNP).
std::vector<uint8_t> all_opcodes();

// Headers with distinct, recognisable values in every field the opcode carries.
wire::PacketHeaders sample_headers(uint8_t opcode, bool ipv6, bool vlan);

// A whole frame (headers, payload, pad, ICRC) for `h` with `payload`.
std::vector<uint8_t> make_frame(const wire::PacketHeaders& h, const std::vector<uint8_t>& payload);

// A payload of `n` bytes with a position-dependent pattern; empty for opcodes without payload.
std::vector<uint8_t> sample_payload(uint8_t opcode, size_t n);

}  // namespace uroce::test

namespace uroce::test {

// After a test edits header bytes: recomputes the IPv4 header checksum and the ICRC (placed by the IP
// length), so that only the edit itself is wrong.
void reseal(std::vector<uint8_t>& frame);

// Offsets of the header boundaries of a frame built by make_frame: Ethernet(+VLAN), IP, UDP, BTH, end of
// extension headers, end of payload+pad, end of ICRC.
struct Boundaries {
  size_t l3, l4, bth, payload, icrc, end;
};
Boundaries boundaries_of(const wire::PacketHeaders& h, size_t payload_len);

}  // namespace uroce::test
