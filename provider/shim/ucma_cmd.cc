// The ucma commands other than GET_EVENT and MIGRATE_ID (ucma_channel.cc). Local ones are answered here
// as the kernel's ucma.c / cma.c answer them for a RoCE device; LISTEN, CONNECT, ACCEPT, REJECT and
// DISCONNECT also go to the connection-manager backend (ucma_backend.h). Each handler gets its payload
// copied into a zeroed struct of the full size (shorter payloads of older callers read as zeros) and
// returns 0 or a negative errno.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider/shim/ucma.h"
#include "provider/shim/ucma_addr.h"
#include "provider/shim/ucma_id.h"
#include "provider/shim/ucma_qp_attr.h"

namespace uroce::shim::ucma {
namespace {

constexpr uint8_t kPacketLifeTime = 18;  // CMA_IBOE_PACKET_LIFETIME
constexpr uint8_t kHopLimit = 64;        // what a routed IPv4 destination gives (and rxe's CM frames carry)
constexpr uint8_t kRate100G = 16;        // IB_RATE_100_GBPS, the port's "100 Gb/sec" in sysfs
constexpr uint8_t kSelectorExactly = 2;
constexpr int kMaxBacklog = 1024;
constexpr uint32_t kMaxGone = 64;  // ids one DESTROY_ID reports to the backend (the id + pending requests)

template <typename T>
int respond(uint64_t response, size_t out_len, const T& resp) {
  if (out_len < sizeof resp) return -ENOSPC;
  if (response == 0) return -EFAULT;
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(response)), &resp, sizeof resp);
  return 0;
}

// The id `handle` of channel ch, under lock(): nullptr with *err = -ENOENT (no such id) or -EINVAL (an id
// of another channel, as ucma_get_ctx).
Id* id_of(Channel* ch, uint32_t handle, int* err) {
  Id* id = find_id(handle);
  *err = id == nullptr ? -ENOENT : (id->channel != ch ? -EINVAL : 0);
  return *err == 0 ? id : nullptr;
}

void push_locked(Id* id, uint32_t event, int32_t status) {
  auto* ev = static_cast<Event*>(std::calloc(1, sizeof(Event)));
  if (ev == nullptr) return;  // as a kernel allocation failure: the event is lost
  ev->owner = id->handle;
  ev->resp.uid = id->uid;
  ev->resp.id = id->handle;
  ev->resp.event = event;
  ev->resp.status = static_cast<uint32_t>(status);
  queue_event(id->channel, ev);
}

int create_id(Channel* ch, const rdma_ucm_create_id& cmd, size_t out_len) {
  if (out_len < sizeof(rdma_ucm_create_id_resp)) return -ENOSPC;
  uint8_t qp_type;
  switch (cmd.ps) {  // ucma_get_qp_type
    case RDMA_PS_TCP:
      qp_type = IBV_QPT_RC;
      break;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB:
      qp_type = IBV_QPT_UD;
      break;
    case RDMA_PS_IB:
      qp_type = cmd.qp_type;
      break;
    default:
      return -EINVAL;
  }
  lock();
  Id* id = new_id(ch);
  if (id != nullptr) {
    id->uid = cmd.uid;
    id->ps = cmd.ps;
    id->qp_type = qp_type;
  }
  const rdma_ucm_create_id_resp resp{id != nullptr ? id->handle : 0};
  unlock();
  if (id == nullptr) return -ENOMEM;
  return respond(cmd.response, out_len, resp);
}

int destroy_id(Channel* ch, const rdma_ucm_destroy_id& cmd, size_t out_len) {
  if (out_len < sizeof(rdma_ucm_destroy_id_resp)) return -ENOSPC;
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id == nullptr) {
    unlock();
    return err;
  }
  const rdma_ucm_destroy_id_resp resp{id->events_reported};
  uint32_t gone[kMaxGone];
  const uint32_t n = free_id(id, gone, kMaxGone);
  const uroce_cm_backend b = backend();
  unlock();
  for (uint32_t i = 0; i < n; ++i) b.destroy(b.ctx, gone[i]);
  return respond(cmd.response, out_len, resp);
}

int bind_ip(Channel* ch, const rdma_ucm_bind_ip& cmd) {
  if (!addr_valid(cmd.addr)) return -EINVAL;
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id != nullptr) {
    err = id->state != IdState::kIdle ? -EINVAL : bind_locked(id, cmd.addr);
    if (err == 0) id->state = IdState::kBound;
  }
  unlock();
  return err;
}

