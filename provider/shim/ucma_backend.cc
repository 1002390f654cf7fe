// The connection-manager hook of the ucma emulation (ucma_backend.h): the registered backend, the
// stand-in used until one registers, and the functions a backend calls to report back.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "provider/shim/next.h"
#include "provider/shim/ucma.h"

namespace uroce::shim::ucma {
namespace {

std::atomic<bool> g_warned{false};

// The stand-in: no IB CM exists yet, so no request ever reaches a listener and an active side is told at
// once that its peer cannot be reached (see ucma_backend.h for what programs print).
int none_listen(void*, const uroce_cm_id_info*, int) { return 0; }

int none_connect(void*, const uroce_cm_id_info* id, const rdma_ucm_conn_param*, const rdma_ucm_ece*) {
  if (!g_warned.exchange(true)) {
    static const char kMsg[] =
        "uroce: the RDMA CM has no connection manager yet: rdma_connect is answered with "
        "RDMA_CM_EVENT_UNREACHABLE (status -ENOSYS)\n";
    (void)!::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  }
  return uroce_ucma_push_event(id->id, kEvUnreachable, -ENOSYS, nullptr, 0, nullptr);
}

int none_accept(void*, const uroce_cm_id_info*, const rdma_ucm_conn_param*, const rdma_ucm_ece*) {
  return -EINVAL;  // no request was received, so there is nothing to accept
}

int none_reject(void*, const uroce_cm_id_info*, uint8_t, const uint8_t*, uint8_t) { return -EINVAL; }

int none_disconnect(void*, const uroce_cm_id_info*) { return -EINVAL; }  // never connected

void none_destroy(void*, uint32_t) {}

constexpr uroce_cm_backend kNone = {nullptr,     none_listen,     none_connect, none_accept,
                                    none_reject, none_disconnect, none_destroy};

// Written and copied under lock().
uroce_cm_backend g_backend = kNone;

}  // namespace

const uroce_cm_backend& backend() { return g_backend; }  // callers copy it under lock()

}  // namespace uroce::shim::ucma

namespace u = uroce::shim::ucma;

extern "C" {

UROCE_EXPORT int uroce_ucma_set_backend(const uroce_cm_backend* b) {
  u::lock();
  u::g_backend = b != nullptr ? *b : u::kNone;
  u::unlock();
  return 0;
}

UROCE_EXPORT int uroce_ucma_push_event(uint32_t id, uint32_t event, int32_t status, const void* param,
                                       uint32_t param_len, const rdma_ucm_ece* ece) {
  auto* ev = static_cast<u::Event*>(std::calloc(1, sizeof(u::Event)));
  if (ev == nullptr) return -ENOMEM;
  ev->resp.id = id;
  ev->resp.event = event;
  ev->resp.status = static_cast<uint32_t>(status);
  if (param != nullptr) {
    std::memcpy(&ev->resp.param, param,
                param_len < sizeof ev->resp.param ? param_len : sizeof ev->resp.param);
  }
  if (ece != nullptr) ev->resp.ece = *ece;
  u::lock();
  u::Id* target = u::find_id(id);
  u::Id* owner = target;
  if (target != nullptr && target->listener != u::kNoId) {
    // A child not yet reported: only its CONNECT_REQUEST may go out, on the listener's channel, counted by
    // the listener and carrying its uid (ucma.c ucma_event_handler drops the rest until ACCEPT).
    owner = event == u::kEvConnectRequest ? u::find_id(target->listener) : nullptr;
  } else if (target != nullptr && target->uid == 0) {
    owner = nullptr;  // a reported child not accepted yet
  }
  if (owner == nullptr || owner->channel == nullptr || owner->channel->closed) {
    u::unlock();
    std::free(ev);
    return -ENOENT;
  }
  ev->owner = owner->handle;
  ev->resp.uid = owner->uid;
  u::queue_event(owner->channel, ev);
  u::unlock();
  return 0;
}

UROCE_EXPORT int uroce_ucma_create_conn_id(uint32_t listen_id, const uroce_cm_id_info* addr,
                                           uint32_t* child) {
  u::lock();
  u::Id* l = u::find_id(listen_id);
  if (l == nullptr || l->state != u::IdState::kListen) {
    u::unlock();
    return -ENOENT;
  }
  u::Id* c = u::new_id(l->channel);
  if (c == nullptr) {
    u::unlock();
    return -ENOMEM;
  }
  c->ps = l->ps;
  c->qp_type = l->qp_type;
  c->listener = l->handle;
  c->state = u::IdState::kConnect;
  c->src = addr->src;
  c->dst = addr->dst;
  c->src_set = c->dst_set = true;
  c->has_dev = true;
  c->gid_index = addr->sgid_index;
  std::memcpy(c->sgid, addr->sgid, 16);
  std::memcpy(c->dgid, addr->dgid, 16);
  c->path = addr->path;
  c->num_paths = 1;
  c->tos = l->tos;
  *child = c->handle;
  u::unlock();
  return 0;
}

UROCE_EXPORT int uroce_ucma_set_conn(uint32_t id, const uroce_cm_conn* conn) {
  u::lock();
  u::Id* i = u::find_id(id);
  if (i != nullptr) {
    i->conn = *conn;
    i->has_conn = true;
  }
  u::unlock();
  return i != nullptr ? 0 : -ENOENT;
}

}  // extern "C"
