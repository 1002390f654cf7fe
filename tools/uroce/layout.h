// Names and numbers every uroce device node and fake sysfs tree shares. libibverbs (rdma-core 44) reads
// the tree from $SYSFS_PATH and opens /dev/infiniband/<uverbs dir name>; see DESIGN.md, "How an
// unmodified libibverbs finds the device".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/dev_node.h"
#include "transport/params.h"

namespace uroce::tools {

// uroce_verbs0..3 exist after `uroce setup`; device uroceN uses uroce_verbsN.
constexpr unsigned kNumDevNodes = 4;
constexpr std::string_view kDevNamePrefix = "uroce";
constexpr std::string_view kUverbsPrefix = runtime::kUverbsPrefix;
constexpr std::string_view kDefaultDevDir = runtime::kDevDir;

// Every node is a character device equal to /dev/full (runtime/dev_node.h says why).
constexpr unsigned kDevMajor = runtime::kDevMajor;
constexpr unsigned kDevMinor = runtime::kDevMinor;
constexpr unsigned kDevMode = runtime::kDevMode;

constexpr std::string_view kDefaultDev = "uroce0";
constexpr std::string_view kDefaultIp = "127.1.0.1";  // loopback range: needs no interface address

constexpr unsigned kPortNum = 1;
constexpr unsigned kGidTableLen = params::kGidTableLen;
constexpr unsigned kPkeyTableLen = 128;
constexpr std::string_view kUverbsAbi = "6";  // class/infiniband_verbs/abi_version (libibverbs accepts 3..6)
constexpr std::string_view kDeviceAbi = "1";  // per-device abi_version the provider's match range must cover
// class/misc/rdma_cm/abi_version: the ucma ABI the shim serves (librdmacm accepts 3..4; without the file
// it assumes 4).
constexpr std::string_view kRdmaCmAbi = "4";

// libibverbs keeps ibdev_path ("$SYSFS_PATH/class/infiniband/<name>") in a 256-byte buffer and skips a
// device whose path does not fit.
constexpr size_t kSysfsPathMax = 256;

inline std::string uverbs_name(unsigned index) { return std::string(kUverbsPrefix) + std::to_string(index); }

}  // namespace uroce::tools
