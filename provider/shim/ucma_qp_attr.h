// INIT_QP_ATTR's answer (ucma_qp_attr.cc), under lock().
#pragma once

#include <rdma/ib_user_verbs.h>

#include "provider/shim/ucma.h"

namespace uroce::shim::ucma {

// RDMA_UDP_QKEY: the Q_Key of UD ids, in their QP attributes and their multicast groups' events.
constexpr uint32_t kUdpQkey = 0x01234567;

// What the kernel's rdma_init_qp_attr returns for `id` and qp_state (an ibv_qp_state): 0 or -EINVAL.
int make_qp_attr(const Id& id, uint32_t qp_state, ib_uverbs_qp_attr* out);

}  // namespace uroce::shim::ucma
