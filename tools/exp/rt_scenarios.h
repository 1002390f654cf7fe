// The scenarios of `uroce exp --realtime` (realtime.h) and the command line that picks one: options,
// key=value knobs checked with uroced's own parsers, algorithm parameters a scenario sets for its scale.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace uroce::exp::rt {

enum class Load {
  kPerftest,   // ib_write_bw -q FLOWS: one sender process, one receiver process
  kIncast,     // uroce-traffic: FLOWS sender processes, one receiver process with FLOWS QPs
  kAllreduce,  // uroce-traffic allreduce: FLOWS ranks in a ring; rank 0 is the one sampled
};

struct Variant {
  std::string name;
  std::string cc;
  bool ecn = true;
  unsigned ecn_divisor = 1;  // thresholds = kmin / divisor, kmax / divisor
};

struct Scenario {
  const char* name;
  const char* about;
  Load load;
  std::vector<std::pair<std::string, std::string>> keys;  // the scenario's keys and their defaults
  // Algorithm parameters the scenario sets for its CC variants unless cc.PARAM=V is given, and why.
  std::vector<std::pair<std::string, std::string>> cc_defaults;
  const char* cc_why;
  std::vector<Variant> (*variants)(const std::string& cc, const std::string& kmin);
};

// Keys every scenario takes: credit = BYTES | off (uroced's link credits instead of PFC), capture = 0 | 1
// (receiver.pcap and sender0.pcap of the first sender, written by `uroce capture`).
inline const std::vector<std::pair<std::string, std::string>>& common_keys() {
  static const std::vector<std::pair<std::string, std::string>> keys = {{"credit", "off"}, {"capture", "0"}};
  return keys;
}

struct Options {
  const Scenario* sc = nullptr;
  std::string out = "exp-out", cc = "dcqcn";
  unsigned duration = 6;
  bool plots = true;
  std::map<std::string, std::string> given;     // key=value words
  std::map<std::string, std::string> given_cc;  // cc.PARAM=V words
  std::string key(const std::string& k) const {
    if (const auto it = given.find(k); it != given.end()) return it->second;
    for (const auto& [name, def] : sc->keys)
      if (name == k) return def;
    for (const auto& [name, def] : common_keys())
      if (name == k) return def;
    return "";
  }
};

// Checked knob values, in the units the processes take.
struct Knobs {
  uint64_t rate_bps = 0, kmin = 0, kmax = 0, pause = 0, burst = 0;  // burst 0: uroced's default
  unsigned flows = 0, msg = 0, depth = 0;
  std::string pmax;
  std::string cc_params;  // UROCE_CC_PARAMS for the CC variants
  uint64_t credit = 0;    // uroced --credit (0: PFC)
  bool capture = false;
};

const std::vector<Scenario>& scenarios();
// --list / --help.
void usage(FILE* f);
// The words after --realtime; *listed when they ask for the list (nothing else is then filled in). Throws
// tools::UsageError for bad input.
Options parse(const std::vector<std::string>& args, bool* listed);
// The knobs in the units the processes take, the CC variants' UROCE_CC_PARAMS; UsageError for bad values.
Knobs check(const Options& o);

}  // namespace uroce::exp::rt
