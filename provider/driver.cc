// Registration with libibverbs and the device-level verbs: matching uroce devices, opening a context (its
// engine), query_device_ex and query_port.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

#include "provider/cm_service.h"
#include "provider/provider.h"
#include "transport/params.h"

namespace uroce::provider {

namespace {

constexpr char kDevicePrefix[] = "uroce";

bool match_device(verbs_sysfs_dev* sysfs_dev) {
  const auto* d = reinterpret_cast<const verbs_sysfs_dev_prefix*>(sysfs_dev);
  return std::strncmp(d->ibdev_name, kDevicePrefix, sizeof(kDevicePrefix) - 1) == 0;
}

verbs_device* alloc_device(verbs_sysfs_dev*) {
  auto* d = new (std::nothrow) verbs_device{};
  return d;
}

void uninit_device(verbs_device* d) { delete d; }

// The node GUID libibverbs reports from sysfs, so query_device agrees with ibv_get_device_guid.
uint64_t read_node_guid(const char* ibdev) {
  const char* sysfs = std::getenv("SYSFS_PATH");
  if (!sysfs) return 0;
  std::ifstream in(std::string(sysfs) + "/class/infiniband/" + ibdev + "/node_guid");
  unsigned a, b, c, d;
  std::string text;
  if (!in || !std::getline(in, text) || std::sscanf(text.c_str(), "%4x:%4x:%4x:%4x", &a, &b, &c, &d) != 4)
    return 0;
  const uint64_t host = static_cast<uint64_t>(a) << 48 | static_cast<uint64_t>(b) << 32 | c << 16 | d;
  return __builtin_bswap64(host);  // __be64
}

verbs_context_ops make_ops() {
  verbs_context_ops ops{};
  fill_device_ops(&ops);
  fill_mr_ops(&ops);
  fill_cq_ops(&ops);
  fill_qp_ops(&ops);
  fill_xrc_ops(&ops);
  return ops;
}

verbs_context* alloc_context(ibv_device* device, int cmd_fd, void*) {
  auto* ctx = static_cast<UContext*>(_verbs_init_and_alloc_context(
      device, cmd_fd, sizeof(UContext), &static_cast<UContext*>(nullptr)->ibv_ctx, 0));
  if (!ctx) return nullptr;
  std::string err;
  auto engine = Engine::acquire(device->name, &err);
  int fds[2] = {-1, -1};
  if (engine && pipe2(fds, O_CLOEXEC) != 0) err = "out of file descriptors";
  if (!err.empty()) {
    std::fprintf(stderr, "uroce: cannot open %s: %s\n", device->name, err.c_str());
    verbs_uninit_context(&ctx->ibv_ctx);
    std::free(ctx);
    errno = EINVAL;
    return nullptr;
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  ctx->engine = engine.get();
  ctx->ref = new std::shared_ptr<Engine>(std::move(engine));
  ctx->async_wfd = fds[1];
  // libibverbs takes no async fd from a provider that uses no kernel commands: set it here (DESIGN.md).
  // verbs_uninit_context closes it.
  ctx->ibv_ctx.context.async_fd = fds[0];
  ctx->ibv_ctx.context.num_comp_vectors = 1;
  static const verbs_context_ops ops = make_ops();
  verbs_set_ops(&ctx->ibv_ctx, &ops);
  return &ctx->ibv_ctx;
}

void free_context(ibv_context* c) {
  UContext* ctx = ucontext(c);
  close(ctx->async_wfd);
  delete ctx->ref;  // the last context of the device stops its engine
  verbs_uninit_context(&ctx->ibv_ctx);
  std::free(ctx);
}

constexpr uint64_t kDeviceCapAtomicWrite = 1ULL << 40;  // IB_UVERBS_DEVICE_ATOMIC_WRITE

int query_device_ex(ibv_context* c, const ibv_query_device_ex_input* input, ibv_device_attr_ex* out,
                    size_t attr_size) {
  if (input && input->comp_mask) return EINVAL;
  if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
  ibv_device_attr_ex a{};
  ibv_device_attr& d = a.orig_attr;
  std::snprintf(d.fw_ver, sizeof(d.fw_ver), "uroce 0.1");
  d.node_guid = read_node_guid(c->device->name);
  d.sys_image_guid = d.node_guid;
  d.max_mr_size = params::kMaxMrSize;
  d.page_size_cap = 0xFFFFF000;  // any page size from 4 KiB: memory is the application's own
  d.vendor_id = 0xFFFFFF;        // no IEEE OUI: the value software devices report (Linux rxe, RXE_VENDOR_ID)
  d.vendor_part_id = 0x5243;     // "RC"
  d.hw_ver = 1;
  d.max_qp = params::kMaxQp;
  d.max_qp_wr = params::kMaxQpWr;
  // Memory windows of type 1 and type 2B (bound through, and invalidated only by, one QP). No fast-register
  // MRs, so no IBV_DEVICE_MEM_MGT_EXTENSIONS. XRC domains, SRQs and QPs.
  d.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
                       IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
                       IBV_DEVICE_XRC;
  d.max_sge = params::kMaxSge;
  d.max_sge_rd = params::kMaxSge;
  d.max_cq = params::kMaxCq;
  d.max_cqe = params::kMaxCqe;
  d.max_mr = params::kMaxMr;
  d.max_mw = params::kMaxMr;  // windows and regions share the key table
  d.max_pd = params::kMaxPd;
  d.max_qp_rd_atom = params::kMaxRdAtomic;
  d.max_res_rd_atom = params::kMaxRdAtomic * params::kMaxQp;
  d.max_qp_init_rd_atom = params::kMaxRdAtomic;
  // Responder atomics are CPU atomics on the target memory, atomic against local CPU accesses too (what
  // IBV_ATOMIC_GLOB promises), but the device reports IBV_ATOMIC_HCA, the weaker promise it keeps as well, as
  // Soft-RoCE and a ConnectX do: UCX enables its uct rc_verbs device atomics (add, fetch-add, compare-swap)
  // only for IBV_ATOMIC_HCA.
  d.atomic_cap = IBV_ATOMIC_HCA;
  d.max_ah = params::kMaxAh;
  d.max_srq = params::kMaxSrq;
  d.max_srq_wr = params::kMaxSrqWr;
  d.max_srq_sge = params::kMaxSrqSge;
  d.max_mcast_grp = params::kMaxMcastGrp;
  d.max_mcast_qp_attach = params::kMaxMcastQpAttach;
  d.max_total_mcast_qp_attach = params::kMaxTotalMcastQpAttach;
  d.max_pkeys = 1;
  d.local_ca_ack_delay = 15;
  d.phys_port_cnt = 1;
  a.phys_port_cnt_ex = d.phys_port_cnt;
  // ATOMIC WRITE (IBV_WR_ATOMIC_WRITE, ibv_wr_atomic_write) on RC QPs. rdma-core 44's headers do not name
  // the bit; the kernel's is IB_UVERBS_DEVICE_ATOMIC_WRITE. No FLUSH bits: rdma-core 44 has no FLUSH verb.
  a.device_cap_flags_ex = kDeviceCapAtomicWrite;
  // On-demand paging, explicit and implicit, for every operation of every transport: nothing is pinned, and
  // copies into and out of an ODP region go through the kernel, which faults pages in (transport/mr.h).
  constexpr uint32_t kOdpAll = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                               IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
  a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
  a.odp_caps.per_transport_caps.rc_odp_caps = kOdpAll;
  a.odp_caps.per_transport_caps.uc_odp_caps =
      IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
  a.odp_caps.per_transport_caps.ud_odp_caps =
      IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
  std::memcpy(out, &a, std::min(attr_size, sizeof(a)));
  return 0;
}

int query_port(ibv_context* c, uint8_t port, ibv_port_attr* a) {
  if (port != 1) return EINVAL;
  const DeviceConfig& cfg = engine(c).dev().config();
  *a = ibv_port_attr{};
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = static_cast<ibv_mtu>(cfg.port_mtu);
  a->gid_tbl_len = params::kGidTableLen;
  a->max_msg_sz = params::kMaxMsgSize;
  a->pkey_tbl_len = 1;
  a->max_vl_num = 1;
  a->active_width = 2;   // 4X
  a->active_speed = 32;  // EDR: 4X EDR = 100 Gb/s, the rate the transport paces against
  a->phys_state = 5;     // LinkUp
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

const verbs_device_ops kDeviceOps = {
    .name = "uroce",
    .match_min_abi_version = 0,
    .match_max_abi_version = INT32_MAX,
    .match_table = nullptr,
    .static_providers = nullptr,
    .match_device = match_device,
    .alloc_context = alloc_context,
    .import_context = nullptr,
    .alloc_device = alloc_device,
    .uninit_device = uninit_device,
};

}  // namespace

void fill_device_ops(verbs_context_ops* ops) {
  ops->free_context = free_context;
  ops->query_device_ex = query_device_ex;
  ops->query_port = query_port;
}

}  // namespace uroce::provider

// libibverbs dlopens liburoce-rdmav34.so; this constructor registers the provider (its PROVIDER_DRIVER).
extern "C" const verbs_device_ops verbs_provider_uroce = uroce::provider::kDeviceOps;
__attribute__((constructor)) static void uroce_register_driver() {
  verbs_register_driver_34(&verbs_provider_uroce);
  // librdmacm loads the provider (ibv_get_device_list) before it creates its first id.
  uroce::provider::register_cm_backend();
}
