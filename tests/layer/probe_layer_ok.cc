// Must compile (layer_rules_build): provider/ may include runtime/ and transport/, so the project probes
// fail for the rule, not for a broken setup.
#include "runtime/runtime_dir.h"
#include "transport/device.h"
int uroce_layer_probe_layer_ok() { return 0; }
