#include "core/trust.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/subprocess.h"

namespace gputriage::core {
namespace {

namespace fs = std::filesystem;
constexpr uid_t kNobody = 65534;

std::string Script(const gputriage::testing::TempDir& dir, const std::string& name, mode_t mode) {
  std::string path = dir / name;
  std::ofstream(path) << "#!/bin/sh\necho ran > \"$0.ran\"\n";
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(CheckTrusted, OwnFilesInOwnDirectoriesAreTrusted) {
  gputriage::testing::TempDir dir;  // mode 0700 under /tmp, which is sticky
  std::string file = Script(dir, "config.toml", 0644);
  EXPECT_TRUE(CheckTrusted(file, "config file").ok()) << CheckTrusted(file, "config file").error().message;
  EXPECT_TRUE(CheckTrusted("/bin/sh", "program").ok());
}

TEST(CheckTrusted, AFileOthersCanWriteIsRefusedNamingItsMode) {
  gputriage::testing::TempDir dir;
  std::string file = Script(dir, "config.toml", 0666);
  ::chmod(file.c_str(), 0666);
  auto r = CheckTrusted(file, "config file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find("config file " + file + " is writable by anyone (mode 0666): refusing to use it"),
            0u)
      << r.error().message;
  EXPECT_NE(r.error().message.find("chmod go-w " + file), std::string::npos);
  ::chmod(file.c_str(), 0664);
  r = CheckTrusted(file, "config file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("is writable by its group (mode 0664)"), std::string::npos) << r.error().message;
}

TEST(CheckTrusted, ADirectoryAboveThatOthersCanWriteIsRefusedUnlessSticky) {
  gputriage::testing::TempDir dir;
  fs::create_directories(dir / "open");
  std::string file = Script(dir, "open/python", 0755);
  ::chmod((dir / "open").c_str(), 0777);
  auto r = CheckTrusted(file, "program");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find("directory " + (dir / "open") + " (above the program " + file +
                                   ") is writable by anyone (mode 0777)"),
            0u)
      << r.error().message;
  ::chmod((dir / "open").c_str(), 01777);  // like /tmp: others cannot replace what they do not own
  EXPECT_TRUE(CheckTrusted(file, "program").ok());
}

TEST(CheckTrusted, ALinkIsJudgedByWhatItPointsAt) {
  gputriage::testing::TempDir dir;
  std::string file = Script(dir, "real.toml", 0644);
  ::chmod(file.c_str(), 0646);
  fs::create_symlink(file, dir / "link.toml");
  auto r = CheckTrusted(dir / "link.toml", "config file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(dir / "link.toml" + " (-> " + file + ") is writable by anyone (mode 0646)"),
            std::string::npos)
      << r.error().message;
  EXPECT_FALSE(CheckTrusted(dir / "missing.toml", "config file").ok());
}

TEST(CheckTrusted, AnotherUsersFileIsRefusedNamingTheOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  gputriage::testing::TempDir dir;
  std::string file = Script(dir, "config.toml", 0644);
  ASSERT_EQ(::chown(file.c_str(), kNobody, kNobody), 0);
  auto r = CheckTrusted(file, "config file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("is owned by nobody (uid 65534), neither root nor the user gputriage runs as"),
            std::string::npos)
      << r.error().message;
}

TEST(TrustedProgram, FoundOnPathAndCheckedAsRoot) {
  auto sh = TrustedProgram("sh");
  ASSERT_TRUE(sh.ok()) << sh.error().message;
  EXPECT_EQ(fs::path(*sh).filename(), "sh");
  EXPECT_FALSE(FindProgram("no-such-program-gputriage").ok());
  if (::geteuid() != 0) GTEST_SKIP() << "only root's programs are checked";
  gputriage::testing::TempDir dir;
  std::string evil = Script(dir, "evil.sh", 0777);
  ::chmod(evil.c_str(), 0777);
  auto r = TrustedProgram(evil);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("program " + evil + " is writable by anyone"), std::string::npos);
}

// Failed before: as root, RunWithTimeout ran whatever program it was given (a config's python =,
// a compiler found on PATH). Now a program others can write is not started, and says why.
TEST(TrustedProgram, RootDoesNotStartAProgramOthersCanWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root's programs are checked";
  gputriage::testing::TempDir dir;
  std::string evil = Script(dir, "evil.sh", 0777);
  ::chmod(evil.c_str(), 0777);
  auto r = RunWithTimeout({evil}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(evil + ": not started: program " + evil + " is writable by anyone"),
            std::string::npos)
      << r.error().message;
  EXPECT_FALSE(fs::exists(evil + ".ran"));
  ::chmod(evil.c_str(), 0755);
  auto ok = RunWithTimeout({evil}, {});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->exit_code, 0);
  EXPECT_TRUE(fs::exists(evil + ".ran"));
}

}  // namespace
}  // namespace gputriage::core
