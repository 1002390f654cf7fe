// Packet emission shared by the requester and the responder: frame construction from the QP's header
// template, payload gathered straight from registered memory, pacing and CC bookkeeping.
#include <algorithm>

#include "transport/device.h"

namespace uroce {

bool Qp::emit(const wire::PacketHeaders& h, const Sge* sge, uint32_t num_sge, uint64_t offset, uint32_t len,
              bool paced) {
  PktBuf* buf = dev_->alloc_tx();
  if (!buf) return false;
  const size_t hl = wire::build_headers(h, len, buf->data);
  sge_gather(sge, num_sge, offset, buf->data + hl, len);
  const wire::ConstBytes piece[1] = {{buf->data + hl, len}};
  wire::build_trailer(buf->data, hl, piece, buf->data + hl + len);
  buf->len = static_cast<uint16_t>(hl + len + wire::trailer_len(len));

  const uint64_t now = dev_->now();
  cnt_.tx_packets++;
  cnt_.tx_bytes += buf->len;
  if (paced && cc_->rate_bps) {
    const uint64_t wire_ns = static_cast<uint64_t>(buf->len) * 8'000'000'000ull / cc_->rate_bps;
    pace_next_ns_ = std::max(pace_next_ns_, now) + wire_ns;
  }
  if (paced && attr_.rate_limit_kbps) {
    const uint64_t wire_ns = static_cast<uint64_t>(buf->len) * 8'000'000ull / attr_.rate_limit_kbps;
    pace_next_ns_ = std::max(pace_next_ns_, now) + wire_ns;
  }
  dev_->transmit(buf, dev_->is_local_gid(h.ip.dst));
  return true;
}

}  // namespace uroce
