#include "transport/cm/mad.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace uroce::cm {
namespace {

// A field of `width` bits that starts at bit `bit` (0 = most significant) of byte `byte`; it may span up to
// eight bytes. This is how the IBA CM tables (and Linux's CM_FIELD*_LOC) place every field.
uint64_t get_bits(const uint8_t* p, size_t byte, unsigned bit, unsigned width) {
  const unsigned nbytes = (bit + width + 7) / 8;
  uint64_t v = 0;
  for (unsigned i = 0; i < nbytes; ++i) v = v << 8 | p[byte + i];
  v >>= nbytes * 8 - bit - width;
  return width == 64 ? v : v & ((uint64_t{1} << width) - 1);
}

void set_bits(uint8_t* p, size_t byte, unsigned bit, unsigned width, uint64_t value) {
  const unsigned nbytes = (bit + width + 7) / 8;
  const unsigned shift = nbytes * 8 - bit - width;
  const uint64_t mask = (width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1) << shift;
  uint64_t v = 0;
  for (unsigned i = 0; i < nbytes; ++i) v = v << 8 | p[byte + i];
  v = (v & ~mask) | ((value << shift) & mask);
  for (unsigned i = 0; i < nbytes; ++i) p[byte + nbytes - 1 - i] = static_cast<uint8_t>(v >> (8 * i));
}

// Whole-byte fields.
uint64_t get_be(const uint8_t* p, size_t byte, unsigned bytes) { return get_bits(p, byte, 0, bytes * 8); }
void set_be(uint8_t* p, size_t byte, unsigned bytes, uint64_t v) { set_bits(p, byte, 0, bytes * 8, v); }

template <size_t N>
void get_arr(const uint8_t* p, size_t byte, std::array<uint8_t, N>& a) {
  std::memcpy(a.data(), p + byte, N);
}
template <size_t N>
void set_arr(uint8_t* p, size_t byte, const std::array<uint8_t, N>& a) {
  std::memcpy(p + byte, a.data(), N);
}

// The 44-byte path record of REQ (IBA table 99, bytes 52..95 for the primary path).
void get_path(const uint8_t* b, size_t o, CmPath& x) {
  x.local_lid = static_cast<uint16_t>(get_be(b, o + 0, 2));
  x.remote_lid = static_cast<uint16_t>(get_be(b, o + 2, 2));
  get_arr(b, o + 4, x.local_gid);
  get_arr(b, o + 20, x.remote_gid);
  x.flow_label = static_cast<uint32_t>(get_bits(b, o + 36, 0, 20));
  x.packet_rate = static_cast<uint8_t>(get_bits(b, o + 39, 2, 6));
  x.traffic_class = b[o + 40];
  x.hop_limit = b[o + 41];
  x.sl = static_cast<uint8_t>(get_bits(b, o + 42, 0, 4));
  x.subnet_local = get_bits(b, o + 42, 4, 1);
  x.local_ack_timeout = static_cast<uint8_t>(get_bits(b, o + 43, 0, 5));
}
void set_path(uint8_t* b, size_t o, const CmPath& x) {
  set_be(b, o + 0, 2, x.local_lid);
  set_be(b, o + 2, 2, x.remote_lid);
  set_arr(b, o + 4, x.local_gid);
  set_arr(b, o + 20, x.remote_gid);
  set_bits(b, o + 36, 0, 20, x.flow_label);
  set_bits(b, o + 39, 2, 6, x.packet_rate);
  b[o + 40] = x.traffic_class;
  b[o + 41] = x.hop_limit;
  set_bits(b, o + 42, 0, 4, x.sl);
  set_bits(b, o + 42, 4, 1, x.subnet_local);
  set_bits(b, o + 43, 0, 5, x.local_ack_timeout);
}

// --- bodies: one get/put pair per message, offsets from the body start (MAD byte 24) ---

void get(const uint8_t* b, Req& x) {
  x.local_comm_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.ece_vendor_id = static_cast<uint32_t>(get_be(b, 5, 3));
  x.service_id = get_be(b, 8, 8);
  x.local_ca_guid = get_be(b, 16, 8);
  x.local_qkey = static_cast<uint32_t>(get_be(b, 28, 4));
  x.local_qpn = static_cast<uint32_t>(get_be(b, 32, 3));
  x.responder_resources = b[35];
  x.local_eecn = static_cast<uint32_t>(get_be(b, 36, 3));
  x.initiator_depth = b[39];
  x.remote_eecn = static_cast<uint32_t>(get_be(b, 40, 3));
  x.remote_cm_response_timeout = static_cast<uint8_t>(get_bits(b, 43, 0, 5));
  x.transport = static_cast<CmTransport>(get_bits(b, 43, 5, 2));
  x.flow_control = get_bits(b, 43, 7, 1);
  x.starting_psn = static_cast<uint32_t>(get_be(b, 44, 3));
  x.local_cm_response_timeout = static_cast<uint8_t>(get_bits(b, 47, 0, 5));
  x.retry_count = static_cast<uint8_t>(get_bits(b, 47, 5, 3));
  x.pkey = static_cast<uint16_t>(get_be(b, 48, 2));
  x.path_mtu = static_cast<uint8_t>(get_bits(b, 50, 0, 4));
  x.rdc_exists = get_bits(b, 50, 4, 1);
  x.rnr_retry_count = static_cast<uint8_t>(get_bits(b, 50, 5, 3));
  x.max_cm_retries = static_cast<uint8_t>(get_bits(b, 51, 0, 4));
  x.srq = get_bits(b, 51, 4, 1);
  x.extended_transport = static_cast<uint8_t>(get_bits(b, 51, 5, 3));
  get_path(b, 52, x.primary);
  get_path(b, 96, x.alternate);
  get_arr(b, 140, x.private_data);
}
void put(uint8_t* b, const Req& x) {
  set_be(b, 0, 4, x.local_comm_id);
  set_be(b, 5, 3, x.ece_vendor_id);
  set_be(b, 8, 8, x.service_id);
  set_be(b, 16, 8, x.local_ca_guid);
  set_be(b, 28, 4, x.local_qkey);
  set_be(b, 32, 3, x.local_qpn);
  b[35] = x.responder_resources;
  set_be(b, 36, 3, x.local_eecn);
  b[39] = x.initiator_depth;
  set_be(b, 40, 3, x.remote_eecn);
  set_bits(b, 43, 0, 5, x.remote_cm_response_timeout);
  set_bits(b, 43, 5, 2, static_cast<uint8_t>(x.transport));
  set_bits(b, 43, 7, 1, x.flow_control);
  set_be(b, 44, 3, x.starting_psn);
  set_bits(b, 47, 0, 5, x.local_cm_response_timeout);
  set_bits(b, 47, 5, 3, x.retry_count);
  set_be(b, 48, 2, x.pkey);
  set_bits(b, 50, 0, 4, x.path_mtu);
  set_bits(b, 50, 4, 1, x.rdc_exists);
  set_bits(b, 50, 5, 3, x.rnr_retry_count);
  set_bits(b, 51, 0, 4, x.max_cm_retries);
  set_bits(b, 51, 4, 1, x.srq);
  set_bits(b, 51, 5, 3, x.extended_transport);
  set_path(b, 52, x.primary);
  set_path(b, 96, x.alternate);
  set_arr(b, 140, x.private_data);
}

void get(const uint8_t* b, Mra& x) {
  x.local_comm_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.remote_comm_id = static_cast<uint32_t>(get_be(b, 4, 4));
  x.message_mraed = static_cast<uint8_t>(get_bits(b, 8, 0, 2));
  x.service_timeout = static_cast<uint8_t>(get_bits(b, 9, 0, 5));
  get_arr(b, 10, x.private_data);
}
void put(uint8_t* b, const Mra& x) {
  set_be(b, 0, 4, x.local_comm_id);
  set_be(b, 4, 4, x.remote_comm_id);
  set_bits(b, 8, 0, 2, x.message_mraed);
  set_bits(b, 9, 0, 5, x.service_timeout);
  set_arr(b, 10, x.private_data);
}

void get(const uint8_t* b, Rej& x) {
  x.local_comm_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.remote_comm_id = static_cast<uint32_t>(get_be(b, 4, 4));
  x.message_rejected = static_cast<uint8_t>(get_bits(b, 8, 0, 2));
  x.ari_length = static_cast<uint8_t>(get_bits(b, 9, 0, 7));
  x.reason = static_cast<uint16_t>(get_be(b, 10, 2));
  get_arr(b, 12, x.ari);
  get_arr(b, 84, x.private_data);
}
void put(uint8_t* b, const Rej& x) {
  set_be(b, 0, 4, x.local_comm_id);
  set_be(b, 4, 4, x.remote_comm_id);
  set_bits(b, 8, 0, 2, x.message_rejected);
  set_bits(b, 9, 0, 7, x.ari_length);
  set_be(b, 10, 2, x.reason);
  set_arr(b, 12, x.ari);
  set_arr(b, 84, x.private_data);
}

void get(const uint8_t* b, Rep& x) {
  x.local_comm_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.remote_comm_id = static_cast<uint32_t>(get_be(b, 4, 4));
  x.local_qkey = static_cast<uint32_t>(get_be(b, 8, 4));
  x.local_qpn = static_cast<uint32_t>(get_be(b, 12, 3));
  x.ece_vendor_high = b[15];
  x.local_eecn = static_cast<uint32_t>(get_be(b, 16, 3));
  x.starting_psn = static_cast<uint32_t>(get_be(b, 20, 3));
  x.responder_resources = b[24];
  x.initiator_depth = b[25];
  x.target_ack_delay = static_cast<uint8_t>(get_bits(b, 26, 0, 5));
  x.failover_accepted = static_cast<uint8_t>(get_bits(b, 26, 5, 2));
  x.flow_control = get_bits(b, 26, 7, 1);
  x.rnr_retry_count = static_cast<uint8_t>(get_bits(b, 27, 0, 3));
  x.srq = get_bits(b, 27, 3, 1);
  x.local_ca_guid = get_be(b, 28, 8);
  get_arr(b, 36, x.private_data);
}
void put(uint8_t* b, const Rep& x) {
  set_be(b, 0, 4, x.local_comm_id);
  set_be(b, 4, 4, x.remote_comm_id);
  set_be(b, 8, 4, x.local_qkey);
  set_be(b, 12, 3, x.local_qpn);
  b[15] = x.ece_vendor_high;
  set_be(b, 16, 3, x.local_eecn);
  set_be(b, 20, 3, x.starting_psn);
  b[24] = x.responder_resources;
  b[25] = x.initiator_depth;
  set_bits(b, 26, 0, 5, x.target_ack_delay);
  set_bits(b, 26, 5, 2, x.failover_accepted);
  set_bits(b, 26, 7, 1, x.flow_control);
  set_bits(b, 27, 0, 3, x.rnr_retry_count);
  set_bits(b, 27, 3, 1, x.srq);
  set_be(b, 28, 8, x.local_ca_guid);
  set_arr(b, 36, x.private_data);
}

// RTU and DREP share a layout: two comm IDs and 224 bytes of private data.
template <typename T>
void get_two_ids(const uint8_t* b, T& x) {
  x.local_comm_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.remote_comm_id = static_cast<uint32_t>(get_be(b, 4, 4));
  get_arr(b, 8, x.private_data);
}
template <typename T>
void put_two_ids(uint8_t* b, const T& x) {
  set_be(b, 0, 4, x.local_comm_id);
  set_be(b, 4, 4, x.remote_comm_id);
  set_arr(b, 8, x.private_data);
}
void get(const uint8_t* b, Rtu& x) { get_two_ids(b, x); }
void put(uint8_t* b, const Rtu& x) { put_two_ids(b, x); }
void get(const uint8_t* b, Drep& x) { get_two_ids(b, x); }
void put(uint8_t* b, const Drep& x) { put_two_ids(b, x); }

void get(const uint8_t* b, Dreq& x) {
  x.local_comm_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.remote_comm_id = static_cast<uint32_t>(get_be(b, 4, 4));
  x.remote_qpn = static_cast<uint32_t>(get_be(b, 8, 3));
  get_arr(b, 12, x.private_data);
}
void put(uint8_t* b, const Dreq& x) {
  set_be(b, 0, 4, x.local_comm_id);
  set_be(b, 4, 4, x.remote_comm_id);
  set_be(b, 8, 3, x.remote_qpn);
  set_arr(b, 12, x.private_data);
}

void get(const uint8_t* b, SidrReq& x) {
  x.request_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.pkey = static_cast<uint16_t>(get_be(b, 4, 2));
  x.service_id = get_be(b, 8, 8);
  get_arr(b, 16, x.private_data);
}
void put(uint8_t* b, const SidrReq& x) {
  set_be(b, 0, 4, x.request_id);
  set_be(b, 4, 2, x.pkey);
  set_be(b, 8, 8, x.service_id);
  set_arr(b, 16, x.private_data);
}

void get(const uint8_t* b, SidrRep& x) {
  x.request_id = static_cast<uint32_t>(get_be(b, 0, 4));
  x.status = b[4];
  x.info_length = b[5];
  x.qpn = static_cast<uint32_t>(get_be(b, 8, 3));
  x.service_id = get_be(b, 12, 8);
  x.qkey = static_cast<uint32_t>(get_be(b, 20, 4));
  get_arr(b, 24, x.info);
  get_arr(b, 96, x.private_data);
}
void put(uint8_t* b, const SidrRep& x) {
  set_be(b, 0, 4, x.request_id);
  b[4] = x.status;
  b[5] = x.info_length;
  set_be(b, 8, 3, x.qpn);
  set_be(b, 12, 8, x.service_id);
  set_be(b, 20, 4, x.qkey);
  set_arr(b, 24, x.info);
  set_arr(b, 96, x.private_data);
}

template <typename T>
constexpr AttrId attr_for() {
  if constexpr (std::is_same_v<T, Req>) return AttrId::kReq;
  if constexpr (std::is_same_v<T, Mra>) return AttrId::kMra;
  if constexpr (std::is_same_v<T, Rej>) return AttrId::kRej;
  if constexpr (std::is_same_v<T, Rep>) return AttrId::kRep;
  if constexpr (std::is_same_v<T, Rtu>) return AttrId::kRtu;
  if constexpr (std::is_same_v<T, Dreq>) return AttrId::kDreq;
  if constexpr (std::is_same_v<T, Drep>) return AttrId::kDrep;
  if constexpr (std::is_same_v<T, SidrReq>) return AttrId::kSidrReq;
  if constexpr (std::is_same_v<T, SidrRep>) return AttrId::kSidrRep;
}

template <typename T>
void decode_as(const uint8_t* body, CmBody* out) {
  T x;
  get(body, x);
  *out = x;
}

}  // namespace

