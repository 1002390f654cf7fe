// Must not compile in a pure layer (layer_rules): DPDK, by its usual name and by the Debian path.
#include <dpdk/rte_mbuf.h>
#include <rte_mbuf.h>