// Address resolution: a destination on this host (the wildcard, loopback, one of the device's GIDs)
// resolves at once (cma_resolve_loopback), with the destination's own address as the source when the id is
// unbound or wildcard-bound. Another host resolves when the host's routing reaches it from one of the
// device's addresses (its --ip on the interface uroce sends through): the destination GID is the address
// itself (rdma_ip2gid), and its MAC the one uroce derives from that GID, so no ARP is needed. Anything else
// fails with ADDR_ERROR, as the kernel does for an address no RDMA device routes to.
int resolve_ip(Channel* ch, const rdma_ucm_resolve_ip& cmd) {
  if (!addr_valid(cmd.dst_addr)) return -EINVAL;
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id == nullptr) {
    unlock();
    return err;
  }
  if (id->state != IdState::kIdle && id->state != IdState::kBound && id->state != IdState::kAddrResolved) {
    unlock();
    return -EINVAL;
  }
  if (id->state == IdState::kIdle) {
    sockaddr_in6 src{};
    if (addr_valid(cmd.src_addr)) {
      copy_addr(&src, cmd.src_addr);
    } else {
      src.sin6_family = cmd.dst_addr.sin6_family;
    }
    if ((err = bind_locked(id, src)) != 0) {
      unlock();
      return err;
    }
    id->state = IdState::kBound;
  }
  copy_addr(&id->dst, cmd.dst_addr);
  id->dst_set = true;
  bool dst_dev = false;
  int dst_gid = -1;
  sockaddr_in6 src;
  if (map_addr(cmd.dst_addr, &dst_dev, &dst_gid) == 0) {
    if (!dst_dev) dst_gid = device().loopback_gid;  // the wildcard destination is this host
    // The source the route to a local destination picks: that same address.
    // A wildcard destination is this host's loopback address (cma_resolve_loopback).
    copy_addr(&src, cmd.dst_addr);
    if (addr_any(src)) set_loopback(src);
    if (device().ok) std::memcpy(id->dgid, device().gids[dst_gid], 16);
  } else if (addr_multicast(cmd.dst_addr)) {
    // A group (mckey): the frames leave through the device the id is bound to, else through the one the
    // host routes the group to, else (a device of the host switch, whose addresses no route names) through
    // the device's own address; the destination GID is the group's.
    int src_gid = id->has_dev ? id->gid_index : -1;
    if (src_gid >= 0) {
      copy_addr(&src, id->src);
    } else if (route_source(cmd.dst_addr, &src, &src_gid) != 0 && device().ok) {
      src_gid = device().on_loopback ? device().loopback_gid : 0;
      gid_to_addr(device().gids[src_gid], cmd.dst_addr.sin6_family, &src);
    }
    if (src_gid < 0) {
      id->state = IdState::kBound;
      push_locked(id, kEvAddrError, -ENODEV);
      unlock();
      return 0;
    }
    dst_gid = src_gid;
    ip_to_gid(cmd.dst_addr, id->dgid);
  } else {
    int src_gid = -1;
    if ((err = route_source(cmd.dst_addr, &src, &src_gid)) != 0) {
      id->state = IdState::kBound;
      push_locked(id, kEvAddrError, -ENETUNREACH);
      unlock();
      return 0;
    }
    dst_gid = src_gid;
    ip_to_gid(cmd.dst_addr, id->dgid);
  }
  if (!id->has_dev) {
    const uint16_t port = addr_port(id->src);
    copy_addr(&id->src, src);
    set_port(id->src, port);
    id->has_dev = device().ok;
    id->gid_index = dst_gid;
    if (id->has_dev) std::memcpy(id->sgid, device().gids[dst_gid], 16);
  }
  if (!id->has_dev) {
    push_locked(id, kEvAddrError, -ENODEV);
    unlock();
    return 0;
  }
  id->num_paths = 0;
  id->state = IdState::kAddrResolved;
  push_locked(id, kEvAddrResolved, 0);
  unlock();
  return 0;
}

// cma_resolve_iboe_route: one path record from the resolved GIDs.
int resolve_route(Channel* ch, const rdma_ucm_resolve_route& cmd) {
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id != nullptr && id->state != IdState::kAddrResolved) err = -EINVAL;
  if (err != 0) {
    unlock();
    return err;
  }
  ib_user_path_rec& p = id->path;
  std::memset(&p, 0, sizeof p);
  std::memcpy(p.dgid, id->dgid, 16);
  std::memcpy(p.sgid, id->sgid, 16);
  p.reversible = 1;
  p.mtu = device().mtu;
  p.pkey = htons(0xffff);
  p.hop_limit = kHopLimit;
  p.traffic_class = id->tos;
  p.numb_path = 1;
  p.mtu_selector = kSelectorExactly;
  p.rate_selector = kSelectorExactly;
  p.rate = kRate100G;
  p.packet_life_time_selector = kSelectorExactly;
  p.packet_life_time = kPacketLifeTime;
  id->num_paths = 1;
  id->state = IdState::kRouteResolved;
  push_locked(id, kEvRouteResolved, 0);
  unlock();
  return 0;
}

