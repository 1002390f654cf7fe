// Must not compile (layer_rules_build): pmd_glue/ includes only pmd_glue/, transport/ and cc/.
#include "provider/engine.h"
int uroce_layer_probe_glue_provider() { return 0; }
