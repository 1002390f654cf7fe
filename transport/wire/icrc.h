// Invariant CRC of RoCEv2 packets (IBA vol. 1, 7.8.1; Annex A17.3.3).
//
// The ICRC is CRC-32 (the Ethernet/zlib polynomial, reflected, init and final XOR all ones) over:
//   8 bytes of 0xFF standing in for the LRH,
//   the IP header with the variant fields set to ones (IPv4: TOS, TTL, header checksum;
//   IPv6: traffic class, flow label, hop limit),
//   the UDP header with its checksum set to ones,
//   the BTH with byte 4 (FECN/BECN/resv6) set to ones,
//   then extension headers, payload and pad, up to but excluding the ICRC itself.
// It is stored least-significant byte first. The bytes after the BTH may lie in several buffers: the
// datapath checksums payload where it lies instead of copying it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace uroce::wire {

struct Crc32Kernel;  // crc32_kernels.h

using ConstBytes = std::span<const uint8_t>;

// Raw CRC-32 (zlib-compatible) continuation: crc32_update(crc32_update(0, a), b) == crc32(a || b).
uint32_t crc32_update(uint32_t crc, ConstBytes data);

// crc32_update(crc, src), and src copied to dst (not overlapping) in the same pass where the CPU allows.
uint32_t crc32_copy_update(uint32_t crc, uint8_t* dst, ConstBytes src);

// CRC state after the masked invariant prefix (LRH stand-in, IP, UDP, BTH) of the packet whose IP header is
// at `ip` (same layout rule as below). Continue with crc32_update over the bytes after the BTH; the result is
// the ICRC value.
uint32_t icrc_begin(const uint8_t* ip);

// ICRC of a RoCEv2 packet. `ip` points at the IP header (version taken from its first nibble, IPv4 without
// options), which must be followed in the same buffer by the UDP header and the BTH. `rest` are the pieces
// that follow the BTH in order (extension headers, payload, pad). Returns the CRC value; the wire bytes are
// that value stored little-endian (see icrc_store / icrc_load).
uint32_t icrc_roce_v2(const uint8_t* ip, std::span<const ConstBytes> rest);

// Same, with the given kernel of crc32_kernels() instead of the one chosen for this CPU (tests, benchmarks).
uint32_t icrc_roce_v2_with(const Crc32Kernel& k, const uint8_t* ip, std::span<const ConstBytes> rest);

// Same, for a contiguous packet: `ip` through `end` (exclusive of the 4 ICRC bytes).
uint32_t icrc_roce_v2_contiguous(const uint8_t* ip, const uint8_t* end);

inline void icrc_store(uint8_t* out, uint32_t v) {
  out[0] = static_cast<uint8_t>(v);
  out[1] = static_cast<uint8_t>(v >> 8);
  out[2] = static_cast<uint8_t>(v >> 16);
  out[3] = static_cast<uint8_t>(v >> 24);
}

inline uint32_t icrc_load(const uint8_t* in) {
  return static_cast<uint32_t>(in[0]) | static_cast<uint32_t>(in[1]) << 8 |
         static_cast<uint32_t>(in[2]) << 16 | static_cast<uint32_t>(in[3]) << 24;
}

}  // namespace uroce::wire
