// The per-user runtime directory (runtime/runtime_dir.h): a candidate another user pre-created, a symbolic
// link, a file or a directory with loose permissions is never used nor changed; the fallback is the same
// for a creating and a looking call, so the provider and the tools agree. Pre-creating as another user needs
// root (chown): those cases are skipped otherwise.
#include "runtime/runtime_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace uroce::runtime {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/uroce-trust-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string name(const TempDir& t, int i) {
  const std::string stem = (t.path / ("uroce-" + std::to_string(getuid()))).string();
  return i == 0 ? stem : stem + "." + std::to_string(i);
}

unsigned mode_of(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// A directory at `p` owned by `uid` with `mode`.
void plant_dir(const std::string& p, uid_t uid, mode_t mode) {
  ASSERT_EQ(mkdir(p.c_str(), 0700), 0) << p;
  ASSERT_EQ(chown(p.c_str(), uid, uid), 0) << p;
  ASSERT_EQ(chmod(p.c_str(), mode), 0) << p;
}

TEST(RuntimeDir, CreatesThePlainNameMode0700) {
  TempDir t;
  RuntimeDir look, made;
  std::string err;
  ASSERT_TRUE(runtime_dir_in(t.path, false, &look, &err)) << err;
  EXPECT_EQ(look.path, name(t, 0));
  EXPECT_FALSE(look.exists);
  EXPECT_FALSE(fs::exists(look.path)) << "a looking call must not create";
  const mode_t old = umask(0);  // mkdir's mode must not depend on the caller's umask
  const bool ok = runtime_dir_in(t.path, true, &made, &err);
  umask(old);
  ASSERT_TRUE(ok) << err;
  EXPECT_EQ(made.path, look.path);
  EXPECT_TRUE(made.exists);
  EXPECT_EQ(mode_of(made.path), 0700u);
  ASSERT_TRUE(runtime_dir_in(t.path, false, &look, &err)) << err;
  EXPECT_EQ(look.path, made.path);
  EXPECT_TRUE(look.exists);
}

TEST(RuntimeDir, NeverUsesAnotherUsersSymlinkOrLooseDirectory) {
  if (geteuid() != 0) GTEST_SKIP() << "pre-creating another user's directory needs root";
  TempDir t;
  // uroce-UID: another user's, world-writable (what an attacker leaves in /tmp).
  plant_dir(name(t, 0), getuid() + 4242, 0777);
  // uroce-UID.1: a symbolic link to a directory of ours (it could point anywhere).
  fs::create_directory(t.path / "target");
  chmod((t.path / "target").c_str(), 0700);
  fs::create_directory_symlink(t.path / "target", name(t, 1));
  // uroce-UID.2: ours, but 0755: its contents may have been touched by others; left alone.
  plant_dir(name(t, 2), getuid(), 0755);
  // uroce-UID.3: a file.
  std::ofstream(name(t, 3)) << "x";

  RuntimeDir look, made;
  std::string err;
  ASSERT_TRUE(runtime_dir_in(t.path, false, &look, &err)) << err;
  EXPECT_EQ(look.path, name(t, 4));
  ASSERT_TRUE(runtime_dir_in(t.path, true, &made, &err)) << err;
  EXPECT_EQ(made.path, name(t, 4)) << "the creating call must choose what the looking call said";
  EXPECT_EQ(mode_of(made.path), 0700u);
  // Nothing that was there was changed.
  EXPECT_EQ(mode_of(name(t, 0)), 0777u);
  EXPECT_EQ(mode_of(name(t, 2)), 0755u);
  EXPECT_TRUE(fs::is_symlink(name(t, 1)));
  EXPECT_TRUE(fs::is_empty(t.path / "target"));
}

TEST(RuntimeDir, AnExistingGoodFallbackWinsOverAFreedName) {
  TempDir t;
  // Earlier, uroce-UID was taken and the user got uroce-UID.1; since then the bad one was removed. Both
  // sides keep using .1 (where the running engines' sockets are) rather than starting a new directory.
  plant_dir(name(t, 1), getuid(), 0700);
  RuntimeDir look, made;
  std::string err;
  ASSERT_TRUE(runtime_dir_in(t.path, false, &look, &err)) << err;
  ASSERT_TRUE(runtime_dir_in(t.path, true, &made, &err)) << err;
  EXPECT_EQ(look.path, name(t, 1));
  EXPECT_EQ(made.path, name(t, 1));
  EXPECT_FALSE(fs::exists(name(t, 0)));
}

TEST(RuntimeDir, AllTakenIsAClearError) {
  if (geteuid() != 0) GTEST_SKIP() << "pre-creating another user's directory needs root";
  TempDir t;
  for (int i = 0; i <= kFallbacks; ++i) plant_dir(name(t, i), getuid() + 4242, 0777);
  RuntimeDir d;
  std::string err;
  EXPECT_FALSE(runtime_dir_in(t.path, true, &d, &err));
  EXPECT_FALSE(runtime_dir_in(t.path, false, &d, &err));
  for (int i = 0; i <= kFallbacks; ++i) EXPECT_NE(err.find(name(t, i)), std::string::npos) << err;
  EXPECT_NE(err.find("owned by uid " + std::to_string(getuid() + 4242)), std::string::npos) << err;
  EXPECT_NE(err.find("XDG_RUNTIME_DIR"), std::string::npos) << err;
}

TEST(RuntimeDir, FollowsXdgRuntimeDir) {
  TempDir t;
  const char* old = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = old ? old : "";
  setenv("XDG_RUNTIME_DIR", (t.path.string() + "/").c_str(), 1);
  RuntimeDir d;
  std::string err;
  const bool ok = runtime_dir(true, &d, &err);
  if (old) {
    setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  } else {
    unsetenv("XDG_RUNTIME_DIR");
  }
  ASSERT_TRUE(ok) << err;
  EXPECT_EQ(d.path, name(t, 0));
}

TEST(RuntimeDir, PrivateSubdirRefusesALink) {
  TempDir t;
  const fs::path sub = t.path / "ctl";
  fs::create_directory_symlink("/", sub);
  std::string err;
  EXPECT_FALSE(private_subdir(sub.string(), &err));
  EXPECT_NE(err.find(sub.string()), std::string::npos) << err;
  fs::remove(sub);
  EXPECT_TRUE(private_subdir(sub.string(), &err)) << err;
  EXPECT_EQ(mode_of(sub.string()), 0700u);
}

}  // namespace
}  // namespace uroce::runtime
