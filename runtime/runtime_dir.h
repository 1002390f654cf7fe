// The per-user runtime directory: where uroce keeps what belongs to one user while it runs (the sysfs trees
// of `uroce run`, the engines' control sockets in ctl/, uroced's socket, lock, log and memif ports).
//
// Where: under ${XDG_RUNTIME_DIR} when it names a directory, else under /tmp, the first usable of
//   uroce-<uid>, uroce-<uid>.1, ..., uroce-<uid>.<kFallbacks>
// A candidate is usable when lstat() shows a real directory (not a symlink) owned by the user with mode
// exactly 0700. Any other candidate (another user's directory pre-created in the shared /tmp, a symlink, a
// file, a directory of ours with looser permissions whose contents may have been touched) is never used
// and never changed. The choice is deterministic, so the provider and the tools agree on it:
//   1. the first candidate, in order, that is already usable;
//   2. else the first that does not exist (created with mkdir 0700, then checked again with lstat);
//   3. else an error that names every candidate and what is wrong with it.
// Every process of the user computes the same answer from the same state of the parent directory.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/runtime_dir_rule.h"

namespace uroce::runtime {

struct RuntimeDir {
  std::string path;     // the chosen directory
  bool exists = false;  // false only when create was false and the chosen candidate is still to be made
};

// The runtime directory of the calling user. With `create` a missing directory is made (rule 2). Without it
// nothing is changed, and the directory a creating call would choose is returned (exists = false when it
// is not there yet). Returns false with *err set when no candidate is usable (rule 3) or creating fails.
bool runtime_dir(bool create, RuntimeDir* out, std::string* err);

// `parent`/<name> rules as above for an explicit parent (tests); runtime_dir() calls it with the parent
// it picked.
bool runtime_dir_in(const std::string& parent, bool create, RuntimeDir* out, std::string* err);

// runtime_dir() for callers that treat an unusable directory as fatal: the path, made if missing when
// `create`. Throws std::runtime_error with runtime_dir()'s message (naming the paths and what to do).
std::filesystem::path runtime_base(bool create);

// The running executable (/proc/self/exe) and its directory; empty if unknown.
std::filesystem::path self_exe();
std::filesystem::path self_dir();

// A directory inside the runtime directory (e.g. ctl/): made 0700 if missing, else it must be a real
// directory owned by the user; made private if it is not. False with *err otherwise.
bool private_subdir(const std::string& path, std::string* err);

}  // namespace uroce::runtime
