// `uroce stats` as text: the reply of an engine's {"cmd":"stats"} request (provider/control.h) laid out for
// a terminal.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace uroce::tools {

struct StatsFormat {
  bool all = false;  // show zero counters and each QP's state detail
};

// One engine's block. With `prev` (the same engine's previous reply, --watch), counters that moved also
// show their rate per second.
std::string format_stats(const nlohmann::ordered_json& cur, const nlohmann::ordered_json* prev,
                         const StatsFormat& opt);

// 1234567 -> "1.23 M"; below 10000 the number itself.
std::string si_number(double v);

}  // namespace uroce::tools
