// Counter sets of the simulated links and ports (fabric/counters.h says how a set is declared).
#pragma once

#include "fabric/counters.h"
#include "fabric/switch.h"

namespace uroce::sim {

// Per link direction. Identity once the link has drained:
//   delivered_frames == sent_frames - lost + duplicated.
#define UROCE_SIM_LINK_COUNTERS(X)                                             \
  X(sent_frames) /* finished serialization onto the wire */                    \
  X(sent_bytes)                                                                \
  X(delivered_frames) /* copies handed to the far end (duplicates included) */ \
  X(delivered_bytes)                                                           \
  X(lost)          /* random loss after serialization */                       \
  X(duplicated)    /* extra copies */                                          \
  X(reordered)     /* copies held back by an extra random delay */             \
  X(corrupted)     /* copies with one bit flipped */                           \
  X(queue_dropped) /* refused by the egress queue (tail drop) */
UROCE_COUNTER_SET(LinkCounters, UROCE_SIM_LINK_COUNTERS);

#define UROCE_SIM_PORT_COUNTERS(X)                                         \
  X(tx_frames) /* accepted by tx_burst */                                  \
  X(tx_bytes)                                                              \
  X(tx_refused) /* left with the caller: tx ring full or port not wired */ \
  X(rx_frames)  /* landed in the rx ring */                                \
  X(rx_bytes)                                                              \
  X(rx_no_buffer) /* arrived while the pool was empty: dropped */          \
  X(rx_oversize)  /* arrived longer than max_frame: dropped */             \
  X(pfc_rx)       /* PFC frames received (fabric model): applied to the uplink */
UROCE_COUNTER_SET(PortCounters, UROCE_SIM_PORT_COUNTERS);

// Per switch: the switch model's (fabric/switch.h), the ideal switch counting the same events.
using fabric::SwitchCounters;

}  // namespace uroce::sim
