// "none": no congestion control. Sends at line rate with no window, and does not mark data ECN-capable, as a
// NIC with CC disabled does.
#include "cc/none.h"

#include <stdexcept>

namespace uroce::cc {

std::unique_ptr<Algorithm> make_none(const Params& params, uint64_t /*line_rate_bps*/) {
  if (!params.empty())
    throw std::invalid_argument("cc none: takes no parameters, got '" + params.begin()->first + "'");
  return std::make_unique<Algorithm>();
}

}  // namespace uroce::cc
