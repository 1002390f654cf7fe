// The IB Communication Manager's datagrams (IBA vol. 1, ch. 12.6 and 13.4) as RoCEv2 carries them on QP1:
// the 24-byte MAD common header, the CM message bodies that follow it in a 256-byte MAD, the 36-byte CMA
// private-data header that the RDMA CM puts in front of REQ and SIDR_REQ private data (IBA Annex A11), and
// the GSI transport around a MAD (UD SEND only to QP1, Q_Key 0x80010000).
//
// Decoded messages are plain structs with host-order named fields. Bit fields are placed as the IBA tables
// place them: byte[bit] counted from the byte's most significant bit. This file and mad.cc are the only
// places that know an offset.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "transport/wire/headers.h"
#include "transport/wire/packet.h"

namespace uroce::cm {

using Gid = wire::Ipv6Addr;

constexpr size_t kMadLen = 256;
constexpr size_t kMadHdrLen = 24;
constexpr size_t kCmBodyLen = kMadLen - kMadHdrLen;  // 232
using MadBytes = std::array<uint8_t, kMadLen>;

constexpr uint8_t kMadBaseVersion = 1;
constexpr uint8_t kMgmtClassCm = 0x07;
constexpr uint8_t kCmClassVersion = 2;
constexpr uint8_t kMadMethodSend = 0x03;

// GSI (QP1) addressing, IBA 13.4.6 and 13.5.1.
constexpr uint32_t kGsiQpn = 1;
constexpr uint32_t kGsiQkey = 0x80010000;
constexpr uint16_t kDefaultPkey = 0xFFFF;

enum class AttrId : uint16_t {
  kReq = 0x0010,
  kMra = 0x0011,
  kRej = 0x0012,
  kRep = 0x0013,
  kRtu = 0x0014,
  kDreq = 0x0015,
  kDrep = 0x0016,
  kSidrReq = 0x0017,
  kSidrRep = 0x0018,
  kLap = 0x0019,  // path migration: RoCE has none, so these two are recognised but not decoded
  kApr = 0x001A,
};

// Private data bytes of each message (Linux enum ib_cm_data_size).
constexpr size_t kReqPrivateLen = 92;
constexpr size_t kMraPrivateLen = 222;
constexpr size_t kRejPrivateLen = 148;
constexpr size_t kRepPrivateLen = 196;
constexpr size_t kRtuPrivateLen = 224;
constexpr size_t kDreqPrivateLen = 220;
constexpr size_t kDrepPrivateLen = 224;
constexpr size_t kSidrReqPrivateLen = 216;
constexpr size_t kSidrRepPrivateLen = 136;
constexpr size_t kRejAriLen = 72;
constexpr size_t kSidrRepInfoLen = 72;

// Why decode refused a MAD. One value per rule, so a receiver can count each.
enum class MadError : uint8_t {
  kOk = 0,
  kTruncated,             // fewer than 256 bytes
  kTooLong,               // more than 256 bytes
  kBadBaseVersion,        // not 1
  kBadClass,              // not the CM class (0x07)
  kBadClassVersion,       // not 2
  kBadMethod,             // not Send (CM messages are all sent with method 0x03)
  kUnknownAttribute,      // not a CM attribute
  kUnsupportedAttribute,  // LAP / APR: RoCE has no alternate paths
  kBadField,              // a length field larger than its area (REJ ARI, SIDR_REP additional info)
  kCount,
};
const char* mad_error_name(MadError e);

struct MadHeader {
  uint8_t base_version = kMadBaseVersion;
  uint8_t mgmt_class = kMgmtClassCm;
  uint8_t class_version = kCmClassVersion;
  uint8_t method = kMadMethodSend;  // R bit (MSB) and method
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;  // encode writes the attribute of the body it is given
  uint16_t resv = 0;
  uint32_t attr_mod = 0;  // ECE options in REQ/REP on newer kernels, else 0

