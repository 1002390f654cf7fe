#include "tools/uroced/cm_track.h"

#include <algorithm>
#include <variant>

#include "transport/cm/cm.h"
#include "transport/wire/packet.h"

namespace uroce::uroced {

namespace {

constexpr size_t kEth = 14, kVlan = 4, kIpv4Min = 20, kIpv6 = 40, kUdp = 8, kBthDqpn = 5;
constexpr uint16_t kRoceV2Port = 4791;
constexpr uint8_t kUdpProto = 17;
// REJ "message rejected" (IBA table 111).
constexpr uint8_t kRejectedReq = 0, kRejectedRep = 1, kRejectedOther = 2;

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

}  // namespace

bool is_gsi_frame(const uint8_t* f, size_t len) {
  if (len < kEth + kIpv4Min + kUdp + 12) return false;
  size_t l3 = kEth;
  uint16_t type = be16(f + 12);
  if (type == 0x8100) {
    l3 += kVlan;
    type = be16(f + 16);
  }
  size_t l4;
  if (type == 0x0800) {
    if (len < l3 + kIpv4Min || f[l3 + 9] != kUdpProto) return false;
    l4 = l3 + size_t{f[l3] & 0x0Fu} * 4;
  } else if (type == 0x86DD) {
    if (len < l3 + kIpv6 || f[l3 + 6] != kUdpProto) return false;
    l4 = l3 + kIpv6;
  } else {
    return false;
  }
  if (len < l4 + kUdp + 12 || be16(f + l4 + 2) != kRoceV2Port) return false;
  const uint8_t* dqpn = f + l4 + kUdp + kBthDqpn;
  return dqpn[0] == 0 && dqpn[1] == 0 && dqpn[2] == cm::kGsiQpn;
}

std::map<CmTracker::Key, CmTracker::Conn>::iterator CmTracker::find(const cm::Gid& src, const cm::Gid& dst,
                                                                    uint32_t local, uint32_t remote) {
  // Sent by the active side: keyed by its own GID and comm ID; by the passive side: by the peer's.
  auto it = conns_.find({src, local});
  if (it != conns_.end() && (it->second.b_comm == 0 || it->second.b_comm == remote)) return it;
  it = conns_.find({dst, remote});
  if (it != conns_.end() && it->second.b_gid == src) return it;
  return conns_.end();
}

void CmTracker::forget_old(uint64_t now_ns) {
  for (auto it = conns_.begin(); it != conns_.end();)
    it = it->second.state != State::kEstablished && now_ns - it->second.seen_ns > kSetupForgetNs
             ? conns_.erase(it)
             : ++it;
  while (conns_.size() >= kMaxConns) {
    auto oldest = std::min_element(conns_.begin(), conns_.end(), [](const auto& x, const auto& y) {
      return x.second.seen_ns < y.second.seen_ns;
    });
    conns_.erase(oldest);
  }
}

void CmTracker::observe(const uint8_t* frame, size_t len, uint64_t now_ns) {
  ++stats_.mads;
  wire::ParsedPacket pkt;
  cm::GsiDatagram g;
  cm::CmMad m;
  if (wire::parse_frame(frame, len, &pkt) != wire::RxDrop::kNone ||
      cm::parse_gsi(pkt, &g) != cm::GsiError::kOk || cm::decode_mad(g.mad, &m) != cm::MadError::kOk) {
    ++stats_.malformed;
    return;
  }
  if (const auto* req = std::get_if<cm::Req>(&m.body)) {
    if (conns_.count({g.src, req->local_comm_id})) return;  // a retransmission
    forget_old(now_ns);
    Conn c;
    c.a_gid = g.src;
    c.b_gid = g.dst;
    c.a_mac = pkt.eth_src();
    c.b_mac = pkt.eth_dst();
    c.a_comm = req->local_comm_id;
    c.a_qpn = req->local_qpn;
    c.a_guid = req->local_ca_guid;
    c.req_tid = m.hdr.tid;
    c.seen_ns = now_ns;
    conns_[{g.src, req->local_comm_id}] = c;
  } else if (const auto* rep = std::get_if<cm::Rep>(&m.body)) {
    auto it = conns_.find({g.dst, rep->remote_comm_id});
    if (it == conns_.end() || it->second.b_gid != g.src || it->second.state == State::kEstablished) return;
    it->second.state = State::kRep;
    it->second.b_comm = rep->local_comm_id;
    it->second.b_qpn = rep->local_qpn;
    it->second.b_mac = pkt.eth_src();
    it->second.seen_ns = now_ns;
  } else if (const auto* rtu = std::get_if<cm::Rtu>(&m.body)) {
    auto it = conns_.find({g.src, rtu->local_comm_id});
    if (it != conns_.end() && it->second.b_comm == rtu->remote_comm_id)
      it->second.state = State::kEstablished;
  } else if (const auto* rej = std::get_if<cm::Rej>(&m.body)) {
    auto it = find(g.src, g.dst, rej->local_comm_id, rej->remote_comm_id);
    if (it == conns_.end() && rej->local_comm_id == 0) it = conns_.find({g.dst, rej->remote_comm_id});
    if (it != conns_.end()) conns_.erase(it);
  } else if (const auto* dreq = std::get_if<cm::Dreq>(&m.body)) {
    // One end closes the connection; its peer owes the DREP (a retransmitted DREQ changes nothing).
    auto it = find(g.src, g.dst, dreq->local_comm_id, dreq->remote_comm_id);
    if (it != conns_.end() && it->second.state == State::kEstablished) {
      it->second.state = State::kDreq;
      it->second.dreq_from_active = g.src == it->second.a_gid;
      it->second.dreq_tid = m.hdr.tid;
      it->second.seen_ns = now_ns;
    }
  } else if (const auto* drep = std::get_if<cm::Drep>(&m.body)) {
    auto it = find(g.src, g.dst, drep->local_comm_id, drep->remote_comm_id);
    if (it != conns_.end()) conns_.erase(it);
  }
}

std::vector<uint8_t> CmTracker::frame(const Conn& c, bool from_active, const cm::MadHeader& hdr,
                                      const cm::CmBody& body) {
  const cm::Gid& src = from_active ? c.a_gid : c.b_gid;
  const cm::Gid& dst = from_active ? c.b_gid : c.a_gid;
  wire::PacketHeaders h = cm::gsi_headers(src, dst, 0xC000, 0);
  h.eth.src = from_active ? c.a_mac : c.b_mac;
  h.eth.dst = from_active ? c.b_mac : c.a_mac;
  const cm::MadBytes mad = encode_mad(hdr, body);
  std::vector<uint8_t> out(wire::headers_len(h) + mad.size() + wire::trailer_len(mad.size()));
  out.resize(wire::build_frame(h, mad, out.data()));
  return out;
}

std::vector<std::vector<uint8_t>> CmTracker::end_all(const cm::Gid& gid) {
  std::vector<std::vector<uint8_t>> out;
  for (auto it = conns_.begin(); it != conns_.end();) {
    const Conn& c = it->second;
    const bool a_dead = c.a_gid == gid, b_dead = c.b_gid == gid;
    if (!a_dead && !b_dead) {
      ++it;
      continue;
    }
    if (!(a_dead && b_dead)) {  // a process talking to itself needs nobody told
      const uint32_t own = a_dead ? c.a_comm : c.b_comm;
      cm::MadHeader hdr;
      hdr.tid = cm::form_tid(hi_tid_, own);
      if (c.state == State::kDreq) {
        if (a_dead != c.dreq_from_active) {  // the dead end received the DREQ: its DREP
          cm::Drep d;
          d.local_comm_id = own;
          d.remote_comm_id = a_dead ? c.b_comm : c.a_comm;
          hdr.tid = c.dreq_tid;
          out.push_back(frame(c, a_dead, hdr, d));
          ++stats_.drep_sent;
        }
      } else if (c.state == State::kEstablished) {
        cm::Dreq d;
        d.local_comm_id = own;
        d.remote_comm_id = a_dead ? c.b_comm : c.a_comm;
        d.remote_qpn = a_dead ? c.b_qpn : c.a_qpn;
        out.push_back(frame(c, a_dead, hdr, d));
        ++stats_.dreq_sent;
      } else {
        cm::Rej r;
        r.reason = cm::kRejConsumerDefined;
        if (c.state == State::kRep) {
          r.local_comm_id = own;
          r.remote_comm_id = a_dead ? c.b_comm : c.a_comm;
          r.message_rejected = a_dead ? kRejectedRep : kRejectedOther;
        } else if (b_dead) {  // the REQ was not answered: REJ for it, as from REQ_RCVD
          r.remote_comm_id = c.a_comm;
          r.message_rejected = kRejectedReq;
          hdr.tid = c.req_tid;
        } else {  // the active side gave up: it names itself by comm ID and CA GUID
          r.local_comm_id = c.a_comm;
          r.message_rejected = kRejectedOther;
          r.reason = cm::kRejTimeout;
          r.ari_length = 8;
          for (int i = 0; i < 8; ++i)
            r.ari[static_cast<size_t>(i)] = static_cast<uint8_t>(c.a_guid >> (56 - 8 * i));
        }
        out.push_back(frame(c, a_dead, hdr, r));
        ++stats_.rej_sent;
      }
    }
    it = conns_.erase(it);
  }
  return out;
}

}  // namespace uroce::uroced
