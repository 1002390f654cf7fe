// Must not compile in a pure layer (layer_rules): librdmacm.
#include <rdma/rdma_cma.h>
