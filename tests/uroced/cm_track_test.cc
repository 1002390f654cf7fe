// uroced's table of the CM connections it forwards (tools/uroced/cm_track.h): which exchanges open, move and
// end an entry, and what it sends for a process that died in each state, checked by decoding the frames.
#include <gtest/gtest.h>

#include <vector>

#include "tools/uroced/cm_track.h"
#include "transport/cm/cm.h"
#include "transport/wire/address.h"

namespace uroce::uroced {
namespace {

const cm::Gid kA = wire::ipv4_mapped(0x7F010001), kB = wire::ipv4_mapped(0x7F010002);
constexpr uint32_t kCommA = 0x11111111, kCommB = 0x22222222, kQpnA = 0x12, kQpnB = 0x34;
constexpr uint64_t kGuidA = 0x0200000000000001ull;

std::vector<uint8_t> gsi(const cm::Gid& src, const cm::Gid& dst, const cm::CmBody& body, uint64_t tid = 7) {
  wire::PacketHeaders h = cm::gsi_headers(src, dst, 0xC000, 0);
  h.eth.src = wire::mac_for_gid(src);
  h.eth.dst = wire::mac_for_gid(dst);
  cm::MadHeader hdr;
  hdr.tid = tid;
  const cm::MadBytes mad = cm::encode_mad(hdr, body);
  std::vector<uint8_t> f(wire::headers_len(h) + mad.size() + wire::trailer_len(mad.size()));
  f.resize(wire::build_frame(h, mad, f.data()));
  return f;
}

void see(CmTracker& t, const std::vector<uint8_t>& f) {
  ASSERT_TRUE(is_gsi_frame(f.data(), f.size()));
  t.observe(f.data(), f.size(), 1);
}

cm::Req req() {
  cm::Req r;
  r.local_comm_id = kCommA;
  r.local_qpn = kQpnA;
  r.local_ca_guid = kGuidA;
  r.service_id = cm::kServiceIdPsTcp + 7174;
  return r;
}
cm::Rep rep() {
  cm::Rep r;
  r.local_comm_id = kCommB;
  r.remote_comm_id = kCommA;
  r.local_qpn = kQpnB;
  return r;
}
cm::Rtu rtu() {
  cm::Rtu r;
  r.local_comm_id = kCommA;
  r.remote_comm_id = kCommB;
  return r;
}

// REQ, REP and RTU between A (active) and B go by: an established connection.
void establish(CmTracker& t) {
  see(t, gsi(kA, kB, req()));
  see(t, gsi(kB, kA, rep()));
  see(t, gsi(kA, kB, rtu()));
}

// An established connection, then a DREQ from the passive side (B) or the active one (A), with `tid`.
cm::Dreq establish_then_dreq(CmTracker& t, bool from_passive, uint64_t tid = 7) {
  establish(t);
  cm::Dreq d;
  d.local_comm_id = from_passive ? kCommB : kCommA;
  d.remote_comm_id = from_passive ? kCommA : kCommB;
  see(t, from_passive ? gsi(kB, kA, d, tid) : gsi(kA, kB, d, tid));
  return d;
}

// The one frame end_all sent, decoded; checks it goes from `from` to `to`.
cm::CmMad sent_one(CmTracker& t, const cm::Gid& dead, const cm::Gid& to) {
  const auto frames = t.end_all(dead);
  EXPECT_EQ(frames.size(), 1u);
  EXPECT_EQ(t.size(), 0u);
  cm::CmMad m;
  if (frames.size() != 1) return m;
  wire::ParsedPacket pkt;
  EXPECT_EQ(wire::parse_frame(frames[0].data(), frames[0].size(), &pkt), wire::RxDrop::kNone) << "ICRC too";
  cm::GsiDatagram g;
  EXPECT_EQ(cm::parse_gsi(pkt, &g), cm::GsiError::kOk);
  EXPECT_EQ(g.src, dead);
  EXPECT_EQ(g.dst, to);
  EXPECT_EQ(pkt.eth_dst(), wire::mac_for_gid(to));
  EXPECT_EQ(cm::decode_mad(g.mad, &m), cm::MadError::kOk);
  return m;
}

TEST(CmTrack, EstablishedPassiveDeathSendsDreqToTheActiveSide) {
  CmTracker t(5);
  establish(t);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_TRUE(t.end_all(wire::ipv4_mapped(0x7F010003)).empty()) << "another process";
  const cm::CmMad m = sent_one(t, kB, kA);
  const auto* d = std::get_if<cm::Dreq>(&m.body);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->local_comm_id, kCommB);
  EXPECT_EQ(d->remote_comm_id, kCommA);
  EXPECT_EQ(d->remote_qpn, kQpnA) << "the receiver's QPN, which its CM checks";
  EXPECT_EQ(t.stats().dreq_sent, 1u);
}

TEST(CmTrack, EstablishedActiveDeathSendsDreqToThePassiveSide) {
  CmTracker t(5);
  establish(t);
  const cm::CmMad m = sent_one(t, kA, kB);
  const auto* d = std::get_if<cm::Dreq>(&m.body);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->local_comm_id, kCommA);
  EXPECT_EQ(d->remote_comm_id, kCommB);
  EXPECT_EQ(d->remote_qpn, kQpnB);
}

