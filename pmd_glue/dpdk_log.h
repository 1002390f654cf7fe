// Where DPDK's log lines go. EAL would print to stderr and syslog; a library inside somebody else's verbs
// program must stay quiet, yet a failed EAL init or port open should say what DPDK complained about. So
// every DPDK log line is kept in a small in-memory tail (and echoed to stderr only when UROCE_DPDK_LOG is
// set). Thread-safe: DPDK logs from the EAL interrupt thread as well as from callers.
#pragma once

#include <cstddef>
#include <string>

namespace uroce::glue::dpdk_log {

// Points DPDK's log stream at the tail. Call before rte_eal_init (which would otherwise install its own
// stderr+syslog stream). Idempotent. `echo` copies every line to stderr as well.
bool install(bool echo);

// The last `max_lines` lines DPDK logged, oldest first, each ending in '\n'.
std::string tail(size_t max_lines = 8);

// Lines logged since the mark (a running line count from mark()); at most `max_lines` of them.
size_t mark();
std::string since(size_t mark, size_t max_lines = 8);

}  // namespace uroce::glue::dpdk_log
