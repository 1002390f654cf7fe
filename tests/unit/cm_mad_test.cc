// The CM MAD codec: every message against hand-placed bytes (the offsets of IBA ch. 12.6 as Linux's
// ibta_vol1_c12.h places them), round trips, refusal of malformed MADs, the CMA private-data header, and
// the Linux rxe connection of ../shared/golden (REQ, REP, RTU, DREQ, DREP) decoded field by field and
// rebuilt byte for byte, GSI transport included.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/golden.h"
#include "tests/support/pcap_io.h"
#include "transport/cm/mad.h"

namespace uroce::cm {
namespace {

using test::golden_dir;

const uint8_t* body_of(const MadBytes& m) { return m.data() + kMadHdrLen; }

template <size_t N>
std::array<uint8_t, N> pattern(uint8_t seed) {
  std::array<uint8_t, N> a{};
  for (size_t i = 0; i < N; ++i) a[i] = static_cast<uint8_t>(seed + i * 7);
  return a;
}

Gid gid_of(uint8_t first, uint8_t last) {
  Gid g{};
  g[0] = first;
  g[15] = last;
  return g;
}

MadHeader header(uint64_t tid) {
  MadHeader h;
  h.tid = tid;
  return h;
}

// Encodes, checks the header bytes, decodes and compares with the original.
template <typename T>
MadBytes round_trip(const T& x, AttrId attr) {
  const MadBytes m = encode_mad(header(0x0102030405060708ull), x);
  EXPECT_EQ(m[0], 1);
  EXPECT_EQ(m[1], 0x07);
  EXPECT_EQ(m[2], 2);
  EXPECT_EQ(m[3], 0x03);
  EXPECT_EQ(m[8], 0x01);
  EXPECT_EQ(m[15], 0x08);
  EXPECT_EQ(m[16] << 8 | m[17], static_cast<int>(attr));
  CmMad d;
  EXPECT_EQ(decode_mad(m, &d), MadError::kOk);
  EXPECT_EQ(d.hdr.attr_id, static_cast<uint16_t>(attr));
  EXPECT_EQ(d.hdr.tid, 0x0102030405060708ull);
  EXPECT_TRUE(std::holds_alternative<T>(d.body));
  if (std::holds_alternative<T>(d.body)) {
    EXPECT_TRUE(std::get<T>(d.body) == x);
  }
  EXPECT_EQ(encode_mad(d), m);
  return m;
}

TEST(CmMad, ReqFieldsLandWhereTheTableSays) {
  Req r;
  r.local_comm_id = 0xA1B2C3D4;
  r.ece_vendor_id = 0x123456;
  r.service_id = 0x0000000001061D2Full;
  r.local_ca_guid = 0x1122334455667788ull;
  r.local_qkey = 0xCAFEBABE;
  r.local_qpn = 0xABCDEF;
  r.responder_resources = 0x11;
  r.local_eecn = 0x010203;
  r.initiator_depth = 0x22;
  r.remote_eecn = 0x040506;
  r.remote_cm_response_timeout = 20;
  r.transport = CmTransport::kUc;
  r.flow_control = true;
  r.starting_psn = 0x765432;
  r.local_cm_response_timeout = 19;
  r.retry_count = 6;
  r.pkey = 0x8001;
  r.path_mtu = 5;
  r.rdc_exists = true;
  r.rnr_retry_count = 3;
  r.max_cm_retries = 15;
  r.srq = true;
  r.extended_transport = 5;
  r.primary.local_lid = 0xFFFF;
  r.primary.remote_lid = 0xFFFE;
  r.primary.local_gid = gid_of(0xFE, 0x01);
  r.primary.remote_gid = gid_of(0xFD, 0x02);
  r.primary.flow_label = 0xABCDE;
  r.primary.packet_rate = 0x2A;
  r.primary.traffic_class = 0x60;
  r.primary.hop_limit = 64;
  r.primary.sl = 0x9;
  r.primary.subnet_local = true;
  r.primary.local_ack_timeout = 19;
  r.alternate.local_lid = 0x0102;
  r.alternate.hop_limit = 3;
  r.private_data = pattern<kReqPrivateLen>(0x30);
  const MadBytes m = round_trip(r, AttrId::kReq);
  const uint8_t* b = body_of(m);
  EXPECT_EQ(b[0], 0xA1);
  EXPECT_EQ(b[3], 0xD4);
  EXPECT_EQ(b[4], 0x00);
  EXPECT_EQ(b[5], 0x12);
  EXPECT_EQ(b[7], 0x56);
  EXPECT_EQ(b[13], 0x06);
  EXPECT_EQ(b[14], 0x1D);
  EXPECT_EQ(b[15], 0x2F);
  EXPECT_EQ(b[16], 0x11);
  EXPECT_EQ(b[23], 0x88);
  EXPECT_EQ(b[28], 0xCA);
  EXPECT_EQ(b[31], 0xBE);
  EXPECT_EQ(b[32], 0xAB);
  EXPECT_EQ(b[34], 0xEF);
  EXPECT_EQ(b[35], 0x11);
  EXPECT_EQ(b[38], 0x03);
  EXPECT_EQ(b[39], 0x22);
  EXPECT_EQ(b[42], 0x06);
  EXPECT_EQ(b[43], (20 << 3) | (1 << 1) | 1);
  EXPECT_EQ(b[44], 0x76);
  EXPECT_EQ(b[46], 0x32);
  EXPECT_EQ(b[47], (19 << 3) | 6);
  EXPECT_EQ(b[48], 0x80);
  EXPECT_EQ(b[49], 0x01);
  EXPECT_EQ(b[50], (5 << 4) | (1 << 3) | 3);
  EXPECT_EQ(b[51], (15 << 4) | (1 << 3) | 5);
  EXPECT_EQ(b[52], 0xFF);
  EXPECT_EQ(b[55], 0xFE);
  EXPECT_EQ(b[56], 0xFE);
  EXPECT_EQ(b[71], 0x01);
  EXPECT_EQ(b[72], 0xFD);
  EXPECT_EQ(b[87], 0x02);
  EXPECT_EQ(b[88], 0xAB);
  EXPECT_EQ(b[89], 0xCD);
  EXPECT_EQ(b[90], 0xE0);
  EXPECT_EQ(b[91], 0x2A);
  EXPECT_EQ(b[92], 0x60);
  EXPECT_EQ(b[93], 64);
  EXPECT_EQ(b[94], 0x98);
  EXPECT_EQ(b[95], 19 << 3);
  EXPECT_EQ(b[96], 0x01);
  EXPECT_EQ(b[97], 0x02);
  EXPECT_EQ(b[137], 3);
  EXPECT_EQ(b[140], 0x30);
  EXPECT_EQ(b[231], static_cast<uint8_t>(0x30 + 91 * 7));
}

TEST(CmMad, MraRejRepFields) {
  Mra mra;
  mra.local_comm_id = 1;
  mra.remote_comm_id = 0x02030405;
  mra.message_mraed = 1;
  mra.service_timeout = 24;
  mra.private_data = pattern<kMraPrivateLen>(1);
  MadBytes m = round_trip(mra, AttrId::kMra);
  const uint8_t* b = body_of(m);
  EXPECT_EQ(b[3], 1);
  EXPECT_EQ(b[4], 0x02);
  EXPECT_EQ(b[8], 0x40);
  EXPECT_EQ(b[9], 24 << 3);
  EXPECT_EQ(b[10], 1);

  Rej rej;
  rej.local_comm_id = 0;
  rej.remote_comm_id = 0x99887766;
  rej.message_rejected = 2;
  rej.ari_length = 72;
  rej.reason = 28;
  rej.ari = pattern<kRejAriLen>(5);
  rej.private_data = pattern<kRejPrivateLen>(9);
  m = round_trip(rej, AttrId::kRej);
  b = body_of(m);
  EXPECT_EQ(b[4], 0x99);
  EXPECT_EQ(b[8], 0x80);
  EXPECT_EQ(b[9], 72 << 1);
  EXPECT_EQ(b[10], 0);
  EXPECT_EQ(b[11], 28);
  EXPECT_EQ(b[12], 5);
  EXPECT_EQ(b[84], 9);

  Rep rep;
  rep.local_comm_id = 0x0A0B0C0D;
  rep.remote_comm_id = 0x01020304;
  rep.local_qkey = 0x11111111;
  rep.local_qpn = 0x000017;
  rep.ece_vendor_high = 0x55;
  rep.local_eecn = 0x123456;
  rep.starting_psn = 0xFEDCBA;
  rep.responder_resources = 4;
  rep.initiator_depth = 8;
  rep.target_ack_delay = 15;
  rep.failover_accepted = 2;
  rep.flow_control = true;
  rep.rnr_retry_count = 7;
  rep.srq = true;
  rep.local_ca_guid = 0x505400FFFEBF4369ull;
  rep.private_data = pattern<kRepPrivateLen>(3);
  m = round_trip(rep, AttrId::kRep);
  b = body_of(m);
  EXPECT_EQ(b[8], 0x11);
  EXPECT_EQ(b[14], 0x17);
  EXPECT_EQ(b[15], 0x55);
  EXPECT_EQ(b[16], 0x12);
  EXPECT_EQ(b[20], 0xFE);
  EXPECT_EQ(b[22], 0xBA);
  EXPECT_EQ(b[23], 0);
  EXPECT_EQ(b[24], 4);
  EXPECT_EQ(b[25], 8);
  EXPECT_EQ(b[26], (15 << 3) | (2 << 1) | 1);
  EXPECT_EQ(b[27], (7 << 5) | (1 << 4));
  EXPECT_EQ(b[28], 0x50);
  EXPECT_EQ(b[35], 0x69);
  EXPECT_EQ(b[36], 3);
}

TEST(CmMad, RtuDreqDrepSidrFields) {
  Rtu rtu{0x01020304, 0x05060708, pattern<kRtuPrivateLen>(2)};
  MadBytes m = round_trip(rtu, AttrId::kRtu);
  EXPECT_EQ(body_of(m)[4], 0x05);
  EXPECT_EQ(body_of(m)[8], 2);

  Dreq dreq{0x01020304, 0x05060708, 0x00ABCD, pattern<kDreqPrivateLen>(4)};
  m = round_trip(dreq, AttrId::kDreq);
  EXPECT_EQ(body_of(m)[8], 0x00);
  EXPECT_EQ(body_of(m)[9], 0xAB);
  EXPECT_EQ(body_of(m)[10], 0xCD);
  EXPECT_EQ(body_of(m)[11], 0x00);
  EXPECT_EQ(body_of(m)[12], 4);

  Drep drep{0x11, 0x22, pattern<kDrepPrivateLen>(6)};
  m = round_trip(drep, AttrId::kDrep);
  EXPECT_EQ(body_of(m)[3], 0x11);
  EXPECT_EQ(body_of(m)[7], 0x22);

  SidrReq sreq{0xDEADBEEF, 0xFFFF, 0x0000000001111D2Full, pattern<kSidrReqPrivateLen>(8)};
  m = round_trip(sreq, AttrId::kSidrReq);
  EXPECT_EQ(body_of(m)[0], 0xDE);
  EXPECT_EQ(body_of(m)[4], 0xFF);
  EXPECT_EQ(body_of(m)[6], 0x00);
  EXPECT_EQ(body_of(m)[13], 0x11);
  EXPECT_EQ(body_of(m)[16], 8);

  SidrRep srep;
  srep.request_id = 0xDEADBEEF;
  srep.status = 1;
  srep.info_length = 16;
  srep.qpn = 0x123456;
  srep.service_id = 0x0000000001111D2Full;
  srep.qkey = 0x01234567;
  srep.info = pattern<kSidrRepInfoLen>(10);
  srep.private_data = pattern<kSidrRepPrivateLen>(12);
  m = round_trip(srep, AttrId::kSidrRep);
  const uint8_t* b = body_of(m);
  EXPECT_EQ(b[4], 1);
  EXPECT_EQ(b[5], 16);
  EXPECT_EQ(b[8], 0x12);
  EXPECT_EQ(b[10], 0x56);
  EXPECT_EQ(b[11], 0);
  EXPECT_EQ(b[17], 0x11);
  EXPECT_EQ(b[20], 0x01);
  EXPECT_EQ(b[23], 0x67);
  EXPECT_EQ(b[24], 10);
  EXPECT_EQ(b[96], 12);
}

TEST(CmMad, TidLowHalfIsTheCommIdAsTheKernelHoldsIt) {
  EXPECT_EQ(form_tid(2, 0x34cfb552), 0x0000000252b5cf34ull);
}

TEST(CmMad, MalformedMadsAreRefusedWithTheirReason) {
  const MadBytes good = encode_mad(header(1), Rtu{});
  CmMad d;
  EXPECT_EQ(decode_mad(std::span<const uint8_t>(good.data(), 255), &d), MadError::kTruncated);
  EXPECT_EQ(decode_mad(std::span<const uint8_t>(good.data(), 0), &d), MadError::kTruncated);
  std::vector<uint8_t> longer(good.begin(), good.end());
  longer.push_back(0);
  EXPECT_EQ(decode_mad(longer, &d), MadError::kTooLong);
  auto mutate = [&](size_t at, uint8_t v) {
    MadBytes m = good;
    m[at] = v;
    return decode_mad(m, &d);
  };
  EXPECT_EQ(mutate(0, 2), MadError::kBadBaseVersion);
  EXPECT_EQ(mutate(1, 0x04), MadError::kBadClass);
  EXPECT_EQ(mutate(2, 1), MadError::kBadClassVersion);
  EXPECT_EQ(mutate(3, 0x83), MadError::kBadMethod);
  EXPECT_EQ(mutate(3, 0x01), MadError::kBadMethod);
  EXPECT_EQ(mutate(17, 0x01), MadError::kUnknownAttribute);  // ClassPortInfo
  EXPECT_EQ(mutate(17, 0x1B), MadError::kUnknownAttribute);
  EXPECT_EQ(mutate(17, 0x19), MadError::kUnsupportedAttribute);
  EXPECT_EQ(mutate(17, 0x1A), MadError::kUnsupportedAttribute);
  EXPECT_EQ(mutate(16, 0x01), MadError::kUnknownAttribute);

  MadBytes rej = encode_mad(header(1), Rej{});
  rej[kMadHdrLen + 9] = 73 << 1;
  EXPECT_EQ(decode_mad(rej, &d), MadError::kBadField);
  MadBytes srep = encode_mad(header(1), SidrRep{});
  srep[kMadHdrLen + 5] = 73;
  EXPECT_EQ(decode_mad(srep, &d), MadError::kBadField);
  srep[kMadHdrLen + 5] = 72;
  EXPECT_EQ(decode_mad(srep, &d), MadError::kOk);

  // Every error has a name (a receiver's counters are labelled with it).
  for (int e = 0; e < static_cast<int>(MadError::kCount); ++e)
    EXPECT_NE(std::string(mad_error_name(static_cast<MadError>(e))), "?");
}

TEST(CmMad, CmaHeaderIpv4AndIpv6) {
  CmaHdr h;
  h.ip_version = 4;
  h.src_port = 0x93D7;
  h.src_ip = wire::ipv4_mapped(0xC0A84105);
  h.dst_ip = wire::ipv4_mapped(0xC0A84104);
  uint8_t b[kCmaHdrLen];
  encode_cma_hdr(h, b);
  const uint8_t want4[kCmaHdrLen] = {0x00, 0x40, 0x93, 0xD7, 0,    0,    0,    0,    0,    0,    0,    0,
                                     0,    0,    0,    0,    0xC0, 0xA8, 0x41, 0x05, 0,    0,    0,    0,
                                     0,    0,    0,    0,    0,    0,    0,    0,    0xC0, 0xA8, 0x41, 0x04};
  EXPECT_EQ(std::vector<uint8_t>(b, b + kCmaHdrLen), std::vector<uint8_t>(want4, want4 + kCmaHdrLen));
  CmaHdr d;
  ASSERT_EQ(decode_cma_hdr(std::span<const uint8_t>(b, kCmaHdrLen), &d), CmaError::kOk);
  EXPECT_TRUE(d == h);

  h.ip_version = 6;
  h.src_ip = gid_of(0xFE, 0x11);
  h.dst_ip = gid_of(0xFE, 0x22);
  encode_cma_hdr(h, b);
  EXPECT_EQ(b[1], 0x60);
  EXPECT_EQ(b[4], 0xFE);
  EXPECT_EQ(b[19], 0x11);
  EXPECT_EQ(b[35], 0x22);
  ASSERT_EQ(decode_cma_hdr(std::span<const uint8_t>(b, kCmaHdrLen), &d), CmaError::kOk);
  EXPECT_TRUE(d == h);

  EXPECT_EQ(decode_cma_hdr(std::span<const uint8_t>(b, kCmaHdrLen - 1), &d), CmaError::kTruncated);
  b[1] = 0x50;
  EXPECT_EQ(decode_cma_hdr(std::span<const uint8_t>(b, kCmaHdrLen), &d), CmaError::kBadIpVersion);
  b[1] = 0x40;
  b[0] = 0x10;
  EXPECT_EQ(decode_cma_hdr(std::span<const uint8_t>(b, kCmaHdrLen), &d), CmaError::kBadVersion);
}

// --- the golden rxe connections ---

#define REQUIRE_GOLDEN()                                           \
  if (golden_dir().empty())                                        \
  GTEST_SKIP() << "golden captures not found beside the checkout " \
                  "(set UROCE_GOLDEN_DIR to ../shared/golden)"

struct GoldenConn {
  std::string file;
  int frames[5];  // REQ, REP, RTU, DREQ, DREP (1-based frame numbers)
  uint64_t tid;
  uint32_t active_comm_id, passive_comm_id;
  uint32_t active_qpn, passive_qpn;
  uint32_t active_psn, passive_psn;
  uint64_t active_guid, passive_guid;
  uint32_t active_ip, passive_ip;
  uint32_t flow_label;
  uint16_t src_port;
  uint32_t bth_psn[5];
};

const GoldenConn kGolden[] = {
    {"montybeatnik_rdma-roce-lab__roce_capture_read-write-ecn.pcap",
     {1, 2, 3, 11, 12},
     0x0000000252b5cf34ull,
     0x34cfb552,
     0xa980e2d3,
     0x11,
     0x11,
     0xe1a47d,
     0x8c84dd,
     0x505400fffe0aaabaull,
     0x505400fffebf4369ull,
     0xC0A84105,
     0xC0A84104,
     0x20438,
     0x93d7,
     {0x41, 0x37, 0x42, 0x43, 0x38}},
    {"montybeatnik_rdma-roce-lab__test.pcap",
     {1, 2, 3, 11, 16},
     0x00000002b90866acull,
     0xac6608b9,
     0xc8577fdb,
     0x17,
     0x11,
     0x89bb0e,
     0xc23298,
     0x505400fffedaf92dull,
     0x505400fffe8b2d12ull,
     0xC0A80219,
     0xC0A80218,
     0x3a126,
     0xa129,
     {0x52, 0x2d, 0x53, 0x54, 0x2e}},
};

TEST(CmMadGolden, RxeConnectionDecodesFieldByFieldAndRebuildsExactly) {
  REQUIRE_GOLDEN();
  for (const GoldenConn& g : kGolden) {
    SCOPED_TRACE(g.file);
    const test::PcapFile pcap = test::read_pcap(golden_dir() + "/" + g.file);
    CmMad msgs[5];
    for (int i = 0; i < 5; ++i) {
      SCOPED_TRACE("frame " + std::to_string(g.frames[i]));
      const auto& bytes = pcap.frames.at(static_cast<size_t>(g.frames[i] - 1)).bytes;
      wire::ParsedPacket pkt;
      ASSERT_EQ(wire::parse_frame(bytes.data(), bytes.size(), &pkt), wire::RxDrop::kNone);
      GsiDatagram gsi;
      ASSERT_EQ(parse_gsi(pkt, &gsi), GsiError::kOk);
      EXPECT_EQ(gsi.src_qp, kGsiQpn);
      EXPECT_EQ(gsi.pkey, 0xFFFF);
      const bool from_active = i == 0 || i == 2 || i == 3;
      EXPECT_EQ(gsi.src, wire::ipv4_mapped(from_active ? g.active_ip : g.passive_ip));
      ASSERT_EQ(decode_mad(gsi.mad, &msgs[i]), MadError::kOk);
      EXPECT_EQ(msgs[i].hdr.tid, g.tid);
      EXPECT_EQ(msgs[i].hdr.status, 0);
      EXPECT_EQ(msgs[i].hdr.attr_mod, 0u);
      // The MAD rebuilds byte for byte from its fields ...
      const MadBytes again = encode_mad(msgs[i]);
      EXPECT_TRUE(std::equal(again.begin(), again.end(), gsi.mad.begin()));
      // ... and so does the whole frame around it from gsi_headers (Ethernet and IPv4 ID taken from it).
      const wire::PacketHeaders seen = wire::decode_headers(pkt);
      wire::PacketHeaders h = gsi_headers(gsi.src, gsi.dst, seen.udp_sport, g.bth_psn[i]);
      EXPECT_EQ(seen.udp_sport, 55410);
      h.eth = seen.eth;
      h.ip.ipv4_id = seen.ip.ipv4_id;
      std::vector<uint8_t> frame(wire::headers_len(h) + kMadLen + wire::trailer_len(kMadLen));
      frame.resize(wire::build_frame(h, wire::ConstBytes(again.data(), again.size()), frame.data()));
      EXPECT_EQ(frame, std::vector<uint8_t>(bytes.begin(), bytes.begin() + pkt.frame_len));
    }
    ASSERT_TRUE(std::holds_alternative<Req>(msgs[0].body));
    const Req& req = std::get<Req>(msgs[0].body);
    EXPECT_EQ(req.local_comm_id, g.active_comm_id);
    EXPECT_EQ(form_tid(2, req.local_comm_id), g.tid);
    EXPECT_EQ(req.service_id, 0x0000000001061d2full);  // RDMA_PS_TCP, port 7471
    EXPECT_EQ(req.local_ca_guid, g.active_guid);
    EXPECT_EQ(req.local_qkey, 0u);
    EXPECT_EQ(req.local_qpn, g.active_qpn);
    EXPECT_EQ(req.responder_resources, 1);
    EXPECT_EQ(req.initiator_depth, 1);
    EXPECT_EQ(req.remote_cm_response_timeout, 20);
    EXPECT_EQ(req.local_cm_response_timeout, 20);
    EXPECT_EQ(req.transport, CmTransport::kRc);
    EXPECT_FALSE(req.flow_control);
    EXPECT_EQ(req.starting_psn, g.active_psn);
    EXPECT_EQ(req.retry_count, 7);
    EXPECT_EQ(req.rnr_retry_count, 7);
    EXPECT_EQ(req.max_cm_retries, 15);
    EXPECT_EQ(req.path_mtu, 3);
    EXPECT_EQ(req.pkey, 0xFFFF);
    EXPECT_FALSE(req.srq);
    EXPECT_EQ(req.primary.local_lid, 0xFFFF);
    EXPECT_EQ(req.primary.remote_lid, 0xFFFF);
    EXPECT_EQ(req.primary.local_gid, wire::ipv4_mapped(g.active_ip));
    EXPECT_EQ(req.primary.remote_gid, wire::ipv4_mapped(g.passive_ip));
    EXPECT_EQ(req.primary.flow_label, g.flow_label);
    EXPECT_EQ(req.primary.traffic_class, 0);
    EXPECT_EQ(req.primary.hop_limit, 64);
    EXPECT_EQ(req.primary.sl, 0);
    EXPECT_FALSE(req.primary.subnet_local);
    EXPECT_EQ(req.primary.local_ack_timeout, 19);
    EXPECT_TRUE(req.alternate == CmPath{});
    CmaHdr cma;
    ASSERT_EQ(decode_cma_hdr(req.private_data, &cma), CmaError::kOk);
    EXPECT_EQ(cma.ip_version, 4);
    EXPECT_EQ(cma.src_port, g.src_port);
    EXPECT_EQ(cma.src_ip, wire::ipv4_mapped(g.active_ip));
    EXPECT_EQ(cma.dst_ip, wire::ipv4_mapped(g.passive_ip));

    ASSERT_TRUE(std::holds_alternative<Rep>(msgs[1].body));
    const Rep& rep = std::get<Rep>(msgs[1].body);
    EXPECT_EQ(rep.local_comm_id, g.passive_comm_id);
    EXPECT_EQ(rep.remote_comm_id, g.active_comm_id);
    EXPECT_EQ(rep.local_qpn, g.passive_qpn);
    EXPECT_EQ(rep.starting_psn, g.passive_psn);
    EXPECT_EQ(rep.responder_resources, 1);
    EXPECT_EQ(rep.initiator_depth, 1);
    EXPECT_EQ(rep.target_ack_delay, 15);
    EXPECT_EQ(rep.failover_accepted, 0);
    EXPECT_EQ(rep.rnr_retry_count, 7);
    EXPECT_EQ(rep.local_ca_guid, g.passive_guid);

    ASSERT_TRUE(std::holds_alternative<Rtu>(msgs[2].body));
    EXPECT_EQ(std::get<Rtu>(msgs[2].body).local_comm_id, g.active_comm_id);
    EXPECT_EQ(std::get<Rtu>(msgs[2].body).remote_comm_id, g.passive_comm_id);
    ASSERT_TRUE(std::holds_alternative<Dreq>(msgs[3].body));
    const Dreq& dreq = std::get<Dreq>(msgs[3].body);
    EXPECT_EQ(dreq.local_comm_id, g.active_comm_id);
    EXPECT_EQ(dreq.remote_comm_id, g.passive_comm_id);
    EXPECT_EQ(dreq.remote_qpn, g.passive_qpn);
    ASSERT_TRUE(std::holds_alternative<Drep>(msgs[4].body));
    EXPECT_EQ(std::get<Drep>(msgs[4].body).local_comm_id, g.passive_comm_id);
    EXPECT_EQ(std::get<Drep>(msgs[4].body).remote_comm_id, g.active_comm_id);
  }
}

TEST(CmMadGolden, NonGsiFramesAreNotTakenForMads) {
  REQUIRE_GOLDEN();
  const test::PcapFile pcap = test::read_pcap(golden_dir() + "/montybeatnik_rdma-roce-lab__test.pcap");
  const auto& bytes = pcap.frames.at(3).bytes;  // RC RDMA WRITE only
  wire::ParsedPacket pkt;
  ASSERT_EQ(wire::parse_frame(bytes.data(), bytes.size(), &pkt), wire::RxDrop::kNone);
  GsiDatagram gsi;
  EXPECT_EQ(parse_gsi(pkt, &gsi), GsiError::kNotUdSend);
}

}  // namespace
}  // namespace uroce::cm
