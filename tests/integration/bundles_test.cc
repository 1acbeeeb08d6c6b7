// `gputriage bundles list|show|prune` as a user runs them, on bundles that `gputriage run` wrote
// for real crashes (tests/crashers) and indexed in a history database under a temporary
// GPUTRIAGE_HOME.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "integration_util.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

struct BundlesCliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class BundlesTest : public ::testing::Test {
 protected:
  BundlesCliRun Gputriage(std::vector<std::string> args) {
    args.insert(args.begin(), GT_GPUTRIAGE_BIN);
    core::RunOptions options;
    options.timeout = std::chrono::milliseconds(60000);
    options.extra_env = {"GPUTRIAGE_HOME=" + home_};
    auto outcome = core::RunWithTimeout(args, options);
    BundlesCliRun run;
    if (!outcome.ok()) {
      ADD_FAILURE() << outcome.error().message;
      return run;
    }
    run.exit_code = outcome->exit_code.value_or(-1);
    run.out = outcome->stdout_data;
    run.err = outcome->stderr_tail;
    return run;
  }

  // Runs `job` under `gputriage run` (which writes and indexes a bundle when it fails).
  void Crash(std::vector<std::string> job) {
    std::vector<std::string> args = {"run", "--quiet", "--no-snapshot", "--bundle-dir", bundles_, "--"};
    args.insert(args.end(), job.begin(), job.end());
    BundlesCliRun run = Gputriage(args);
    ASSERT_NE(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.err.find("not indexed"), std::string::npos) << run.err;
  }

