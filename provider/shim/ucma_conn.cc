// CONNECT, ACCEPT, REJECT, DISCONNECT: checked and recorded here, carried out by the connection-manager
// backend (ucma_backend.h), which is called without the lock. Also the end of a closing channel's ids.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider/shim/ucma.h"
#include "provider/shim/ucma_id.h"

namespace uroce::shim::ucma {
namespace {

constexpr uint8_t kRejConsumerDefined = 28;  // IB_CM_REJ_CONSUMER_DEFINED
constexpr uint8_t kRejVendorOption = 35;     // IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED

struct Prepared {
  int err;
  IdState before;
  uroce_cm_id_info info;
  uroce_cm_backend backend;
};

// Looks the id up on ch and checks its state with ok(); on success moves it to `next` (unless kept) and
// snapshots what the backend needs.
template <typename Ok>
Prepared prepare(Channel* ch, uint32_t handle, Ok ok, IdState next, bool keep_state) {
  Prepared p{};
  lock();
  Id* id = find_id(handle);
  if (id == nullptr) {
    p.err = -ENOENT;
  } else if (id->channel != ch) {
    p.err = -EINVAL;
  } else if (!ok(*id)) {
    p.err = -EINVAL;
  } else {
    p.before = id->state;
    if (!keep_state) id->state = next;
    fill_info(*id, &p.info);
    p.backend = backend();
  }
  unlock();
  return p;
}

// A failed backend call leaves the id as it was (if it still exists).
void restore(uint32_t handle, IdState before) {
  lock();
  if (Id* id = find_id(handle)) id->state = before;
  unlock();
}

int connect(Channel* ch, const rdma_ucm_connect& cmd) {
  if (cmd.conn_param.valid == 0) return -EINVAL;
  Prepared p = prepare(
      ch, cmd.id, [](const Id& id) { return id.state == IdState::kRouteResolved; }, IdState::kConnect, false);
  if (p.err != 0) return p.err;
  const int err = p.backend.connect(p.backend.ctx, &p.info, &cmd.conn_param, &cmd.ece);
  if (err != 0) restore(cmd.id, p.before);
  return err;
}

int accept(Channel* ch, const rdma_ucm_accept& cmd) {
  Prepared p = prepare(
      ch, cmd.id, [](const Id& id) { return id.state == IdState::kConnect; }, IdState::kConnected, false);
  if (p.err != 0) return p.err;
  // A passive id takes the uid ACCEPT names; set before the backend runs, so that the events it pushes at
  // once (ESTABLISHED) are not dropped as those of an unclaimed request.
  uint64_t old_uid = 0;
  lock();
  if (Id* id = find_id(cmd.id); id != nullptr && cmd.conn_param.valid != 0 && cmd.uid != 0) {
    old_uid = id->uid;
    id->uid = cmd.uid;
  }
  unlock();
  const int err = p.backend.accept(p.backend.ctx, &p.info,
                                   cmd.conn_param.valid != 0 ? &cmd.conn_param : nullptr, &cmd.ece);
  if (err != 0) {
    lock();
    if (Id* id = find_id(cmd.id); id != nullptr && cmd.conn_param.valid != 0 && cmd.uid != 0)
      id->uid = old_uid;
    unlock();
    restore(cmd.id, p.before);
  }
  return err;
}

int reject(Channel* ch, const rdma_ucm_reject& cmd) {
  const uint8_t reason = cmd.reason == 0 ? kRejConsumerDefined : cmd.reason;
  if (reason != kRejConsumerDefined && reason != kRejVendorOption) return -EINVAL;
  const uint8_t len = cmd.private_data_len;
  Prepared p = prepare(
      ch, cmd.id, [](const Id& id) { return id.state == IdState::kConnect; }, IdState::kConnect, true);
  if (p.err != 0) return p.err;
  return p.backend.reject(p.backend.ctx, &p.info, reason, cmd.private_data, len);
}

int disconnect(Channel* ch, const rdma_ucm_disconnect& cmd) {
  Prepared p = prepare(
      ch, cmd.id,
      [](const Id& id) { return id.state == IdState::kConnect || id.state == IdState::kConnected; },
      IdState::kDisconnected, false);
  if (p.err != 0) return p.err;
  const int err = p.backend.disconnect(p.backend.ctx, &p.info);
  if (err != 0) restore(cmd.id, p.before);
  return err;
}

}  // namespace

int connection_command(Channel* ch, uint32_t cmd, const void* payload, size_t in_len) {
  switch (cmd) {
    case RDMA_USER_CM_CMD_CONNECT:
      return connect(ch, payload_as<rdma_ucm_connect>(payload, in_len));
    case RDMA_USER_CM_CMD_ACCEPT:
      return accept(ch, payload_as<rdma_ucm_accept>(payload, in_len));
    case RDMA_USER_CM_CMD_REJECT:
      return reject(ch, payload_as<rdma_ucm_reject>(payload, in_len));
    case RDMA_USER_CM_CMD_DISCONNECT:
      return disconnect(ch, payload_as<rdma_ucm_disconnect>(payload, in_len));
    default:
      return -EINVAL;
  }
}

void destroy_ids_of(Channel* ch) {
  // In rounds of a fixed batch, so that nothing is allocated while the channel goes away.
  for (;;) {
    uint32_t gone[64];
    uint32_t n = 0;
    lock();
    const uint32_t size = id_table_size();
    for (uint32_t h = 0; h < size && n < 32; ++h) {
      Id* id = find_id(h);
      if (id != nullptr && id->channel == ch) n += free_id(id, gone + n, 64 - n);
    }
    const uroce_cm_backend b = backend();
    unlock();
    for (uint32_t i = 0; i < n; ++i) b.destroy(b.ctx, gone[i]);
    if (n == 0) return;
  }
}

}  // namespace uroce::shim::ucma