TEST(CmTrack, UnansweredReqOfADeadListenerIsRejected28) {
  CmTracker t(5);
  see(t, gsi(kA, kB, req(), 0x99));
  see(t, gsi(kA, kB, req(), 0x99));  // its retransmission is the same entry
  EXPECT_EQ(t.size(), 1u);
  const cm::CmMad m = sent_one(t, kB, kA);
  const auto* r = std::get_if<cm::Rej>(&m.body);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->reason, cm::kRejConsumerDefined);
  EXPECT_EQ(r->local_comm_id, 0u) << "as Linux from REQ_RCVD";
  EXPECT_EQ(r->remote_comm_id, kCommA);
  EXPECT_EQ(r->message_rejected, 0) << "REJ for the REQ";
  EXPECT_EQ(m.hdr.tid, 0x99u) << "the REQ's transaction";
  EXPECT_EQ(t.stats().rej_sent, 1u);
}

TEST(CmTrack, DeadActiveSideBeforeRepNamesItselfByGuid) {
  CmTracker t(5);
  see(t, gsi(kA, kB, req()));
  const cm::CmMad m = sent_one(t, kA, kB);
  const auto* r = std::get_if<cm::Rej>(&m.body);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->reason, cm::kRejTimeout);
  EXPECT_EQ(r->local_comm_id, kCommA);
  ASSERT_EQ(r->ari_length, 8);
  uint64_t guid = 0;
  for (int i = 0; i < 8; ++i) guid = guid << 8 | r->ari[static_cast<size_t>(i)];
  EXPECT_EQ(guid, kGuidA);
}

TEST(CmTrack, RepWithoutRtuIsRejectedWithBothCommIds) {
  CmTracker t(5);
  see(t, gsi(kA, kB, req()));
  see(t, gsi(kB, kA, rep()));
  const cm::CmMad m = sent_one(t, kA, kB);
  const auto* r = std::get_if<cm::Rej>(&m.body);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->reason, cm::kRejConsumerDefined);
  EXPECT_EQ(r->local_comm_id, kCommA);
  EXPECT_EQ(r->remote_comm_id, kCommB);
  EXPECT_EQ(r->message_rejected, 1) << "REJ for the REP";
}

