// Must not compile (layer_rules_build): transport/ includes only transport/ and cc/.
#include "runtime/runtime_dir.h"
int uroce_layer_probe_transport_runtime() { return 0; }