  bool operator==(const MadHeader&) const = default;
};

// One path as REQ carries it (the primary at body byte 52, the alternate at 96; 44 bytes each).
struct CmPath {
  uint16_t local_lid = 0;  // RoCE routes by GID: Linux sends 0xFFFF (permissive) when hop_limit > 1
  uint16_t remote_lid = 0;
  Gid local_gid{};
  Gid remote_gid{};
  uint32_t flow_label = 0;  // 20 bits
  uint8_t packet_rate = 0;  // 6 bits
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;
  uint8_t sl = 0;  // 4 bits
  bool subnet_local = false;
  uint8_t local_ack_timeout = 0;  // 5 bits

  bool operator==(const CmPath&) const = default;
};

enum class CmTransport : uint8_t { kRc = 0, kUc = 1, kXrc = 3 };

struct Req {
  uint32_t local_comm_id = 0;
  uint32_t ece_vendor_id = 0;  // 24 bits
  uint64_t service_id = 0;
  uint64_t local_ca_guid = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;  // 24 bits
  uint8_t responder_resources = 0;
  uint32_t local_eecn = 0;  // 24 bits
  uint8_t initiator_depth = 0;
  uint32_t remote_eecn = 0;                  // 24 bits
  uint8_t remote_cm_response_timeout = 0;    // 5 bits
  CmTransport transport = CmTransport::kRc;  // 2 bits
  bool flow_control = false;
  uint32_t starting_psn = 0;              // 24 bits
  uint8_t local_cm_response_timeout = 0;  // 5 bits
  uint8_t retry_count = 0;                // 3 bits
  uint16_t pkey = kDefaultPkey;
  uint8_t path_mtu = 0;  // IB MTU enum (1 = 256 .. 5 = 4096), 4 bits
  bool rdc_exists = false;
  uint8_t rnr_retry_count = 0;  // 3 bits
  uint8_t max_cm_retries = 0;   // 4 bits
  bool srq = false;
  uint8_t extended_transport = 0;  // 3 bits
  CmPath primary;
  CmPath alternate;  // all zero: RoCE has no alternate path
  std::array<uint8_t, kReqPrivateLen> private_data{};

  bool operator==(const Req&) const = default;
};

struct Mra {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint8_t message_mraed = 0;    // 2 bits: 0 REQ, 1 REP, 2 other (LAP)
  uint8_t service_timeout = 0;  // 5 bits
  std::array<uint8_t, kMraPrivateLen> private_data{};

  bool operator==(const Mra&) const = default;
};

struct Rej {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint8_t message_rejected = 0;  // 2 bits: 0 REQ, 1 REP, 2 other
  uint8_t ari_length = 0;        // 7 bits
  uint16_t reason = 0;
  std::array<uint8_t, kRejAriLen> ari{};
  std::array<uint8_t, kRejPrivateLen> private_data{};

  bool operator==(const Rej&) const = default;
};

struct Rep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;  // 24 bits
  uint8_t ece_vendor_high = 0;
  uint32_t local_eecn = 0;    // 24 bits
  uint32_t starting_psn = 0;  // 24 bits
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 0;   // 5 bits
  uint8_t failover_accepted = 0;  // 2 bits
  bool flow_control = false;
  uint8_t rnr_retry_count = 0;  // 3 bits
  bool srq = false;
  uint64_t local_ca_guid = 0;
  std::array<uint8_t, kRepPrivateLen> private_data{};

  bool operator==(const Rep&) const = default;
};

struct Rtu {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kRtuPrivateLen> private_data{};

  bool operator==(const Rtu&) const = default;
};

struct Dreq {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t remote_qpn = 0;  // 24 bits: the receiver's own QPN
  std::array<uint8_t, kDreqPrivateLen> private_data{};

  bool operator==(const Dreq&) const = default;
};

struct Drep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kDrepPrivateLen> private_data{};

  bool operator==(const Drep&) const = default;
};

struct SidrReq {
  uint32_t request_id = 0;
  uint16_t pkey = kDefaultPkey;
  uint64_t service_id = 0;
  std::array<uint8_t, kSidrReqPrivateLen> private_data{};

  bool operator==(const SidrReq&) const = default;
};

struct SidrRep {
  uint32_t request_id = 0;
  uint8_t status = 0;
  uint8_t info_length = 0;
  uint32_t qpn = 0;  // 24 bits
  uint64_t service_id = 0;
  uint32_t qkey = 0;
  std::array<uint8_t, kSidrRepInfoLen> info{};
  std::array<uint8_t, kSidrRepPrivateLen> private_data{};

