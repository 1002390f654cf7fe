// The per-connection record of CmAgent, shared by cm.cc (consumer calls, timers) and cm_rx.cc (received
// MADs). Private to transport/cm/.
#pragma once

#include "transport/cm/cm.h"

namespace uroce::cm {

struct CmAgent::Conn {
  CmId id = 0;
  CmState state = CmState::kIdle;
  bool active = false;
  bool ud = false;
  bool destroyed = false;            // the consumer freed it; kept only to answer late MADs in timewait
  bool disconnect_reported = false;  // rdma_cm reports DISCONNECTED once per connection
  uint32_t local_comm_id = 0;        // SIDR: the Request ID (active side)
  uint32_t remote_comm_id = 0;       // SIDR: the peer's Request ID (passive side)
  uint64_t remote_guid = 0;
  uint64_t tid = 0;  // TID of the exchange: replies (REP, RTU, MRA, REJ, DREP) carry it
  Address peer;
  uint64_t service_id = 0;
  CmId listen_id = 0;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  PathInfo path;
  bool has_remote_key = false;  // entered in by_remote_ / by_sidr_remote_

  // Retransmission of the last tracked message (REQ, REP, DREQ, SIDR_REQ).
  uint64_t timeout_ms = 0;  // this connection's CM response timeout (REQ: 2 * life + remote response)
  uint8_t max_cm_retries = kCmaMaxCmRetries;
  MadBytes last{};
  uint64_t cur_timeout_ms = 0;
  uint8_t retries_left = 0;
  uint64_t deadline = kNever;
  MadBytes rtu{};  // the RTU sent, resent for a duplicate REP
};

}  // namespace uroce::cm
