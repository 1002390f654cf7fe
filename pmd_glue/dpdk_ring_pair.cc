#include "pmd_glue/dpdk_ring_pair.h"

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <map>
#include <mutex>

#include "pmd_glue/dpdk_eal.h"

namespace uroce::glue::ring_pair {

namespace {

constexpr unsigned kRingSize = 1024;

struct Link {
  rte_ring* ab = nullptr;  // end 0 transmits here, end 1 receives
  rte_ring* ba = nullptr;
  bool taken[2] = {false, false};  // end 0 transmits on ab, end 1 on ba
};

std::mutex& mu() {
  static std::mutex m;
  return m;
}

std::map<std::string, Link>& links() {
  static auto* m = new std::map<std::string, Link>;
  return *m;
}

void drain(rte_ring* r) {
  void* objs[32];
  unsigned n;
  while ((n = rte_ring_dequeue_burst(r, objs, 32, nullptr)) > 0)
    for (unsigned i = 0; i < n; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(objs[i]));
}

}  // namespace

bool attach(const std::string& name, rte_ring** rx, rte_ring** tx, std::string* err) {
  std::lock_guard lock(mu());
  Link& l = links()[name];
  if (l.ab == nullptr) {
    l.ab = rte_ring_create(Eal::unique_name("uroce_rg").c_str(), kRingSize, SOCKET_ID_ANY, 0);
    l.ba = rte_ring_create(Eal::unique_name("uroce_rg").c_str(), kRingSize, SOCKET_ID_ANY, 0);
    if (l.ab == nullptr || l.ba == nullptr) {
      rte_ring_free(l.ab);
      rte_ring_free(l.ba);
      links().erase(name);
      if (err) *err = "ring:" + name + ": cannot create rte_ring: " + rte_strerror(rte_errno);
      return false;
    }
  } else if (l.taken[0] && l.taken[1]) {
    if (err) *err = "ring:" + name + ": both ends of this link are already open";
    return false;
  }
  const int end = l.taken[0] ? 1 : 0;
  l.taken[end] = true;
  *tx = end == 0 ? l.ab : l.ba;
  *rx = end == 0 ? l.ba : l.ab;
  return true;
}

void detach(const std::string& name, rte_ring* tx) {
  std::lock_guard lock(mu());
  auto it = links().find(name);
  if (it == links().end()) return;
  Link& l = it->second;
  drain(l.ab);
  drain(l.ba);
  l.taken[tx == l.ab ? 0 : 1] = false;
  if (l.taken[0] || l.taken[1]) return;
  rte_ring_free(l.ab);
  rte_ring_free(l.ba);
  links().erase(it);
}

}  // namespace uroce::glue::ring_pair
