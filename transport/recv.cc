// Receive path: validate a frame (wire layer), check it is for this device and a QP that may take it, and
// dispatch it to the responder (requests), the completer (responses) or congestion control (CNPs). Every
// drop is counted under its reason; nothing here logs.
#include "transport/device.h"

namespace uroce {

using namespace wire;

namespace {

// P_Key: RoCE has the default partition only; accept full (0xFFFF) and limited (0x7FFF) membership.
bool default_partition(const Bth& bth) { return (bth_pkey(bth) & 0x7FFF) == 0x7FFF; }

}  // namespace

// A connected QP takes packets only from the far end of its path, as Linux rxe checks them (rxe_recv.c,
// check_addr): the source IP must be the path's destination GID in the same IP family, and the source MAC
// the one frames to the peer are sent to. Without this, anyone on the segment who guesses a QPN and a PSN
// could write into registered memory or kill the QP with a forged NAK. Returns Counter::kCount when the
// packet may be taken, else the reason to drop it.
Counter Qp::check_source(const ParsedPacket& pkt) const {
  if (type() == QpType::kUd) return Counter::kCount;
  const QpState st = attr_.qp_state;
  if (st == QpState::kReset || st == QpState::kInit || st == QpState::kErr) return Counter::kCount;
  if (pkt.ipv6 != hdr_.ip.ipv6) return Counter::kDropIpFamily;
  if (!ip_equal(pkt.ip_src(), hdr_.ip.dst)) return Counter::kDropSrcAddr;
  if (!mac_is_zero(hdr_.eth.dst) && !mac_equal(pkt.eth_src(), hdr_.eth.dst)) return Counter::kDropSrcMac;
  return Counter::kCount;
}

void Device::handle_rx(PktBuf* buf) {
  ParsedPacket pkt;
  const RxDrop why = parse_frame(buf->data, buf->len, &pkt);
  if (why != RxDrop::kNone) {
    drops_.bump(why);
    return;
  }
  cnt_.add(Counter::kRxPackets);
  cnt_.add(Counter::kRxBytes, pkt.frame_len);

  // Link layer: a frame for another station (a promiscuous port sees them) or another VLAN is not ours. Group
  // addresses pass: a multicast frame is matched against the device's groups by its IP destination
  // (rx_mcast). A priority tag (VLAN 0) is allowed on an untagged device: it only carries the PCP.
  const MacAddr dmac = pkt.eth_dst();
  if (!mac_is_zero(cfg_.mac) && !mac_equal(dmac, cfg_.mac) && !(dmac[0] & 1)) {
    cnt_.add(Counter::kDropDstMac);
    return;
  }
  if (cfg_.vlan ? !pkt.vlan_tagged() || pkt.vlan_id() != cfg_.vlan_id : pkt.vlan_id() != 0) {
    cnt_.add(Counter::kDropVlan);
    return;
  }
  const Bth& bth = pkt.bth();
  // The multicast QPN names no QP: the frame is for the group its destination IP names, not for one of the
  // device's own GIDs. A multicast destination with any other QPN is not ours.
  if (bth_dqpn(bth) == params::kMcastQpn) return rx_mcast(pkt);
  if (!is_local_gid(pkt.ip_dst())) {
    cnt_.add(Counter::kDropDstGid);
    return;
  }

  Qp* qp = find_qp(bth_dqpn(bth));
  if (!qp) {
    cnt_.add(Counter::kDropUnknownQp);
    return;
  }
  if (const Counter c = qp->check_source(pkt); c != Counter::kCount) {
    cnt_.add(c);
    return;
  }
  const uint32_t m = pkt.op().mask;
  if (m & kIsCnp) return qp->on_cnp();
  if (!default_partition(bth)) {
    cnt_.add(Counter::kDropPkey);
    return;
  }
  const uint32_t service = qp->xrc() != XrcRole::kNone ? kXrc
                           : qp->type() == QpType::kRc ? kRc
                           : qp->type() == QpType::kUc ? kUc
                                                       : kUd;
  // An XRC initiator takes only responses, a target only requests.
  uint32_t wrong_dir = 0;
  if (qp->xrc() == XrcRole::kInitiator) wrong_dir = kIsRequest;
  if (qp->xrc() == XrcRole::kTarget) wrong_dir = kIsResponse;
  if (!(m & service) || (m & wrong_dir)) {
    cnt_.add(Counter::kDropWrongQpType);
    return;
  }
  rx_int_ = buf->telemetry && buf->telemetry->hops ? buf->telemetry : nullptr;
  if (m & kIsRequest) {
    qp->on_request(pkt);
  } else {
    qp->on_response(pkt);
  }
  rx_int_ = nullptr;
}

// A frame for the multicast QPN goes to every QP of the device attached to the group its destination IP
// names (rxe_recv.c does the same). Only UD SENDs travel to groups: anything else is the wrong transport for
// the UD QPs a group holds. The P_Key is the frame's, checked once; the state and the Q_Key are each
// member's own, checked by its responder (on_request, resp_ud), which counts what it drops, and each member
// that takes the datagram consumes one of its own receive WQEs.
void Device::rx_mcast(const ParsedPacket& pkt) {
  const uint32_t m = pkt.op().mask;
  if (!(m & kUd) || !(m & kIsRequest)) {
    cnt_.add(Counter::kDropWrongQpType);
    return;
  }
  if (!default_partition(pkt.bth())) {
    cnt_.add(Counter::kDropPkey);
    return;
  }
  auto it = mcast_.find(pkt.ip_dst());
  if (it == mcast_.end()) {
    cnt_.add(Counter::kDropMcastNoGroup);
    return;
  }
  cnt_.add(Counter::kMcastRxPackets);
  // The device's own copy of a datagram one of its members sent (transmit_mcast) skips that member if it
  // asked not to hear itself.
  const uint32_t src_qp = pkt.deth().src_qp.get();
  const bool own = is_local_gid(pkt.ip_src());
  // A responder never attaches or detaches, so the member list stays as it is while it is walked.
  for (Qp* qp : it->second)
    if (!(own && qp->qpn() == src_qp && qp->init_attr().block_self_mcast_lb)) qp->on_request(pkt);
}

}  // namespace uroce
