#include "transport/wire/icrc.h"

#include <cstddef>
#include <cstring>

#include "transport/wire/crc32_kernels.h"
#include "transport/wire/headers.h"

namespace uroce::wire {

// crc32_kernels.h makes the choice of kernel once.
uint32_t crc32_update(uint32_t crc, ConstBytes data) {
  return crc32_chosen().update(crc, data.data(), data.size());
}

uint32_t crc32_copy_update(uint32_t crc, uint8_t* dst, ConstBytes src) {
  const Crc32Kernel& k = crc32_chosen();
  if (k.copy != nullptr) return k.copy(crc, dst, src.data(), src.size());
  if (!src.empty()) std::memcpy(dst, src.data(), src.size());
  return k.update(crc, dst, src.size());
}

namespace {

// The invariant prefix (LRH stand-in, IP, UDP, BTH with the variant fields set to ones) as input to a CRC
// register that starts at 0. zlib's initial all-ones register equals XORing ones into the first 4 message
// bytes, which turns the LRH stand-in into 00 00 00 00 FF FF FF FF; leading zero bytes leave a register at
// 0 unchanged, so they may be dropped or added at will. That makes the prefix a whole number of 16-byte
// chunks: IPv4 (40 header bytes) keeps the 4 zeros (48 bytes), IPv6 (60 header bytes) drops them (64).
// Setting a field to ones is ORing ones into it, so each layout has one OR mask over the whole prefix.
constexpr size_t kV4Prefix = 48;
constexpr size_t kV6Prefix = 64;
constexpr size_t kV4Headers = kV4Prefix - 8;
constexpr size_t kV6Headers = kV6Prefix - 4;
static_assert(kV4Headers == sizeof(Ipv4Hdr) + sizeof(UdpHdr) + sizeof(Bth));
static_assert(kV6Headers == sizeof(Ipv6Hdr) + sizeof(UdpHdr) + sizeof(Bth));

struct PrefixMask {
  uint8_t m[kV6Prefix];
};

// `at` is where the IP header starts in the prefix; the ones before it are the rest of the LRH stand-in.
constexpr PrefixMask prefix_mask(bool v6) {
  PrefixMask p{};
  const size_t at = v6 ? 4 : 8;
  for (size_t i = at - 4; i < at; ++i) p.m[i] = 0xFF;
  uint8_t* ip = p.m + at;
  size_t udp;
  if (v6) {
    ip[0] = 0x0F;  // traffic class (low nibble of byte 0, high nibble of byte 1) and flow label
    ip[1] = ip[2] = ip[3] = 0xFF;
    ip[offsetof(Ipv6Hdr, hop_limit)] = 0xFF;
    udp = sizeof(Ipv6Hdr);
  } else {
    ip[offsetof(Ipv4Hdr, tos)] = 0xFF;
    ip[offsetof(Ipv4Hdr, ttl)] = 0xFF;
    ip[offsetof(Ipv4Hdr, csum)] = ip[offsetof(Ipv4Hdr, csum) + 1] = 0xFF;
    udp = sizeof(Ipv4Hdr);
  }
  ip[udp + offsetof(UdpHdr, csum)] = ip[udp + offsetof(UdpHdr, csum) + 1] = 0xFF;
  ip[udp + sizeof(UdpHdr) + offsetof(Bth, resv8a)] = 0xFF;
  return p;
}

alignas(16) constexpr PrefixMask kV4Mask = prefix_mask(false);
alignas(16) constexpr PrefixMask kV6Mask = prefix_mask(true);

// Writes the prefix of the packet whose IP header is at `ip` to out (kV6Prefix bytes of room); returns its
// length. For a kernel without a gather, which needs it in memory.
size_t masked_prefix(const uint8_t* ip, uint8_t* out) {
  const bool v6 = (ip[0] >> 4) == 6;
  const size_t len = v6 ? kV6Prefix : kV4Prefix;
  const size_t at = v6 ? 4 : 8;
  std::memset(out, 0, at);
  std::memcpy(out + at, ip, len - at);
  const uint8_t* mask = v6 ? kV6Mask.m : kV4Mask.m;
  for (size_t i = 0; i < len; ++i) out[i] |= mask[i];
  return len;
}

}  // namespace

// With the kernel's gather in one pass (the IP, UDP and BTH headers are read where they lie, masked in
// registers), else over a masked copy of the prefix and then each piece.
uint32_t icrc_roce_v2_with(const Crc32Kernel& k, const uint8_t* ip, std::span<const ConstBytes> rest) {
  if (k.gather != nullptr) {
    const bool v6 = (ip[0] >> 4) == 6;
    return v6 ? k.gather(ip, kV6Headers, kV6Mask.m, rest) : k.gather(ip, kV4Headers, kV4Mask.m, rest);
  }
  alignas(16) uint8_t prefix[kV6Prefix];
  // ~0 as zlib's crc argument is a register starting at 0.
  uint32_t crc = k.update(~0u, prefix, masked_prefix(ip, prefix));
  for (ConstBytes piece : rest) crc = k.update(crc, piece.data(), piece.size());
  return crc;
}

uint32_t icrc_begin(const uint8_t* ip) { return icrc_roce_v2_with(crc32_chosen(), ip, {}); }

uint32_t icrc_roce_v2(const uint8_t* ip, std::span<const ConstBytes> rest) {
  return icrc_roce_v2_with(crc32_chosen(), ip, rest);
}

uint32_t icrc_roce_v2_contiguous(const uint8_t* ip, const uint8_t* end) {
  const size_t ip_len = (ip[0] >> 4) == 6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr);
  const uint8_t* after_bth = ip + ip_len + sizeof(UdpHdr) + sizeof(Bth);
  const ConstBytes rest[1] = {ConstBytes(after_bth, static_cast<size_t>(end - after_bth))};
  return icrc_roce_v2(ip, rest);
}

}  // namespace uroce::wire
