#include "pmd_glue/open_port.h"

#include <chrono>
#include <cstdlib>
#include <string_view>

#include "pmd_glue/dpdk_port.h"
#include "pmd_glue/dpdk_spec.h"
#include "pmd_glue/memif_client.h"
#include "runtime/env_vars.h"

namespace uroce::glue {

std::unique_ptr<Port> open_port(const std::string& text, std::string* err) {
  PortSpec spec;
  if (!parse_port_spec(text, &spec, err)) return nullptr;
  if (spec.kind == PortKind::kMemif && !spec.server && !spec.driver_given) {
    const char* d = std::getenv("UROCE_MEMIF_DRIVER");
    const std::string_view drv = d ? d : "";
    if (!drv.empty()) {
      if (std::string bad = runtime::check_env_value(*runtime::find_env_var("UROCE_MEMIF_DRIVER"), drv);
          !bad.empty()) {
        *err = bad;
        return nullptr;
      }
    }
    spec.own_driver = drv == "uroce";
  }
  if (!spec.own_driver) return DpdkPort::open(text, err);
  MemifClientConfig cfg;
  cfg.socket = spec.socket;
  cfg.id = spec.id;
  cfg.log2_ring = spec.log2_ring;
  cfg.buffer_size = kMaxFrame;
  // Both rings and a few bursts (memif_client.h says why no more); mbufs= sizes DPDK's pools only.
  cfg.buffers = (2u << spec.log2_ring) + 4 * kBurst;
  cfg.bell = runtime::env_flag("UROCE_MEMIF_BELL", true);  // as DpdkPort::open_bell
  auto c = MemifClient::create(cfg, err);
  if (!c) return nullptr;
  if (!c->wait_link_up(std::chrono::milliseconds(spec.effective_wait_ms()))) {
    *err = text + ": no memif server answered at " + spec.socket + " within " +
           std::to_string(spec.effective_wait_ms()) + " ms" +
           (c->last_disconnect().empty() ? "" : " (" + c->last_disconnect() + ")") + "; wait= gives it time";
    return nullptr;
  }
  return c;
}

}  // namespace uroce::glue
