// INIT_QP_ATTR as the kernel answers it for a RoCE id (cma.c rdma_init_qp_attr, cma_ib_init_qp_attr;
// cm.c cm_init_qp_init_attr / cm_init_qp_rtr_attr / cm_init_qp_rts_attr).
#include "provider/shim/ucma_qp_attr.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace uroce::shim::ucma {
int make_qp_attr(const Id& id, uint32_t qp_state, ib_uverbs_qp_attr* a) {
  std::memset(a, 0, sizeof *a);
  a->qp_state = qp_state;
  a->pkey_index = 0;  // P_Key 0xFFFF is entry 0 of the uroce table
  a->port_num = 1;
  if (!id.has_conn || id.qp_type == IBV_QPT_UD) {
    // No CM exchange yet, or a UD id: cma_ib_init_qp_attr, whichever state was asked for.
    a->qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (id.qp_type == IBV_QPT_UD) {
      a->qkey = kUdpQkey;
      a->qp_attr_mask |= IBV_QP_QKEY;
    } else {
      a->qp_access_flags = 0;
      a->qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
    }
    if (qp_state == IBV_QPS_RTR && id.has_conn) a->rq_psn = id.conn.rq_psn;
    return 0;
  }
  const uroce_cm_conn& c = id.conn;
  switch (qp_state) {
    case IBV_QPS_INIT:
      a->qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
      a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
      if (c.responder_resources > 0) a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
      return 0;
    case IBV_QPS_RTR:
      a->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      {
        static const uint8_t kZero[16] = {};
        const bool peer_gid = std::memcmp(c.dgid, kZero, 16) != 0;
        std::memcpy(a->ah_attr.grh.dgid, peer_gid ? c.dgid : id.dgid, 16);
      }
      a->ah_attr.grh.flow_label = ntohl(id.path.flow_label);
      a->ah_attr.grh.sgid_index = static_cast<uint8_t>(id.gid_index);
      a->ah_attr.grh.hop_limit = id.path.hop_limit;
      a->ah_attr.grh.traffic_class = id.path.traffic_class;
      a->ah_attr.sl = id.path.sl;
      a->ah_attr.is_global = 1;
      a->ah_attr.port_num = 1;
      a->path_mtu = c.path_mtu;
      a->dest_qp_num = c.remote_qpn;
      a->rq_psn = c.rq_psn;  // this side receives at its own StartingPSN
      a->max_dest_rd_atomic = c.responder_resources;
      a->min_rnr_timer = c.min_rnr_timer;
      return 0;
    case IBV_QPS_RTS:
      a->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_MAX_QP_RD_ATOMIC;
      a->sq_psn = c.sq_psn;  // and sends at the peer's
      a->timeout = c.local_ack_timeout;
      a->retry_cnt = c.retry_count;
      a->rnr_retry = c.rnr_retry_count;
      a->max_rd_atomic = c.initiator_depth;
      return 0;
    default:
      return -EINVAL;
  }
}

}  // namespace uroce::shim::ucma
