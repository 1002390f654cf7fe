// Must not compile (layer_rules_build): cc/ includes only cc/.
#include "transport/device.h"
int uroce_layer_probe_cc_transport() { return 0; }
