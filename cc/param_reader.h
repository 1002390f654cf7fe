// Reads an algorithm's named parameters with defaults and ranges, and rejects what it does not know. Every
// error is a std::invalid_argument that names the algorithm and the key, so a bad UROCE_CC_PARAMS fails
// device open with a message the user can act on.
//
//   ParamReader r("dcqcn", params);
//   const double ai = r.get("rpg_ai_rate", 5, 1, 400'000);  // default, min, max
//   r.finish();  // throws for any key nobody asked for
#pragma once

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "cc/cc.h"

namespace uroce::cc {

class ParamReader {
 public:
  ParamReader(std::string algorithm, const Params& params) : algo_(std::move(algorithm)), params_(params) {}

  // The value of `key` (or `def` when unset), which must lie in [lo, hi].
  double get(const std::string& key, double def, double lo, double hi) {
    used_.insert(key);
    auto it = params_.find(key);
    if (it == params_.end()) return def;
    const double v = it->second;
    if (!std::isfinite(v) || v < lo || v > hi)
      throw std::invalid_argument("cc " + algo_ + ": parameter '" + key + "' = " + fmt(v) +
                                  " is out of range [" + fmt(lo) + ", " + fmt(hi) + "]");
    return v;
  }
  // As get(), for a whole number.
  double get_int(const std::string& key, double def, double lo, double hi) {
    const double v = get(key, def, lo, hi);
    if (v != std::floor(v))
      throw std::invalid_argument("cc " + algo_ + ": parameter '" + key + "' = " + fmt(v) +
                                  " must be a whole number");
    return v;
  }

  // Throws for the first parameter no get() asked for, listing the known ones.
  void finish() const {
    for (const auto& [key, value] : params_) {
      if (used_.count(key)) continue;
      std::string known;
      for (const std::string& k : used_) known += (known.empty() ? "" : ", ") + k;
      throw std::invalid_argument("cc " + algo_ + ": unknown parameter '" + key +
                                  "' (known: " + (known.empty() ? "none" : known) + ")");
    }
  }

 private:
  static std::string fmt(double v) {
    std::string s = std::to_string(v);
    while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
      const bool dot = s.back() == '.';
      s.pop_back();
      if (dot) break;
    }
    return s;
  }

  std::string algo_;
  const Params& params_;
  std::set<std::string> used_;
};

}  // namespace uroce::cc