int query_route(Channel* ch, const rdma_ucm_query& cmd, size_t out_len) {
  if (out_len < sizeof(rdma_ucm_query_route_resp)) return -ENOSPC;
  rdma_ucm_query_route_resp resp;
  std::memset(&resp, 0, sizeof resp);
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id == nullptr) {
    unlock();
    return err;
  }
  copy_addr(&resp.src_addr, id->src);
  copy_addr(&resp.dst_addr, id->dst);
  resp.ibdev_index = UINT32_MAX;  // libibverbs knows uroce devices by GUID only (index -1)
  if (id->has_dev) {
    resp.node_guid = device().node_guid;
    resp.port_num = 1;
    resp.num_paths = id->num_paths;
    if (id->num_paths > 0) {
      resp.ib_route[0] = id->path;
    } else {
      // ucma_copy_iboe_route before route resolution: the GIDs and the default P_Key.
      std::memcpy(resp.ib_route[0].sgid, id->sgid, 16);
      if (id->dst_set) std::memcpy(resp.ib_route[0].dgid, id->dgid, 16);
      resp.ib_route[0].pkey = htons(0xffff);
    }
  }
  unlock();
  return respond(cmd.response, out_len, resp);
}

int listen(Channel* ch, const rdma_ucm_listen& cmd) {
  const int backlog =
      cmd.backlog > 0 && cmd.backlog < kMaxBacklog ? static_cast<int>(cmd.backlog) : kMaxBacklog;
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id != nullptr && id->state == IdState::kIdle) {  // rdma_listen binds an unbound id to 0.0.0.0:any
    sockaddr_in6 any{};
    any.sin6_family = AF_INET;
    if ((err = bind_locked(id, any)) == 0) id->state = IdState::kBound;
  }
  if (err == 0 && id->state != IdState::kBound) err = -EINVAL;
  if (err == 0 && id->reuseaddr) err = check_listen_port(id);
  if (err != 0) {
    unlock();
    return err;
  }
  id->state = IdState::kListen;
  uroce_cm_id_info info;
  fill_info(*id, &info);
  const uroce_cm_backend b = backend();
  unlock();
  err = b.listen(b.ctx, &info, backlog);
  if (err != 0) {
    lock();
    if (Id* again = find_id(info.id); again == id) id->state = IdState::kBound;
    unlock();
  }
  return err;
}

int set_option(Channel* ch, const rdma_ucm_set_option& cmd) {
  if (cmd.level != RDMA_OPTION_ID) return -ENOSYS;  // RDMA_OPTION_IB_PATH: not yet
  const void* val = reinterpret_cast<const void*>(static_cast<uintptr_t>(cmd.optval));
  if (val == nullptr && cmd.optlen > 0) return -EFAULT;
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id == nullptr) {
    unlock();
    return err;
  }
  int ival = 0;
  uint8_t bval = 0;
  if (cmd.optlen == sizeof ival) std::memcpy(&ival, val, sizeof ival);
  if (cmd.optlen == sizeof bval) std::memcpy(&bval, val, sizeof bval);
  switch (cmd.optname) {
    case RDMA_OPTION_ID_TOS:
      if (cmd.optlen != sizeof bval) {
        err = -EINVAL;
        break;
      }
      id->tos = bval;
      id->tos_set = true;
      break;
    case RDMA_OPTION_ID_REUSEADDR:  // rdma_set_reuseaddr
      if (cmd.optlen != sizeof ival) {
        err = -EINVAL;
        break;
      }
      if ((ival != 0 && id->state != IdState::kListen) || id->state == IdState::kIdle) {
        id->reuseaddr = ival != 0;
      } else {
        err = -EINVAL;
      }
      break;
    case RDMA_OPTION_ID_AFONLY:  // rdma_set_afonly
      if (cmd.optlen != sizeof ival) {
        err = -EINVAL;
        break;
      }
      if (id->state == IdState::kIdle || id->state == IdState::kBound) {
        id->afonly = ival != 0;
      } else {
        err = -EINVAL;
      }
      break;
    case RDMA_OPTION_ID_ACK_TIMEOUT:  // rdma_set_ack_timeout: RC only
      if (cmd.optlen != sizeof bval) {
        err = -EINVAL;
        break;
      }
      if (id->qp_type != IBV_QPT_RC) {
        err = -EINVAL;
        break;
      }
      id->ack_timeout = bval;
      break;
    default:
      err = -ENOSYS;
  }
  unlock();
  return err;
}

