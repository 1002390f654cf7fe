// Must not compile (layer_rules_build): tools/ includes everything below it but provider/.
#include "provider/engine.h"
int uroce_layer_probe_tools_provider() { return 0; }
