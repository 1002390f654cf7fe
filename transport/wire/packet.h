// Building and parsing whole RoCEv2 frames: Ethernet [802.1Q] / IPv4 or IPv6 / UDP 4791 / BTH / extension
// headers / payload / pad / ICRC.
//
// PacketHeaders is the decoded, host-order form of every header field, used to build frames and by tools and
// tests. The datapath parses into ParsedPacket, which only records offsets into the frame and reads fields
// through the accessors of headers.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/wire/headers.h"
#include "transport/wire/icrc.h"
#include "transport/wire/opcode.h"
#include "transport/wire/rx_drop.h"

namespace uroce::wire {

struct EthFields {
  MacAddr dst{};
  MacAddr src{};
  bool vlan = false;
  uint8_t pcp = 0;  // 802.1p priority, the class PFC pauses
  bool dei = false;
  uint16_t vid = 0;
};

struct IpFields {
  bool ipv6 = false;
  // Addresses as RoCE GIDs: IPv4 ones are IPv4-mapped IPv6 (::ffff:a.b.c.d), as rdma-core and rxe store them.
  Ipv6Addr src{};
  Ipv6Addr dst{};
  uint8_t tclass = 0;       // IPv4 TOS or IPv6 traffic class: DSCP(6) ECN(2)
  uint8_t ttl = 64;         // or IPv6 hop limit
  uint32_t flow_label = 0;  // IPv6 only
  uint16_t ipv4_id = 0;
  uint16_t ipv4_flags_frag = 0x4000;  // DF
};

struct BthFields {
  uint8_t opcode = 0;
  bool se = false;
  bool migreq = true;  // C17-28 (RoCE): no APM, so migration state is always MIGRATED
  uint8_t tver = 0;
  uint16_t pkey = 0xFFFF;
  uint8_t resv8a = 0;  // FECN/BECN/resv6; the CNP sets BECN (0x40)
  uint32_t dqpn = 0;
  bool ackreq = false;
  uint32_t psn = 0;
  uint8_t resv7 = 0;  // the reserved bits after AckReq: senders write 0, receivers ignore them
  // The pad count is derived from the payload length when building.
};

struct RethFields {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;
};

struct AethFields {
  uint8_t syndrome = 0;
  uint32_t msn = 0;
};

struct AtomicEthFields {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
};

struct DethFields {
  uint32_t qkey = 0;
  uint32_t src_qp = 0;
  uint8_t resv = 0;  // reserved byte: senders write 0, receivers ignore it
};

// Every header field of a frame, reserved ones included, so that decode_headers + build_frame reproduce any
// frame parse_frame accepts (two exceptions, both values a conforming sender never writes: pad bytes are
// always built as zeros, and an IPv4 header checksum stored as 0xFFFF, the other one's-complement zero,
// is rebuilt as 0x0000). Only the extension headers the opcode has are read or written.
struct PacketHeaders {
  EthFields eth;
  IpFields ip;
  uint16_t udp_sport = 0xC000;
  uint16_t udp_csum = 0;  // RoCEv2 senders put 0 (A17.3.1); kept so parsed frames rebuild exactly
  BthFields bth;
  RethFields reth;
  AethFields aeth;
  AtomicEthFields atomic;
  uint64_t atomic_ack_orig = 0;
  uint32_t imm_be = 0;  // immediate data in wire byte order (as ibv_wc.imm_data)
  uint32_t ieth_rkey = 0;
  DethFields deth;
  uint32_t xrc_srqn = 0;    // XRC requests: the XRCETH's SRQ number
  uint8_t xrceth_resv = 0;  // and its reserved byte (sent as 0; kept so parsed frames rebuild exactly)
  std::array<uint8_t, sizeof(CnpBody)> cnp_resv{};  // the CNP's reserved bytes (A17.9.3: sent as zeros)
};

// Where the parts of a received frame lie. All offsets are from the start of the frame.
struct ParsedPacket {
  const uint8_t* frame = nullptr;
  uint16_t frame_len = 0;  // L2 + IP total length (any Ethernet padding after it excluded)
  uint16_t l3_off = 0;
  uint16_t l4_off = 0;
  uint16_t bth_off = 0;
  uint16_t payload_off = 0;
  uint16_t payload_len = 0;  // without pad
  uint8_t pad = 0;
  uint8_t opcode = 0;
  bool ipv6 = false;

