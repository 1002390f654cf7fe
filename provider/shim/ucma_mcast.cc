// Multicast groups of the ucma emulation: JOIN_IP_MCAST, JOIN_MCAST and LEAVE_MCAST, answered as the
// kernel's ucma.c and cma.c answer them for a RoCEv2 device (cma_iboe_join_multicast). There is no subnet
// manager to ask on RoCE: a join succeeds at once and its event, RDMA_CM_EVENT_MULTICAST_JOIN, carries what
// a UD QP needs to send to the group: QPN 0xFFFFFF, the port space's Q_Key and an address handle whose
// destination GID is the group's (an IPv4 group 224.0.0.0/4 as ::ffff:a.b.c.d, an IPv6 one ff00::/8 as is).
// librdmacm attaches the id's QP to that GID itself (ibv_attach_mcast) when it reads the event, unless the
// join was send-only; on leave it detaches it and LEAVE_MCAST reports how many of the group's events were
// read, so that rdma_leave_multicast waits for their acknowledgement. Frames to the group are flooded by
// the host switch to every other port, and the devices deliver them to the QPs attached to it.
//
// Everything here runs under lock() but the entry point, which takes it. No libstdc++ (see ucma.h).
#include <rdma/ib_user_ioctl_verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider/shim/ucma.h"
#include "provider/shim/ucma_addr.h"
#include "provider/shim/ucma_qp_attr.h"

namespace uroce::shim::ucma {
namespace {

constexpr uint32_t kMulticastQpn = 0xFFFFFF;
constexpr uint8_t kHopLimit = 64;    // IPV6_DEFAULT_HOPLIMIT, what the kernel gives a RoCEv2 group
constexpr uint8_t kRate100G = 16;    // IB_RATE_100_GBPS, as the id's path record
constexpr uint16_t kFullMember = 0;  // RDMA_MC_JOIN_FLAG_FULLMEMBER
constexpr uint16_t kSendOnlyFullMember = 1;

struct Group {
  uint32_t id;               // the id it was joined on
  uint64_t uid;              // librdmacm's struct cma_multicast, echoed in the group's events
  uint32_t events_reported;  // its events GET_EVENT handed out (LEAVE_MCAST returns it)
};

// Indexed by handle - 1: handle 0 is Event::mc's "none". Handles are reused after a leave, as the kernel's
// xarray ids are.
Group** g_groups = nullptr;
uint32_t g_cap = 0;

Group* find_group(uint32_t handle) { return handle != 0 && handle <= g_cap ? g_groups[handle - 1] : nullptr; }

// A free handle with its slot, or 0 when out of memory.
uint32_t new_group(Group** out) {
  uint32_t i = 0;
  while (i < g_cap && g_groups[i] != nullptr) ++i;
  if (i == g_cap) {
    const uint32_t cap = g_cap == 0 ? 8 : g_cap * 2;
    auto** grown = static_cast<Group**>(std::realloc(g_groups, cap * sizeof(Group*)));
    if (grown == nullptr) return 0;
    std::memset(grown + g_cap, 0, (cap - g_cap) * sizeof(Group*));
    g_groups = grown;
    g_cap = cap;
  }
  auto* g = static_cast<Group*>(std::calloc(1, sizeof(Group)));
  if (g == nullptr) return 0;
  g_groups[i] = g;
  *out = g;
  return i + 1;
}

void free_group(uint32_t handle) {
  std::free(g_groups[handle - 1]);
  g_groups[handle - 1] = nullptr;
}

// The join itself (ucma_process_join, rdma_join_multicast): the id must be bound to the device (BIND_IP or
// RESOLVE_IP) and be a UD id; the address a group's.
int join(Channel* ch, uint32_t id_handle, uint64_t uid, const sockaddr_in6& addr, uint16_t join_flags,
         uint64_t response, size_t out_len) {
  if (out_len < sizeof(rdma_ucm_create_id_resp)) return -ENOSPC;
  if (join_flags != kFullMember && join_flags != kSendOnlyFullMember) return -EINVAL;
  if (!addr_multicast(addr)) return -EINVAL;
  lock();
  Id* id = find_id(id_handle);
  int err = id == nullptr ? -ENOENT : (id->channel != ch ? -EINVAL : 0);
  if (err == 0 && (!id->has_dev || (id->state != IdState::kBound && id->state != IdState::kAddrResolved) ||
                   id->qp_type != IB_UVERBS_QPT_UD))
    err = -EINVAL;
  Group* g = nullptr;
  uint32_t handle = 0;
  Event* ev = nullptr;
  if (err == 0) {
    handle = new_group(&g);
    ev = handle != 0 ? static_cast<Event*>(std::calloc(1, sizeof(Event))) : nullptr;
    if (ev == nullptr) {
      if (handle != 0) free_group(handle);
      err = -ENOMEM;
    }
  }
  if (err != 0) {
    unlock();
    return err;
  }
  g->id = id->handle;
  g->uid = uid;
  ev->owner = id->handle;
  ev->mc = handle;
  ev->resp.uid = uid;
  ev->resp.id = id->handle;
  ev->resp.event = kEvMulticastJoin;
  rdma_ucm_ud_param& ud = ev->resp.param.ud;
  ud.qp_num = kMulticastQpn;
  ud.qkey = kUdpQkey;
  ip_to_gid(addr, ud.ah_attr.grh.dgid);
  ud.ah_attr.grh.sgid_index = static_cast<uint8_t>(id->gid_index);
  ud.ah_attr.grh.hop_limit = kHopLimit;
  ud.ah_attr.grh.traffic_class = id->tos;
  ud.ah_attr.static_rate = kRate100G;
  ud.ah_attr.is_global = 1;
  ud.ah_attr.port_num = 1;
  queue_event(ch, ev);
  const rdma_ucm_create_id_resp resp{handle};
  unlock();
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(response)), &resp, sizeof resp);
  return 0;
}

