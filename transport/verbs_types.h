// The verbs vocabulary of the transport: work requests, completions, QP attributes and their enums. Every
// enum value equals its libibverbs counterpart (rdma-core's <infiniband/verbs.h>), so the provider converts
// by cast; provider/ checks that with static_asserts. This header includes no libibverbs header.
#pragma once

#include <array>
#include <cstdint>

namespace uroce {

using Gid = std::array<uint8_t, 16>;

// RoCEv2 over IPv4 uses IPv4-mapped GIDs (::ffff:a.b.c.d).
inline bool gid_is_ipv4(const Gid& g) {
  for (int i = 0; i < 10; ++i)
    if (g[i]) return false;
  return g[10] == 0xFF && g[11] == 0xFF;
}

enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocLenErr = 1,
  kLocQpOpErr = 2,
  kLocEecOpErr = 3,
  kLocProtErr = 4,
  kWrFlushErr = 5,
  kMwBindErr = 6,
  kBadRespErr = 7,
  kLocAccessErr = 8,
  kRemInvReqErr = 9,
  kRemAccessErr = 10,
  kRemOpErr = 11,
  kRetryExcErr = 12,
  kRnrRetryExcErr = 13,
  kLocRddViolErr = 14,
  kRemInvRdReqErr = 15,
  kRemAbortErr = 16,
  kInvEecnErr = 17,
  kInvEecStateErr = 18,
  kFatalErr = 19,
  kRespTimeoutErr = 20,
  kGeneralErr = 21,
};
const char* wc_status_name(WcStatus s);

enum class WcOpcode : uint8_t {
  kSend = 0,
  kRdmaWrite = 1,
  kRdmaRead = 2,
  kCompSwap = 3,
  kFetchAdd = 4,
  kBindMw = 5,
  kLocalInv = 6,
  kAtomicWrite = 9,
  kRecv = 128,
  kRecvRdmaWithImm = 129,
};

enum class WrOpcode : uint8_t {
  kRdmaWrite = 0,
  kRdmaWriteWithImm = 1,
  kSend = 2,
  kSendWithImm = 3,
  kRdmaRead = 4,
  kAtomicCmpAndSwp = 5,
  kAtomicFetchAndAdd = 6,
  kLocalInv = 7,
  kBindMw = 8,
  kSendWithInv = 9,
  // 10 (TSO), 11 (driver private) and 14 (FLUSH, in rdma-core from release 45 on) are not supported.
  kAtomicWrite = 15,  // IBA 1.5: one aligned 64-bit store at the responder
};

enum SendFlags : uint32_t {
  kSendFence = 1 << 0,
  kSendSignaled = 1 << 1,
  kSendSolicited = 1 << 2,
  kSendInline = 1 << 3,
};

enum AccessFlags : uint32_t {
  kAccessLocalWrite = 1 << 0,
  kAccessRemoteWrite = 1 << 1,
  kAccessRemoteRead = 1 << 2,
  kAccessRemoteAtomic = 1 << 3,
  kAccessMwBind = 1 << 4,
  kAccessZeroBased = 1 << 5,
  kAccessOnDemand = 1 << 6,  // on-demand paging (ODP)
};

enum WcFlags : uint32_t {
  kWcGrh = 1 << 0,
  kWcWithImm = 1 << 1,
  kWcWithInv = 1 << 3,
};

enum class QpType : uint8_t { kRc = 2, kUc = 3, kUd = 4 };

enum class QpState : uint8_t { kReset = 0, kInit = 1, kRtr = 2, kRts = 3, kSqd = 4, kSqe = 5, kErr = 6 };
const char* qp_state_name(QpState s);

enum QpAttrMask : uint32_t {
  kQpState = 1 << 0,
  kQpCurState = 1 << 1,
  kQpEnSqdAsyncNotify = 1 << 2,
  kQpAccessFlags = 1 << 3,
  kQpPkeyIndex = 1 << 4,
  kQpPort = 1 << 5,
  kQpQkey = 1 << 6,
  kQpAv = 1 << 7,
  kQpPathMtu = 1 << 8,
  kQpTimeout = 1 << 9,
  kQpRetryCnt = 1 << 10,
  kQpRnrRetry = 1 << 11,
  kQpRqPsn = 1 << 12,
  kQpMaxQpRdAtomic = 1 << 13,
  kQpAltPath = 1 << 14,
  kQpMinRnrTimer = 1 << 15,
  kQpSqPsn = 1 << 16,
  kQpMaxDestRdAtomic = 1 << 17,
  kQpPathMigState = 1 << 18,
  kQpCap = 1 << 19,
  kQpDestQpn = 1 << 20,
  kQpRateLimit = 1 << 25,
};