  Json JsonOf(const std::vector<std::string>& args, int expected_exit = 0) {
    BundlesCliRun run = Gputriage(args);
    EXPECT_EQ(run.exit_code, expected_exit) << run.err;
    Json j = Json::parse(run.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << run.out << "\nstderr: " << run.err;
    return j;
  }

  size_t BundleDirs() {
    size_t n = 0;
    for (const auto& entry : fs::directory_iterator(bundles_)) n += entry.path().filename().string()[0] != '.';
    return n;
  }

  gputriage::testing::TempDir tmp_;
  std::string home_ = tmp_ / "home";
  std::string bundles_ = tmp_ / "bundles";
};

TEST_F(BundlesTest, NoDatabaseYetIsSaidAndNothingIsCreated) {
  BundlesCliRun list = Gputriage({"bundles", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out, "no crash bundles yet: there is no bundle index at " + home_ +
                          "/snapshots.db (`gputriage run -- CMD` writes and indexes a bundle when the job fails)\n");
  Json j = JsonOf({"bundles", "list", "--json"});
  EXPECT_EQ(j["total_bundles"], 0);
  EXPECT_EQ(j["groups"], Json::array());
  BundlesCliRun prune = Gputriage({"bundles", "prune", "--keep", "0"});
  EXPECT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_EQ(prune.out, "nothing to prune: there is no bundle index at " + home_ + "/snapshots.db\n");
  EXPECT_FALSE(fs::exists(home_ + "/snapshots.db"));
}

TEST_F(BundlesTest, AnEmptyIndexIsSaid) {
  // A snapshot saved creates the database; it holds no bundle.
  ASSERT_EQ(Gputriage({"snapshot", "--save", "--root", std::string(GT_FIXTURES_DIR) + "/h200-root"}).exit_code, 0);
  BundlesCliRun list = Gputriage({"bundles", "list", "--all"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out.rfind("no crash bundles in " + home_ + "/snapshots.db", 0), 0u) << list.out;
}

TEST_F(BundlesTest, ListGroupsBySignatureShowAndPrune) {
  Crash({kCrasher, "null"});
  Crash({kCrasher, "fpe"});
  Crash({kCrasher, "null"});
  ASSERT_EQ(BundleDirs(), 3u);

  // Two groups, the null dereference's (newest) first with both of its bundles.
  Json list = JsonOf({"bundles", "list", "--json"});
  EXPECT_EQ(list["total_bundles"], 3);
  ASSERT_EQ(list["total_groups"], 2) << list.dump(2);
  const Json& nulls = list["groups"][0];
  EXPECT_EQ(nulls["count"], 2);
  EXPECT_EQ(nulls["category"], "other");  // a host null dereference: no GPU category applies
  EXPECT_NE(nulls["signature"].get<std::string>().find("SIGSEGV"), std::string::npos) << nulls.dump();
  EXPECT_LE(nulls["first_seen"].get<std::string>(), nulls["last_seen"].get<std::string>());
  EXPECT_EQ(list["groups"][1]["count"], 1);
  EXPECT_NE(list["groups"][1]["signature"].get<std::string>().find("SIGFPE"), std::string::npos);
  std::string newest_path = nulls["newest"]["path"];
  EXPECT_EQ(newest_path.rfind(bundles_ + "/", 0), 0u) << newest_path;
  EXPECT_TRUE(fs::exists(newest_path + "/manifest.json"));

  Json limited = JsonOf({"bundles", "list", "--json", "--limit", "1"});
  EXPECT_EQ(limited["groups"].size(), 1u);
  EXPECT_EQ(limited["total_groups"], 2);

  BundlesCliRun text = Gputriage({"bundles", "list"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("3 bundles in 2 groups by signature, newest first"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("newest: " + std::to_string(nulls["newest"]["id"].get<int64_t>()) + "  " + newest_path),
            std::string::npos)
      << text.out;

  Json all = JsonOf({"bundles", "list", "--all", "--json"});
  ASSERT_EQ(all["bundles"].size(), 3u);
  EXPECT_EQ(all["bundles"][0]["path"], newest_path);
  EXPECT_EQ(all["bundles"][0]["signal"], "SIGSEGV");
  EXPECT_EQ(all["bundles"][0]["exit_status"], 139);
  EXPECT_EQ(all["bundles"][1]["signal"], "SIGFPE");

  // show by id and by path.
  std::string id = std::to_string(all["bundles"][0]["id"].get<int64_t>());
  BundlesCliRun show = Gputriage({"bundles", "show", id});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("bundle     " + newest_path + "  (index id " + id), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("ended      signal SIGSEGV, exit status 139"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("frames     #0 null_deref"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("files      findings.json"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("           manifest.json"), std::string::npos) << show.out;
  Json shown = JsonOf({"bundles", "show", newest_path, "--json"});
  EXPECT_EQ(shown["indexed"]["id"].get<int64_t>(), std::stoll(id));
  EXPECT_EQ(shown["signal"], "SIGSEGV");
  EXPECT_EQ(shown["kind"], "null-dereference");
  ASSERT_FALSE(shown["top_frames"].empty());
  EXPECT_EQ(shown["top_frames"][0]["function"], "null_deref");
  bool has_process = false;
  for (const Json& file : shown["files"]) {
    if (file["name"] == "process.json") {
      has_process = true;
      EXPECT_EQ(file["size_bytes"].get<uint64_t>(), fs::file_size(newest_path + "/process.json"));
    }
  }
  EXPECT_TRUE(has_process) << shown["files"].dump();

  // prune --dry-run lists and removes nothing; prune removes the directories and their rows.
  Json dry = JsonOf({"bundles", "prune", "--keep", "1", "--dry-run", "--json"});
  ASSERT_EQ(dry["bundles"].size(), 2u);
  EXPECT_EQ(dry["bundles"][0]["status"], "would-remove");
  EXPECT_EQ(dry["bundles"][0]["reasons"][0], "not among the newest 1");
  EXPECT_EQ(BundleDirs(), 3u);
  EXPECT_EQ(JsonOf({"bundles", "list", "--all", "--json"})["total_bundles"], 3);
  BundlesCliRun pruned = Gputriage({"bundles", "prune", "--keep", "1"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_NE(pruned.out.find("2 bundles removed"), std::string::npos) << pruned.out;
  EXPECT_EQ(BundleDirs(), 1u);
  EXPECT_TRUE(fs::exists(newest_path + "/manifest.json"));
  for (const Json& gone : dry["bundles"]) EXPECT_FALSE(fs::exists(gone["path"].get<std::string>()));
  Json after = JsonOf({"bundles", "list", "--all", "--json"});
  ASSERT_EQ(after["total_bundles"], 1);
  EXPECT_EQ(after["bundles"][0]["path"], newest_path);
  BundlesCliRun old_id = Gputriage({"bundles", "show", dry["bundles"][0]["id"].dump()});
  EXPECT_EQ(old_id.exit_code, 2);
  EXPECT_NE(old_id.err.find("no bundle with id"), std::string::npos) << old_id.err;
}

TEST_F(BundlesTest, ShowRedactsTheCommandLine) {
  Crash({"sh", "-c", "PASSWORD=hunter2 TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 true; kill -SEGV $$"});
  Json all = JsonOf({"bundles", "list", "--all", "--json"});
  ASSERT_EQ(all["bundles"].size(), 1u);
  std::string id = std::to_string(all["bundles"][0]["id"].get<int64_t>());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bundles", "show", id}, std::vector<std::string>{"bundles", "show", id, "--json"},
        std::vector<std::string>{"bundles", "list", "--all", "--json"}}) {
    BundlesCliRun run = Gputriage(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out.find("hunter2"), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("ghp_abc"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("PASSWORD=<redacted>"), std::string::npos) << run.out;
  }
}

TEST_F(BundlesTest, ShowNamesWhatIsWrong) {
  BundlesCliRun no_db = Gputriage({"bundles", "show", "3"});
  EXPECT_EQ(no_db.exit_code, 2);
  EXPECT_EQ(no_db.err,
            "gputriage: bundles show: no bundle with id 3: no bundle index at " + home_ + "/snapshots.db yet\n");
  std::string missing = tmp_ / "nowhere";
  BundlesCliRun gone = Gputriage({"bundles", "show", missing});
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_EQ(gone.err, "gputriage: bundles show: " + missing + ": No such file or directory\n");
  fs::create_directories(tmp_ / "plain");
  BundlesCliRun plain = Gputriage({"bundles", "show", tmp_ / "plain"});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_EQ(plain.err, "gputriage: bundles show: " + (tmp_ / "plain") + ": not a crash bundle (no manifest.json)\n");

  Crash({kCrasher, "null"});
  std::string bundle = JsonOf({"bundles", "list", "--json"})["groups"][0]["newest"]["path"];
  std::ofstream(bundle + "/process.json") << "{\"signal\": ";
  BundlesCliRun damaged = Gputriage({"bundles", "show", bundle});
  EXPECT_EQ(damaged.exit_code, 2);
  EXPECT_EQ(damaged.err.rfind("gputriage: bundles show: " + bundle + "/process.json: ", 0), 0u) << damaged.err;
}

TEST_F(BundlesTest, PruneNeedsACriterionAndRefusesWhatIsNotABundle) {
  BundlesCliRun none = Gputriage({"bundles", "prune"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("say what to remove: --older-than AGE"), std::string::npos) << none.err;
  BundlesCliRun bad_age = Gputriage({"bundles", "prune", "--older-than", "30"});
  EXPECT_EQ(bad_age.exit_code, 2);
  EXPECT_EQ(bad_age.err, "gputriage: bundles prune: --older-than '30' is not an age (examples: 36h, 30d, 2w)\n");
  BundlesCliRun bad_size = Gputriage({"bundles", "prune", "--max-size", "lots"});
  EXPECT_EQ(bad_size.exit_code, 2);

  Crash({kCrasher, "null"});
  Crash({kCrasher, "null"});
  Json all = JsonOf({"bundles", "list", "--all", "--json"});
  ASSERT_EQ(all["bundles"].size(), 2u);
  // The older bundle's manifest.json is gone: it no longer looks like a bundle and stays.
  std::string older = all["bundles"][1]["path"];
  fs::remove(older + "/manifest.json");
  BundlesCliRun prune = Gputriage({"bundles", "prune", "--older-than", "0s"});
  EXPECT_EQ(prune.exit_code, 3);
  EXPECT_NE(prune.out.find("refused"), std::string::npos) << prune.out;
  EXPECT_NE(prune.out.find("not a crash bundle (no manifest.json)"), std::string::npos) << prune.out;
  EXPECT_NE(prune.err.find("1 bundle could not be removed"), std::string::npos) << prune.err;
  EXPECT_TRUE(fs::exists(older + "/process.json"));
  EXPECT_FALSE(fs::exists(all["bundles"][0]["path"].get<std::string>()));
  Json left = JsonOf({"bundles", "list", "--all", "--json"});
  ASSERT_EQ(left["total_bundles"], 1);
  EXPECT_EQ(left["bundles"][0]["path"], older);
}

TEST_F(BundlesTest, PruneByAgeKeepsRecentBundles) {
  Crash({kCrasher, "null"});
  Json dry = JsonOf({"bundles", "prune", "--older-than", "1h", "--dry-run", "--json"});
  EXPECT_EQ(dry["bundles"], Json::array());
  EXPECT_EQ(dry["indexed"], 1);
  BundlesCliRun text = Gputriage({"bundles", "prune", "--older-than", "1h"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("nothing to prune: none of the 1 indexed bundle in"), std::string::npos) << text.out;
  EXPECT_EQ(BundleDirs(), 1u);
}

// The retention default lives in the config file ($GPUTRIAGE_HOME/config.toml, section
// [bundles.prune]): a plain `bundles prune` applies it; an option on the command line wins.
TEST_F(BundlesTest, PruneTakesItsRetentionFromTheConfigFile) {
  Crash({kCrasher, "null"});
  Crash({kCrasher, "assert"});
  fs::create_directories(home_);
  std::ofstream(home_ + "/config.toml") << "[bundles.prune]\nkeep = 1\n";
  Json dry = JsonOf({"bundles", "prune", "--dry-run", "--json"});
  ASSERT_EQ(dry["bundles"].size(), 1u) << dry.dump();
  EXPECT_EQ(dry["bundles"][0]["reasons"][0], "not among the newest 1");
  Json wider = JsonOf({"bundles", "prune", "--keep", "5", "--dry-run", "--json"});
  EXPECT_TRUE(wider["bundles"].empty()) << wider.dump();
  // A misspelt key is an error naming the file, not a prune without a criterion.
  std::ofstream(home_ + "/config.toml") << "[bundles.prune]\nkeep-newest = 1\n";
  BundlesCliRun bad = Gputriage({"bundles", "prune", "--dry-run"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find(home_ + "/config.toml"), std::string::npos) << bad.err;
  EXPECT_EQ(BundleDirs(), 2u);
}

TEST_F(BundlesTest, HelpNamesEverySubcommand) {
  BundlesCliRun help = Gputriage({"bundles", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* word : {"list", "show", "prune", "pack"}) EXPECT_NE(help.out.find(word), std::string::npos) << word;
  BundlesCliRun prune = Gputriage({"bundles", "prune", "--help"});
  EXPECT_EQ(prune.exit_code, 0);
  for (const char* word : {"--older-than", "--keep", "--max-size", "--dry-run", "--json"}) {
    EXPECT_NE(prune.out.find(word), std::string::npos) << word;
  }
  BundlesCliRun nothing = Gputriage({"bundles"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_EQ(nothing.err,
            "gputriage: bundles: name a subcommand: list, show, prune or pack (see gputriage bundles --help)\n");
  BundlesCliRun unknown = Gputriage({"bundles", "frobnicate", "3"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err,
            "gputriage: bundles: unknown subcommand 'frobnicate': the subcommands are list, show, prune and pack "
            "(see gputriage bundles --help)\n");
  BundlesCliRun bad_option = Gputriage({"bundles", "list", "--bogus"});
  EXPECT_EQ(bad_option.exit_code, 2);
  EXPECT_NE(bad_option.err.find("--bogus"), std::string::npos) << bad_option.err;
}

}  // namespace
}  // namespace gputriage
