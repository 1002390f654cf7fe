// Counter sets of the simulated fabric. Each set is a struct of named uint64_t fields generated from one
// X-macro list, so tests read `c.lost` and a stats dump walks every field with for_each(name, value).
// Single writer: the simulation loop.
#pragma once

#include <cstdint>

#define UROCE_SIM_COUNTER_FIELD(name) uint64_t name = 0;
#define UROCE_SIM_COUNTER_VISIT(name) f(#name, name);

// Declares `struct Name` with the fields in LIST and a for_each over them.
#define UROCE_SIM_COUNTER_SET(Name, LIST) \
  struct Name {                           \
    LIST(UROCE_SIM_COUNTER_FIELD)         \
    template <class F>                    \
    void for_each(F&& f) const {          \
      LIST(UROCE_SIM_COUNTER_VISIT)       \
    }                                     \
  }

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
UROCE_SIM_COUNTER_SET(LinkCounters, UROCE_SIM_LINK_COUNTERS);

#define UROCE_SIM_PORT_COUNTERS(X)                                         \
  X(tx_frames) /* accepted by tx_burst */                                  \
  X(tx_bytes)                                                              \
  X(tx_refused) /* left with the caller: tx ring full or port not wired */ \
  X(rx_frames)  /* landed in the rx ring */                                \
  X(rx_bytes)                                                              \
  X(rx_no_buffer) /* arrived while the pool was empty: dropped */          \
  X(rx_oversize)  /* arrived longer than max_frame: dropped */             \
  X(pfc_rx)       /* PFC frames received (fabric model): applied to the uplink */
UROCE_SIM_COUNTER_SET(PortCounters, UROCE_SIM_PORT_COUNTERS);

#define UROCE_SIM_SWITCH_COUNTERS(X)                                       \
  X(forwarded)   /* unicast frames sent to one egress */                   \
  X(flooded)     /* broadcast/multicast frames sent to every other port */ \
  X(unknown_dst) /* unicast to a MAC not in the table: dropped */          \
  X(filtered)    /* destination is the ingress port: dropped */            \
  X(no_buffer)   /* switch buffer exhausted: dropped */                    \
  X(runt)        /* shorter than an Ethernet header: dropped */
UROCE_SIM_COUNTER_SET(SwitchCounters, UROCE_SIM_SWITCH_COUNTERS);

}  // namespace uroce::sim