const char* mad_error_name(MadError e) {
  switch (e) {
    case MadError::kOk:
      return "ok";
    case MadError::kTruncated:
      return "truncated";
    case MadError::kTooLong:
      return "too_long";
    case MadError::kBadBaseVersion:
      return "bad_base_version";
    case MadError::kBadClass:
      return "bad_class";
    case MadError::kBadClassVersion:
      return "bad_class_version";
    case MadError::kBadMethod:
      return "bad_method";
    case MadError::kUnknownAttribute:
      return "unknown_attribute";
    case MadError::kUnsupportedAttribute:
      return "unsupported_attribute";
    case MadError::kBadField:
      return "bad_field";
    case MadError::kCount:
      break;
  }
  return "?";
}

AttrId attr_of(const CmBody& body) {
  return std::visit([](const auto& x) { return attr_for<std::decay_t<decltype(x)>>(); }, body);
}

uint64_t form_tid(uint32_t hi_tid, uint32_t local_comm_id) {
  return uint64_t{hi_tid} << 32 | __builtin_bswap32(local_comm_id);
}

MadBytes encode_mad(const MadHeader& hdr, const CmBody& body) {
  MadBytes m{};
  uint8_t* p = m.data();
  p[0] = hdr.base_version;
  p[1] = hdr.mgmt_class;
  p[2] = hdr.class_version;
  p[3] = hdr.method;
  set_be(p, 4, 2, hdr.status);
  set_be(p, 6, 2, hdr.class_specific);
  set_be(p, 8, 8, hdr.tid);
  set_be(p, 16, 2, static_cast<uint16_t>(attr_of(body)));
  set_be(p, 18, 2, hdr.resv);
  set_be(p, 20, 4, hdr.attr_mod);
  std::visit([p](const auto& x) { put(p + kMadHdrLen, x); }, body);
  return m;
}