int init_qp_attr(Channel* ch, const rdma_ucm_init_qp_attr& cmd, size_t out_len) {
  if (out_len < sizeof(ib_uverbs_qp_attr)) return -ENOSPC;
  if (cmd.qp_state > IBV_QPS_ERR) return -EINVAL;
  ib_uverbs_qp_attr resp;
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  if (id != nullptr) err = id->has_dev ? make_qp_attr(*id, cmd.qp_state, &resp) : -EINVAL;
  unlock();
  if (err != 0) return err;
  return respond(cmd.response, out_len, resp);
}

int notify(Channel* ch, const rdma_ucm_notify& cmd) {
  int err;
  lock();
  Id* id = id_of(ch, cmd.id, &err);
  // COMM_EST on a connecting id: the CM would take it as an RTU; nothing else is expected.
  if (id != nullptr && id->state != IdState::kConnect && id->state != IdState::kConnected) err = -EINVAL;
  unlock();
  return err;
}

}  // namespace

void fill_info(const Id& id, uroce_cm_id_info* info) {
  std::memset(info, 0, sizeof *info);
  info->id = id.handle;
  info->ps = id.ps;
  info->qp_type = id.qp_type;
  info->tos = id.tos;
  info->node_guid = id.has_dev ? device().node_guid : 0;
  std::memcpy(info->sgid, id.sgid, 16);
  std::memcpy(info->dgid, id.dgid, 16);
  info->sgid_index = id.gid_index;
  info->src = id.src;
  info->dst = id.dst;
  info->path = id.path;
  info->ack_timeout = id.ack_timeout;
}

int handle_command(Channel* ch, uint32_t cmd, const void* payload, size_t in_len, size_t out_len) {
  switch (cmd) {
    case RDMA_USER_CM_CMD_CREATE_ID:
      return create_id(ch, payload_as<rdma_ucm_create_id>(payload, in_len), out_len);
    case RDMA_USER_CM_CMD_DESTROY_ID:
      return destroy_id(ch, payload_as<rdma_ucm_destroy_id>(payload, in_len), out_len);
    case RDMA_USER_CM_CMD_BIND_IP:
      return bind_ip(ch, payload_as<rdma_ucm_bind_ip>(payload, in_len));
    case RDMA_USER_CM_CMD_RESOLVE_IP:
      return resolve_ip(ch, payload_as<rdma_ucm_resolve_ip>(payload, in_len));
    case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
      return resolve_route(ch, payload_as<rdma_ucm_resolve_route>(payload, in_len));
    case RDMA_USER_CM_CMD_QUERY_ROUTE:
      return query_route(ch, payload_as<rdma_ucm_query>(payload, in_len), out_len);
    case RDMA_USER_CM_CMD_LISTEN:
      return listen(ch, payload_as<rdma_ucm_listen>(payload, in_len));
    case RDMA_USER_CM_CMD_INIT_QP_ATTR:
      return init_qp_attr(ch, payload_as<rdma_ucm_init_qp_attr>(payload, in_len), out_len);
    case RDMA_USER_CM_CMD_SET_OPTION:
      return set_option(ch, payload_as<rdma_ucm_set_option>(payload, in_len));
    case RDMA_USER_CM_CMD_NOTIFY:
      return notify(ch, payload_as<rdma_ucm_notify>(payload, in_len));
    case RDMA_USER_CM_CMD_CONNECT:
    case RDMA_USER_CM_CMD_ACCEPT:
    case RDMA_USER_CM_CMD_REJECT:
    case RDMA_USER_CM_CMD_DISCONNECT:
      return connection_command(ch, cmd, payload, in_len);
    // The AF_IB probe's BIND fails, so librdmacm stays in legacy mode (commands 0-18) for IP ids.
    case RDMA_USER_CM_CMD_BIND:
      return -EAFNOSUPPORT;
    case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
    case RDMA_USER_CM_CMD_JOIN_MCAST:
    case RDMA_USER_CM_CMD_LEAVE_MCAST:
      return multicast_command(ch, cmd, payload, in_len, out_len);
    case RDMA_USER_CM_CMD_GET_OPTION:  // a NULL slot in the kernel's table too
    case RDMA_USER_CM_CMD_QUERY:
    case RDMA_USER_CM_CMD_RESOLVE_ADDR:
      return -ENOSYS;
    default:
      return -EINVAL;
  }
}

}  // namespace uroce::shim::ucma
