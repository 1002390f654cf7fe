// Wire layouts of every header a RoCEv2 frame can carry: Ethernet (+802.1Q), IPv4, IPv6, UDP, the IBA base
// transport header and its extension headers (IBA vol. 1, ch. 9.2-9.3; RoCEv2 is Annex A17). This is the
// only header that knows field offsets and byte order; everything else uses the accessors here.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/wire/byteorder.h"

namespace uroce::wire {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr uint16_t kEtherTypeRoceV1 = 0x8915;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint16_t kRoceV2Port = 4791;  // IANA-assigned UDP destination port for RoCEv2 (A17.3.1)
constexpr size_t kIcrcLen = 4;

using MacAddr = std::array<uint8_t, 6>;
using Ipv6Addr = std::array<uint8_t, 16>;

// MAC addresses compared as one 4-byte and one 2-byte load: std::array's == calls memcmp for six bytes,
// which was ~4% of a receiving engine's time with two comparisons per frame.
inline bool mac_equal(const MacAddr& a, const MacAddr& b) {
  uint32_t a4, b4;
  uint16_t a2, b2;
  __builtin_memcpy(&a4, a.data(), 4);
  __builtin_memcpy(&b4, b.data(), 4);
  __builtin_memcpy(&a2, a.data() + 4, 2);
  __builtin_memcpy(&b2, b.data() + 4, 2);
  return ((a4 ^ b4) | static_cast<uint32_t>(a2 ^ b2)) == 0;
}
inline bool mac_is_zero(const MacAddr& m) { return mac_equal(m, MacAddr{}); }
// GIDs and IPv6 addresses the same way, as two 8-byte loads: == on the arrays is a memcmp call for 16
// bytes, and each frame compares one on send and two on receipt.
inline bool ip_equal(const Ipv6Addr& a, const Ipv6Addr& b) {
  uint64_t a0, a1, b0, b1;
  __builtin_memcpy(&a0, a.data(), 8);
  __builtin_memcpy(&a1, a.data() + 8, 8);
  __builtin_memcpy(&b0, b.data(), 8);
  __builtin_memcpy(&b1, b.data() + 8, 8);
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

#pragma pack(push, 1)

struct EthHdr {
  uint8_t dst[6];
  uint8_t src[6];
  be16 ether_type;
};

struct VlanTag {
  be16 tci;  // PCP(3) DEI(1) VID(12)
  be16 ether_type;
};

struct Ipv4Hdr {
  uint8_t ver_ihl;
  uint8_t tos;  // DSCP(6) ECN(2)
  be16 total_len;
  be16 id;
  be16 flags_frag;
  uint8_t ttl;
  uint8_t proto;
  be16 csum;
  be32 src;
  be32 dst;
};

struct Ipv6Hdr {
  be32 ver_tc_flow;  // version(4) traffic class(8) flow label(20)
  be16 payload_len;
  uint8_t next_hdr;
  uint8_t hop_limit;
  uint8_t src[16];
  uint8_t dst[16];
};

// The Global Route Header has the IPv6 header's layout (IBA 8.3). UD receive buffers start with 40 bytes
// of it; for RoCEv2 over IPv4 the IPv4 header sits in its last 20 bytes (rdma-core ibv_wc docs).
using Grh = Ipv6Hdr;

struct UdpHdr {
  be16 sport;
  be16 dport;
  be16 len;
  be16 csum;
};

// Base Transport Header, IBA 9.2.
struct Bth {
  uint8_t opcode;
  uint8_t flags;  // SE(1) MigReq(1) PadCnt(2) TVer(4)
  be16 pkey;
  uint8_t resv8a;  // FECN(1) BECN(1) resv(6) in IB; masked to ones in the ICRC
  be24 dest_qp;
  uint8_t ack_req;  // AckReq(1) resv(7)
  be24 psn;
};

struct Reth {  // RDMA ETH, IBA 9.3.3
  be64 va;
  be32 rkey;
  be32 dma_len;
};

struct Aeth {  // ACK ETH, IBA 9.3.5
  uint8_t syndrome;
  be24 msn;
};

struct AtomicEth {  // IBA 9.3.4
  be64 va;
  be32 rkey;
  be64 swap_add;
  be64 compare;
};

struct AtomicAckEth {  // IBA 9.3.6
  be64 orig;
};

struct ImmDt {  // IBA 9.3.7; carried opaque, in wire order, as ibv_wc.imm_data is
  uint8_t b[4];
};

struct Ieth {  // Invalidate ETH, IBA 9.3.8
  be32 rkey;
};

struct Xrceth {  // XRC ETH, IBA 9.3.9 (XRC annex): the SRQ at the target that takes the request
  uint8_t resv;
  be24 srqn;
};

struct Deth {  // Datagram ETH, IBA 9.3.2
  be32 qkey;
  uint8_t resv;
  be24 src_qp;
};

struct CnpBody {  // A17.9.3: 16 reserved bytes after the BTH of a CNP
  uint8_t resv[16];
};

#pragma pack(pop)

static_assert(sizeof(EthHdr) == 14);
static_assert(sizeof(VlanTag) == 4);
static_assert(sizeof(Ipv4Hdr) == 20);
static_assert(sizeof(Ipv6Hdr) == 40);
static_assert(sizeof(UdpHdr) == 8);
static_assert(sizeof(Bth) == 12);
static_assert(sizeof(Reth) == 16);
static_assert(sizeof(Aeth) == 4);
static_assert(sizeof(AtomicEth) == 28);
static_assert(sizeof(AtomicAckEth) == 8);
static_assert(sizeof(ImmDt) == 4);
static_assert(sizeof(Ieth) == 4);
static_assert(sizeof(Deth) == 8);
static_assert(sizeof(CnpBody) == 16);

// --- Accessors. Each takes the header it reads; bit positions live only here. ---

inline uint8_t bth_opcode(const Bth& h) { return h.opcode; }
inline bool bth_se(const Bth& h) { return h.flags & 0x80; }
inline bool bth_migreq(const Bth& h) { return h.flags & 0x40; }
inline uint8_t bth_pad(const Bth& h) { return (h.flags >> 4) & 0x3; }
inline uint8_t bth_tver(const Bth& h) { return h.flags & 0xF; }
inline uint16_t bth_pkey(const Bth& h) { return h.pkey.get(); }
inline bool bth_fecn(const Bth& h) { return h.resv8a & 0x80; }
inline bool bth_becn(const Bth& h) { return h.resv8a & 0x40; }
inline uint32_t bth_dqpn(const Bth& h) { return h.dest_qp.get(); }
inline bool bth_ackreq(const Bth& h) { return h.ack_req & 0x80; }
inline uint8_t bth_resv7(const Bth& h) { return h.ack_req & 0x7F; }
// A uroce requester with selective repeat on sets this reserved BTH bit in its requests (standard receivers
// ignore reserved bits); a uroce responder answers such a requester's sequence errors with op::kUroceSrNak.
constexpr uint8_t kBthResv7SelectiveRepeat = 0x01;
// The payload of op::kUroceSrNak: a bitmap, one bit per PSN from the NAKed one on, then a big-endian 32-bit
// word whose low 24 bits are the highest PSN that has arrived ahead of the gap (held or, beyond the
// bitmap, dropped).
constexpr uint32_t kSrNakBitmapBytes = 32;
constexpr uint32_t kSrNakPayloadBytes = kSrNakBitmapBytes + 4;
inline uint32_t bth_psn(const Bth& h) { return h.psn.get(); }

inline void bth_set_flags(Bth& h, bool se, bool migreq, uint8_t pad, uint8_t tver) {
  h.flags = static_cast<uint8_t>((se ? 0x80 : 0) | (migreq ? 0x40 : 0) | ((pad & 3) << 4) | (tver & 0xF));
}

// AETH syndrome, IBA 9.7.5.1: bits 6..5 the kind, bits 4..0 a credit count, RNR timer or NAK code.
enum class AethKind : uint8_t { kAck = 0, kRnrNak = 1, kReserved = 2, kNak = 3 };
inline AethKind aeth_kind(const Aeth& h) { return static_cast<AethKind>((h.syndrome >> 5) & 3); }
inline uint8_t aeth_value(const Aeth& h) { return h.syndrome & 0x1F; }
inline uint32_t aeth_msn(const Aeth& h) { return h.msn.get(); }
inline uint8_t aeth_syndrome(AethKind kind, uint8_t value) {
  return static_cast<uint8_t>((static_cast<uint8_t>(kind) << 5) | (value & 0x1F));
}

// The value of a NAK syndrome (IBA table 43).
enum NakCode : uint8_t { kNakPsnSeq = 0, kNakInvReq = 1, kNakRemAccess = 2, kNakRemOp = 3, kNakInvRdReq = 4 };

// IBA table 45: RNR NAK timer field (5 bits) -> minimum delay, in nanoseconds. Code 0 is the longest.
inline constexpr uint64_t kRnrDelayNs[32] = {
    655'360'000, 10'000,     20'000,     30'000,      40'000,      60'000,      80'000,      120'000,
    160'000,     240'000,    320'000,    480'000,     640'000,     960'000,     1'280'000,   1'920'000,
    2'560'000,   3'840'000,  5'120'000,  7'680'000,   10'240'000,  15'360'000,  20'480'000,  30'720'000,
    40'960'000,  61'440'000, 81'920'000, 122'880'000, 163'840'000, 245'760'000, 327'680'000, 491'520'000};

// IBA table 44: AETH credit code -> number of receive WQEs; code 31 means "no credit limit".
inline constexpr int64_t kCreditCount[31] = {
    0,   1,   2,   3,   4,    6,    8,    12,   16,   24,   32,   48,    64,    96,    128,  192,
    256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};

// The minimum delay an RNR NAK's timer code asks for.
inline uint64_t rnr_timer_ns(uint8_t code) { return kRnrDelayNs[code & 31]; }
// Receive WQEs an ACK's credit code grants (code 31: no limit, -1 here).
inline int64_t aeth_credit_count(uint8_t code) { return (code & 31) == 31 ? -1 : kCreditCount[code & 31]; }
// The largest credit code that does not promise more than `available` receive WQEs (0..30).
inline uint8_t aeth_credit_code(uint64_t available) {
  uint8_t code = 0;
  while (code < 30 && kCreditCount[code + 1] <= static_cast<int64_t>(available)) ++code;
  return code;
}

inline uint8_t ipv4_ihl_bytes(const Ipv4Hdr& h) { return static_cast<uint8_t>((h.ver_ihl & 0xF) * 4); }
inline uint8_t ipv4_version(const Ipv4Hdr& h) { return h.ver_ihl >> 4; }
inline uint8_t ipv6_version(const Ipv6Hdr& h) { return static_cast<uint8_t>(h.ver_tc_flow.get() >> 28); }
inline uint8_t ipv6_tclass(const Ipv6Hdr& h) { return static_cast<uint8_t>(h.ver_tc_flow.get() >> 20); }
inline uint32_t ipv6_flow_label(const Ipv6Hdr& h) { return h.ver_tc_flow.get() & 0xFFFFF; }

// The RFC 1071 checksum of a sum of 16-bit words (any number of them, up to 2^48): the sum folded to 16 bits
// with its carries, complemented.
inline uint16_t ones_complement_checksum(uint64_t sum) {
  sum = (sum & 0xFFFFFFFF) + (sum >> 32);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// RFC 1071 header checksum over the 20-byte IPv4 header with `csum` taken as stored. A header whose stored
// checksum is right sums to 0; to fill the field, store ipv4_checksum() of the header with csum = 0.
// Summed as five 32-bit words in memory order: a ones' complement sum does not depend on byte order (RFC
// 1071), so the folded sum is the checksum with its bytes as they lie in memory.
inline uint16_t ipv4_checksum(const Ipv4Hdr& h) {
  static_assert(sizeof(Ipv4Hdr) == 20);
  const auto* p = reinterpret_cast<const uint8_t*>(&h);
  uint64_t sum = 0;
  for (size_t i = 0; i < sizeof(Ipv4Hdr); i += 4) {
    uint32_t w;
    std::memcpy(&w, p + i, 4);
    sum += w;
  }
  const uint16_t folded = ones_complement_checksum(sum);
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(folded);
  return folded;
}

// IPv4 addresses travel in GIDs as IPv4-mapped IPv6 addresses (::ffff:a.b.c.d).
inline Ipv6Addr ipv4_mapped(uint32_t addr) {
  return {0,
          0,
          0,
          0,
          0,
          0,
          0,
          0,
          0,
          0,
          0xFF,
          0xFF,
          static_cast<uint8_t>(addr >> 24),
          static_cast<uint8_t>(addr >> 16),
          static_cast<uint8_t>(addr >> 8),
          static_cast<uint8_t>(addr)};
}
inline bool is_ipv4_mapped(const Ipv6Addr& a) {
  for (int i = 0; i < 10; ++i)
    if (a[i]) return false;
  return a[10] == 0xFF && a[11] == 0xFF;
}
inline uint32_t ipv4_of_mapped(const Ipv6Addr& a) {
  return static_cast<uint32_t>(a[12]) << 24 | static_cast<uint32_t>(a[13]) << 16 |
         static_cast<uint32_t>(a[14]) << 8 | a[15];
}

inline uint8_t vlan_pcp(const VlanTag& t) { return static_cast<uint8_t>(t.tci.get() >> 13); }
inline uint16_t vlan_vid(const VlanTag& t) { return t.tci.get() & 0xFFF; }

// IP ECN codepoints (RFC 3168) as carried in the low 2 bits of TOS / traffic class.
enum class Ecn : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

}  // namespace uroce::wire
