#include "tools/observe/stats_format.h"

#include <cinttypes>
#include <cstdio>
#include <string_view>

namespace uroce::tools {

using json = nlohmann::ordered_json;

namespace {

// QP columns of the table; every other non-zero QP counter follows as name=value.
constexpr std::string_view kQpColumns[] = {"tx_packets", "tx_bytes", "rx_packets", "rx_bytes"};
constexpr std::string_view kQpIdentity[] = {"qpn", "type", "state", "dest_qpn", "detail"};

template <typename... Args>
void appendf(std::string& out, const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  out += buf;
}

uint64_t u64(const json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  return j.is_number_integer() && j.get<int64_t>() > 0 ? static_cast<uint64_t>(j.get<int64_t>()) : 0;
}

// Counter lines of one section: `name value [rate/s]`, zero ones only with --all.
void section(std::string& out, const char* title, const json& cur, const json* prev, double dt,
             const StatsFormat& opt) {
  std::string body;
  for (const auto& [name, v] : cur.items()) {
    const uint64_t n = u64(v);
    if (!n && !opt.all) continue;
    appendf(body, "    %-32s %20" PRIu64, name.c_str(), n);
    if (prev && dt > 0 && prev->contains(name) && n >= u64((*prev)[name]) && n != u64((*prev)[name]))
      appendf(body, "  %10s/s", si_number(static_cast<double>(n - u64((*prev)[name])) / dt).c_str());
    body += '\n';
  }
  if (body.empty()) return;
  appendf(out, "  %s\n", title);
  out += body;
}

bool is_identity_or_column(std::string_view k) {
  for (auto c : kQpIdentity)
    if (c == k) return true;
  for (auto c : kQpColumns)
    if (c == k) return true;
  return false;
}

}  // namespace

std::string si_number(double v) {
  char buf[32];
  if (v < 10000) {
    std::snprintf(buf, sizeof(buf), v == static_cast<double>(static_cast<uint64_t>(v)) ? "%.0f" : "%.1f", v);
    return buf;
  }
  const char* units[] = {"k", "M", "G", "T", "P"};
  int u = -1;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  std::snprintf(buf, sizeof(buf), "%.3g %s", v, units[u]);
  return buf;
}

std::string format_stats(const json& cur, const json* prev, const StatsFormat& opt) {
  std::string out;
  appendf(out, "pid %" PRIu64, u64(cur.value("pid", json())));
  if (cur.contains("comm")) appendf(out, " (%s)", cur["comm"].get<std::string>().c_str());
  appendf(out, " %s  gid %s  port %s\n", cur.value("dev", "?").c_str(), cur.value("gid", "?").c_str(),
          cur.value("port", "?").c_str());
  double dt = 0;
  if (prev && prev->contains("time_ns") && cur.contains("time_ns"))
    dt = static_cast<double>(u64(cur["time_ns"]) - u64((*prev)["time_ns"])) / 1e9;
  auto sub = [&](const char* key) -> const json* {
    return prev && prev->contains(key) ? &(*prev)[key] : nullptr;
  };
  section(out, "device", cur.value("device", json::object()), sub("device"), dt, opt);
  section(out, "rx drops (frame rejected before QP lookup)", cur.value("rx_drops", json::object()),
          sub("rx_drops"), dt, opt);
  json port = cur.value("port_stats", json::object());
  if (!port.empty()) {
    const bool up = u64(port.value("link_up", json())) != 0;
    port.erase("link_up");
    const std::string title = std::string("port (link ") + (up ? "up" : "down") + ")";
    section(out, title.c_str(), port, sub("port_stats"), dt, opt);
  }

  const json qps = cur.value("qps", json::array());
  appendf(out, "  QPs: %zu\n", qps.size());
  if (!qps.empty()) {
    appendf(out, "    %-8s %-4s %-5s %-8s %14s %16s %14s %16s  %s\n", "qpn", "type", "state", "dest",
            "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "other counters");
    for (const json& q : qps) {
      appendf(out,
              "    %-8" PRIu64 " %-4s %-5s %-8" PRIu64 " %14" PRIu64 " %16" PRIu64 " %14" PRIu64 " %16" PRIu64
              " ",
              u64(q.value("qpn", json())), q.value("type", "?").c_str(), q.value("state", "?").c_str(),
              u64(q.value("dest_qpn", json())), u64(q.value("tx_packets", json())),
              u64(q.value("tx_bytes", json())), u64(q.value("rx_packets", json())),
              u64(q.value("rx_bytes", json())));
      for (const auto& [name, v] : q.items()) {
        if (is_identity_or_column(name) || (!u64(v) && !opt.all)) continue;
        appendf(out, " %s=%" PRIu64, name.c_str(), u64(v));
      }
      out += '\n';
      if (opt.all && q.contains("detail")) appendf(out, "      %s\n", q["detail"].get<std::string>().c_str());
    }
  }
  const json cap = cur.value("capture", json::object());
  if (cap.value("active", false))
    appendf(out, "  capture: writing %s, %" PRIu64 " frames so far\n", cap.value("path", "?").c_str(),
            u64(cap.value("frames", json())));
  return out;
}

}  // namespace uroce::tools
