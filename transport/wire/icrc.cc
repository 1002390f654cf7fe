#include "transport/wire/icrc.h"

#include <isa-l/crc.h>

#include <cstring>

#include "transport/wire/crc32_avx2.h"
#include "transport/wire/headers.h"

namespace uroce::wire {

namespace {

// With VPCLMULQDQ but no AVX-512, ISA-L falls back to its 128-bit kernel; ours folds twice as many bytes
// per carry-less multiply. Elsewhere ISA-L's crc32_gzip_refl (reflected IEEE CRC-32, zlib's init/xorout
// convention) picks its own best kernel.
bool use_avx2(size_t len) {
  static const bool avx2 = crc32_avx2_preferred();
  return avx2 && len >= kCrc32Avx2MinLen;
}

}  // namespace

uint32_t crc32_update(uint32_t crc, ConstBytes data) {
  if (use_avx2(data.size())) return crc32_avx2(crc, data.data(), data.size());
  return crc32_gzip_refl(crc, data.data(), data.size());
}

uint32_t crc32_copy_update(uint32_t crc, uint8_t* dst, ConstBytes src) {
  if (use_avx2(src.size())) return crc32_copy_avx2(crc, dst, src.data(), src.size());
  if (!src.empty()) std::memcpy(dst, src.data(), src.size());
  return crc32_update(crc, ConstBytes(dst, src.size()));
}

namespace {

constexpr size_t kLrhStandIn = 8;
constexpr size_t kMaxMaskedLen = kLrhStandIn + sizeof(Ipv6Hdr) + sizeof(UdpHdr) + sizeof(Bth);

// Copies the invariant prefix (LRH stand-in, IP, UDP, BTH) with variant fields masked; returns its length.
size_t masked_prefix(const uint8_t* ip, uint8_t* out) {
  std::memset(out, 0xFF, kLrhStandIn);
  uint8_t* p = out + kLrhStandIn;
  size_t ip_len;
  if ((ip[0] >> 4) == 6) {
    ip_len = sizeof(Ipv6Hdr);
    std::memcpy(p, ip, ip_len);
    auto* h = reinterpret_cast<Ipv6Hdr*>(p);
    h->ver_tc_flow.set(h->ver_tc_flow.get() | 0x0FFFFFFF);  // traffic class and flow label
    h->hop_limit = 0xFF;
  } else {
    ip_len = sizeof(Ipv4Hdr);
    std::memcpy(p, ip, ip_len);
    auto* h = reinterpret_cast<Ipv4Hdr*>(p);
    h->tos = 0xFF;
    h->ttl = 0xFF;
    h->csum.set(0xFFFF);
  }
  p += ip_len;
  std::memcpy(p, ip + ip_len, sizeof(UdpHdr) + sizeof(Bth));
  reinterpret_cast<UdpHdr*>(p)->csum.set(0xFFFF);
  reinterpret_cast<Bth*>(p + sizeof(UdpHdr))->resv8a = 0xFF;
  p += sizeof(UdpHdr) + sizeof(Bth);
  return static_cast<size_t>(p - out);
}

}  // namespace

uint32_t icrc_begin(const uint8_t* ip) {
  uint8_t prefix[kMaxMaskedLen];
  return crc32_update(0, ConstBytes(prefix, masked_prefix(ip, prefix)));
}

uint32_t icrc_roce_v2(const uint8_t* ip, std::span<const ConstBytes> rest) {
  uint32_t crc = icrc_begin(ip);
  for (ConstBytes piece : rest) crc = crc32_update(crc, piece);
  return crc;
}

uint32_t icrc_roce_v2_contiguous(const uint8_t* ip, const uint8_t* end) {
  const size_t ip_len = (ip[0] >> 4) == 6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr);
  const uint8_t* after_bth = ip + ip_len + sizeof(UdpHdr) + sizeof(Bth);
  const ConstBytes rest[1] = {ConstBytes(after_bth, static_cast<size_t>(end - after_bth))};
  return icrc_roce_v2(ip, rest);
}

}  // namespace uroce::wire
