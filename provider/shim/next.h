// The definitions the shim's interposers forward to: the next ones in lookup order (libc's, libibverbs').
#pragma once

#include <dlfcn.h>

#include <atomic>

#define UROCE_EXPORT __attribute__((visibility("default")))

namespace uroce::shim {

struct NextSym {
  const char* name;
  std::atomic<void*> addr{nullptr};
};

// Resolves once; racing first calls store the same address. Null when nothing after the shim defines it.
template <typename Fn>
Fn* next(NextSym& s) {
  void* p = s.addr.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = dlsym(RTLD_NEXT, s.name);
    s.addr.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn*>(p);
}

}  // namespace uroce::shim
