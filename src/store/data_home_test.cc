#include "store/data_home.h"

#include "core/fs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/snapshot_store.h"
#include "store/test_util.h"

namespace gputriage::store {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

unsigned ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(ChooseDataHome, GputriageHomeWinsOverEverything) { EXPECT_EQ(ChooseDataHome({"/g", "/xdg", "/home/u"}), "/g"); }

TEST(ChooseDataHome, XdgDataHomeWinsOverHome) {
  EXPECT_EQ(ChooseDataHome({std::nullopt, "/xdg/", "/home/u"}), "/xdg/gputriage");
  EXPECT_EQ(ChooseDataHome({"", "/xdg", "/home/u"}), "/xdg/gputriage");
}

TEST(ChooseDataHome, RelativeXdgDataHomeIsIgnored) {
  EXPECT_EQ(ChooseDataHome({std::nullopt, "rel/xdg", "/home/u"}), "/home/u/.local/share/gputriage");
}

TEST(ChooseDataHome, HomeIsTheFallback) {
  EXPECT_EQ(ChooseDataHome({std::nullopt, std::nullopt, "/home/u"}), "/home/u/.local/share/gputriage");
  EXPECT_EQ(ChooseDataHome({"", "", ""}), std::nullopt);
}

TEST(DataHome, CreatesGputriageHomeWithMode0700) {
  TempDir tmp;
  std::string home = tmp / "a/b/gputriage";
  ScopedEnv env("GPUTRIAGE_HOME", home);
  ScopedEnv xdg("XDG_DATA_HOME", tmp / "xdg");
  auto result = DataHome();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, home);
  EXPECT_EQ(ModeOf(tmp / "a"), 0700u);
  EXPECT_EQ(ModeOf(tmp / "a/b"), 0700u);
  EXPECT_EQ(ModeOf(home), 0700u);
  EXPECT_FALSE(std::filesystem::exists(tmp / "xdg"));
}

TEST(DataHome, UsesXdgDataHomeWhenGputriageHomeIsUnset) {
  TempDir tmp;
  ScopedEnv env("GPUTRIAGE_HOME", std::nullopt);
  ScopedEnv xdg("XDG_DATA_HOME", tmp / "xdg");
  ScopedEnv home("HOME", tmp / "home");
  auto result = DataHome();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, tmp / "xdg/gputriage");
  EXPECT_TRUE(std::filesystem::is_directory(*result));
  EXPECT_FALSE(std::filesystem::exists(tmp / "home"));
}

TEST(DataHome, FallsBackToHomeLocalShare) {
  TempDir tmp;
  ScopedEnv env("GPUTRIAGE_HOME", std::nullopt);
  ScopedEnv xdg("XDG_DATA_HOME", std::nullopt);
  ScopedEnv home("HOME", tmp / "home");
  auto result = DataHome();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, tmp / "home/.local/share/gputriage");
  EXPECT_EQ(ModeOf(*result), 0700u);
  EXPECT_EQ(ModeOf(tmp / "home/.local"), 0700u);
}

TEST(DataHome, KeepsTheModeOfAnExistingDirectory) {
  TempDir tmp;
  std::string home = tmp / "existing";
  ASSERT_EQ(::mkdir(home.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(home.c_str(), 0755), 0);
  ScopedEnv env("GPUTRIAGE_HOME", home);
  auto result = DataHome();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(ModeOf(home), 0755u);
}

TEST(DataHome, ErrorNamesThePathWhenAComponentIsAFile) {
  TempDir tmp;
  std::ofstream(tmp / "file") << "x";
  ScopedEnv env("GPUTRIAGE_HOME", tmp / "file/gputriage");
  auto result = DataHome();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "data directory: cannot create directory " + (tmp / "file/gputriage") + ": " +
                                        (tmp / "file") + " exists and is not a directory");
}

TEST(DataHome, ErrorNamesThePathWhenPermissionIsDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir tmp;
  std::string locked = tmp / "locked";
  ASSERT_EQ(::mkdir(locked.c_str(), 0500), 0);
  ScopedEnv env("GPUTRIAGE_HOME", locked + "/gputriage");
  auto result = DataHome();
  ::chmod(locked.c_str(), 0700);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message,
            "data directory: cannot create directory " + locked + "/gputriage: Permission denied");
}

// Failed before (issue 32): a snapshots.db link planted in a data home made the store create a
// 0644 file wherever it pointed. The store is never opened through a link; as root, a store
// another user owns is refused.
TEST(SnapshotStoreOpen, APlantedLinkIsRefusedAndItsTargetNotCreated) {
  testing::TempDir tmp;
  std::string target = tmp / "elsewhere.db";
  std::string db = tmp / "snapshots.db";
  std::filesystem::create_symlink(target, db);
  auto store = SnapshotStore::Open(db);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, db + ": a symbolic link: refusing to open the history store through it (remove it)");
  EXPECT_FALSE(std::filesystem::exists(target));
  if (::geteuid() != 0) return;
  std::string theirs = tmp / "theirs.db";
  ASSERT_TRUE(SnapshotStore::Open(theirs).ok());
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  auto refused = SnapshotStore::Open(theirs);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("history store " + theirs + " is owned by nobody (uid 65534)"),
            std::string::npos)
      << refused.error().message;
}

// Failed before (issue 32): root used a data home another user owned or could write, and wrote
// its history and bundles there.
TEST(DataHome, AsRootADataHomeAnotherUserControlsIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root refuses (a user can only harm themself)";
  TempDir tmp;
  std::string theirs = tmp / "theirs";
  ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  ScopedEnv env("GPUTRIAGE_HOME", theirs);
  auto owned = DataHome();
  ASSERT_FALSE(owned.ok());
  EXPECT_NE(owned.error().message.find("data home " + theirs + " is owned by nobody (uid 65534)"), std::string::npos)
      << owned.error().message;
  std::string open = tmp / "open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  ScopedEnv env2("GPUTRIAGE_HOME", open + "/gputriage");
  auto below = DataHome();
  ASSERT_FALSE(below.ok());
  EXPECT_NE(below.error().message.find(open), std::string::npos) << below.error().message;
  // Root's own, under a sticky world-writable /tmp, is fine.
  ScopedEnv env3("GPUTRIAGE_HOME", tmp / "mine");
  EXPECT_TRUE(DataHome().ok());
}

TEST(DefaultDatabasePath, IsSnapshotsDbInTheDataHome) {
  TempDir tmp;
  ScopedEnv env("GPUTRIAGE_HOME", tmp / "h");
  auto result = DefaultDatabasePath();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, tmp / "h/snapshots.db");
}

}  // namespace
}  // namespace gputriage::store