  const OpInfo& op() const { return op_info(opcode); }
  const Bth& bth() const { return *reinterpret_cast<const Bth*>(frame + bth_off); }
  template <typename H>
  const H& ext(uint8_t off_in_bth) const {
    return *reinterpret_cast<const H*>(frame + bth_off + off_in_bth);
  }
  const Reth& reth() const { return ext<Reth>(op().reth); }
  const Aeth& aeth() const { return ext<Aeth>(op().aeth); }
  const AtomicEth& atomic_eth() const { return ext<AtomicEth>(op().atomic_eth); }
  const AtomicAckEth& atomic_ack_eth() const { return ext<AtomicAckEth>(op().atomic_ack_eth); }
  const ImmDt& immdt() const { return ext<ImmDt>(op().immdt); }
  const Ieth& ieth() const { return ext<Ieth>(op().ieth); }
  const Xrceth& xrceth() const { return ext<Xrceth>(op().xrceth); }
  const Deth& deth() const { return ext<Deth>(op().deth); }
  const uint8_t* payload() const { return frame + payload_off; }
  // The IP ECN codepoint (CE marks reach congestion control).
  Ecn ecn() const;
  // Link and network addresses, for the checks a device and a connected QP make against their own and the
  // path's (IPv4 addresses come back IPv4-mapped, as GIDs hold them).
  MacAddr eth_dst() const;
  MacAddr eth_src() const;
  bool vlan_tagged() const { return l3_off > sizeof(EthHdr); }
  uint16_t vlan_id() const;  // 0 when untagged
  Ipv6Addr ip_src() const;
  Ipv6Addr ip_dst() const;
};

// Validates a frame and fills `out`. Checks, in order: Ethernet/VLAN, IP version and header, IPv4 checksum
// and fragmentation, IP and UDP lengths against each other and the frame, UDP port 4791, BTH version, opcode,
// extension-header lengths, pad count and payload rules, ICRC. Returns RxDrop::kNone or why the frame must
// be dropped. Never reads outside [frame, frame + len).
RxDrop parse_frame(const uint8_t* frame, size_t len, ParsedPacket* out);

// Decodes every field of a parsed frame (for tools and tests; the datapath uses the accessors).
PacketHeaders decode_headers(const ParsedPacket& pkt);

// Writes the 40-byte GRH that a UD receive buffer starts with (rdma-core: the first 40 bytes of every UD
// receive). IPv6: the IPv6 header. IPv4: 20 zero bytes, then the IPv4 header (as rxe and mlx5 do).
void write_recv_grh(const ParsedPacket& pkt, uint8_t* out);

// Length of the headers build_headers writes for `h` (Ethernet through the last extension header).
size_t headers_len(const PacketHeaders& h);

// Length of pad plus ICRC for a payload of `payload_len` bytes.
constexpr size_t trailer_len(size_t payload_len) { return (-payload_len & 3) + kIcrcLen; }

// Writes Ethernet through the extension headers into `out` (at least headers_len(h) bytes), with IP and UDP
// lengths, the IPv4 checksum and the pad count computed for `payload_len`. Returns the bytes written.
size_t build_headers(const PacketHeaders& h, uint32_t payload_len, uint8_t* out);

// Writes pad and ICRC (trailer_len(payload) bytes) into `trailer` for a frame whose headers build_headers
// wrote at `hdrs`. The payload stays where it is: `payload` lists its pieces in order. Nothing is copied
// and the caller keeps ownership of every buffer.
void build_trailer(const uint8_t* hdrs, size_t hdrs_len, std::span<const ConstBytes> payload,
                   uint8_t* trailer);

// The same ICRC in two steps, for a sender that checksums the payload while it copies it into the frame:
// icrc_after_headers gives the CRC state after the headers (masked prefix and extension headers);
// continue it over the payload pieces in order (crc32_update / crc32_copy_update), then finish_trailer
// writes pad and ICRC for `payload_len` bytes of payload.
uint32_t icrc_after_headers(const uint8_t* hdrs, size_t hdrs_len);
void finish_trailer(uint32_t crc, size_t payload_len, uint8_t* trailer);

// Pad and ICRC for a frame whose headers (hdrs_len bytes at `frame`) and payload already lie in place, in one
// CRC pass over the frame: for short payloads, where the two steps above cost two CRC reductions for a few
// dozen bytes each.
void seal_frame(uint8_t* frame, size_t hdrs_len, size_t payload_len);

// Convenience for tools and tests: headers, copied payload and trailer contiguous in `out`, which must hold
// headers_len(h) + payload.size() + trailer_len(payload.size()) bytes. Returns the frame length.
size_t build_frame(const PacketHeaders& h, ConstBytes payload, uint8_t* out);

// Whether a RoCEv2 frame carries a one-sided request (RDMA WRITE, RDMA READ request, ATOMIC): what a
// responder acts on with no help from its application. Reads only fixed fields (Ethernet type, IP header
// length and protocol, UDP destination port, BTH opcode) and checks nothing else: a frame too short to tell,
// or not RoCEv2, is not one. For the memif bell's transmitter (pmd_glue/memif_bell.h), not for validation.
inline bool frame_is_one_sided_request(const uint8_t* f, size_t len) {
  const auto load_be16 = [](const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); };
  if (len < 14) return false;
  size_t off = 12;
  uint16_t type = load_be16(f + off);
  if (type == kEtherTypeVlan) {
    off += 4;
    if (len < off + 2) return false;
    type = load_be16(f + off);
  }
  off += 2;
  if (type == kEtherTypeIpv4) {
    if (len < off + 20 || f[off + 9] != kIpProtoUdp) return false;
    off += static_cast<size_t>(f[off] & 0x0F) * 4;
  } else if (type == kEtherTypeIpv6) {
    if (len < off + 40 || f[off + 6] != kIpProtoUdp) return false;
    off += 40;
  } else {
    return false;
  }
  if (len < off + 9 || load_be16(f + off + 2) != kRoceV2Port) return false;
  const uint8_t opcode = f[off + 8];
  return op_has(opcode, kIsRequest) && (op_info(opcode).mask & (kOpWrite | kOpRead | kOpAtomic)) != 0;
}

}  // namespace uroce::wire
