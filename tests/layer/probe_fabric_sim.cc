// Must not compile (layer_rules_build): fabric/ (frame-level switch knowledge, no clock) does not depend on
// the simulator that drives it.
#include "sim/event_queue.h"
int uroce_layer_probe_fabric_sim() { return 0; }
