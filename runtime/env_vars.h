// Every environment variable uroce reads, in one table: the provider, pmd_glue, the preload shim, the
// `uroce` tool and uroced. `uroce env --list` prints it, docs/environment.md documents it, and the ctest
// env_vars_table checks that every getenv() name in the source is here.
//
// check_env_value() is the one validation of a value by its kind; `uroce run` applies it to the whole
// environment it hands to its command, and the readers that parse numbers themselves use env_uint() so
// that a bad value fails naming the variable instead of silently becoming a default.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace uroce::runtime {

enum class EnvKind {
  kFlag,      // 0 or 1
  kUint,      // a whole number in [min, max]
  kChoice,    // one of the '|'-separated words in `range`
  kCc,        // a congestion-control algorithm name (checked against cc/ by `uroce run`)
  kCcParams,  // key=number[,key=number...] (checked against the algorithm by `uroce run`)
  kPort,      // uroced, loopback, or a pmd_glue port spec (checked by `uroce run`)
  kDevice,    // uroce0 .. uroce3
  kText,      // free text: every value is accepted
  kPath,      // a file or directory: every value is accepted, what it names is checked where it is used
};

struct EnvVar {
  std::string_view name;
  EnvKind kind;
  std::string_view range;     // the values accepted, as the table shows them
  uint64_t min = 0, max = 0;  // kUint only
  std::string_view def;       // what an unset variable means
  std::string_view reader;    // who reads it: provider, pmd_glue, shim, uroce, uroced
  std::string_view doc;       // one line
};

std::span<const EnvVar> env_vars();
const EnvVar* find_env_var(std::string_view name);
std::string_view kind_name(EnvKind kind);

// "" when `value` is acceptable for `var` by its kind, else "NAME=VALUE: expected RANGE". The kinds that need
// another layer (kCc, kCcParams, kPort) only get their syntax checked here.
std::string check_env_value(const EnvVar& var, std::string_view value);

// Reads a kUint variable from the table: false with *err = "NAME=VALUE: expected ..." for a bad value;
// true and *out untouched when it is unset or empty.
bool env_uint(std::string_view name, uint64_t* out, std::string* err);
// A kFlag variable: true for "1", false for unset, empty or "0" (other values: check_env_value refuses them).
bool env_flag(std::string_view name, bool unset_value = false);

}  // namespace uroce::runtime