  bool operator==(const SidrRep&) const = default;
};

using CmBody = std::variant<Req, Mra, Rej, Rep, Rtu, Dreq, Drep, SidrReq, SidrRep>;

struct CmMad {
  MadHeader hdr;
  CmBody body;

  bool operator==(const CmMad&) const = default;
};

AttrId attr_of(const CmBody& body);

// Writes the 256-byte MAD: the header (its attr_id replaced by the body's attribute) and the body; every
// reserved bit is written as 0.
MadBytes encode_mad(const MadHeader& hdr, const CmBody& body);
inline MadBytes encode_mad(const CmMad& m) { return encode_mad(m.hdr, m.body); }

// Validates and decodes a MAD. Never reads outside `bytes`. On an error `out` is left unspecified.
MadError decode_mad(std::span<const uint8_t> bytes, CmMad* out);

// Only the common header (for a receiver that routes on it before decoding the body).
MadError decode_mad_header(std::span<const uint8_t> bytes, MadHeader* out);

// The Transaction ID of a message a CM agent originates (Linux cm_form_tid): the agent's 32-bit high part,
// then the low 32 bits of the local comm ID as the kernel holds it, which is in wire byte order, so on the
// wire the low half of the TID is the comm ID's bytes reversed (golden rxe REQ: comm ID 0x34cfb552, TID
// 0x0000000252b5cf34). Replies reuse the TID of the message they answer.
uint64_t form_tid(uint32_t hi_tid, uint32_t local_comm_id);

// --- CMA private-data header (Linux cma.c struct cma_hdr; IBA Annex A11) ---

constexpr size_t kCmaHdrLen = 36;
constexpr uint8_t kCmaVersion = 0x00;

struct CmaHdr {
  uint8_t cma_version = kCmaVersion;
  uint8_t ip_version = 4;  // 4 or 6: bits 7..4 of byte 1
  uint16_t src_port = 0;   // the active side's port
  // Addresses in GID form: IPv4 ones IPv4-mapped (::ffff:a.b.c.d). On the wire an IPv4 address sits in the
  // last 4 of its 16 bytes with the first 12 zero.
  Gid src_ip{};
  Gid dst_ip{};

  bool operator==(const CmaHdr&) const = default;
};

enum class CmaError : uint8_t { kOk = 0, kTruncated, kBadVersion, kBadIpVersion };

void encode_cma_hdr(const CmaHdr& h, uint8_t* out);  // writes kCmaHdrLen bytes
CmaError decode_cma_hdr(std::span<const uint8_t> bytes, CmaHdr* out);

// Service IDs of the RDMA CM's IP port spaces (rdma_get_service_id: (ps << 16) + port).
constexpr uint64_t kServiceIdPsTcp = 0x0000000001060000ull;
constexpr uint64_t kServiceIdPsUdp = 0x0000000001110000ull;
constexpr uint64_t kServiceIdPsMask = 0xFFFFFFFFFFFF0000ull;

// --- GSI transport: the RoCEv2 frame around a MAD ---

// Header fields of a GSI datagram from `src` to `dst` (GIDs; IPv4-mapped ones give IPv4 frames) as rxe sends
// them: BTH UD SEND only, P_Key 0xFFFF, DestQP 1, AckReq set, MigReq clear; DETH Q_Key 0x80010000, SrcQP 1;
// TTL 64, DSCP 0, DF. The caller fills the Ethernet addresses and may change the IPv4 ID.
wire::PacketHeaders gsi_headers(const Gid& src, const Gid& dst, uint16_t udp_sport, uint32_t psn);

enum class GsiError : uint8_t { kOk = 0, kNotUdSend, kNotQp1, kBadQkey, kBadLength };

// Checks that a parsed frame is a GSI datagram carrying one MAD and returns the MAD's bytes and the sender.
struct GsiDatagram {
  std::span<const uint8_t> mad;
  Gid src{};
  Gid dst{};
  uint32_t src_qp = 0;
  uint16_t pkey = 0;
};
GsiError parse_gsi(const wire::ParsedPacket& pkt, GsiDatagram* out);

}  // namespace uroce::cm
