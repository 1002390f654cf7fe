#include "tools/exp/rt_sample.h"

#include <sstream>

#include "runtime/uroced_client.h"
#include "tools/exp/rt_proc.h"
#include "tools/observe/ctl_client.h"

namespace uroce::exp::rt {

EngineProbe::EngineProbe(pid_t pid) : pid_(pid) {}
EngineProbe::~EngineProbe() = default;
EngineProbe::EngineProbe(EngineProbe&&) noexcept = default;
EngineProbe& EngineProbe::operator=(EngineProbe&&) noexcept = default;

bool EngineProbe::sample(EngineSample* out) {
  if (gone_) return false;
  try {
    if (!client_) {
      const auto eps = tools::find_endpoints(tools::control_dir(), pid_, "");
      if (eps.empty()) return false;
      client_ = std::make_unique<tools::ControlClient>(eps.front());
    }
    const nlohmann::ordered_json r = client_->request({{"cmd", "rates"}});
    if (!r.value("ok", false)) return false;
    EngineSample s;
    s.t_s = now_s();
    s.time_ns = r.value("time_ns", uint64_t{0});
    for (const auto& [k, v] : r.at("device").items())
      if (v.is_number_unsigned()) s.device[k] = v.get<uint64_t>();
    for (const auto& q : r.at("qps"))
      s.qps.push_back({q.value("qpn", 0u), q.value("dest_qpn", 0u), q.value("rx_bytes", uint64_t{0}),
                       q.value("tx_bytes", uint64_t{0}), q.value("cc_rate_bps", uint64_t{0})});
    last_ = s;
    have_last_ = true;
    *out = std::move(s);
    return true;
  } catch (const tools::ControlClosed&) {
    gone_ = true;  // the process exited: its last sample stays
    client_.reset();
    return false;
  } catch (const std::exception&) {
    client_.reset();  // not answering now (starting, exiting): try again on the next tick
    return false;
  }
}

uint64_t PortSample::num(const std::string& key) const {
  const auto it = kv.find(key);
  return it == kv.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
}

const PortSample* SwitchSample::port_of(pid_t pid) const {
  for (const PortSample& p : ports)
    if (p.pid == pid) return &p;
  return nullptr;
}

bool sample_switch(SwitchSample* out, std::string* err) {
  std::string reply;
  if (!runtime::request("stats", &reply, err)) return false;
  SwitchSample s;
  s.t_s = now_s();
  std::istringstream lines(reply);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("port=", 0) != 0) continue;
    PortSample p;
    std::istringstream words(line);
    std::string w;
    while (words >> w)
      if (const size_t eq = w.find('='); eq != std::string::npos) p.kv[w.substr(0, eq)] = w.substr(eq + 1);
    p.pid = static_cast<pid_t>(p.num("pid"));
    s.ports.push_back(std::move(p));
  }
  *out = std::move(s);
  return true;
}

}  // namespace uroce::exp::rt
