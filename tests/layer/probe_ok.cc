// Must compile in a pure layer (layer_rules): the probes fail for the rule, not for a broken setup.
#include "transport/device.h"
int uroce_layer_probe_ok() { return 0; }
