// Opens the port a spec names (dpdk_spec.h): a DpdkPort, or uroce's own memif client for a memif client spec
// with driver=uroce, or with no driver= while UROCE_MEMIF_DRIVER=uroce.
#pragma once

#include <memory>
#include <string>

#include "pmd_glue/port.h"

namespace uroce::glue {

// nullptr with *err set when the spec is bad or the port cannot be opened. A memif client that finds no
// server within the spec's wait= is an error, as DpdkPort's.
std::unique_ptr<Port> open_port(const std::string& spec, std::string* err);

}  // namespace uroce::glue
