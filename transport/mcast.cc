// UD multicast groups, as Soft-RoCE (rxe_mcast.c) and a ConnectX on RoCE keep them: the groups the device's
// QPs are attached to, and the transmit side, where a datagram a QP sends to a group goes out on the port to
// the group's Ethernet address and is copied to this device's own members. Receiving (a frame for the
// multicast QPN handed to each member of its group) is in recv.cc.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/device.h"
#include "transport/wire/address.h"

namespace uroce {

using namespace wire;

namespace {

// What attach and detach accept, as the kernel's ib_attach_mcast checks it before any driver: a multicast
// GID, and a UD QP (QP1 is of the special GSI type there, and no verbs consumer ever holds it here).
bool mcast_target_ok(const Qp* qp, const Gid& mgid) {
  return is_multicast_gid(mgid) && qp->type() == QpType::kUd && qp->qpn() != params::kGsiQpn;
}

}  // namespace

int Device::attach_mcast(Qp* qp, const Gid& mgid) {
  if (!mcast_target_ok(qp, mgid)) return EINVAL;
  auto it = mcast_.find(mgid);
  if (it != mcast_.end() && std::find(it->second.begin(), it->second.end(), qp) != it->second.end()) return 0;
  // The limits in rxe's order: groups, then attachments in all, then QPs of the group.
  if (it == mcast_.end() && mcast_.size() >= params::kMaxMcastGrp) return ENOMEM;
  if (mcast_attached_ >= params::kMaxTotalMcastQpAttach) return ENOMEM;
  if (it != mcast_.end() && it->second.size() >= params::kMaxMcastQpAttach) return ENOMEM;
  if (it == mcast_.end()) it = mcast_.emplace(mgid, std::vector<Qp*>{}).first;
  it->second.push_back(qp);
  qp->mcast_groups_.push_back(mgid);
  ++mcast_attached_;
  return 0;
}

int Device::detach_mcast(Qp* qp, const Gid& mgid) {
  if (!mcast_target_ok(qp, mgid)) return EINVAL;
  auto it = mcast_.find(mgid);
  if (it == mcast_.end()) return EINVAL;
  std::vector<Qp*>& members = it->second;
  auto m = std::find(members.begin(), members.end(), qp);
  if (m == members.end()) return EINVAL;
  members.erase(m);
  if (members.empty()) mcast_.erase(it);
  std::vector<Gid>& own = qp->mcast_groups_;
  own.erase(std::find(own.begin(), own.end(), mgid));
  --mcast_attached_;
  return 0;
}

void Device::mcast_leave_all(Qp* qp) {
  for (const Gid& g : qp->mcast_groups_) {
    auto it = mcast_.find(g);
    std::vector<Qp*>& members = it->second;
    members.erase(std::find(members.begin(), members.end(), qp));
    if (members.empty()) mcast_.erase(it);
  }
  mcast_attached_ -= static_cast<uint32_t>(qp->mcast_groups_.size());
  qp->mcast_groups_.clear();
}

std::span<Qp* const> Device::mcast_members(const Gid& mgid) const {
  auto it = mcast_.find(mgid);
  if (it == mcast_.end()) return {};
  return it->second;
}

void Device::transmit_mcast(PktBuf* buf, const Gid& group) {
  cnt_.add(Counter::kMcastTxPackets);
  // Local members get their copy through the loopback queue, received on the next pass like any frame to
  // this device; the port's copy goes to the members elsewhere (a switch floods it to every other port, so
  // nothing comes back to us). Without a buffer for the copy the local members miss the datagram, as UD
  // allows.
  if (mcast_.count(group)) {
    PktBuf* copy;
    if (io_->alloc_burst(&copy, 1) == 1) {
      std::memcpy(copy->data, buf->data, buf->len);
      copy->len = buf->len;
      loopback_.push_back(copy);
    } else {
      cnt_.add(Counter::kTxNoBuffer);
    }
  }
  transmit(buf, false);
}

}  // namespace uroce
