#include "pmd_glue/dpdk_log.h"

#include <rte_log.h>

#include <cstdio>
#include <deque>
#include <mutex>

namespace uroce::glue::dpdk_log {

namespace {

constexpr size_t kKeepLines = 64;

struct Tail {
  std::mutex mu;
  std::deque<std::string> lines;  // complete lines, newest last
  std::string partial;            // a line DPDK has not finished yet
  size_t count = 0;               // lines ever completed
  bool echo = false;
  FILE* stream = nullptr;
};

Tail& state() {
  static Tail* t = new Tail;  // never destroyed: DPDK threads may log during exit
  return *t;
}

ssize_t write_cookie(void*, const char* buf, size_t size) {
  Tail& t = state();
  std::lock_guard lock(t.mu);
  if (t.echo) fwrite(buf, 1, size, stderr);
  for (size_t i = 0; i < size; ++i) {
    t.partial.push_back(buf[i]);
    if (buf[i] != '\n') continue;
    t.lines.push_back(std::move(t.partial));
    t.partial.clear();
    ++t.count;
    if (t.lines.size() > kKeepLines) t.lines.pop_front();
  }
  return static_cast<ssize_t>(size);
}

std::string join_last(const Tail& t, size_t first_index, size_t max_lines) {
  const size_t oldest = t.count - t.lines.size();
  size_t from = std::max(first_index, oldest);
  if (t.count - from > max_lines) from = t.count - max_lines;
  std::string out;
  for (size_t i = from; i < t.count; ++i) out += t.lines[i - oldest];
  return out;
}

}  // namespace

bool install(bool echo) {
  Tail& t = state();
  std::lock_guard lock(t.mu);
  t.echo = echo;
  if (t.stream != nullptr) return true;
  cookie_io_functions_t io{};
  io.write = write_cookie;
  t.stream = fopencookie(nullptr, "w", io);
  if (t.stream == nullptr) return false;
  setvbuf(t.stream, nullptr, _IOLBF, 0);  // hand each line over as soon as it is complete
  return rte_openlog_stream(t.stream) == 0;
}

std::string tail(size_t max_lines) {
  Tail& t = state();
  std::lock_guard lock(t.mu);
  return join_last(t, 0, max_lines);
}

size_t mark() {
  Tail& t = state();
  std::lock_guard lock(t.mu);
  return t.count;
}

std::string since(size_t mark, size_t max_lines) {
  Tail& t = state();
  std::lock_guard lock(t.mu);
  return join_last(t, mark, max_lines);
}

}  // namespace uroce::glue::dpdk_log
