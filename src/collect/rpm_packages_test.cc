// rpm package databases: the parser on rpm's real output, and the runner with the real rpm
// binary (Debian's rpm package) against real databases made in a temporary directory with real
// packages of rpm's own test suite (tests/fixtures/rpm/SOURCE.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "capture_tree.h"
#include "collect/software.h"
#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::collect {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;
using gputriage::testing::ReadFixture;
using gputriage::testing::SourceLine;
using gputriage::testing::TempTree;

bool RpmInstalled() {
  core::RunOptions options;
  options.timeout = std::chrono::seconds(5);
  auto outcome = core::RunWithTimeout({"rpm", "--version"}, options);
  return outcome.ok() && outcome->exit_code == 0;
}

// A fresh rpm database in a temporary directory (rpm --initdb), optionally with packages.
class RpmDatabase {
 public:
  RpmDatabase() : dir_(fs::temp_directory_path() / ("gt-rpmdb-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Run({"rpm", "--dbpath", dir_.string(), "--initdb"});
  }
  ~RpmDatabase() { fs::remove_all(dir_); }
  // Records the packages in the database only (--justdb: no file is written to the system).
  void Install(const std::vector<std::string>& fixtures) {
    std::vector<std::string> argv = {"rpm",        "--dbpath",     dir_.string(), "-i",
                                     "--justdb",   "--nodeps",     "--noscripts", "--nosignature",
                                     "--nodigest", "--ignorearch", "--ignoreos"};
    for (const std::string& f : fixtures) argv.push_back(std::string(GT_FIXTURES_DIR) + "/rpm/" + f);
    Run(argv);
  }
  std::string path() const { return dir_.string(); }

 private:
  static void Run(const std::vector<std::string>& argv) {
    core::RunOptions options;
    auto outcome = core::RunWithTimeout(argv, options);
    ASSERT_TRUE(outcome.ok()) << outcome.error().message;
    ASSERT_EQ(outcome->exit_code, 0) << outcome->stderr_tail;
  }
  fs::path dir_;
};

TEST(RpmQuery, ParsesRealOutput) {
  RpmPackages rpm = ParseRpmQueryOutput(ReadFixture("rpm/rpm-qa-rpm-test-suite-packages.txt"));
  EXPECT_EQ(rpm.total, 3u);
  EXPECT_EQ(rpm.malformed, 0u);
  EXPECT_TRUE(rpm.packages.empty());  // hello and foo are not GPU-stack packages
}

TEST(RpmQuery, SourceLineIsMalformedOutput) {
  // The fixture's "# source:" line kept: a line without tabs is counted, not guessed at.
  RpmPackages rpm =
      ParseRpmQueryOutput(ReadFixture("rpm/rpm-qa-rpm-test-suite-packages.txt", {.source_line = SourceLine::kKeep}));
  EXPECT_EQ(rpm.total, 3u);
  EXPECT_EQ(rpm.malformed, 1u);
}

TEST(RpmQuery, EmptyOutputIsNoPackage) {
  RpmPackages rpm = ParseRpmQueryOutput("");
  EXPECT_EQ(rpm.total, 0u);
  EXPECT_EQ(rpm.malformed, 0u);
  EXPECT_TRUE(rpm.packages.is_array());
}

// Collecting a captured tree: its rpm database is named in a note, rpm is not run.
TEST(RpmQuery, RootedTreeWithAnRpmDatabaseIsNotedNotRun) {
  TempTree tree;
  tree.Write("usr/lib/sysimage/rpm/rpmdb.sqlite", "a captured database");
  auto os = core::OsView::Rooted(tree.root());
  ASSERT_TRUE(os.ok());
  core::Section section = CollectSoftware(*os, {});
  EXPECT_FALSE(section.data.contains("packages"));
  std::vector<std::string> reasons;
  for (const core::NotCollected& note : section.not_collected) {
    if (note.item == "software.packages") reasons.push_back(note.reason);
  }
  EXPECT_THAT(reasons, ::testing::ElementsAre(
                           "the tree has an rpm database (/usr/lib/sysimage/rpm/rpmdb.sqlite) but rpm is run on the "
                           "live machine only; GPU libraries are still listed from the loader path"));
}

// Debian's rpm package creates an empty /var/lib/rpm: that is no database.
TEST(RpmQuery, EmptyRpmDirectoryIsNoDatabase) {
  TempTree tree;
  tree.MakeDir("var/lib/rpm");
  auto os = core::OsView::Rooted(tree.root());
  ASSERT_TRUE(os.ok());
  core::Section section = CollectSoftware(*os, {});
  std::vector<std::string> reasons;
  for (const core::NotCollected& note : section.not_collected) {
    if (note.item == "software.packages") reasons.push_back(note.reason);
  }
  EXPECT_THAT(reasons, ::testing::ElementsAre("no dpkg or rpm package database found"));
}

TEST(RpmQueryRunner, EmptyRealDatabase) {
  if (!RpmInstalled()) GTEST_SKIP() << "rpm is not installed (apt-get install --no-install-recommends rpm)";
  RpmDatabase db;
  core::Result<RpmPackages> rpm = QueryRpmPackages({"--dbpath", db.path()});
  ASSERT_TRUE(rpm.ok()) << rpm.error().message;
  EXPECT_EQ(rpm->total, 0u);
  EXPECT_TRUE(rpm->packages.empty());
}

TEST(RpmQueryRunner, RealDatabaseGivesTheFixturesListing) {
  if (!RpmInstalled()) GTEST_SKIP() << "rpm is not installed";
  RpmDatabase db;
  db.Install({"hello-2.0-1.x86_64.rpm", "hello-2.0-1.i686.rpm", "foo-1.0-1.noarch.rpm"});
  core::Result<RpmPackages> rpm = QueryRpmPackages({"--dbpath", db.path()});
  ASSERT_TRUE(rpm.ok()) << rpm.error().message;
  EXPECT_EQ(rpm->total, 3u);
  EXPECT_EQ(rpm->malformed, 0u);
  EXPECT_TRUE(rpm->packages.empty());

  // The same query printed to stdout is the fixture the parser is tested on (in the order of
  // the database, which follows rpm's transaction order).
  core::RunOptions options;
  auto outcome = core::RunWithTimeout(
      {"rpm", "--dbpath", db.path(), "-qa", "--queryformat", std::string(kRpmQueryFormat)}, options);
  ASSERT_TRUE(outcome.ok());
  auto sorted_lines = [](std::string_view text) {
    std::vector<std::string> lines;
    for (std::string_view line : core::SplitLines(text)) lines.emplace_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(sorted_lines(outcome->stdout_data), sorted_lines(ReadFixture("rpm/rpm-qa-rpm-test-suite-packages.txt")));
}

TEST(RpmQueryRunner, CorruptDatabaseIsAnErrorWithRpmsMessage) {
  if (!RpmInstalled()) GTEST_SKIP() << "rpm is not installed";
  TempTree tree;
  tree.Write("db/rpmdb.sqlite", "not an sqlite file");
  std::string dir = tree.Real("db");
  core::Result<RpmPackages> rpm = QueryRpmPackages({"--dbpath", dir});
  ASSERT_FALSE(rpm.ok());
  EXPECT_EQ(rpm.error().message, "rpm -qa exited with status 1: error: cannot open Packages database in " + dir);
}

TEST(RpmQueryRunner, MissingRpmIsAnError) {
  const char* old = ::getenv("PATH");
  std::string saved = old != nullptr ? old : "";
  TempTree tree;
  tree.MakeDir("empty");
  ::setenv("PATH", tree.Real("empty").c_str(), 1);
  core::Result<RpmPackages> rpm = QueryRpmPackages();
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_FALSE(rpm.ok());
  EXPECT_THAT(rpm.error().message, HasSubstr("rpm"));
  EXPECT_THAT(rpm.error().message, HasSubstr("No such file or directory"));
}

}  // namespace
}  // namespace gputriage::collect
