// Layer rule (DESIGN.md): a target built with uroce_pure_layer() (transport/, cc/) must not see DPDK or
// libibverbs. This stub sits first on such a target's include path so that including the real header fails.
#error "layer rule: transport/, cc/, fabric/ and sim/ include no DPDK or libibverbs header (dpdk/rte_eth_ring.h)"
