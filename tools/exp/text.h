// Number parsing shared by `uroce exp`'s key=value knobs and the ns-3 HPCC file readers.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace uroce::exp {

// The number `text` starts with; *used is how many characters it took (0: no number, and 0 returned).
inline double leading_number(const std::string& text, size_t* used) {
  *used = 0;
  try {
    return std::stod(text, used);
  } catch (const std::exception&) {
    *used = 0;
    return 0;
  }
}

}  // namespace uroce::exp
