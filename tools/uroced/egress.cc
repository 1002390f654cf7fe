#include "tools/uroced/egress.h"

#include <algorithm>
#include <cstring>

#include "transport/wire/headers.h"

namespace uroce::uroced {

namespace {
constexpr uint64_t kNsPerSec = 1'000'000'000;
constexpr uint8_t kEcnMask = 0x3;
constexpr uint8_t kEcnCe = 0x3;
}  // namespace

void TokenBucket::configure(uint64_t rate_bps, uint64_t burst_bytes, uint64_t now_ns) {
  rate_bps_ = rate_bps;
  burst_ = burst_bytes;
  tokens_ = static_cast<double>(burst_bytes);
  last_ns_ = now_ns;
}

void TokenBucket::refill(uint64_t now_ns) {
  if (unlimited() || now_ns <= last_ns_) return;
  const double earned =
      static_cast<double>(now_ns - last_ns_) * static_cast<double>(rate_bps_) / (8.0 * kNsPerSec);
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + earned);
  last_ns_ = now_ns;
}

uint64_t TokenBucket::ready_at(uint32_t bytes, uint64_t now_ns) const {
  if (allows(bytes)) return now_ns;
  const double wait_ns = (bytes - tokens_) * 8.0 * kNsPerSec / static_cast<double>(rate_bps_);
  return std::max(now_ns, last_ns_) + static_cast<uint64_t>(wait_ns) + 1;
}

uint64_t Red::next() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return state_ * 0x2545F4914F6CDD1DULL;
}

bool Red::select(uint64_t q) {
  if (!p_.enabled || q < p_.kmin) return false;
  if (q >= p_.kmax) return true;
  const double p = p_.pmax * static_cast<double>(q - p_.kmin) / static_cast<double>(p_.kmax - p_.kmin);
  return static_cast<double>(next() >> 11) * 0x1.0p-53 < p;
}

EcnResult mark_ce(uint8_t* f, uint32_t len) {
  using namespace wire;
  uint32_t off = sizeof(EthHdr);
  if (len < off) return EcnResult::kNotIp;
  uint16_t type = reinterpret_cast<const EthHdr*>(f)->ether_type.get();
  if (type == kEtherTypeVlan) {
    if (len < off + sizeof(VlanTag)) return EcnResult::kNotIp;
    type = reinterpret_cast<const VlanTag*>(f + off)->ether_type.get();
    off += sizeof(VlanTag);
  }
  if (type == kEtherTypeIpv4) {
    if (len < off + sizeof(Ipv4Hdr)) return EcnResult::kNotIp;
    auto* ip = reinterpret_cast<Ipv4Hdr*>(f + off);
    if (ipv4_version(*ip) != 4) return EcnResult::kNotIp;
    const uint8_t ecn = ip->tos & kEcnMask;
    if (ecn == 0) return EcnResult::kNotEct;
    if (ecn == kEcnCe) return EcnResult::kAlreadyCe;
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') over the 16-bit word holding version/IHL and TOS.
    const uint16_t m = static_cast<uint16_t>(ip->ver_ihl << 8 | ip->tos);
    ip->tos |= kEcnCe;
    const uint16_t m2 = static_cast<uint16_t>(ip->ver_ihl << 8 | ip->tos);
    uint32_t sum = static_cast<uint16_t>(~ip->csum.get()) + static_cast<uint16_t>(~m) + m2;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    ip->csum.set(static_cast<uint16_t>(~sum));
    return EcnResult::kMarked;
  }
  if (type == kEtherTypeIpv6) {
    if (len < off + sizeof(Ipv6Hdr)) return EcnResult::kNotIp;
    auto* ip = reinterpret_cast<Ipv6Hdr*>(f + off);
    if (ipv6_version(*ip) != 6) return EcnResult::kNotIp;
    const uint32_t w = ip->ver_tc_flow.get();
    const uint8_t ecn = (w >> 20) & kEcnMask;
    if (ecn == 0) return EcnResult::kNotEct;
    if (ecn == kEcnCe) return EcnResult::kAlreadyCe;
    ip->ver_tc_flow.set(w | (uint32_t{kEcnCe} << 20));
    return EcnResult::kMarked;
  }
  return EcnResult::kNotIp;
}

}  // namespace uroce::uroced
