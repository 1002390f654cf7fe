#pragma once

#include "cc/cc.h"

namespace uroce::cc {
std::unique_ptr<Algorithm> make_none(const Params& params, uint64_t line_rate_bps);
}
