// Must not compile (layer_rules_build): transport/ includes only transport/ and cc/, not the fabric above it.
#include "fabric/fabric.h"
int uroce_layer_probe_transport_fabric() { return 0; }
