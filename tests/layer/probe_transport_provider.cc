// Must not compile (layer_rules_build): transport/ includes only transport/ and cc/.
#include "provider/engine.h"
int uroce_layer_probe_transport_provider() { return 0; }
