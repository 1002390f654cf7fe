// The fake sysfs tree libibverbs reads from $SYSFS_PATH for one uroce device, and its atomic writer.
//
// Layout under the root (the directory that contains class/), N = device index:
//   class/infiniband_verbs/abi_version                    "6"
//   class/infiniband_verbs/uroce_verbsN/{ibdev,dev,abi_version}
//   class/misc/rdma_cm/abi_version                        "4" (the ucma ABI of provider/shim/ucma*.cc)
//   class/infiniband/<name>/{node_type,node_guid,sys_image_guid,fw_ver,hca_type,hw_rev,board_id,node_desc}
//   class/infiniband/<name>/ports/1/{state,phys_state,link_layer,rate,lid,sm_lid,lid_mask_count,sm_sl,cap_mask}
//   class/infiniband/<name>/ports/1/gids/0..K-1, gid_attrs/types/0..K-1, gid_attrs/ndevs/0..K-1
//   class/infiniband/<name>/ports/1/pkeys/0..127
//   class/infiniband/<name>/ports/1/hw_counters/<mlx5/rxe name>, counters/<IB PMA name>
//   (transport/counters.h)
//                                                         "0", read live through the shim
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tools/uroce/gid.h"

namespace uroce::tools {

struct DeviceSpec {
  std::string name;       // uroceN
  unsigned index = 0;     // N: the device uses /dev/infiniband/uroce_verbsN
  IpAddress ip;           // GID 0 is its RoCE v2 GID
  std::string ndev;       // netdev for GID 0 (gid_attrs/ndevs/0); empty when no interface owns the address
  std::string node_desc;  // free text, at most 64 bytes
  // Bound to interface `ndev` (uroce run --netdev): the whole GID table (slot i = gids[i], zero = empty, the
  // rest of the table empty), the interface's MAC (the node GUID's EUI-64) and its link state.
  std::vector<Gid> gids;
  std::optional<Mac> mac;
  bool link_up = true;
};

struct TreeFile {
  std::string path;  // relative to the tree root
  std::string content;
};

// Every file of the tree, in a fixed order. Contents end in '\n' like sysfs attributes, except an empty
// ndevs.
std::vector<TreeFile> sysfs_files(const DeviceSpec& spec);

// True when `root` holds exactly `files` (no other regular files, same contents).
bool tree_matches(const std::filesystem::path& root, const std::vector<TreeFile>& files);

enum class WriteResult { kUnchanged, kCreated, kReplaced };

// Makes `root` hold exactly `files`. An identical tree is left alone (libibverbs identifies a device by its
// directory mtime, so a running program keeps seeing the same device). Otherwise a complete tree is built
// next to `root` and swapped in with one rename, so a reader sees the old tree or the new one, never a
// partial one. Throws std::system_error on failure.
WriteResult write_tree(const std::filesystem::path& root, const std::vector<TreeFile>& files);

}  // namespace uroce::tools
