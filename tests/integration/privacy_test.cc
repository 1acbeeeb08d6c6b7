// What gputriage shows, pastes and stores of a job, run as a user would: secrets redacted in
// `analyze`, `report` (md, html, json) and the history database; no escape sequence from the job
// reaches the terminal; a history database that cannot be written can still be read.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "integration_util.h"
#include "store/snapshot_store.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

struct PrivacyOut {
  int status = -1;
  std::string out, err;
};

// gputriage with `args`, GPUTRIAGE_HOME=`home`; as nobody (through setpriv) when `unprivileged`
// and this test runs as root (root reads and writes whatever the permissions say).
PrivacyOut GtPrivate(std::vector<std::string> args, const std::string& home, bool unprivileged = false) {
  args.insert(args.begin(), GT_GPUTRIAGE_BIN);
  if (unprivileged && ::geteuid() == 0) {
    args.insert(args.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  }
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  ro.max_stderr_bytes = 1 << 20;
  ro.extra_env = {"GPUTRIAGE_HOME=" + home};
  auto r = core::RunWithTimeout(args, ro);
  PrivacyOut o;
  if (!r.ok()) {
    o.err = r.error().message;
    return o;
  }
  o.status = r->exit_code.value_or(-1);
  o.out = r->stdout_data;
  o.err = r->stderr_tail;
  return o;
}

// A Hugging Face token whose digit runs the signature's normalisation shortens ("Xy1234" ->
// "XyN", too short to be recognised), assembled at run time.
std::string HfToken() {
  std::string token = "hf_";
  for (int i = 0; i < 6; ++i) token += "Xy" + std::to_string(1234 + i);
  return token;
}

void ExpectNoSecret(const std::string& text, const std::string& what) {
  for (const char* piece : {"Xy12", "XyN", "cretPw", "hunter2", "S3cret", "K3yV4lue"}) {
    EXPECT_EQ(text.find(piece), std::string::npos) << what << " shows " << piece << ":\n" << text;
  }
}

std::string LastBundleIn(const std::string& dir) {
  std::string newest;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string()[0] != '.') newest = entry.path().string();
  }
  return newest;
}

TEST(Secrets, ReportAndAnalyzeOfALogShowNoSecretAnywhere) {
  testing::TempDir tmp;
  const std::string log = tmp / "job.log";
  std::ofstream(log) << "step 1199 ok\n"
                     << "worker 3: loss became nan at step 1200 while pushing to https://ml:S3cretPw0rd@metrics."
                     << "example.org/run with " << HfToken() << "\n";
  for (const char* format : {"md", "html", "json"}) {
    PrivacyOut report = GtPrivate({"report", "--format", format, log}, tmp / "home");
    EXPECT_EQ(report.status, 0) << report.err;
    ExpectNoSecret(report.out, std::string("report --format ") + format);
    EXPECT_NE(report.out.find("redacted"), std::string::npos) << report.out;  // html writes &lt;redacted&gt;
  }
  PrivacyOut human = GtPrivate({"analyze", log}, tmp / "home");
  ExpectNoSecret(human.out, "analyze");
  EXPECT_NE(human.out.find("signature: worker N: loss became nan at step N while pushing to https://ml:<redacted>@"),
            std::string::npos)
      << human.out;
  EXPECT_NE(human.out.find("search: https://github.com/search?type=issues&q="), std::string::npos) << human.out;
  PrivacyOut json = GtPrivate({"analyze", "--json", log}, tmp / "home");
  ExpectNoSecret(json.out, "analyze --json");
}

