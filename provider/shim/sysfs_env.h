// Whether this process runs on a uroce sysfs tree, and where that tree is.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace uroce::shim {

// $SYSFS_PATH without trailing slashes when it names a tree other than /sys, else nullptr (shim passive).
// libibverbs reads the same variable; `uroce run` points it at the tree it wrote.
inline const char* sysfs_root(size_t* len) {
  const char* root = std::getenv("SYSFS_PATH");
  if (root == nullptr || root[0] != '/') return nullptr;
  size_t n = std::strlen(root);
  while (n > 0 && root[n - 1] == '/') --n;
  if (n == 0 || (n == 4 && std::strncmp(root, "/sys", 4) == 0)) return nullptr;
  *len = n;
  return root;
}

}  // namespace uroce::shim
