#include "tools/uroce/sysfs_tree.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <system_error>

#include "tools/uroce/layout.h"
#include "transport/counters.h"
#include "uroce_build_info.h"

namespace uroce::tools {
namespace fs = std::filesystem;

namespace {

std::string line(std::string_view s) { return std::string(s) + "\n"; }

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::optional<std::string> read_file(const fs::path& p) {
  const int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  if (n < 0) return std::nullopt;
  return out;
}

void write_file(const fs::path& p, const std::string& content) {
  const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0) throw_errno("create " + p.string());
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      errno = err;
      throw_errno("write " + p.string());
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) throw_errno("close " + p.string());
}

// Builds the complete tree in a fresh directory next to `root`; returns its path.
fs::path build_temp_tree(const fs::path& root, const std::vector<TreeFile>& files) {
  std::string tmpl = (root.parent_path() / ("." + root.filename().string() + ".XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) throw_errno("mkdtemp " + tmpl);
  const fs::path tmp = tmpl;
  try {
    if (chmod(tmp.c_str(), 0755) != 0) throw_errno("chmod " + tmp.string());
    for (const auto& f : files) {
      const fs::path p = tmp / f.path;
      fs::create_directories(p.parent_path());
      write_file(p, f.content);
    }
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  return tmp;
}

}  // namespace

std::vector<TreeFile> sysfs_files(const DeviceSpec& spec) {
  const std::string verbs = "class/infiniband_verbs/";
  const std::string uverbs = verbs + uverbs_name(spec.index) + "/";
  const std::string dev = "class/infiniband/" + spec.name + "/";
  const std::string port = dev + "ports/" + std::to_string(kPortNum) + "/";
  const std::string guid = guid_text(spec.mac ? *spec.mac : mac_for(spec.ip));

  std::vector<TreeFile> files = {
      {verbs + "abi_version", line(kUverbsAbi)},
      {uverbs + "ibdev", line(spec.name)},
      {uverbs + "dev", line(std::to_string(kDevMajor) + ":" + std::to_string(kDevMinor))},
      {uverbs + "abi_version", line(kDeviceAbi)},
      {"class/misc/rdma_cm/abi_version", line(kRdmaCmAbi)},
      {dev + "node_type", line("1: CA")},
      {dev + "node_guid", line(guid)},
      {dev + "sys_image_guid", line(guid)},
      {dev + "fw_ver", line(UROCE_VERSION)},
      {dev + "hca_type", line("uroce")},
      {dev + "hw_rev", line("0")},
      {dev + "board_id", line("UROCE_SOFT_ROCE_V2")},
      {dev + "node_desc", line(spec.node_desc.substr(0, 64))},
      {port + "state", line(spec.link_up ? "4: ACTIVE" : "1: DOWN")},
      {port + "phys_state", line(spec.link_up ? "5: LinkUp" : "3: Disabled")},
      {port + "link_layer", line("Ethernet")},
      {port + "rate", line("100 Gb/sec (4X EDR)")},
      {port + "lid", line("0x0")},
      {port + "sm_lid", line("0x0")},
      {port + "lid_mask_count", line("0")},
      {port + "sm_sl", line("0")},
      {port + "cap_mask", line("0x00010000")},
  };
  // Every index below the table length needs a gids and a types file; unused entries are zero GIDs
  // (libibverbs reports those as empty) with a valid type.
  for (unsigned i = 0; i < kGidTableLen; ++i) {
    const std::string n = std::to_string(i);
    Gid gid = i == 0 ? spec.ip.gid : Gid{};
    if (!spec.gids.empty()) gid = i < spec.gids.size() ? spec.gids[i] : Gid{};
    files.push_back({port + "gids/" + n, line(gid_text(gid))});
    files.push_back({port + "gid_attrs/types/" + n, line("RoCE v2")});
    files.push_back(
        {port + "gid_attrs/ndevs/" + n, gid != Gid{} && !spec.ndev.empty() ? line(spec.ndev) : ""});
  }
  // Placeholders: under `uroce run` the shim answers a read of these with the live value summed over the
  // device's running processes (provider/shim/live_counters.cc); read directly they show 0.
  for (const StdCounter& c : kStdCounters) {
    const char* sub = c.kind == StdCounterKind::kHw ? "hw_counters/" : "counters/";
    files.push_back({port + sub + c.name, line("0")});
  }
  for (unsigned i = 0; i < kPkeyTableLen; ++i) {
    files.push_back({port + "pkeys/" + std::to_string(i), line(i == 0 ? "0xffff" : "0x0000")});
  }
  return files;
}

bool tree_matches(const fs::path& root, const std::vector<TreeFile>& files) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(root, ec))) return false;
  size_t regular = 0;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const auto type = it->symlink_status(ec).type();
    if (type == fs::file_type::regular) {
      ++regular;
    } else if (type != fs::file_type::directory) {
      return false;
    }
  }
  if (ec || regular != files.size()) return false;
  for (const auto& f : files) {
    if (read_file(root / f.path) != f.content) return false;
  }
  return true;
}

WriteResult write_tree(const fs::path& root, const std::vector<TreeFile>& files) {
  if (tree_matches(root, files)) return WriteResult::kUnchanged;
  fs::create_directories(root.parent_path());
  const fs::path tmp = build_temp_tree(root, files);
  std::error_code ignored;
  if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, root.c_str(), RENAME_NOREPLACE) == 0) {
    return WriteResult::kCreated;
  }
  if (errno == EEXIST && renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, root.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(tmp, ignored);  // now holds the old tree
    return WriteResult::kReplaced;
  }
  if (errno == EINVAL || errno == ENOSYS) {
    // The file system cannot exchange: move the old tree aside first (a short window without a tree).
    const fs::path old = tmp.string() + ".old";
    const bool had_old = rename(root.c_str(), old.c_str()) == 0;
    if (rename(tmp.c_str(), root.c_str()) == 0) {
      if (had_old) fs::remove_all(old, ignored);
      return had_old ? WriteResult::kReplaced : WriteResult::kCreated;
    }
    if (had_old) rename(old.c_str(), root.c_str());
  }
  const int err = errno;
  fs::remove_all(tmp, ignored);
  errno = err;
  throw_errno("install " + root.string());
}

}  // namespace uroce::tools
