#include "runtime/env_vars.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

namespace uroce::runtime {
namespace {

using enum EnvKind;

// clang-format off
constexpr EnvVar kVars[] = {
  {"UROCE_PORT", kPort,
   "uroced | loopback | memif:... | af_packet:iface=X | af_xdp:iface=X | tap:iface=X | ring:NAME", 0, 0,
   "uroced (under uroce run; the provider alone: loopback)", "provider, uroce",
   "the device's packet port; `uroce run --port P` sets it"},
  {"UROCE_NETDEV", kText, "an interface name", 0, 0, "(none: the uroce derived-MAC scheme)", "provider, uroce",
   "the kernel interface the device is bound to: its MAC, peers by ARP/ND, GIDs following its addresses; "
   "`uroce run --netdev IFACE` sets it"},
  {"UROCE_CC", kCc, "none | dcqcn | timely | hpcc | example_aimd", 0, 0, "none", "provider",
   "congestion-control algorithm of every QP; `uroce run --cc NAME` sets it"},
  {"UROCE_CC_PARAMS", kCcParams, "key=number[,key=number...]", 0, 0, "(the algorithm's defaults)", "provider",
   "the algorithm's parameters and min_time_between_cnps; `uroce run --cc-param K=V` (repeatable) "
   "replaces it"},
  {"UROCE_SELECTIVE_REPEAT", kFlag, "0|1", 0, 0, "0", "provider",
   "1: RC QPs use selective repeat (go-back-N peers interoperate; docs/selective-repeat.md)"},
  {"UROCE_MTU", kChoice, "256|512|1024|2048|4096", 0, 0, "4096", "provider, shim",
   "the port's active MTU in bytes; `uroce run --mtu N` sets it"},
  {"UROCE_DPDK_MEM_MB", kUint, "32 .. 65536", 32, 65536, "128", "pmd_glue",
   "memory DPDK's EAL reserves, MiB"},
  {"UROCE_HUGEPAGES", kFlag, "0|1", 0, 0, "0", "pmd_glue",
   "1: EAL uses hugepages when the host has them mounted (else plain memory)"},
  {"UROCE_DPDK_LOG", kChoice,
   "1|2|3|4|5|6|7|8|emergency|alert|critical|error|warning|notice|info|debug", 0, 0,
   "(unset: DPDK's messages go to the uroce log filter)", "pmd_glue",
   "EAL --log-level, and DPDK's own log lines pass unfiltered to stderr"},
  {"UROCE_MEMIF_BELL", kFlag, "0|1", 0, 0, "1", "pmd_glue",
   "0: memif ports open no bell, so a sleeping end wakes for frames only at the end of its nap "
   "(pmd_glue/memif_bell.h)"},
  {"UROCE_MEMIF_DRIVER", kChoice, "dpdk|uroce", 0, 0, "dpdk", "pmd_glue",
   "the driver of a memif client port whose spec names none (driver= in pmd_glue/dpdk_spec.h), uroced's "
   "leases included; uroce: uroce's own memif client (docs/design/memif-datapath.md)"},
  {"UROCE_DPDK_EAL_ARGS", kText, "words", 0, 0, "(none)", "pmd_glue",
   "extra EAL arguments, split at spaces, appended to uroce's"},
  {"UROCE_STATS_ON_EXIT", kFlag, "0|1", 0, 0, "0", "provider",
   "1: the device prints its counters to stderr when it closes"},
  {"UROCE_CONTROL", kFlag, "0|1", 0, 0, "1", "provider",
   "0: no control socket (uroce stats and uroce capture cannot reach the process)"},
  {"UROCE_POLL_YIELD", kFlag, "0|1", 0, 0, "0 (1 under uroce run through uroced)", "provider",
   "1: a CQ poller that has found nothing for 8 us yields its core, and a poll lingering for the peer's "
   "WRITE waits up to 200 us instead of 30, yielding after 8 us"},
  {"UROCE_ENGINE_SCHED", kChoice, "slice|boost|none", 0, 0, "slice", "provider",
   "slice: the progress thread and DPDK's interrupt thread ask for a 100 us EEVDF slice, so that they "
   "preempt spinning pollers when they wake (docs/latency.md); boost: that and nice -10 (needs "
   "CAP_SYS_NICE, else slice), so that they preempt at once even after spinning; none: they keep the "
   "opener's scheduling"},
  {"UROCE_ACK_HOLD_US", kUint, "0 .. 1000", 0, 1000, "3", "provider",
   "how long an RC responder receiving a stream of requests holds an ACK to answer the requests behind it "
   "too, us (a QP whose held ACKs keep answering only their own request stops holding: docs/observability.md, "
   "`acks_held`); 0: an ACK for every request that asks for one"},
  {"UROCE_TX_COALESCE", kFlag, "0|1", 0, 0, "1", "provider",
   "1: a burst of ibv_post_send calls (each within 2 us of the last) sends its frames at its end, the "
   "caller's next ibv_poll_cq or ibv_req_notify_cq; 0: every post sends at once"},
  {"UROCE_LINGER", kFlag, "0|1", 0, 0, "1", "provider",
   "1: while one-sided requests keep arriving soon after the application left its last verb (it spins on "
   "memory for the peer's WRITE), an ibv_poll_cq that returns completions runs passes for up to 30 us "
   "until one placed such a request; 0: it returns at once"},
  {"UROCE_ENGINE_SPIN_US", kUint, "0 .. 1000000", 0, 1000000, "20", "provider",
   "how long the progress thread busy-polls after the last work or verb call before it naps, us"},
  {"UROCE_ENGINE_NAP_US", kUint, "1 .. 1000", 1, 1000, "20", "provider",
   "the progress thread's first nap after its spin (then doubling to 1 ms) on a port without rx interrupts, us"},
  {"UROCE_UCMA_TRACE", kFlag, "0|1", 0, 0, "0", "shim",
   "1: one stderr line per RDMA CM command the preload shim answers"},
  {"UROCE_DEV", kDevice, "uroce0 .. uroce3", 0, 0, "(set by uroce run / uroce env)", "provider, shim",
   "the uroce device of this process"},
  {"SYSFS_PATH", kPath, "directory", 0, 0, "(set by uroce run / uroce env)", "provider, shim",
   "root of the device's sysfs tree (libibverbs reads it too)"},
  {"LD_PRELOAD", kPath, "libraries", 0, 0, "(uroce run prepends the shim)", "uroce",
   "kept after the preload shim for the command"},
  {"PATH", kPath, "directories", 0, 0, "", "uroce",
   "where `uroce setup` looks for itself to word its advice"},
  {"XDG_RUNTIME_DIR", kPath, "absolute directory", 0, 0, "/tmp", "runtime (every tool and the provider)",
   "parent of the per-user runtime directory uroce-<uid>"},
  {"UROCE_LIBDIR", kPath, "directory", 0, 0, "(found next to the uroce executable)", "uroce",
   "where uroce run finds liburoce-rdmav34.so and liburoce-preload.so"},
  {"UROCE_DEV_DIR", kPath, "directory", 0, 0, "/dev/infiniband", "uroce",
   "where setup, run and devices look for the device nodes (tests; libibverbs always uses /dev/infiniband)"},
  {"UROCED", kPath, "executable", 0, 0, "(found next to uroce, then on PATH)", "uroce",
   "the uroced that uroce run starts"},
  {"UROCED_CONFIG", kPath, "file", 0, 0, "(none)", "uroced", "config file when --config is not given"},
  {"UROCED_YIELD", kFlag, "0|1", 0, 0, "1", "uroced", "0: uroced's poll loop never yields its core"},
  {"UROCED_SPIN_US", kUint, "0 .. 1000000", 0, 1000000, "50", "uroced",
   "how long uroced busy-polls after the last frame before it sleeps, us"},
};
// clang-format on

bool in_choice(std::string_view range, std::string_view value) {
  for (size_t pos = 0; pos <= range.size();) {
    const size_t bar = std::min(range.find('|', pos), range.size());
    if (range.substr(pos, bar - pos) == value) return true;
    pos = bar + 1;
  }
  return false;
}

bool parse_u64(std::string_view v, uint64_t* out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return !v.empty() && ec == std::errc() && end == v.data() + v.size();
}

std::string bad(const EnvVar& var, std::string_view value, std::string_view expected) {
  return std::string(var.name) + "=" + std::string(value) + ": expected " + std::string(expected);
}

}  // namespace

std::span<const EnvVar> env_vars() { return kVars; }

const EnvVar* find_env_var(std::string_view name) {
  for (const EnvVar& v : kVars)
    if (v.name == name) return &v;
  return nullptr;
}

std::string_view kind_name(EnvKind kind) {
  switch (kind) {
    case kFlag:
      return "flag";
    case kUint:
      return "number";
    case kChoice:
      return "choice";
    case kCc:
      return "cc name";
    case kCcParams:
      return "cc params";
    case kPort:
      return "port";
    case kDevice:
      return "device";
    case kText:
      return "text";
    case kPath:
      return "path";
  }
  return "?";
}

std::string check_env_value(const EnvVar& var, std::string_view value) {
  switch (var.kind) {
    case kFlag:
      return value == "0" || value == "1" || value.empty() ? "" : bad(var, value, "0 or 1");
    case kUint: {
      uint64_t n = 0;
      if (value.empty() || (parse_u64(value, &n) && n >= var.min && n <= var.max)) return "";
      return bad(var, value, "a whole number " + std::string(var.range));
    }
    case kChoice:
      return value.empty() || in_choice(var.range, value) ? "" : bad(var, value, var.range);
    case kDevice: {
      const bool ok = value.size() == 6 && value.starts_with("uroce") && value[5] >= '0' && value[5] <= '3';
      return ok || value.empty() ? "" : bad(var, value, var.range);
    }
    case kCc:
    case kCcParams:
    case kPort:
    case kText:
    case kPath:
      return "";
  }
  return "";
}

bool env_uint(std::string_view name, uint64_t* out, std::string* err) {
  const EnvVar* var = find_env_var(name);
  const char* v = std::getenv(std::string(name).c_str());
  if (var == nullptr || v == nullptr || *v == '\0') return true;
  if (std::string e = check_env_value(*var, v); !e.empty()) {
    if (err) *err = e;
    return false;
  }
  return parse_u64(v, out);
}

bool env_flag(std::string_view name, bool unset_value) {
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr || *v == '\0') return unset_value;
  return std::string_view(v) == "1";
}

}  // namespace uroce::runtime
