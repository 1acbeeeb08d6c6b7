// What gputriage trusts (issue 32): a config file others could have written is refused, and a
// program a trusted config names is not started by root when others can write it. Each case
// failed before: root's snapshot ran the config's `python = ...`.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "run_cli.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

struct Planted {
  testing::TempDir dir;
  std::string home = dir / "home";
  std::string evil = dir / "evil.sh";
  std::string marker = dir / "evil.sh.ran";
  Planted() {
    fs::create_directories(home);
    std::ofstream(evil) << "#!/bin/sh\necho ran > \"$0.ran\"\necho '{}'\n";
    ::chmod(evil.c_str(), 0755);
  }
  // $GPUTRIAGE_HOME/config.toml naming the planted program as snapshot's and doctor's python.
  std::string Config(mode_t mode) {
    std::string config = home + "/config.toml";
    std::ofstream(config) << "[snapshot]\npython = \"" << evil << "\"\n[doctor]\npython = \"" << evil << "\"\n";
    ::chmod(config.c_str(), mode);
    return config;
  }
  testing::CliOutput Gt(const std::vector<std::string>& args) {
    return testing::RunCli(GT_GPUTRIAGE_BIN, args, {"GPUTRIAGE_HOME=" + home});
  }
};

TEST(Trust, AConfigFileAnyoneCanWriteIsRefusedAndNothingRuns) {
  Planted p;
  std::string config = p.Config(0666);
  ::chmod(config.c_str(), 0666);
  for (const char* command : {"snapshot", "doctor"}) {
    testing::CliOutput out = p.Gt({command, "--json"});
    EXPECT_EQ(out.status, 2) << command << ": " << out.err;
    EXPECT_NE(out.err.find("config file " + config + " is writable by anyone (mode 0666): refusing to use it"),
              std::string::npos)
        << out.err;
    EXPECT_FALSE(fs::exists(p.marker)) << command << " ran the config's program";
  }
  // An explicit --config is held to the same rule.
  testing::CliOutput explicit_config = p.Gt({"snapshot", "--config", config});
  EXPECT_EQ(explicit_config.status, 2);
  EXPECT_FALSE(fs::exists(p.marker));
}

TEST(Trust, AConfigFileOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  Planted p;
  std::string config = p.Config(0644);
  ASSERT_EQ(::chown(config.c_str(), 65534, 65534), 0);
  testing::CliOutput out = p.Gt({"snapshot"});
  EXPECT_EQ(out.status, 2) << out.err;
  EXPECT_NE(out.err.find("config file " + config + " is owned by nobody (uid 65534)"), std::string::npos) << out.err;
  EXPECT_FALSE(fs::exists(p.marker));
}

TEST(Trust, RootDoesNotRunAProgramOthersCanWriteThatATrustedConfigNames) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root's programs are checked";
  Planted p;
  p.Config(0644);
  ::chmod(p.evil.c_str(), 0777);
  testing::CliOutput out = p.Gt({"snapshot", "--json"});
  ASSERT_NE(out.status, 2) << out.err;
  Json j = Json::parse(out.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out.err;
  EXPECT_FALSE(fs::exists(p.marker)) << "root ran a program anyone can write";
  EXPECT_NE(j["not_collected"].dump().find("not started: program " + p.evil + " is writable by anyone"),
            std::string::npos)
      << j["not_collected"].dump();
  // Made the user's own and writable by no one else, the same program is run.
  ::chmod(p.evil.c_str(), 0755);
  p.Gt({"snapshot", "--json"});
  EXPECT_TRUE(fs::exists(p.marker));
}

// Failed before: `report -o LINK` wrote through a planted link; `run --json-file /dev/full` said
// nothing. Now a link to a file is refused (exit 2) and a full disk is reported.
TEST(Trust, OutputOptionsNeverWriteThroughALinkOrLoseAFailure) {
  testing::TempDir dir;
  std::string log = dir / "job.log";
  std::ofstream(log) << "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  std::string victim = dir / "victim.txt";
  std::ofstream(victim) << "keep\n";
  std::string link = dir / "report.md";
  fs::create_symlink(victim, link);
  testing::CliOutput report =
      testing::RunCli(GT_GPUTRIAGE_BIN, {"report", "-o", link, log}, {"GPUTRIAGE_HOME=" + (dir / "home")});
  EXPECT_EQ(report.status, 2) << report.err;
  EXPECT_NE(report.err.find(link + ": a symbolic link, not a regular file: not written"), std::string::npos)
      << report.err;
  std::ifstream in(victim);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "keep");
  testing::CliOutput to_null =
      testing::RunCli(GT_GPUTRIAGE_BIN, {"report", "-o", "/dev/null", log}, {"GPUTRIAGE_HOME=" + (dir / "home")});
  EXPECT_EQ(to_null.status, 0) << to_null.err;
  testing::CliOutput run = testing::RunCli(
      GT_GPUTRIAGE_BIN, {"run", "--no-snapshot", "--json-file", "/dev/full", "--bundle-dir", dir / "b", "--", "true"},
      {"GPUTRIAGE_HOME=" + (dir / "home")});
  EXPECT_EQ(run.status, 0) << run.err;  // the job's status stays the job's
  EXPECT_NE(run.err.find("--json-file /dev/full: cannot write"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace gputriage
