// The algorithms uroce knows, by the name UROCE_CC (DeviceConfig::cc) selects. Adding one: a file in cc/
// defining its factory (cc/CMakeLists.txt compiles every cc/*.cc) and one line here. docs/cc.md walks
// through cc/example_aimd.cc.
#include <cstdlib>
#include <stdexcept>

#include "cc/cc.h"

// One line per algorithm: its name and its factory, a Factory defined in the algorithm's file.
#define UROCE_CC_ALGORITHMS(X) \
  X("none", make_none)         \
  X("dcqcn", make_dcqcn)       \
  X("hpcc", make_hpcc)         \
  X("timely", make_timely)     \
  X("swift", make_swift)       \
  X("dctcp", make_dctcp)       \
  X("example_aimd", make_example_aimd)

namespace uroce::cc {

#define X(name, factory) std::unique_ptr<Algorithm> factory(const Params& params, uint64_t line_rate_bps);
UROCE_CC_ALGORITHMS(X)
#undef X

namespace {

struct Entry {
  const char* name;
  Factory make;
};

constexpr Entry kAlgorithms[] = {
#define X(name, factory) {name, factory},
    UROCE_CC_ALGORITHMS(X)
#undef X
};

}  // namespace

std::unique_ptr<Algorithm> make(const std::string& name, const Params& params, uint64_t line_rate_bps) {
  for (const Entry& e : kAlgorithms)
    if (name == e.name) return e.make(params, line_rate_bps);
  std::string known;
  for (const Entry& e : kAlgorithms) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw std::invalid_argument("unknown congestion control algorithm '" + name + "' (known: " + known + ")");
}

Params parse_params(const std::string& text) {
  Params out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    if (a == std::string::npos) {
      if (end == text.size()) break;
      throw std::invalid_argument("empty item in '" + text + "' (expected key=value,key=value)");
    }
    item = item.substr(a, b - a + 1);
    const size_t eq = item.find('=');
    std::string key = eq == std::string::npos ? item : item.substr(0, eq);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (eq == std::string::npos || key.empty())
      throw std::invalid_argument("'" + item + "' is not key=value");
    const std::string value = item.substr(eq + 1);
    char* stop = nullptr;
    const double v = std::strtod(value.c_str(), &stop);
    const bool blank_tail = stop && std::string(stop).find_first_not_of(" \t") == std::string::npos;
    if (value.find_first_not_of(" \t") == std::string::npos || !blank_tail)
      throw std::invalid_argument("parameter '" + key + "': '" + value + "' is not a number");
    if (!out.emplace(key, v).second) throw std::invalid_argument("parameter '" + key + "' is given twice");
  }
  return out;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Entry& e : kAlgorithms) names.emplace_back(e.name);
  return names;
}

}  // namespace uroce::cc
