// Receive path: validate a frame (wire layer), check it is for this device and a QP that may take it, and
// dispatch it to the responder (requests), the completer (responses) or congestion control (CNPs). Every
// drop is counted under its reason; nothing here logs.
#include "transport/device.h"

namespace uroce {

using namespace wire;

void Device::handle_rx(PktBuf* buf) {
  ParsedPacket pkt;
  const RxDrop why = parse_frame(buf->data, buf->len, &pkt);
  if (why != RxDrop::kNone) {
    drops_.bump(why);
    return;
  }
  cnt_.add(Counter::kRxPackets);
  cnt_.add(Counter::kRxBytes, pkt.frame_len);

  const uint8_t* ip = pkt.frame + pkt.l3_off;
  const Gid dst = pkt.ipv6 ? [&] {
    Gid g;
    std::copy_n(reinterpret_cast<const Ipv6Hdr*>(ip)->dst, 16, g.begin());
    return g;
  }()
                           : ipv4_mapped(reinterpret_cast<const Ipv4Hdr*>(ip)->dst.get());
  if (dst != cfg_.gid) {
    cnt_.add(Counter::kDropDstGid);
    return;
  }

  const Bth& bth = pkt.bth();
  Qp* qp = find_qp(bth_dqpn(bth));
  if (!qp) {
    cnt_.add(Counter::kDropUnknownQp);
    return;
  }
  const uint32_t m = pkt.op().mask;
  if (m & kIsCnp) return qp->on_cnp();
  // P_Key: RoCE has the default partition only; accept full (0xFFFF) and limited (0x7FFF) membership.
  if ((bth_pkey(bth) & 0x7FFF) != 0x7FFF) {
    cnt_.add(Counter::kDropPkey);
    return;
  }
  const uint32_t service = qp->type() == QpType::kRc ? kRc : qp->type() == QpType::kUc ? kUc : kUd;
  if (!(m & service)) {
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

}  // namespace uroce