enum class EventType : uint8_t {
  kCqErr = 0,
  kQpFatal = 1,
  kQpReqErr = 2,
  kQpAccessErr = 3,
  kCommEst = 4,
  kSqDrained = 5,
  kPathMig = 6,
  kPathMigErr = 7,
  kDeviceFatal = 8,
  kPortActive = 9,
  kPortErr = 10,
  kSrqErr = 14,
  kSrqLimitReached = 15,
  kQpLastWqeReached = 16,
};

// Path MTU as the IBA enumerates it: 1 = 256 bytes ... 5 = 4096 bytes.
enum class Mtu : uint8_t { k256 = 1, k512 = 2, k1024 = 3, k2048 = 4, k4096 = 5 };
constexpr uint32_t mtu_bytes(Mtu m) { return 128u << static_cast<uint8_t>(m); }

struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// Where a packet goes: the RoCE address vector (ibv_ah_attr with its GRH, which RoCE always has).
struct AddressVector {
  Gid dgid{};
  uint8_t sgid_index = 0;
  uint32_t flow_label = 0;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint8_t sl = 0;                 // service level: the 802.1p priority (PCP) frames travel at
  uint16_t src_port_entropy = 0;  // 0: derive the UDP source port from the QP numbers
};

// A bind request as the send queue carries it (IBV_WR_BIND_MW, ibv_bind_mw). The window and the MR are named
// by key, not pointer, and looked up again when the bind executes: either may be gone by then.
struct MwBind {
  uint32_t mw_rkey = 0;   // any key the window has had: it names the window's slot, the key byte is ignored
  uint32_t new_rkey = 0;  // its low 8 bits become the window's key byte
  uint32_t mr_lkey = 0;   // the MR the window lies in (unused when length is 0)
  uint64_t addr = 0;
  uint64_t length = 0;  // 0: unbind (type 1 only)
  uint32_t access = 0;
};

struct SendWr {
  uint64_t wr_id = 0;
  const Sge* sg_list = nullptr;
  uint32_t num_sge = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t send_flags = 0;
  // Immediate data (wire order) or, for SEND_WITH_INV and LOCAL_INV, the rkey to invalidate (host order, as
  // ibv_send_wr's invalidate_rkey shares the field).
  uint32_t imm_data_be = 0;
  uint64_t remote_addr = 0;  // RDMA and atomic
  uint32_t rkey = 0;
  uint64_t compare_add = 0;  // atomic: compare (CMP_SWP) or add (FETCH_ADD)
  uint64_t swap = 0;
  MwBind bind;  // BIND_MW
  // UD
  const AddressVector* ah = nullptr;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  uint32_t xrc_srqn = 0;  // XRC initiator QPs: the target's SRQ number
};

struct RecvWr {
  uint64_t wr_id = 0;
  const Sge* sg_list = nullptr;
  uint32_t num_sge = 0;
};

struct Wc {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  uint32_t vendor_err = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data_be = 0;  // or invalidated rkey
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint32_t wc_flags = 0;
  uint16_t pkey_index = 0;
  uint16_t slid = 0;
  uint8_t sl = 0;
  uint8_t dlid_path_bits = 0;
};

struct QpCap {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline_data = 0;
};

struct QpAttr {
  QpState qp_state = QpState::kReset;
  QpState cur_qp_state = QpState::kReset;
  Mtu path_mtu = Mtu::k1024;
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  uint32_t qp_access_flags = 0;
  QpCap cap;
  AddressVector ah;
  uint16_t pkey_index = 0;
  bool en_sqd_async_notify = false;
  bool sq_draining = false;
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
  uint8_t min_rnr_timer = 0;
  uint8_t port_num = 1;
  uint8_t timeout = 0;
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;
  uint32_t rate_limit_kbps = 0;
};

struct AsyncEvent {
  EventType type;
  uint32_t element;  // QP number, SRQ handle, CQ handle or port number
};

}  // namespace uroce
