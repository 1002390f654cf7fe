// A GID as sysfs writes it ("fe80:0000:0000:0000:0202:c9ff:fe00:0001"): eight groups of four hex digits.
#pragma once

#include <cstdio>
#include <string>

#include "transport/verbs_types.h"

namespace uroce::provider {

inline bool parse_gid(const std::string& text, Gid* gid) {
  unsigned g[8];
  if (std::sscanf(text.c_str(), "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5],
                  &g[6], &g[7]) != 8)
    return false;
  for (int i = 0; i < 8; ++i) {
    (*gid)[2 * i] = static_cast<uint8_t>(g[i] >> 8);
    (*gid)[2 * i + 1] = static_cast<uint8_t>(g[i]);
  }
  return true;
}

}  // namespace uroce::provider
