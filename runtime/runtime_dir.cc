#include "runtime/runtime_dir.h"

#include <filesystem>
#include <stdexcept>

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace uroce::runtime {

namespace {

enum class State { kUsable, kMissing, kTaken };

// What a candidate is, from lstat (never following a symlink); *why says what makes it unusable.
State inspect(const std::string& path, std::string* why) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return State::kMissing;
    *why = std::strerror(errno);
    return State::kTaken;
  }
  if (usable_candidate(st)) return State::kUsable;
  if (S_ISLNK(st.st_mode)) {
    *why = "a symbolic link";
    return State::kTaken;
  }
  if (!S_ISDIR(st.st_mode)) {
    *why = "not a directory";
    return State::kTaken;
  }
  if (st.st_uid != getuid()) {
    *why = "owned by uid " + std::to_string(st.st_uid);
    return State::kTaken;
  }
  if ((st.st_mode & 07777) != 0700) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    *why = std::string("mode ") + mode + ", not 0700";
    return State::kTaken;
  }
  return State::kUsable;
}

}  // namespace

bool runtime_dir_in(const std::string& parent, bool create, RuntimeDir* out, std::string* err) {
  std::vector<std::string> names;
  for (int i = 0; i <= kFallbacks; ++i) {
    char name[PATH_MAX];
    if (!runtime_candidate(parent.c_str(), i, name, sizeof name)) {
      *err = "the runtime directory under " + parent + " has a name longer than PATH_MAX";
      return false;
    }
    names.push_back(name);
  }

  std::vector<std::string> why(names.size());
  std::vector<State> state(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    state[i] = inspect(names[i], &why[i]);
    if (state[i] == State::kUsable) {
      *out = {names[i], true};
      return true;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (state[i] != State::kMissing) continue;
    if (!create) {
      *out = {names[i], false};
      return true;
    }
    if (mkdir(names[i].c_str(), 0700) != 0) {
      if (errno != EEXIST) {
        *err = "cannot create " + names[i] + ": " + std::strerror(errno);
        return false;
      }
      // Somebody made it between our look and mkdir: judge it like any existing candidate.
    } else {
      // mkdir applies the umask; the directory is ours (the sticky /tmp keeps others from replacing it),
      // so set the mode we require before checking.
      chmod(names[i].c_str(), 0700);
    }
    state[i] = inspect(names[i], &why[i]);
    if (state[i] == State::kUsable) {
      *out = {names[i], true};
      return true;
    }
  }
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += "\n  " + names[i] + ": " + (state[i] == State::kMissing ? "cannot be created" : why[i]);
  *err = "no usable uroce runtime directory for uid " + std::to_string(getuid()) +
         " (each must be a directory owned by this user with mode 0700; uroce never uses or changes one that "
         "is not):" +
         list +
         "\nRemove the ones you own that are wrong, ask the owner of the others to remove them, or set "
         "XDG_RUNTIME_DIR to a private directory of yours.";
  return false;
}

bool runtime_dir(bool create, RuntimeDir* out, std::string* err) {
  char parent[PATH_MAX];
  if (!runtime_parent(parent, sizeof parent)) {
    *err = "no parent for the runtime directory";
    return false;
  }
  return runtime_dir_in(parent, create, out, err);
}

bool private_subdir(const std::string& path, std::string* err) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    *err = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    *err = "cannot use " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
    *err = "refusing to use " + path + ": not a directory owned by uid " + std::to_string(getuid());
    return false;
  }
  if ((st.st_mode & 0077) != 0 && chmod(path.c_str(), 0700) != 0) {
    *err = "cannot make " + path + " private: " + std::strerror(errno);
    return false;
  }
  return true;
}

std::filesystem::path runtime_base(bool create) {
  RuntimeDir dir;
  std::string err;
  if (!runtime_dir(create, &dir, &err)) throw std::runtime_error(err);
  return dir.path;
}

std::filesystem::path self_exe() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe;
}

std::filesystem::path self_dir() { return self_exe().parent_path(); }

}  // namespace uroce::runtime