int leave(Channel* ch, const rdma_ucm_destroy_id& cmd, size_t out_len) {
  if (out_len < sizeof(rdma_ucm_destroy_id_resp)) return -ENOSPC;
  if (cmd.response == 0) return -EFAULT;
  lock();
  Group* g = find_group(cmd.id);
  const Id* id = g != nullptr ? find_id(g->id) : nullptr;
  if (g == nullptr || id == nullptr) {
    unlock();
    return -ENOENT;
  }
  if (id->channel != ch) {
    unlock();
    return -EINVAL;
  }
  drop_group_events(cmd.id);  // its unreported events go back, as ucma_cleanup_mc_events
  const rdma_ucm_destroy_id_resp resp{g->events_reported};
  free_group(cmd.id);
  unlock();
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(cmd.response)), &resp, sizeof resp);
  return 0;
}

}  // namespace

int multicast_command(Channel* ch, uint32_t cmd, const void* payload, size_t in_len, size_t out_len) {
  switch (cmd) {
    case RDMA_USER_CM_CMD_JOIN_IP_MCAST: {
      const auto c = payload_as<rdma_ucm_join_ip_mcast>(payload, in_len);
      if (c.response == 0) return -EFAULT;
      return join(ch, c.id, c.uid, c.addr, kFullMember, c.response, out_len);
    }
    case RDMA_USER_CM_CMD_JOIN_MCAST: {
      const auto c = payload_as<rdma_ucm_join_mcast>(payload, in_len);
      if (c.response == 0) return -EFAULT;
      // AF_IB addresses are not served (the shim keeps librdmacm in its IP mode); the size must be the
      // family's (rdma_addr_size_kss).
      sockaddr_in6 addr{};
      const sa_family_t family = c.addr.ss_family;
      const size_t size = family == AF_INET    ? sizeof(sockaddr_in)
                          : family == AF_INET6 ? sizeof(sockaddr_in6)
                                               : 0;
      if (size == 0 || c.addr_size != size) return -EINVAL;
      std::memcpy(&addr, &c.addr, size);
      return join(ch, c.id, c.uid, addr, c.join_flags, c.response, out_len);
    }
    case RDMA_USER_CM_CMD_LEAVE_MCAST:
      return leave(ch, payload_as<rdma_ucm_destroy_id>(payload, in_len), out_len);
    default:
      return -EINVAL;
  }
}

void leave_groups_of(uint32_t id) {
  for (uint32_t i = 0; i < g_cap; ++i)
    if (g_groups[i] != nullptr && g_groups[i]->id == id) free_group(i + 1);
}

void count_group_event(uint32_t mc) {
  if (Group* g = find_group(mc)) ++g->events_reported;
}

}  // namespace uroce::shim::ucma
