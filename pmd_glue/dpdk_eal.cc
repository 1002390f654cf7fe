#include "pmd_glue/dpdk_eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <sched.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "pmd_glue/dpdk_log.h"
#include "runtime/env_vars.h"

namespace uroce::glue {

namespace {

constexpr long kHugetlbfsMagic = 0x958458f6;

struct State {
  std::mutex mu;
  bool attempted = false;
  bool ok = false;
  int pid = 0;  // the process that ran rte_eal_init
  std::string error;
  double seconds = 0;
  bool hugepages = false;
  std::vector<std::string> args;
  std::vector<char*> owned;  // EAL may keep pointers to the strings: they live as long as the process
  std::vector<char*> argv;   // what rte_eal_init gets (and permutes; it also overwrites one entry)
};

State& state() {
  static State* s = new State;  // never destroyed: DPDK threads outlive static destructors
  return *s;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The runtime directory EAL creates (/var/run/dpdk/<prefix>) is not used with --no-shconf and
// --no-telemetry; remove it so that short-lived processes do not leave one behind each.
void remove_runtime_dir_if_empty() {
  const char* dir = rte_eal_get_runtime_dir();
  if (dir == nullptr || *dir == '\0') return;
  std::error_code ec;
  if (std::filesystem::is_empty(dir, ec) && !ec) std::filesystem::remove(dir, ec);
}

}  // namespace

std::string Eal::cpu_list_of_current_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "0";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (last > c) out += '-' + std::to_string(last);
    c = last;
  }
  return out.empty() ? "0" : out;
}

bool Eal::hugepages_available() {
  struct statfs fs {};
  if (statfs("/dev/hugepages", &fs) != 0 || static_cast<long>(fs.f_type) != kHugetlbfsMagic) return false;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/sys/kernel/mm/hugepages", ec)) {
    std::ifstream f(d.path() / "free_hugepages");
    long n = 0;
    if (f >> n && n > 0) return true;
  }
  return false;
}

EalConfig Eal::default_config(std::string* err) {
  EalConfig cfg;
  cfg.cpus = cpu_list_of_current_thread();
  cfg.pid = static_cast<int>(getpid());
  // A bad value is refused naming the variable (runtime/env_vars.h), never replaced by a default.
  std::string bad;
  for (const char* name : {"UROCE_HUGEPAGES", "UROCE_DPDK_LOG", "UROCE_MEMIF_BELL"})
    if (const char* v = env(name); v != nullptr && bad.empty())
      bad = runtime::check_env_value(*runtime::find_env_var(name), v);
  uint64_t mem_mb = cfg.mem_mb;
  if (bad.empty() && runtime::env_uint("UROCE_DPDK_MEM_MB", &mem_mb, &bad))
    cfg.mem_mb = static_cast<unsigned>(mem_mb);
  if (!bad.empty() && err != nullptr) *err = bad;
  if (runtime::env_flag("UROCE_HUGEPAGES")) cfg.hugepages = hugepages_available();
  if (const char* v = env("UROCE_DPDK_LOG")) cfg.log_level = v;
  if (const char* v = env("UROCE_DPDK_EAL_ARGS")) {
    std::istringstream in(v);
    for (std::string a; in >> a;) cfg.extra.push_back(a);
  }
  return cfg;
}

std::vector<std::string> Eal::build_args(const EalConfig& cfg) {
  std::vector<std::string> a = {"uroce"};
  if (cfg.hugepages) {
    a.push_back("--in-memory");  // implies --no-shconf; refuses --no-huge ("legacy-mem")
  } else {
    a.insert(a.end(), {"--no-huge", "-m", std::to_string(cfg.mem_mb), "--no-shconf"});
  }
  a.insert(a.end(), {"--no-pci", "--no-telemetry", "--lcores", "0@(" + cfg.cpus + ")", "--file-prefix",
                     "uroce-" + std::to_string(cfg.pid), "--log-level=" + cfg.log_level});
  a.insert(a.end(), cfg.extra.begin(), cfg.extra.end());
  return a;
}

bool Eal::ensure(std::string* err) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.attempted) {
    if (s.pid != static_cast<int>(getpid())) {
      if (err)
        *err = "DPDK EAL was initialised by process " + std::to_string(s.pid) +
               "; a child forked from it cannot use DPDK and must exec() to open a uroce port";
      return false;
    }
    if (!s.ok && err) *err = s.error;
    return s.ok;
  }
  s.attempted = true;
  s.pid = static_cast<int>(getpid());

  if (rte_lcore_count() > 0) {
    // The application started EAL itself (uroced, or a DPDK program that also uses verbs): use it as it
    // is, logging included. (rte_eal_init would refuse, and say so on stderr.)
    s.args = {"(EAL started by the application)"};
    s.ok = true;
    return true;
  }

  std::string bad_env;
  const EalConfig cfg = default_config(&bad_env);
  if (!bad_env.empty()) {
    s.error = "DPDK EAL not started: " + bad_env;
    if (err) *err = s.error;
    return false;
  }
  s.hugepages = cfg.hugepages;
  dpdk_log::install(std::getenv("UROCE_DPDK_LOG") != nullptr);
  s.args = build_args(cfg);
  for (auto& a : s.args) s.owned.push_back(strdup(a.c_str()));
  s.argv = s.owned;
  s.argv.push_back(nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  const int rc = rte_eal_init(static_cast<int>(s.args.size()), s.argv.data());
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc < 0) {
    std::string cmd;
    for (const auto& a : s.args) cmd += (cmd.empty() ? "" : " ") + a;
    s.error = "DPDK EAL init failed (" + std::string(rte_strerror(rte_errno)) + ") with: " + cmd +
              "\nDPDK said:\n" + dpdk_log::tail(6);
    if (err) *err = s.error;
    return false;
  }
  remove_runtime_dir_if_empty();
  s.ok = true;
  return true;
}

bool Eal::initialised() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.ok && s.pid == static_cast<int>(getpid());
}

double Eal::init_seconds() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.seconds;
}

const std::vector<std::string>& Eal::args() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.args;  // written once, before ok is set; never changes afterwards
}

bool Eal::using_hugepages() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.ok && s.hugepages;
}

bool Eal::register_thread() {
  if (!initialised()) return false;
  if (rte_lcore_id() != LCORE_ID_ANY) return true;  // an EAL thread, or registered already
  return rte_thread_register() == 0;
}

void Eal::unregister_thread() {
  if (initialised() && rte_lcore_id() != LCORE_ID_ANY && rte_lcore_id() != rte_get_main_lcore())
    rte_thread_unregister();
}

std::string Eal::unique_name(const char* prefix) {
  static std::atomic<unsigned> next{0};
  return prefix + std::to_string(next.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace uroce::glue
