// The ucma ABI 4 layouts the shim's emulation (provider/shim/ucma*.cc) relies on, checked against the
// kernel header rdma/rdma_user_cm.h and the offsets docs/design/rdma-cm.md section 2 lists (x86-64). The
// static_asserts stop the build; the tests print every value that differs.
#include <gtest/gtest.h>
#include <rdma/rdma_user_cm.h>

#include <cstddef>

#include "provider/shim/ucma.h"

// librdmacm's RDMA_CM_EVENT_* values by name, from ucma_event_numbers.cc (rdma/rdma_cma.h and
// rdma/rdma_user_cm.h cannot share a translation unit: both declare the port-space and option enums).
struct LibEvent {
  const char* name;
  uint32_t value;
};
extern const LibEvent kLibrdmacmEvents[];
extern const size_t kNumLibrdmacmEvents;

namespace {

using uroce::shim::ucma::CmEvent;
namespace u = uroce::shim::ucma;

// Payload sizes after the 8-byte header, as librdmacm 44 writes them (section 2's table).
static_assert(sizeof(rdma_ucm_cmd_hdr) == 8);
static_assert(sizeof(rdma_ucm_create_id) == 24);
static_assert(sizeof(rdma_ucm_destroy_id) == 16);
static_assert(sizeof(rdma_ucm_bind_ip) == 40);
static_assert(sizeof(rdma_ucm_resolve_ip) == 64);
static_assert(sizeof(rdma_ucm_resolve_route) == 8);
static_assert(sizeof(rdma_ucm_query) == 16);
static_assert(sizeof(rdma_ucm_connect) == 288);
static_assert(sizeof(rdma_ucm_listen) == 8);
static_assert(sizeof(rdma_ucm_accept) == 296);
static_assert(sizeof(rdma_ucm_reject) == 264);
static_assert(sizeof(rdma_ucm_disconnect) == 4);
static_assert(sizeof(rdma_ucm_init_qp_attr) == 16);
static_assert(sizeof(rdma_ucm_get_event) == 8);
static_assert(sizeof(rdma_ucm_set_option) == 24);
static_assert(sizeof(rdma_ucm_notify) == 8);
static_assert(sizeof(rdma_ucm_migrate_id) == 16);
static_assert(sizeof(rdma_ucm_bind) == 136);
// Responses.
static_assert(sizeof(rdma_ucm_create_id_resp) == 4);
static_assert(sizeof(rdma_ucm_destroy_id_resp) == 4);
static_assert(sizeof(rdma_ucm_migrate_resp) == 4);
static_assert(sizeof(rdma_ucm_query_route_resp) == 208);
static_assert(sizeof(ib_uverbs_qp_attr) == 144);
static_assert(sizeof(rdma_ucm_event_resp) == 336);
static_assert(sizeof(rdma_ucm_conn_param) == 272);
static_assert(sizeof(rdma_ucm_ud_param) == 304);
static_assert(sizeof(ib_user_path_rec) == 64);

struct Field {
  const char* name;
  size_t got;
  size_t want;
};

#define UROCE_OFF(type, member, want) \
  Field { #type "." #member, offsetof(type, member), want }

TEST(UcmaAbiLayout, PayloadOffsets) {
  const Field fields[] = {
      UROCE_OFF(rdma_ucm_create_id, uid, 0),
      UROCE_OFF(rdma_ucm_create_id, response, 8),
      UROCE_OFF(rdma_ucm_create_id, ps, 16),
      UROCE_OFF(rdma_ucm_create_id, qp_type, 18),
      UROCE_OFF(rdma_ucm_destroy_id, response, 0),
      UROCE_OFF(rdma_ucm_destroy_id, id, 8),
      UROCE_OFF(rdma_ucm_bind_ip, addr, 8),
      UROCE_OFF(rdma_ucm_bind_ip, id, 36),
      UROCE_OFF(rdma_ucm_resolve_ip, src_addr, 0),
      UROCE_OFF(rdma_ucm_resolve_ip, dst_addr, 28),
      UROCE_OFF(rdma_ucm_resolve_ip, id, 56),
      UROCE_OFF(rdma_ucm_resolve_ip, timeout_ms, 60),
      UROCE_OFF(rdma_ucm_resolve_route, timeout_ms, 4),
      UROCE_OFF(rdma_ucm_query, id, 8),
      UROCE_OFF(rdma_ucm_query, option, 12),
      UROCE_OFF(rdma_ucm_connect, id, 272),
      UROCE_OFF(rdma_ucm_connect, ece, 280),
      UROCE_OFF(rdma_ucm_listen, backlog, 4),
      UROCE_OFF(rdma_ucm_accept, conn_param, 8),
      UROCE_OFF(rdma_ucm_accept, id, 280),
      UROCE_OFF(rdma_ucm_accept, ece, 288),
      UROCE_OFF(rdma_ucm_reject, private_data_len, 4),
      UROCE_OFF(rdma_ucm_reject, reason, 5),
      UROCE_OFF(rdma_ucm_reject, private_data, 8),
      UROCE_OFF(rdma_ucm_init_qp_attr, id, 8),
      UROCE_OFF(rdma_ucm_init_qp_attr, qp_state, 12),
      UROCE_OFF(rdma_ucm_set_option, optval, 0),
      UROCE_OFF(rdma_ucm_set_option, id, 8),
      UROCE_OFF(rdma_ucm_set_option, level, 12),
      UROCE_OFF(rdma_ucm_set_option, optname, 16),
      UROCE_OFF(rdma_ucm_set_option, optlen, 20),
      UROCE_OFF(rdma_ucm_notify, event, 4),
      UROCE_OFF(rdma_ucm_migrate_id, id, 8),
      UROCE_OFF(rdma_ucm_migrate_id, fd, 12),
      UROCE_OFF(rdma_ucm_conn_param, private_data, 8),
      UROCE_OFF(rdma_ucm_conn_param, private_data_len, 264),
      UROCE_OFF(rdma_ucm_conn_param, srq, 265),
      UROCE_OFF(rdma_ucm_conn_param, responder_resources, 266),
      UROCE_OFF(rdma_ucm_conn_param, initiator_depth, 267),
      UROCE_OFF(rdma_ucm_conn_param, retry_count, 269),
      UROCE_OFF(rdma_ucm_conn_param, rnr_retry_count, 270),
      UROCE_OFF(rdma_ucm_conn_param, valid, 271),
  };
  for (const Field& f : fields) EXPECT_EQ(f.got, f.want) << f.name;
}

TEST(UcmaAbiLayout, ResponseOffsets) {
  const Field fields[] = {
      UROCE_OFF(rdma_ucm_query_route_resp, node_guid, 0),
      UROCE_OFF(rdma_ucm_query_route_resp, ib_route, 8),
      UROCE_OFF(rdma_ucm_query_route_resp, src_addr, 136),
      UROCE_OFF(rdma_ucm_query_route_resp, dst_addr, 164),
      UROCE_OFF(rdma_ucm_query_route_resp, num_paths, 192),
      UROCE_OFF(rdma_ucm_query_route_resp, port_num, 196),
      UROCE_OFF(rdma_ucm_query_route_resp, ibdev_index, 200),
      UROCE_OFF(ib_user_path_rec, dgid, 0),
      UROCE_OFF(ib_user_path_rec, sgid, 16),
      UROCE_OFF(ib_user_path_rec, flow_label, 40),
      UROCE_OFF(ib_user_path_rec, reversible, 44),
      UROCE_OFF(ib_user_path_rec, mtu, 48),
      UROCE_OFF(ib_user_path_rec, pkey, 52),
      UROCE_OFF(ib_user_path_rec, hop_limit, 54),
      UROCE_OFF(ib_user_path_rec, traffic_class, 55),
      UROCE_OFF(ib_user_path_rec, packet_life_time, 62),
      UROCE_OFF(rdma_ucm_event_resp, uid, 0),
      UROCE_OFF(rdma_ucm_event_resp, id, 8),
      UROCE_OFF(rdma_ucm_event_resp, event, 12),
      UROCE_OFF(rdma_ucm_event_resp, status, 16),
      UROCE_OFF(rdma_ucm_event_resp, param, 20),
      UROCE_OFF(rdma_ucm_event_resp, reserved, 324),
      UROCE_OFF(rdma_ucm_event_resp, ece, 328),
      UROCE_OFF(ib_uverbs_qp_attr, qp_attr_mask, 0),
      UROCE_OFF(ib_uverbs_qp_attr, qp_state, 4),
      UROCE_OFF(ib_uverbs_qp_attr, qkey, 20),
      UROCE_OFF(ib_uverbs_qp_attr, rq_psn, 24),
      UROCE_OFF(ib_uverbs_qp_attr, sq_psn, 28),
      UROCE_OFF(ib_uverbs_qp_attr, dest_qp_num, 32),
      UROCE_OFF(ib_uverbs_qp_attr, qp_access_flags, 36),
      UROCE_OFF(ib_uverbs_qp_attr, ah_attr, 40),
      UROCE_OFF(ib_uverbs_qp_attr, pkey_index, 124),
      UROCE_OFF(ib_uverbs_qp_attr, max_rd_atomic, 130),
      UROCE_OFF(ib_uverbs_qp_attr, max_dest_rd_atomic, 131),
      UROCE_OFF(ib_uverbs_qp_attr, port_num, 133),
      UROCE_OFF(ib_uverbs_qp_attr, timeout, 134),
      UROCE_OFF(ib_uverbs_ah_attr, grh, 0),
      UROCE_OFF(ib_uverbs_ah_attr, dlid, 24),
      UROCE_OFF(ib_uverbs_ah_attr, is_global, 29),
      UROCE_OFF(ib_uverbs_ah_attr, port_num, 30),
  };
  for (const Field& f : fields) EXPECT_EQ(f.got, f.want) << f.name;
}

TEST(UcmaAbiLayout, CommandAndEventNumbers) {
  EXPECT_EQ(RDMA_USER_CM_ABI_VERSION, 4);
  EXPECT_EQ(RDMA_USER_CM_CMD_GET_EVENT, 12);
  EXPECT_EQ(RDMA_USER_CM_CMD_MIGRATE_ID, 18);
  EXPECT_EQ(RDMA_USER_CM_CMD_BIND, 20);
  EXPECT_EQ(RDMA_USER_CM_CMD_JOIN_MCAST, 22);
  // The shim's own event numbers (it does not include librdmacm's header) against librdmacm's.
  const uint32_t shim[] = {
      u::kEvAddrResolved,    u::kEvAddrError,     u::kEvRouteResolved, u::kEvRouteError, u::kEvConnectRequest,
      u::kEvConnectResponse, u::kEvConnectError,  u::kEvUnreachable,   u::kEvRejected,   u::kEvEstablished,
      u::kEvDisconnected,    u::kEvMulticastJoin, u::kEvMulticastError};
  ASSERT_EQ(kNumLibrdmacmEvents, sizeof shim / sizeof shim[0]);
  for (size_t i = 0; i < kNumLibrdmacmEvents; ++i) {
    EXPECT_EQ(shim[i], kLibrdmacmEvents[i].value) << kLibrdmacmEvents[i].name;
  }
  static_assert(sizeof(CmEvent) == 4);
}

}  // namespace
