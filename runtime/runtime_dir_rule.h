// The naming rule of the per-user runtime directory (runtime_dir.h) without allocation or libstdc++: the
// preload shim, which must not depend on libstdc++, finds the directory by the same rule as the provider and
// the tools, from these functions.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uroce::runtime {

// Candidates tried after uroce-<uid> (uroce-<uid>.1 .. uroce-<uid>.kFallbacks).
constexpr int kFallbacks = 7;

// The parent directory: $XDG_RUNTIME_DIR when it is an absolute path naming a directory (and fits), else
// /tmp; without trailing slashes. False when `size` cannot hold even that.
inline bool runtime_parent(char* buf, size_t size) {
  const char* parent = "/tmp";
  struct stat st {};
  if (const char* xdg = getenv("XDG_RUNTIME_DIR");
      xdg != nullptr && xdg[0] == '/' && strlen(xdg) < size && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode))
    parent = xdg;
  if (strlen(parent) >= size) return false;
  strcpy(buf, parent);
  size_t n = strlen(buf);
  while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
  return true;
}

// Candidate `i` under `parent`: uroce-<uid> for 0, uroce-<uid>.<i> after it. False when it does not fit.
inline bool runtime_candidate(const char* parent, int i, char* buf, size_t size) {
  const unsigned uid = getuid();
  const int len = i == 0 ? snprintf(buf, size, "%s/uroce-%u", parent, uid)
                         : snprintf(buf, size, "%s/uroce-%u.%d", parent, uid, i);
  return len >= 0 && static_cast<size_t>(len) < size;
}

// Whether lstat()'s `st` of a candidate makes it usable: a real directory (not a symlink) of this user with
// mode exactly 0700.
inline bool usable_candidate(const struct stat& st) {
  return S_ISDIR(st.st_mode) && st.st_uid == getuid() && (st.st_mode & 07777) == 0700;
}

}  // namespace uroce::runtime
