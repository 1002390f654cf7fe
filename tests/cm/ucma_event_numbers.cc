// librdmacm's event numbers for ucma_abi_layout_test.cc, in the order of the shim's CmEvent (ucma.h).
#include <rdma/rdma_cma.h>

#include <cstddef>
#include <cstdint>

struct LibEvent {
  const char* name;
  uint32_t value;
};

#define UROCE_EV(e) \
  LibEvent { #e, static_cast < uint32_t>(e) }
extern const LibEvent kLibrdmacmEvents[] = {
    UROCE_EV(RDMA_CM_EVENT_ADDR_RESOLVED),   UROCE_EV(RDMA_CM_EVENT_ADDR_ERROR),
    UROCE_EV(RDMA_CM_EVENT_ROUTE_RESOLVED),  UROCE_EV(RDMA_CM_EVENT_ROUTE_ERROR),
    UROCE_EV(RDMA_CM_EVENT_CONNECT_REQUEST), UROCE_EV(RDMA_CM_EVENT_CONNECT_RESPONSE),
    UROCE_EV(RDMA_CM_EVENT_CONNECT_ERROR),   UROCE_EV(RDMA_CM_EVENT_UNREACHABLE),
    UROCE_EV(RDMA_CM_EVENT_REJECTED),        UROCE_EV(RDMA_CM_EVENT_ESTABLISHED),
    UROCE_EV(RDMA_CM_EVENT_DISCONNECTED),    UROCE_EV(RDMA_CM_EVENT_MULTICAST_JOIN),
    UROCE_EV(RDMA_CM_EVENT_MULTICAST_ERROR),
};
extern const size_t kNumLibrdmacmEvents = sizeof kLibrdmacmEvents / sizeof kLibrdmacmEvents[0];
