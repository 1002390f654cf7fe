// The transport's verbs vocabulary (transport/verbs_types.h) equals libibverbs' value for value, so the
// provider converts by cast (verbs_cq.cc, verbs_qp.cc, driver.cc). These checks make a value that drifts,
// on either side, a compile error instead of a wrong status or opcode at run time. No code.
#include <infiniband/verbs.h>

#include "transport/verbs_types.h"

namespace uroce::provider {
namespace {

template <typename E>
constexpr int v(E e) {
  return static_cast<int>(e);
}

#define UROCE_SAME(ours, theirs) static_assert(v(ours) == static_cast<int>(theirs), #ours " != " #theirs)

UROCE_SAME(WcStatus::kSuccess, IBV_WC_SUCCESS);
UROCE_SAME(WcStatus::kLocLenErr, IBV_WC_LOC_LEN_ERR);
UROCE_SAME(WcStatus::kLocQpOpErr, IBV_WC_LOC_QP_OP_ERR);
UROCE_SAME(WcStatus::kLocEecOpErr, IBV_WC_LOC_EEC_OP_ERR);
UROCE_SAME(WcStatus::kLocProtErr, IBV_WC_LOC_PROT_ERR);
UROCE_SAME(WcStatus::kWrFlushErr, IBV_WC_WR_FLUSH_ERR);
UROCE_SAME(WcStatus::kMwBindErr, IBV_WC_MW_BIND_ERR);
UROCE_SAME(WcStatus::kBadRespErr, IBV_WC_BAD_RESP_ERR);
UROCE_SAME(WcStatus::kLocAccessErr, IBV_WC_LOC_ACCESS_ERR);
UROCE_SAME(WcStatus::kRemInvReqErr, IBV_WC_REM_INV_REQ_ERR);
UROCE_SAME(WcStatus::kRemAccessErr, IBV_WC_REM_ACCESS_ERR);
UROCE_SAME(WcStatus::kRemOpErr, IBV_WC_REM_OP_ERR);
UROCE_SAME(WcStatus::kRetryExcErr, IBV_WC_RETRY_EXC_ERR);
UROCE_SAME(WcStatus::kRnrRetryExcErr, IBV_WC_RNR_RETRY_EXC_ERR);
UROCE_SAME(WcStatus::kLocRddViolErr, IBV_WC_LOC_RDD_VIOL_ERR);
UROCE_SAME(WcStatus::kRemInvRdReqErr, IBV_WC_REM_INV_RD_REQ_ERR);
UROCE_SAME(WcStatus::kRemAbortErr, IBV_WC_REM_ABORT_ERR);
UROCE_SAME(WcStatus::kInvEecnErr, IBV_WC_INV_EECN_ERR);
UROCE_SAME(WcStatus::kInvEecStateErr, IBV_WC_INV_EEC_STATE_ERR);
UROCE_SAME(WcStatus::kFatalErr, IBV_WC_FATAL_ERR);
UROCE_SAME(WcStatus::kRespTimeoutErr, IBV_WC_RESP_TIMEOUT_ERR);
UROCE_SAME(WcStatus::kGeneralErr, IBV_WC_GENERAL_ERR);

UROCE_SAME(WcOpcode::kSend, IBV_WC_SEND);
UROCE_SAME(WcOpcode::kRdmaWrite, IBV_WC_RDMA_WRITE);
UROCE_SAME(WcOpcode::kRdmaRead, IBV_WC_RDMA_READ);
UROCE_SAME(WcOpcode::kCompSwap, IBV_WC_COMP_SWAP);
UROCE_SAME(WcOpcode::kFetchAdd, IBV_WC_FETCH_ADD);
UROCE_SAME(WcOpcode::kBindMw, IBV_WC_BIND_MW);
UROCE_SAME(WcOpcode::kLocalInv, IBV_WC_LOCAL_INV);
UROCE_SAME(WcOpcode::kAtomicWrite, IBV_WC_ATOMIC_WRITE);
UROCE_SAME(WcOpcode::kRecv, IBV_WC_RECV);
UROCE_SAME(WcOpcode::kRecvRdmaWithImm, IBV_WC_RECV_RDMA_WITH_IMM);

UROCE_SAME(WrOpcode::kRdmaWrite, IBV_WR_RDMA_WRITE);
UROCE_SAME(WrOpcode::kRdmaWriteWithImm, IBV_WR_RDMA_WRITE_WITH_IMM);
UROCE_SAME(WrOpcode::kSend, IBV_WR_SEND);
UROCE_SAME(WrOpcode::kSendWithImm, IBV_WR_SEND_WITH_IMM);
UROCE_SAME(WrOpcode::kRdmaRead, IBV_WR_RDMA_READ);
UROCE_SAME(WrOpcode::kAtomicCmpAndSwp, IBV_WR_ATOMIC_CMP_AND_SWP);
UROCE_SAME(WrOpcode::kAtomicFetchAndAdd, IBV_WR_ATOMIC_FETCH_AND_ADD);
UROCE_SAME(WrOpcode::kLocalInv, IBV_WR_LOCAL_INV);
UROCE_SAME(WrOpcode::kBindMw, IBV_WR_BIND_MW);
UROCE_SAME(WrOpcode::kSendWithInv, IBV_WR_SEND_WITH_INV);
UROCE_SAME(WrOpcode::kAtomicWrite, IBV_WR_ATOMIC_WRITE);

UROCE_SAME(kSendFence, IBV_SEND_FENCE);
UROCE_SAME(kSendSignaled, IBV_SEND_SIGNALED);
UROCE_SAME(kSendSolicited, IBV_SEND_SOLICITED);
UROCE_SAME(kSendInline, IBV_SEND_INLINE);

UROCE_SAME(kAccessLocalWrite, IBV_ACCESS_LOCAL_WRITE);
UROCE_SAME(kAccessRemoteWrite, IBV_ACCESS_REMOTE_WRITE);
UROCE_SAME(kAccessRemoteRead, IBV_ACCESS_REMOTE_READ);
UROCE_SAME(kAccessRemoteAtomic, IBV_ACCESS_REMOTE_ATOMIC);
UROCE_SAME(kAccessMwBind, IBV_ACCESS_MW_BIND);
UROCE_SAME(kAccessZeroBased, IBV_ACCESS_ZERO_BASED);
UROCE_SAME(kAccessOnDemand, IBV_ACCESS_ON_DEMAND);

UROCE_SAME(kWcGrh, IBV_WC_GRH);
UROCE_SAME(kWcWithImm, IBV_WC_WITH_IMM);
UROCE_SAME(kWcWithInv, IBV_WC_WITH_INV);

UROCE_SAME(QpType::kRc, IBV_QPT_RC);
UROCE_SAME(QpType::kUc, IBV_QPT_UC);
UROCE_SAME(QpType::kUd, IBV_QPT_UD);

UROCE_SAME(QpState::kReset, IBV_QPS_RESET);
UROCE_SAME(QpState::kInit, IBV_QPS_INIT);
UROCE_SAME(QpState::kRtr, IBV_QPS_RTR);
UROCE_SAME(QpState::kRts, IBV_QPS_RTS);
UROCE_SAME(QpState::kSqd, IBV_QPS_SQD);
UROCE_SAME(QpState::kSqe, IBV_QPS_SQE);
UROCE_SAME(QpState::kErr, IBV_QPS_ERR);

UROCE_SAME(kQpState, IBV_QP_STATE);
UROCE_SAME(kQpCurState, IBV_QP_CUR_STATE);
UROCE_SAME(kQpEnSqdAsyncNotify, IBV_QP_EN_SQD_ASYNC_NOTIFY);
UROCE_SAME(kQpAccessFlags, IBV_QP_ACCESS_FLAGS);
UROCE_SAME(kQpPkeyIndex, IBV_QP_PKEY_INDEX);
UROCE_SAME(kQpPort, IBV_QP_PORT);
UROCE_SAME(kQpQkey, IBV_QP_QKEY);
UROCE_SAME(kQpAv, IBV_QP_AV);
UROCE_SAME(kQpPathMtu, IBV_QP_PATH_MTU);
UROCE_SAME(kQpTimeout, IBV_QP_TIMEOUT);
UROCE_SAME(kQpRetryCnt, IBV_QP_RETRY_CNT);
UROCE_SAME(kQpRnrRetry, IBV_QP_RNR_RETRY);
UROCE_SAME(kQpRqPsn, IBV_QP_RQ_PSN);
UROCE_SAME(kQpMaxQpRdAtomic, IBV_QP_MAX_QP_RD_ATOMIC);
UROCE_SAME(kQpAltPath, IBV_QP_ALT_PATH);
UROCE_SAME(kQpMinRnrTimer, IBV_QP_MIN_RNR_TIMER);
UROCE_SAME(kQpSqPsn, IBV_QP_SQ_PSN);
UROCE_SAME(kQpMaxDestRdAtomic, IBV_QP_MAX_DEST_RD_ATOMIC);
UROCE_SAME(kQpPathMigState, IBV_QP_PATH_MIG_STATE);
UROCE_SAME(kQpCap, IBV_QP_CAP);
UROCE_SAME(kQpDestQpn, IBV_QP_DEST_QPN);
UROCE_SAME(kQpRateLimit, IBV_QP_RATE_LIMIT);

UROCE_SAME(EventType::kCqErr, IBV_EVENT_CQ_ERR);
UROCE_SAME(EventType::kQpFatal, IBV_EVENT_QP_FATAL);
UROCE_SAME(EventType::kQpReqErr, IBV_EVENT_QP_REQ_ERR);
UROCE_SAME(EventType::kQpAccessErr, IBV_EVENT_QP_ACCESS_ERR);
UROCE_SAME(EventType::kCommEst, IBV_EVENT_COMM_EST);
UROCE_SAME(EventType::kSqDrained, IBV_EVENT_SQ_DRAINED);
UROCE_SAME(EventType::kPathMig, IBV_EVENT_PATH_MIG);
UROCE_SAME(EventType::kPathMigErr, IBV_EVENT_PATH_MIG_ERR);
UROCE_SAME(EventType::kDeviceFatal, IBV_EVENT_DEVICE_FATAL);
UROCE_SAME(EventType::kPortActive, IBV_EVENT_PORT_ACTIVE);
UROCE_SAME(EventType::kPortErr, IBV_EVENT_PORT_ERR);
UROCE_SAME(EventType::kSrqErr, IBV_EVENT_SRQ_ERR);
UROCE_SAME(EventType::kSrqLimitReached, IBV_EVENT_SRQ_LIMIT_REACHED);
UROCE_SAME(EventType::kQpLastWqeReached, IBV_EVENT_QP_LAST_WQE_REACHED);

UROCE_SAME(Mtu::k256, IBV_MTU_256);
UROCE_SAME(Mtu::k512, IBV_MTU_512);
UROCE_SAME(Mtu::k1024, IBV_MTU_1024);
UROCE_SAME(Mtu::k2048, IBV_MTU_2048);
UROCE_SAME(Mtu::k4096, IBV_MTU_4096);

#undef UROCE_SAME

}  // namespace
}  // namespace uroce::provider
