#include "transport/verbs_types.h"

#include <cstddef>

namespace uroce {

const char* wc_status_name(WcStatus s) {
  // ibv_wc_status_str() wording, so logs read the same as with hardware.
  static const char* const kNames[] = {"success",
                                       "local length error",
                                       "local QP operation error",
                                       "local EE context operation error",
                                       "local protection error",
                                       "Work Request Flushed Error",
                                       "memory management operation error",
                                       "bad response error",
                                       "local access error",
                                       "remote invalid request error",
                                       "remote access error",
                                       "remote operation error",
                                       "transport retry counter exceeded",
                                       "RNR retry counter exceeded",
                                       "local RDD violation error",
                                       "remote invalid RD request",
                                       "operation aborted",
                                       "invalid EE context number",
                                       "invalid EE context state",
                                       "fatal error",
                                       "response timeout error",
                                       "general error"};
  const auto i = static_cast<size_t>(s);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

const char* qp_state_name(QpState s) {
  static const char* const kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  const auto i = static_cast<size_t>(s);
  return i < 7 ? kNames[i] : "UNKNOWN";
}

}  // namespace uroce
