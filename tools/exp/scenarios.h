// The scenario library of `uroce exp`: each scenario builds one or more variants of an Experiment (e.g.
// PFC only / DCQCN + PFC) from the command line's options and key=value overrides.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tools/exp/experiment.h"

namespace uroce::exp {

// key=value overrides. Scenarios read the keys they know; check() then rejects any key nobody read, naming
// it. Keys starting with "cc." are congestion-control parameters (cc.rpg_ai_rate=...).
class Knobs {
 public:
  void set(const std::string& kv);  // "key=value"; throws std::invalid_argument without '='
  double num(const std::string& key, double def);
  std::string str(const std::string& key, const std::string& def);
  cc::Params cc_params();
  void check() const;
  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  // A value the scenario chose for `key` when the command line did not give one (an algorithm parameter it
  // tunes, say): recorded for the manifest like a default.
  void note_default(const std::string& key, double value);

  // Every key the scenario read, with the value it used (given, or the default written so that it parses
  // back to the same number): what the manifest lists, and KEY=VALUE words that rerun the same experiment.
  struct Effective {
    std::string value;
    bool given;
  };
  const std::map<std::string, Effective>& effective() const { return effective_; }

 private:
  std::map<std::string, std::string> kv_;
  std::set<std::string> used_;
  std::map<std::string, Effective> effective_;
};

struct RunOptions {
  uint64_t seed = 1;
  uint64_t duration_ns = 0;  // 0: the scenario's default
  std::string cc;            // empty: the scenario's default
  Knobs knobs;
};

struct Variant {
  std::string name;
  std::function<void(Experiment&)> build;
};

struct Scenario {
  const char* name;
  const char* about;  // one paragraph: what it shows
  uint64_t default_duration_ns;
  std::vector<Variant> (*variants)(RunOptions& opt);
};

const std::vector<Scenario>& scenarios();
const Scenario* find_scenario(const std::string& name);

// Shared builders (also used by bench_cc_sim and tests/fabric).
fabric::FabricConfig default_fabric();
// One switch with `n` hosts (host i on port i), every link `link`. Returns the switch.
sim::SimSwitch& build_star(Experiment& e, uint32_t n, const HostConfig& host,
                           const fabric::FabricConfig& fabric, const sim::LinkConfig& link);

}  // namespace uroce::exp