TEST(CmTrack, RejAndDrepEndAnEntryADreqWaitsForItsDrep) {
  {
    CmTracker t(5);
    see(t, gsi(kA, kB, req()));
    cm::Rej r;
    r.remote_comm_id = kCommA;
    r.reason = cm::kRejInvalidServiceId;
    see(t, gsi(kB, kA, r));
    EXPECT_EQ(t.size(), 0u);
  }
  for (bool from_passive : {false, true}) {
    CmTracker t(5);
    const cm::Dreq d = establish_then_dreq(t, from_passive);
    EXPECT_EQ(t.size(), 1u) << "a DREQ from the " << (from_passive ? "passive" : "active") << " side";
    cm::Drep r;
    r.local_comm_id = d.remote_comm_id;
    r.remote_comm_id = d.local_comm_id;
    see(t, from_passive ? gsi(kA, kB, r) : gsi(kB, kA, r));
    EXPECT_EQ(t.size(), 0u) << "the DREP ends it";
    EXPECT_TRUE(t.end_all(kA).empty() && t.end_all(kB).empty()) << "nothing to send: the CMs did it";
  }
}

// A server that crashes right after its client's DREQ (Debian's qperf 0.4.11 does): its kernel would
// answer with the DREP as the rdma_cm file closes, so uroced does, with the DREQ's transaction ID.
TEST(CmTrack, ADreqReceiverThatDiesAnswersWithTheDrep) {
  for (bool from_passive : {false, true}) {
    CmTracker t(5);
    const cm::Dreq d = establish_then_dreq(t, from_passive, 99);
    const cm::Gid receiver = from_passive ? kA : kB, sender = from_passive ? kB : kA;
    const cm::CmMad m = sent_one(t, receiver, sender);
    const auto* r = std::get_if<cm::Drep>(&m.body);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->local_comm_id, d.remote_comm_id);
    EXPECT_EQ(r->remote_comm_id, d.local_comm_id);
    EXPECT_EQ(m.hdr.tid, 99u);
  }
  // The DREQ's sender dying sends nothing: its peer answers a dead address.
  CmTracker t(5);
  establish(t);
  cm::Dreq d;
  d.local_comm_id = kCommA;
  d.remote_comm_id = kCommB;
  see(t, gsi(kA, kB, d));
  EXPECT_TRUE(t.end_all(kA).empty());
  EXPECT_EQ(t.size(), 0u);
}

TEST(CmTrack, MalformedIsCountedAndChangesNothing) {
  CmTracker t(5);
  auto f = gsi(kA, kB, req());
  f[f.size() - 1] ^= 1;  // ICRC
  t.observe(f.data(), f.size(), 1);
  auto g = gsi(kA, kB, req());
  const size_t mad = g.size() - 4 - cm::kMadLen;
  g[mad] = 2;  // base version: the ICRC must be made again
  wire::ParsedPacket pkt;
  std::vector<uint8_t> h(g.begin(), g.end());
  const size_t hdrs = mad;
  wire::build_trailer(h.data(), hdrs, std::vector<wire::ConstBytes>{{h.data() + mad, cm::kMadLen}},
                      h.data() + mad + cm::kMadLen);
  ASSERT_EQ(wire::parse_frame(h.data(), h.size(), &pkt), wire::RxDrop::kNone);
  t.observe(h.data(), h.size(), 1);
  EXPECT_EQ(t.stats().mads, 2u);
  EXPECT_EQ(t.stats().malformed, 2u);
  EXPECT_EQ(t.size(), 0u);
}

TEST(CmTrack, GsiFrameTest) {
  const auto f = gsi(kA, kB, req());
  EXPECT_TRUE(is_gsi_frame(f.data(), f.size()));
  EXPECT_FALSE(is_gsi_frame(f.data(), 40)) << "runt";
  auto other = f;
  other[14 + 20 + 8 + 7] = 2;  // BTH DestQP 2
  EXPECT_FALSE(is_gsi_frame(other.data(), other.size()));
  auto v6 = gsi(wire::ipv4_mapped(1), cm::Gid{0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, req());
  EXPECT_TRUE(is_gsi_frame(v6.data(), v6.size()));
}

}  // namespace
}  // namespace uroce::uroced
