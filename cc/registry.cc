#include <stdexcept>

#include "cc/cc.h"
#include "cc/dcqcn.h"
#include "cc/hpcc.h"
#include "cc/none.h"
#include "cc/timely.h"

namespace uroce::cc {

namespace {

struct Entry {
  const char* name;
  Factory make;
};

// One line per algorithm.
constexpr Entry kAlgorithms[] = {
    {"none", make_none},
    {"dcqcn", make_dcqcn},
    {"hpcc", make_hpcc},
    {"timely", make_timely},
};

}  // namespace

std::unique_ptr<Algorithm> make(const std::string& name, const Params& params, uint64_t line_rate_bps) {
  for (const Entry& e : kAlgorithms)
    if (name == e.name) return e.make(params, line_rate_bps);
  std::string known;
  for (const Entry& e : kAlgorithms) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw std::invalid_argument("unknown congestion control algorithm '" + name + "' (known: " + known + ")");
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Entry& e : kAlgorithms) names.emplace_back(e.name);
  return names;
}

}  // namespace uroce::cc