MadError decode_mad_header(std::span<const uint8_t> bytes, MadHeader* out) {
  if (bytes.size() < kMadLen) return MadError::kTruncated;
  if (bytes.size() > kMadLen) return MadError::kTooLong;
  const uint8_t* p = bytes.data();
  MadHeader h;
  h.base_version = p[0];
  h.mgmt_class = p[1];
  h.class_version = p[2];
  h.method = p[3];
  h.status = static_cast<uint16_t>(get_be(p, 4, 2));
  h.class_specific = static_cast<uint16_t>(get_be(p, 6, 2));
  h.tid = get_be(p, 8, 8);
  h.attr_id = static_cast<uint16_t>(get_be(p, 16, 2));
  h.resv = static_cast<uint16_t>(get_be(p, 18, 2));
  h.attr_mod = static_cast<uint32_t>(get_be(p, 20, 4));
  *out = h;
  if (h.base_version != kMadBaseVersion) return MadError::kBadBaseVersion;
  if (h.mgmt_class != kMgmtClassCm) return MadError::kBadClass;
  if (h.class_version != kCmClassVersion) return MadError::kBadClassVersion;
  if (h.method != kMadMethodSend) return MadError::kBadMethod;
  return MadError::kOk;
}

MadError decode_mad(std::span<const uint8_t> bytes, CmMad* out) {
  const MadError e = decode_mad_header(bytes, &out->hdr);
  if (e != MadError::kOk) return e;
  const uint8_t* body = bytes.data() + kMadHdrLen;
  switch (static_cast<AttrId>(out->hdr.attr_id)) {
    case AttrId::kReq:
      decode_as<Req>(body, &out->body);
      break;
    case AttrId::kMra:
      decode_as<Mra>(body, &out->body);
      break;
    case AttrId::kRej:
      decode_as<Rej>(body, &out->body);
      if (std::get<Rej>(out->body).ari_length > kRejAriLen) return MadError::kBadField;
      break;
    case AttrId::kRep:
      decode_as<Rep>(body, &out->body);
      break;
    case AttrId::kRtu:
      decode_as<Rtu>(body, &out->body);
      break;
    case AttrId::kDreq:
      decode_as<Dreq>(body, &out->body);
      break;
    case AttrId::kDrep:
      decode_as<Drep>(body, &out->body);
      break;
    case AttrId::kSidrReq:
      decode_as<SidrReq>(body, &out->body);
      break;
    case AttrId::kSidrRep:
      decode_as<SidrRep>(body, &out->body);
      if (std::get<SidrRep>(out->body).info_length > kSidrRepInfoLen) return MadError::kBadField;
      break;
    case AttrId::kLap:
    case AttrId::kApr:
      return MadError::kUnsupportedAttribute;
    default:
      return MadError::kUnknownAttribute;
  }
  return MadError::kOk;
}