// Failed before: run's summary on stderr and its --json/--json-file quoted the job's failing
// line as it was, secrets and all, while the index, analyze and pack redacted them.
TEST(Secrets, RunsOwnSummaryAndJsonRedactTheJobsFailingLine) {
  testing::TempDir tmp;
  const std::string line =
      "RuntimeError: CUDA error: an illegal memory access was encountered (uploading to "
      "https://ml:S3cretPw0rd@metrics.example.org with " +
      HfToken() + ")";
  const std::vector<std::string> job = {"--", "sh", "-c", "echo '" + line + "' >&2; exit 1"};
  auto run = [&](std::vector<std::string> options) {
    std::vector<std::string> args = {"run", "--bundle-dir", tmp / "bundles", "--no-snapshot"};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), job.begin(), job.end());
    return GtPrivate(args, tmp / "home");
  };
  PrivacyOut text = run({});
  EXPECT_EQ(text.status, 1) << text.err;
  // The job's own stderr passes through as it was; gputriage's summary after it is redacted.
  size_t own = text.err.find(line + "\n");
  ASSERT_NE(own, std::string::npos) << text.err;
  std::string said = text.err.substr(0, own) + text.err.substr(own + line.size() + 1);
  EXPECT_NE(said.find("gputriage: "), std::string::npos) << text.err;
  EXPECT_NE(said.find("<redacted>"), std::string::npos) << text.err;
  ExpectNoSecret(said, "run's summary");
  PrivacyOut json = run({"--json"});
  EXPECT_EQ(json.status, 1) << json.err;
  EXPECT_NE(json.out.find("<redacted>"), std::string::npos) << json.out;
  ExpectNoSecret(json.out, "run --json");
  const std::string json_file = tmp / "run.json";
  PrivacyOut file = run({"--json-file", json_file});
  EXPECT_EQ(file.status, 1) << file.err;
  EXPECT_NE(ReadAll(json_file).find("<redacted>"), std::string::npos) << ReadAll(json_file);
  ExpectNoSecret(ReadAll(json_file), "run --json-file");
}

TEST(Secrets, ACrashedJobsCommandLineIsRedactedWhereverItIsShownOrStored) {
  testing::TempDir tmp;
  const std::string home = tmp / "home";
  const std::string bundles = tmp / "bundles";
  // A MySQL client's name: its -pPASSWORD is a password too.
  fs::create_symlink(kCrasher, tmp / "mysql");
  PrivacyOut run = GtPrivate({"run", "--bundle-dir", bundles, "--no-snapshot", "--", tmp / "mysql", "null", "-u",
                              "root", "-pS3cretPw", "--password", "hunter2pw", "--api-key", "K3yV4lue"},
                             home);
  ASSERT_NE(run.status, 0) << run.err;
  const std::string bundle = LastBundleIn(bundles);
  ASSERT_FALSE(bundle.empty()) << run.err;

  PrivacyOut human = GtPrivate({"analyze", bundle}, home);
  ExpectNoSecret(human.out, "analyze");
  EXPECT_NE(human.out.find("mysql null -u root -p<redacted> --password <redacted> --api-key <redacted>\""),
            std::string::npos)
      << human.out;
  PrivacyOut json = GtPrivate({"analyze", "--json", bundle}, home);
  ExpectNoSecret(json.out, "analyze --json");
  for (const char* format : {"md", "html", "json"}) {
    PrivacyOut report = GtPrivate({"report", "--format", format, bundle}, home);
    EXPECT_EQ(report.status, 0) << report.err;
    ExpectNoSecret(report.out, std::string("report --format ") + format);
  }
  // The reproduction command: redacted, then quoted for sh.
  PrivacyOut md = GtPrivate({"report", bundle}, home);
  EXPECT_NE(md.out.find("/mysql null -u root '-p<redacted>' --password '<redacted>' --api-key '<redacted>'\n"),
            std::string::npos)
      << md.out;

  // The history database: the row is redacted, the file owner-only.
  const std::string db = home + "/snapshots.db";
  ExpectNoSecret(ReadAll(db), "the history database");
  struct stat st {};
  ASSERT_EQ(::stat(db.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto store = store::SnapshotStore::OpenReadOnly(db);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto rows = store->ListBundles(0);
  ASSERT_TRUE(rows.ok() && rows->size() == 1);
  EXPECT_NE(rows->front().command.find("-p<redacted> --password <redacted> --api-key <redacted>"), std::string::npos)
      << rows->front().command;
}

TEST(Terminal, EscapeSequencesFromTheJobDoNotReachTheTerminal) {
  testing::TempDir tmp;
  // The program's name is the job's to choose: it is the command line, the bundle's directory
  // name and the main thread's name.
  const std::string name =
      "x\x1b]0;pwned\a\x1b[2J\xc2\x9b"
      "31m";
  fs::create_symlink(kCrasher, tmp / name);
  PrivacyOut run =
      GtPrivate({"run", "--bundle-dir", tmp / "bundles", "--no-snapshot", "--", tmp / name, "null"}, tmp / "home");
  ASSERT_NE(run.status, 0) << run.err;
  const std::string bundle = LastBundleIn(tmp / "bundles");
  ASSERT_FALSE(bundle.empty());
  const std::string log = tmp / "log";
  std::ofstream(log) << "RuntimeError: CUDA error: out of memory \x1b]0;title\a at \x1b[1;1H\n";
  PrivacyOut human = GtPrivate({"analyze", bundle, log}, tmp / "home");
  EXPECT_EQ(human.err.find('\x1b'), std::string::npos);
  for (const std::string& text : {human.out, human.err}) {
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find('\a'), std::string::npos) << text;
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
  }
  EXPECT_NE(human.out.find("]0;pwned"), std::string::npos) << human.out;  // shown, made harmless
  // JSON escapes them instead, and stays JSON.
  PrivacyOut json = GtPrivate({"analyze", "--json", bundle, log}, tmp / "home");
  EXPECT_EQ(json.out.find('\x1b'), std::string::npos);
  EXPECT_NE(json.out.find("\\u001b]0;pwned"), std::string::npos) << json.out.substr(0, 2000);
  EXPECT_FALSE(Json::parse(json.out, nullptr, false).is_discarded());
  // An error message naming a file names it harmlessly too.
  PrivacyOut missing = GtPrivate({"analyze", tmp / "no\x1b[2Jsuch"}, tmp / "home");
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err.find('\x1b'), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("[2Jsuch"), std::string::npos) << missing.err;
}

