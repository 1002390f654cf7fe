// DPDK's Environment Abstraction Layer, started lazily once per process by whoever opens the first port.
//
// Defaults suit a verbs application on a shared 2-core machine without hugepages:
//   --no-huge -m 128 --no-shconf --no-pci --no-telemetry --lcores 0@(<calling thread's cpus>)
//   --file-prefix uroce-<pid> --log-level=notice      (log lines go to an in-memory tail, see dpdk_log.h)
// The cpuset form of --lcores makes EAL "pin" lcore 0 to exactly the cpus the calling thread already may
// run on, so no application thread's affinity changes. No vdev is on the command line: ports are hot-added
// later (rte_vdev_init), so any number of them can be opened after init.
//
// Environment knobs, read once at init:
//   UROCE_HUGEPAGES=1      use hugepages (--in-memory instead of --no-huge) when /dev/hugepages is a
//                          hugetlbfs mount with free pages; otherwise fall back to --no-huge.
//   UROCE_DPDK_MEM_MB=N    memory for --no-huge (default 128; each open port takes ~20 MB of mbufs).
//   UROCE_DPDK_LOG=LEVEL   DPDK log level (e.g. debug, or pmd.net.memif:debug) and echo lines to stderr.
//   UROCE_DPDK_EAL_ARGS    extra EAL arguments, space separated, appended last (for experiments).
//
// If the application has already started EAL itself, ensure() uses that EAL as it is.
//
// fork(): EAL cannot be initialised twice in one address space and its threads do not survive fork().
// A child forked after Eal::ensure() succeeded must not use the parent's ports or call into DPDK at all
// (ensure() fails in it and DpdkPort's destructor does nothing there, so the parent's memif connections
// are not torn down when the child exits); it must exec() to get a DPDK device of its own. A child forked
// before the parent initialised EAL may call ensure() itself and open its own ports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::glue {

struct EalConfig {
  std::string cpus;        // cpu list for lcore 0, e.g. "0-1" or "0,2-3"
  int pid = 0;             // goes into --file-prefix
  bool hugepages = false;  // --in-memory instead of --no-huge -m N --no-shconf
  unsigned mem_mb = 128;   // only without hugepages
  std::string log_level = "notice";
  std::vector<std::string> extra;  // appended verbatim
};

class Eal {
 public:
  // Initialises EAL on first call (thread-safe); later calls return the first outcome. Never exits the
  // process. On failure *err says why, with the last lines DPDK logged.
  static bool ensure(std::string* err);

  static bool initialised();
  static double init_seconds();                   // wall time rte_eal_init took (0 before init)
  static const std::vector<std::string>& args();  // the argv EAL was started with
  static bool using_hugepages();

  // Gives the calling thread a DPDK lcore id (rte_thread_register) so that mempool per-lcore caches
  // serve its buffer allocs and frees instead of the shared pool ring. Affinity is not touched. For a
  // thread that drives ports for a long time (an engine's progress thread); lcore ids are few (128), so
  // call unregister_thread() before the thread exits. True if the thread has an lcore id afterwards.
  static bool register_thread();
  static void unregister_thread();

  // A process-unique name for a DPDK object ("<prefix><n>"), short enough for every DPDK name limit.
  static std::string unique_name(const char* prefix);

  // Pure helpers, exposed for tests.
  // From the environment and the calling thread's affinity; *err names a variable with a bad value.
  static EalConfig default_config(std::string* err = nullptr);
  static std::vector<std::string> build_args(const EalConfig& cfg);
  static std::string cpu_list_of_current_thread();
  static bool hugepages_available();  // hugetlbfs at /dev/hugepages with free pages
};

}  // namespace uroce::glue