// --- CMA header ---

namespace {
bool is_ipv4_mapped(const Gid& g) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  return std::memcmp(g.data(), kPrefix, sizeof(kPrefix)) == 0;
}
void put_cma_ip(uint8_t* out, uint8_t ip_version, const Gid& g) {
  if (ip_version == 4) {
    std::memset(out, 0, 12);
    std::memcpy(out + 12, g.data() + 12, 4);
  } else {
    std::memcpy(out, g.data(), 16);
  }
}
Gid get_cma_ip(const uint8_t* in, uint8_t ip_version) {
  Gid g{};
  if (ip_version == 4) return wire::ipv4_mapped(static_cast<uint32_t>(get_be(in, 12, 4)));
  std::memcpy(g.data(), in, 16);
  return g;
}
}  // namespace

void encode_cma_hdr(const CmaHdr& h, uint8_t* out) {
  out[0] = h.cma_version;
  out[1] = static_cast<uint8_t>(h.ip_version << 4);
  set_be(out, 2, 2, h.src_port);
  put_cma_ip(out + 4, h.ip_version, h.src_ip);
  put_cma_ip(out + 20, h.ip_version, h.dst_ip);
}

CmaError decode_cma_hdr(std::span<const uint8_t> bytes, CmaHdr* out) {
  if (bytes.size() < kCmaHdrLen) return CmaError::kTruncated;
  const uint8_t* p = bytes.data();
  // Linux cma_save_ip_info: a version other than 0.0 is refused; the IP version selects the address layout.
  if (p[0] != kCmaVersion) return CmaError::kBadVersion;
  const uint8_t ipv = p[1] >> 4;
  if (ipv != 4 && ipv != 6) return CmaError::kBadIpVersion;
  out->cma_version = p[0];
  out->ip_version = ipv;
  out->src_port = static_cast<uint16_t>(get_be(p, 2, 2));
  out->src_ip = get_cma_ip(p + 4, ipv);
  out->dst_ip = get_cma_ip(p + 20, ipv);
  return CmaError::kOk;
}

