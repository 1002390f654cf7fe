/* The connection manager behind the shim's ucma emulation (provider/shim/ucma*.cc).
 *
 * The ucma layer serves every local RDMA CM command itself (ids, binds, address and route resolution,
 * QP attributes, events). The five commands that need a peer - LISTEN (so requests can reach the id),
 * CONNECT, ACCEPT, REJECT, DISCONNECT - and the end of an id go to a backend through this table: the IB CM
 * (REQ/REP/RTU/REJ/DREQ/DREP/SIDR MADs on QP1) implements it. The backend answers asynchronously by
 * pushing events with the uroce_ucma_* functions below; they take the ucma lock, so a backend may call them
 * from any thread, including from inside one of its own entry points.
 *
 * Until a backend registers, a built-in one stands in (ucma_backend.cc): LISTEN succeeds (no request can
 * arrive), CONNECT succeeds and queues RDMA_CM_EVENT_UNREACHABLE with status -ENOSYS, and prints one line
 * to stderr saying that uroce has no connection manager yet; ACCEPT/REJECT/DISCONNECT fail with EINVAL (no
 * request or connection exists to act on). rping then prints
 * "cma event RDMA_CM_EVENT_UNREACHABLE, error -38"; synchronous librdmacm calls fail with ENOSYS.
 *
 * A backend in the provider (which must not link against the shim) registers with
 *   dlsym(RTLD_DEFAULT, UROCE_UCMA_SET_BACKEND_SYMBOL)
 * e.g. from the provider's constructor: librdmacm loads the provider (ibv_get_device_list) before it
 * creates its first id. */
#pragma once

#include <netinet/in.h>
#include <rdma/ib_user_sa.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* From rdma/rdma_user_cm.h, only by pointer here: that header cannot share a translation unit with
 * librdmacm's rdma/rdma_cma.h (both declare the port-space and option enums). */
struct rdma_ucm_conn_param;
struct rdma_ucm_ece;

/* What the backend learns about an id, a copy made at each call (the id may be destroyed concurrently;
 * refer to it afterwards by `id` only). Addresses are sockaddr_in or sockaddr_in6 in sin6-sized space,
 * GIDs in network order (IPv4 as ::ffff:a.b.c.d). */
struct uroce_cm_id_info {
  uint32_t id;     /* handle, unique while the id lives */
  uint16_t ps;     /* RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB, RDMA_PS_IPOIB */
  uint8_t qp_type; /* IB_UVERBS_QPT_RC or IB_UVERBS_QPT_UD */
  uint8_t tos;
  uint64_t node_guid; /* big-endian, as sysfs; 0 while unbound */
  uint8_t sgid[16];
  uint8_t dgid[16];
  int32_t sgid_index;
  struct sockaddr_in6 src;      /* local address and port */
  struct sockaddr_in6 dst;      /* peer (unset for a listener) */
  struct ib_user_path_rec path; /* valid after route resolution (mtu, hop limit, packet life time) */
  uint8_t ack_timeout;          /* RDMA_OPTION_ID_ACK_TIMEOUT, 0 = unset */
};

/* What INIT_QP_ATTR returns for RTR/RTS once the CM exchanged REQ/REP (cm.c cm_init_qp_*_attr). Set it
 * with uroce_ucma_set_conn before pushing the event that lets the application move its QP. */
struct uroce_cm_conn {
  uint32_t remote_qpn;
  uint32_t rq_psn;  /* this side's own StartingPSN (its seq_num) */
  uint32_t sq_psn;  /* the peer's StartingPSN */
  uint8_t path_mtu; /* IB enum */
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t local_ack_timeout;
  uint8_t min_rnr_timer;
  uint8_t reserved;
  /* The peer's GID for RTR's ah_attr.dgid when it is not the address the id resolved (under uroced a
   * client names 127.0.0.1 but the listener's GID is its leased address); all zero: the id's dgid. */
  uint8_t dgid[16];
};

/* Entry points return 0 or a negative errno, which the ucma command fails with. None blocks on the network.
 * ctx is the backend's own pointer, passed back unchanged. */
struct uroce_cm_backend {
  void* ctx;
  int (*listen)(void* ctx, const struct uroce_cm_id_info* id, int backlog);
  int (*connect)(void* ctx, const struct uroce_cm_id_info* id, const struct rdma_ucm_conn_param* param,
                 const struct rdma_ucm_ece* ece);
  /* param is NULL when the caller passed none (valid == 0: completes an active side's RTU). */
  int (*accept)(void* ctx, const struct uroce_cm_id_info* id, const struct rdma_ucm_conn_param* param,
                const struct rdma_ucm_ece* ece);
  int (*reject)(void* ctx, const struct uroce_cm_id_info* id, uint8_t reason, const uint8_t* private_data,
                uint8_t private_data_len);
  int (*disconnect)(void* ctx, const struct uroce_cm_id_info* id);
  /* The id is gone (DESTROY_ID, its channel closed): send what the CM rules require (REJ, DREQ, DREP) and
   * forget it. Events pushed for it afterwards are dropped. */
  void (*destroy)(void* ctx, uint32_t id);
};

/* Installs `b` (copied; NULL restores the built-in one). Returns 0. */
int uroce_ucma_set_backend(const struct uroce_cm_backend* b);
typedef int (*uroce_ucma_set_backend_fn)(const struct uroce_cm_backend* b);
#define UROCE_UCMA_SET_BACKEND_SYMBOL "uroce_ucma_set_backend"

/* Queues `event` (RDMA_CM_EVENT_*) for id on its channel. param (struct rdma_ucm_conn_param or
 * rdma_ucm_ud_param, param_len bytes, at most 304) and ece may be NULL. A CONNECT_REQUEST for a child made by
 * uroce_ucma_create_conn_id is queued on the listener's channel and counted by the listener. Returns 0, or
 * -ENOENT when the id is gone. */
int uroce_ucma_push_event(uint32_t id, uint32_t event, int32_t status, const void* param, uint32_t param_len,
                          const struct rdma_ucm_ece* ece);

/* Creates the id of a new incoming connection on `listen_id` (copying its port space, QP type and channel)
 * with the given local/remote addresses and GIDs, to be reported with a CONNECT_REQUEST event. Stores its
 * handle in *child. Returns 0, -ENOENT (listener gone) or -ENOMEM. */
int uroce_ucma_create_conn_id(uint32_t listen_id, const struct uroce_cm_id_info* addr, uint32_t* child);

/* Records the connection data INIT_QP_ATTR needs for INIT (after REQ/REP), RTR and RTS. */
int uroce_ucma_set_conn(uint32_t id, const struct uroce_cm_conn* conn);

#ifdef __cplusplus
}
#endif