TEST(ReadOnlyStore, ListShowAndDiffReadADatabaseThatCannotBeWritten) {
  testing::TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  const std::string home = tmp / "home";
  const std::string root = std::string(GT_FIXTURES_DIR) + "/h200-root";
  for (int i = 0; i < 2; ++i) {
    PrivacyOut saved = GtPrivate({"snapshot", "--save", "--root", root}, home);
    ASSERT_EQ(saved.status, 0) << saved.err;
  }
  const std::string db = home + "/snapshots.db";
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(home.c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chown(db.c_str(), 65534, 65534), 0);
  }
  // The owner's directory made read-only: no -shm can be created next to the database.
  ASSERT_EQ(::chmod(home.c_str(), 0555), 0);
  PrivacyOut list = GtPrivate({"snapshot", "list"}, home, /*unprivileged=*/true);
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("    2  "), std::string::npos) << list.out;
  PrivacyOut show = GtPrivate({"snapshot", "show", "latest"}, home, true);
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("host "), std::string::npos) << show.out;
  PrivacyOut diff = GtPrivate({"snapshot", "diff", "previous", "latest"}, home, true);
  EXPECT_EQ(diff.status, 0) << diff.err;
  // A read-only file in a writable directory.
  ASSERT_EQ(::chmod(home.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(db.c_str(), 0444), 0);
  PrivacyOut list_file = GtPrivate({"snapshot", "list", "--json"}, home, true);
  EXPECT_EQ(list_file.status, 0) << list_file.err;
  EXPECT_EQ(Json::parse(list_file.out, nullptr, false)["snapshots"].size(), 2u) << list_file.out;
  // A database the user cannot read: show and diff say why, naming it.
  ASSERT_EQ(::chmod(db.c_str(), ::geteuid() == 0 ? 0200 : 0000), 0);
  // The store's failure (3), as `snapshot list` says for the same database (issue 32: it was 2).
  PrivacyOut denied = GtPrivate({"snapshot", "show", "1"}, home, true);
  EXPECT_EQ(denied.status, 3);
  EXPECT_EQ(GtPrivate({"snapshot", "list"}, home, true).status, 3);
  EXPECT_NE(denied.err.find(db + ": cannot open: unable to open database file (SQLite code 14: Permission denied)"),
            std::string::npos)
      << denied.err;
  PrivacyOut denied_diff = GtPrivate({"snapshot", "diff", "1", "2"}, home, true);
  EXPECT_NE(denied_diff.err.find(db + ": cannot open"), std::string::npos) << denied_diff.err;
  ::chmod(db.c_str(), 0600);
}

}  // namespace
}  // namespace gputriage