// --- GSI ---

wire::PacketHeaders gsi_headers(const Gid& src, const Gid& dst, uint16_t udp_sport, uint32_t psn) {
  wire::PacketHeaders h;
  h.ip.ipv6 = !(is_ipv4_mapped(src) && is_ipv4_mapped(dst));
  h.ip.src = src;
  h.ip.dst = dst;
  h.ip.ttl = 64;
  h.udp_sport = udp_sport;
  h.bth.opcode = wire::op::kUdSendOnly;
  h.bth.migreq = false;  // as rxe's QP1 sends them (golden REQ: BTH flags 0x00)
  h.bth.pkey = kDefaultPkey;
  h.bth.dqpn = kGsiQpn;
  h.bth.ackreq = true;
  h.bth.psn = psn & 0xFFFFFF;
  h.deth.qkey = kGsiQkey;
  h.deth.src_qp = kGsiQpn;
  return h;
}

GsiError parse_gsi(const wire::ParsedPacket& pkt, GsiDatagram* out) {
  if (pkt.opcode != wire::op::kUdSendOnly) return GsiError::kNotUdSend;
  if (wire::bth_dqpn(pkt.bth()) != kGsiQpn) return GsiError::kNotQp1;
  // Every GSI datagram carries the well-known GSI Q_Key.
  if (pkt.deth().qkey.get() != kGsiQkey) return GsiError::kBadQkey;
  if (pkt.payload_len != kMadLen) return GsiError::kBadLength;
  out->mad = std::span<const uint8_t>(pkt.payload(), pkt.payload_len);
  out->src = pkt.ip_src();
  out->dst = pkt.ip_dst();
  out->src_qp = pkt.deth().src_qp.get();
  out->pkey = wire::bth_pkey(pkt.bth());
  return GsiError::kOk;
}

}  // namespace uroce::cm
