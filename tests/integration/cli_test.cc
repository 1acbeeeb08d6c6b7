// Runs the built gputriage binary as a user would, on real captured trees and on this machine.
#include <gnu/libc-version.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include <algorithm>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

CliRun Gputriage(std::vector<std::string> args, std::vector<std::string> env = {}, int timeout_ms = 60000) {
  args.insert(args.begin(), GT_GPUTRIAGE_BIN);
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.extra_env = std::move(env);
  auto outcome = core::RunWithTimeout(args, options);
  CliRun run;
  if (!outcome.ok()) {
    run.err = outcome.error().message;
    return run;
  }
  run.exit_code = outcome->exit_code.value_or(-1);
  run.out = outcome->stdout_data;
  run.err = outcome->stderr_tail;
  run.seconds = outcome->elapsed_s;
  return run;
}

Json ParseJson(const CliRun& run) {
  Json j = Json::parse(run.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << run.out.substr(0, 500) << "\nstderr: " << run.err;
  return j;
}

std::string H200Root() { return std::string(GT_FIXTURES_DIR) + "/h200-root"; }

bool HasFinding(const Json& findings, const std::string& id) {
  for (const Json& f : findings) {
    if (f.value("id", "") == id) return true;
  }
  return false;
}

const Json* FindFinding(const Json& findings, const std::string& id) {
  for (const Json& f : findings) {
    if (f.value("id", "") == id) return &f;
  }
  return nullptr;
}

TEST(CliTest, HelpExplainsTheCommands) {
  CliRun run = Gputriage({"--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("doctor"), std::string::npos);
  EXPECT_NE(run.out.find("snapshot"), std::string::npos);
  EXPECT_EQ(run.out.find("__probe"), std::string::npos) << "internal command is listed";
  CliRun sub = Gputriage({"snapshot", "--help"});
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_NE(sub.out.find("--root"), std::string::npos);
  EXPECT_NE(sub.out.find("--probe-timeout"), std::string::npos);
}

TEST(CliTest, MistypedCommandGetsASuggestion) {
  CliRun run = Gputriage({"snapshto"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "gputriage: unknown command 'snapshto'; did you mean 'snapshot'? (see gputriage --help)\n");
}

TEST(CliTest, RootThatIsNotATreeIsAUsageError) {
  CliRun run = Gputriage({"snapshot", "--root", "/nonexistent/capture"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "gputriage: --root /nonexistent/capture: No such file or directory\n");
  CliRun env = Gputriage({"doctor"}, {"GPUTRIAGE_ROOT=" + H200Root() + ".SOURCE.md"});
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_NE(env.err.find("not a directory"), std::string::npos) << env.err;
}

TEST(CliTest, SnapshotOfTheCapturedH200Tree) {
  CliRun run = Gputriage({"snapshot", "--json", "--root", H200Root()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Json s = ParseJson(run);
  for (const char* key : {"schema_version", "host", "gpus", "software", "kernel_log", "env", "not_collected"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["schema_version"], 1);
  EXPECT_EQ(s["root"], H200Root());
  ASSERT_EQ(s["gpus"].size(), 1u);
  const Json& gpu = s["gpus"][0];
  EXPECT_EQ(gpu["vendor"], "nvidia");
  EXPECT_EQ(gpu["pci_address"], "0000:00:06.0");
  EXPECT_EQ(gpu["name"], "NVIDIA H200");  // from /proc/driver/nvidia/gpus/*/information
  EXPECT_EQ(gpu["driver"], "nvidia");
  EXPECT_EQ(s["host"]["hostname"], "vm");
  EXPECT_EQ(s["software"]["kernel_modules"]["nvidia"]["version"], "580.159.04");
  // Every line of the captured dev/kmsg that does not start with a space is one record.
  std::ifstream kmsg(H200Root() + "/dev/kmsg");
  int records = 0;
  for (std::string line; std::getline(kmsg, line);) records += !line.empty() && line[0] != ' ';
  EXPECT_EQ(s["kernel_log"]["records_total"].get<int>(), records);
  bool env_noted = false;
  for (const Json& note : s["not_collected"]) env_noted = env_noted || note["item"] == "env";
  EXPECT_TRUE(env_noted) << "under --root the environment must be reported as not collected";
  EXPECT_TRUE(s["env"].empty());
}

// A captured tree is untrusted: a FIFO where a file should be must not hang snapshot or
// doctor (it did, forever, before every read was made non-blocking and regular-files-only).
TEST(CliTest, FifosInsideTheRootDoNotHangTheCollectors) {
  fs::path tree = fs::path(::testing::TempDir()) / ("fifo-root-" + std::to_string(::getpid()));
  fs::remove_all(tree);
  fs::copy(H200Root(), tree, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  for (const char* file : {"etc/os-release", "proc/cpuinfo", "proc/meminfo", "proc/modules", "dev/kmsg"}) {
    fs::remove(tree / file);
    ASSERT_EQ(::mkfifo((tree / file).c_str(), 0600), 0) << file;
  }
  for (const char* command : {"snapshot", "doctor"}) {
    CliRun run = Gputriage({command, "--json", "--root", tree.string()}, {}, 30000);
    ASSERT_NE(run.exit_code, -1) << command << " did not finish within 30 s: " << run.err;
    EXPECT_LT(run.seconds, 20) << command;
    Json out = ParseJson(run);
    Json notes = std::string(command) == "snapshot" ? out["not_collected"] : out["snapshot"]["not_collected"];
    EXPECT_NE(notes.dump().find("a FIFO, not a regular file"), std::string::npos) << command << ": " << notes.dump();
  }
  fs::remove_all(tree);
}

// Output that could not be written is a failure, not a success with half a JSON document.
TEST(CliTest, AFullDiskOnStandardOutputIsAnError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "/dev/full is not available";
  std::string bin = GT_GPUTRIAGE_BIN;
  for (std::string args : {"snapshot --json --root " + H200Root(), std::string("kb list --json"), std::string("--help"),
                           std::string("--version")}) {
    auto outcome = core::RunWithTimeout({"/bin/sh", "-c", "exec \"$0\" " + args + " > /dev/full", bin}, {});
    ASSERT_TRUE(outcome.ok());
    EXPECT_EQ(outcome->exit_code.value_or(-1), 3) << args << ": " << outcome->stderr_tail;
    EXPECT_NE(outcome->stderr_tail.find("standard output"), std::string::npos) << args << ": " << outcome->stderr_tail;
  }
  // run's status is the job's: a lost --json turns a success into 3 but keeps a failure's status.
  std::string home = ::testing::TempDir() + "/full-home-" + std::to_string(::getpid());
  for (auto [job, status] : {std::pair{"true", 3}, std::pair{"false", 1}}) {
    auto outcome = core::RunWithTimeout(
        {"/bin/sh", "-c", "exec \"$0\" run --no-snapshot --json -- " + std::string(job) + " > /dev/full", bin},
        {.extra_env = {"GPUTRIAGE_HOME=" + home}});
    ASSERT_TRUE(outcome.ok());
    EXPECT_EQ(outcome->exit_code.value_or(-1), status) << job << ": " << outcome->stderr_tail;
    EXPECT_NE(outcome->stderr_tail.find("could not write standard output"), std::string::npos) << outcome->stderr_tail;
  }
  fs::remove_all(home);
}

TEST(CliTest, SnapshotHumanOutputIsShort) {
  CliRun run = Gputriage({"snapshot", "--root", H200Root()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("gpu       0000:00:06.0  NVIDIA H200"), std::string::npos) << run.out;
  EXPECT_LT(std::count(run.out.begin(), run.out.end(), '\n'), 25) << run.out;
}

// The topology a snapshot carries (here added to the captured H200 tree's snapshot as a second
// GPU and the pair NVML would report): `snapshot show` prints one `links` line, and `snapshot
// diff` reports a pair that lost its NVLinks.
TEST(CliTest, SnapshotShowsTheLinksBetweenGpusAndDiffSeesOneGoDown) {
  CliRun taken = Gputriage({"snapshot", "--json", "--root", H200Root()});
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  core::Json snapshot = core::Json::parse(taken.out);
  core::Json second = snapshot["gpus"][0];
  second["pci_address"] = "0000:00:07.0";
  snapshot["gpus"].push_back(second);
  auto with_peer = [&](const std::string& path, int nvlinks, const std::string& read) {
    core::Json s = snapshot;
    core::Json peer{{"a", "0000:00:06.0"},
                    {"b", "0000:00:07.0"},
                    {"path", path},
                    {"pcie_path", "SYS"},
                    {"p2p", {{"read", read}, {"write", read}}},
                    {"source", "nvml"}};
    if (nvlinks > 0) peer["nvlinks"] = nvlinks;
    s["topology"] = core::Json{{"peers", core::Json::array({peer})}};
    return s.dump();
  };
  testing::TempDir dir;
  std::string before = dir.path() + "/before.json", after = dir.path() + "/after.json";
  testing::WriteFile(dir.path(), "/before.json", with_peer("NV18", 18, "ok"));
  testing::WriteFile(dir.path(), "/after.json", with_peer("SYS", 0, "not_supported"));

  CliRun show = Gputriage({"snapshot", "show", before});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("links     1 GPU pair: NV18 x1; peer access ok for all 1"), std::string::npos) << show.out;
  CliRun down = Gputriage({"snapshot", "show", after});
  EXPECT_NE(down.out.find("links     1 GPU pair: SYS x1; peer access refused for 1 of 1"), std::string::npos)
      << down.out;

  CliRun diff = Gputriage({"snapshot", "diff", before, after});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find("GPUs 0000:00:06.0 and 0000:00:07.0: NV18, p2p read ok -> SYS, p2p read not_supported"),
            std::string::npos)
      << diff.out;
}

// A probe that blocks in the "driver": the vendor probe helper found next to the binary
// (gputriage-probe) is a real program that never answers, exactly like a probe stuck in a
// driver call. (The captured tree's FIFOs no longer block anything: reads are non-blocking.)
TEST(CliTest, HungProbeBecomesAFindingAndTheSnapshotCompletes) {
  testing::TempDir dir;
  fs::copy_file(GT_GPUTRIAGE_BIN, dir.path() + "/gputriage");
  {
    std::ofstream probe(dir.path() + "/gputriage-probe");
    probe << "#!/bin/sh\nexec sleep 60\n";
  }
  fs::permissions(dir.path() + "/gputriage-probe", fs::perms::owner_all);
  auto outcome = core::RunWithTimeout(
      {dir.path() + "/gputriage", "doctor", "--json", "--root", H200Root(), "--probe-timeout", "0.5"}, {});
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  CliRun run{outcome->exit_code.value_or(-1), outcome->stdout_data, outcome->stderr_tail, outcome->elapsed_s};
  EXPECT_LT(run.seconds, 30.0);  // far from the probe's 60 s, even sanitized on a loaded machine
  EXPECT_EQ(run.exit_code, 1) << run.err;
  Json j = ParseJson(run);
  const Json* hung = FindFinding(j["findings"], "collect.nvidia_probe_hung");
  ASSERT_NE(hung, nullptr) << j["findings"].dump(2);
  EXPECT_EQ((*hung)["severity"], "error");
  EXPECT_EQ((*hung)["title"], "NVML and /proc/driver/nvidia did not answer within 0.5 s: the driver may be wedged");
  // The rest was still collected.
  EXPECT_EQ(j["snapshot"]["host"]["hostname"], "vm");
  EXPECT_EQ(j["snapshot"]["gpus"].size(), 1u);
}

TEST(CliTest, DoctorRatesXidRecordsFromTheKernelLog) {
  testing::TempDir dir;
  testing::CopyTree(H200Root(), dir.path());
  // Real NVRM lines from a public report (tests/fixtures/kernel_log is the helper's; use the
  // fallen-off-bus Xid 79 capture) appended as /dev/kmsg records.
  std::ofstream kmsg(dir.path() + "/dev/kmsg", std::ios::app);
  kmsg << "3,100000,30000000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, GPU has fallen off the bus.\n";
  kmsg << "3,100001,30000100,-;NVRM: GPU 0000:00:06.0: GPU has fallen off the bus.\n";
  kmsg.close();
  CliRun run = Gputriage({"doctor", "--json", "--root", dir.path()});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  Json j = ParseJson(run);
  const Json* xid = FindFinding(j["findings"], "kmsg.nvidia_xid_79");
  ASSERT_NE(xid, nullptr) << j["findings"].dump(2);
  EXPECT_EQ((*xid)["severity"], "critical");
  EXPECT_FALSE((*xid)["references"].empty());
  EXPECT_EQ(j["findings"][0]["severity"], "critical") << "findings must be most severe first";
}

// doctor --exit-codes: Nagios (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, a status line first) and
// node-problem-detector (0 OK, 1 problem, 3 unknown, one line) conventions for the same findings.
TEST(CliTest, DoctorExitCodeConventionsForMonitors) {
  CliRun ok = Gputriage({"doctor", "--root", H200Root(), "--exit-codes", "nagios"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out.rfind("GPUTRIAGE OK - 0 critical, 0 error, 0 warning: no GPU problem found | critical=0", 0), 0u)
      << ok.out;
  testing::TempDir dir;
  testing::CopyTree(H200Root(), dir.path());
  std::ofstream kmsg(dir.path() + "/dev/kmsg", std::ios::app);
  kmsg << "3,100000,30000000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, GPU has fallen off the bus.\n";
  kmsg.close();
  CliRun nagios = Gputriage({"doctor", "--root", dir.path(), "--exit-codes", "nagios"});
  EXPECT_EQ(nagios.exit_code, 2) << nagios.err;
  EXPECT_EQ(nagios.out.rfind("GPUTRIAGE CRITICAL - 1 critical, ", 0), 0u) << nagios.out;
  CliRun npd = Gputriage({"doctor", "--root", dir.path(), "--exit-codes=npd"});
  EXPECT_EQ(npd.exit_code, 1) << npd.err;
  EXPECT_EQ(std::count(npd.out.begin(), npd.out.end(), '\n'), 1) << npd.out;
  CliRun plain = Gputriage({"doctor", "--root", dir.path()});
  EXPECT_EQ(plain.exit_code, 1);
  CliRun json = Gputriage({"doctor", "--json", "--root", dir.path(), "--exit-codes", "nagios"});
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_EQ(ParseJson(json).value("exit_codes", ""), "nagios");
  // Doctor could not run: UNKNOWN (3), never CRITICAL (2), under the monitors' conventions.
  CliRun bad = Gputriage({"doctor", "--exit-codes", "nagios", "--no-such-flag"});
  EXPECT_EQ(bad.exit_code, 3) << bad.err;
  CliRun bad_default = Gputriage({"doctor", "--no-such-flag"});
  EXPECT_EQ(bad_default.exit_code, 2) << bad_default.err;
}

// Errors under --json are JSON lines on stderr; --color and NO_COLOR (only a non-empty value
// counts) decide colour.
TEST(CliTest, JsonErrorsAndColour) {
  CliRun missing = Gputriage({"analyze", "--json", "/nonexistent/dir/x.log"});
  EXPECT_EQ(missing.exit_code, 2);
  Json e = Json::parse(missing.err, nullptr, false);
  ASSERT_FALSE(e.is_discarded()) << missing.err;
  EXPECT_EQ(e["error"].value("code", ""), "usage");
  EXPECT_EQ(e["error"].value("exit_code", 0), 2);
  EXPECT_EQ(e["error"].value("path", ""), "/nonexistent/dir/x.log");
  EXPECT_NE(e["error"].value("message", "").find("No such file or directory"), std::string::npos);
  CliRun parse = Gputriage({"snapshot", "--json", "--no-such-flag"});
  EXPECT_EQ(parse.exit_code, 2);
  EXPECT_FALSE(Json::parse(parse.err, nullptr, false).is_discarded()) << parse.err;
  CliRun human = Gputriage({"analyze", "/nonexistent/dir/x.log"});
  EXPECT_EQ(human.err.rfind("gputriage: /nonexistent/dir/x.log: ", 0), 0u) << human.err;

  testing::TempDir dir;
  testing::CopyTree(H200Root(), dir.path());
  std::ofstream kmsg(dir.path() + "/dev/kmsg", std::ios::app);
  kmsg << "3,100000,30000000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, GPU has fallen off the bus.\n";
  kmsg.close();
  // stdout is a pipe here: auto means no colour; always forces it (before or after the command).
  EXPECT_EQ(Gputriage({"doctor", "--root", dir.path()}).out.find('\x1b'), std::string::npos);
  EXPECT_NE(Gputriage({"doctor", "--root", dir.path(), "--color", "always"}).out.find('\x1b'), std::string::npos);
  EXPECT_NE(Gputriage({"--color=always", "doctor", "--root", dir.path()}).out.find('\x1b'), std::string::npos);
  EXPECT_EQ(Gputriage({"doctor", "--root", dir.path(), "--color", "never"}).out.find('\x1b'), std::string::npos);
  EXPECT_EQ(Gputriage({"doctor", "--color", "sometimes"}).exit_code, 2);
}

// Option defaults from $GPUTRIAGE_HOME/config.toml (the command line wins), the user's own
// secret patterns (--redact, or redact = [...] in the file), and a misspelt key is an error
// naming the file.
TEST(CliTest, ConfigFileDefaultsAndUserRedaction) {
  testing::TempDir home;
  testing::WriteFile(home.path(), "/config.toml",
                     "# defaults\ncolor = \"never\"\nredact = [\"internal-host-[0-9]+\"]\n[doctor]\nexit-codes = "
                     "\"npd\"\n");
  std::vector<std::string> env = {"GPUTRIAGE_HOME=" + home.path()};
  CliRun npd = Gputriage({"doctor", "--root", H200Root()}, env);
  EXPECT_EQ(npd.exit_code, 0) << npd.err;
  EXPECT_EQ(npd.out, "no GPU problem found\n");
  CliRun cli_wins = Gputriage({"doctor", "--root", H200Root(), "--exit-codes", "nagios"}, env);
  EXPECT_EQ(cli_wins.out.rfind("GPUTRIAGE OK - ", 0), 0u) << cli_wins.out;
  testing::WriteFile(home.path(), "/job.log",
                     "RuntimeError: CUDA error: an illegal memory access was encountered on internal-host-42\n");
  CliRun analyzed = Gputriage({"analyze", "--json", home.path() + "/job.log"}, env);
  ASSERT_LE(analyzed.exit_code, 1) << analyzed.err;  // 1: a GPU error was found
  EXPECT_EQ(analyzed.out.find("internal-host-42"), std::string::npos) << analyzed.out;
  EXPECT_NE(ParseJson(analyzed).value("signature", "").find("<redacted>"), std::string::npos);
  // Without the file, the same text is kept; --redact on the command line does the same.
  CliRun plain = Gputriage({"analyze", "--json", home.path() + "/job.log"});
  EXPECT_NE(plain.out.find("internal-host-42"), std::string::npos);
  CliRun flag = Gputriage({"analyze", "--json", "--redact", "internal-host-[0-9]+", home.path() + "/job.log"});
  EXPECT_EQ(flag.out.find("internal-host-42"), std::string::npos);
  EXPECT_EQ(Gputriage({"--redact", "(", "doctor"}).exit_code, 2);

  testing::WriteFile(home.path(), "/config.toml", "[doctor]\nexit-code = \"npd\"\n");
  CliRun typo = Gputriage({"doctor", "--root", H200Root()}, env);
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("config file " + home.path() + "/config.toml: "), std::string::npos) << typo.err;

  // Failed before: a malformed line was "INI was not able to parse [run" with no line, and a
  // value from the file that does not validate did not say it came from the file.
  testing::WriteFile(home.path(), "/config.toml", "color = \"never\"\n[run\ntimeout = \"1s\"\n");
  CliRun header = Gputriage({"doctor", "--root", H200Root()}, env);
  EXPECT_EQ(header.exit_code, 2);
  EXPECT_EQ(header.err, "gputriage: config file " + home.path() +
                            "/config.toml, line 2: `[run` is not a section header (expected [command])\n");
  testing::WriteFile(home.path(), "/config.toml", "[doctor]\nexit-codes = \"zzz\"\n");
  CliRun value = Gputriage({"doctor", "--root", H200Root()}, env);
  EXPECT_EQ(value.exit_code, 2);
  EXPECT_EQ(value.err.rfind("gputriage: config file " + home.path() + "/config.toml: --exit-codes: zzz not in", 0), 0u)
      << value.err;
  EXPECT_NE(value.err.find("(set there;"), std::string::npos) << value.err;
  // The same bad value on the command line is the command line's.
  CliRun typed = Gputriage({"doctor", "--root", H200Root(), "--exit-codes", "yyy"});
  EXPECT_EQ(typed.exit_code, 2);
  EXPECT_EQ(typed.err.find("config file"), std::string::npos) << typed.err;
}

// Failed before: saving into a history on a read-only file system said "No such file or
// directory" (SQLite's last errno); it says the file system is read-only. Needs root (a
// read-only bind mount); skipped where mounting is not allowed.
TEST(CliTest, ASaveOnAReadOnlyFileSystemSaysSo) {
  if (::geteuid() != 0) GTEST_SKIP() << "a read-only bind mount needs root";
  testing::TempDir src, mnt;
  std::vector<std::string> env = {"GPUTRIAGE_HOME=" + src.path() + "/h"};
  ASSERT_EQ(Gputriage({"snapshot", "--save", "--root", H200Root()}, env).exit_code, 0);
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(20000);
  auto mounted = core::RunWithTimeout(
      {"sh", "-c",
       "mount --bind '" + src.path() + "' '" + mnt.path() + "' && mount -o remount,bind,ro '" + mnt.path() + "'"},
      ro);
  if (!mounted.ok() || mounted->exit_code != 0) {
    (void)core::RunWithTimeout({"umount", mnt.path()}, ro);
    GTEST_SKIP() << "cannot make a read-only bind mount here";
  }
  CliRun saved = Gputriage({"snapshot", "--save", "--root", H200Root()}, {"GPUTRIAGE_HOME=" + mnt.path() + "/h"});
  (void)core::RunWithTimeout({"umount", mnt.path()}, ro);
  EXPECT_EQ(saved.exit_code, 3) << saved.err;
  EXPECT_NE(saved.err.find("the file system is read-only"), std::string::npos) << saved.err;
  EXPECT_EQ(saved.err.find("No such file or directory"), std::string::npos) << saved.err;
}

// Failed before: the same corrupt history database exited 3 for `snapshot list` and 2 for
// `snapshot show`; a snapshot file the user names is still a usage error.
TEST(CliTest, ACorruptHistoryIsTheStoresFailureWhicheverCommandReadsIt) {
  testing::TempDir home;
  std::vector<std::string> env = {"GPUTRIAGE_HOME=" + home.path()};
  std::string garbage;
  for (int i = 0; i < 8192; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  testing::WriteFile(home.path(), "/snapshots.db", garbage);
  ::chmod((home.path() + "/snapshots.db").c_str(), 0600);
  for (std::vector<std::string> args :
       {std::vector<std::string>{"snapshot", "list"}, std::vector<std::string>{"snapshot", "show", "latest"},
        std::vector<std::string>{"snapshot", "show", "1"}, std::vector<std::string>{"snapshot", "diff", "1", "2"}}) {
    CliRun r = Gputriage(args, env);
    EXPECT_EQ(r.exit_code, 3) << args[1] << " " << (args.size() > 2 ? args[2] : "") << ": " << r.err;
    EXPECT_NE(r.err.find(home.path() + "/snapshots.db"), std::string::npos) << r.err;
  }
  CliRun file = Gputriage({"snapshot", "show", home.path() + "/no-such.json"}, env);
  EXPECT_EQ(file.exit_code, 2) << file.err;
}

TEST(CliTest, HistorySaveListShowDiff) {
  testing::TempDir home;
  std::vector<std::string> env = {"GPUTRIAGE_HOME=" + home.path()};
  CliRun empty = Gputriage({"snapshot", "list"}, env);
  EXPECT_EQ(empty.out, "no saved snapshots (take one with `gputriage snapshot --save`)\n");
  CliRun first = Gputriage({"snapshot", "--save", "--root", H200Root()}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("saved as snapshot 1"), std::string::npos) << first.out;

  // The same node after a driver update whose link came back at x8.
  testing::TempDir tree;
  testing::CopyTree(H200Root(), tree.path());
  testing::WriteFile(tree.path(), "/sys/module/nvidia/version", "580.200.01\n");
  testing::WriteFile(tree.path(), "/sys/bus/pci/devices/0000:00:06.0/current_link_width", "8\n");
  CliRun second = Gputriage({"snapshot", "--save", "--root", tree.path()}, env);
  ASSERT_EQ(second.exit_code, 0) << second.err;

  CliRun list = Gputriage({"snapshot", "list", "--json"}, env);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  Json rows = ParseJson(list)["snapshots"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["id"], 2);  // newest first
  // Text: id right-aligned in 5, the time, the host padded to 20, the summary.
  CliRun list_text = Gputriage({"snapshot", "list"}, env);
  EXPECT_EQ(list_text.out.rfind("    2  " + rows[0]["created_at"].get<std::string>() + "  vm                   " +
                                    rows[0]["summary"].get<std::string>() + "\n    1  ",
                                0),
            0u)
      << list_text.out;

  CliRun show = Gputriage({"snapshot", "show", "1", "--json"}, env);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(ParseJson(show)["host"]["hostname"], "vm");

  CliRun diff = Gputriage({"snapshot", "diff", "1", "2", "--json"}, env);
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  Json changes = ParseJson(diff)["changes"];
  std::set<std::string> kinds;
  for (const Json& c : changes) kinds.insert(c["kind"].get<std::string>());
  EXPECT_TRUE(kinds.count("driver_changed")) << changes.dump(2);
  EXPECT_TRUE(kinds.count("link_downtrained")) << changes.dump(2);
  // Text: the kind padded to 26, then the summary.
  std::string expected;
  for (const Json& c : changes) {
    std::string kind = c["kind"];
    expected += kind + std::string(26 - kind.size(), ' ') + " " + c["summary"].get<std::string>() + "\n";
  }
  EXPECT_EQ(Gputriage({"snapshot", "diff", "1", "2"}, env).out, expected);
  EXPECT_EQ(Gputriage({"snapshot", "diff", "1", "1"}, env).out, "no changes\n");

  CliRun missing = Gputriage({"snapshot", "show", "42"}, env);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("42"), std::string::npos) << missing.err;
}

TEST(CliTest, DamagedSnapshotFilesGiveClearAnswers) {
  testing::TempDir dir;
  testing::WriteFile(dir.path(), "/odd.json",
                     R"({"schema_version": 1, "host": {"hostname": "n1", "cpu": {"logical_cpus": "many"}},
                        "gpus": [{"pci_address": "0000:01:00.0", "link": {"current_speed_gts": "x"}}, 7],
                        "kernel_log": {"records_total": "x"}})");
  CliRun odd = Gputriage({"snapshot", "show", dir.path() + "/odd.json"});
  EXPECT_EQ(odd.exit_code, 0) << odd.err;
  EXPECT_NE(odd.out.find("host      n1"), std::string::npos) << odd.out;
  EXPECT_NE(odd.out.find("ignored: 4 members of an unexpected type (a damaged or hand-edited snapshot):\n"
                         "  host.cpu.logical_cpus: a string where an integer belongs\n"
                         "  gpus[0].link.current_speed_gts: a string where a number belongs\n"
                         "  gpus[1]: a number where an object belongs\n"
                         "  kernel_log.records_total: a string where an integer belongs\n"),
            std::string::npos)
      << odd.out;
  testing::WriteFile(dir.path(), "/broken.json", "{\"schema_version\": 1, \"host\": ");
  CliRun broken = Gputriage({"snapshot", "diff", dir.path() + "/broken.json", dir.path() + "/odd.json"});
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_EQ(broken.err.rfind("gputriage: " + dir.path() + "/broken.json: invalid JSON at line 1", 0), 0u) << broken.err;
}

TEST(CliTest, LiveSnapshotRedactsSecretsInTheEnvironment) {
  // A GitHub token shape (documented prefix ghp_, 36 characters after it) and an AWS example key.
  const std::string token = "ghp_" + std::string("Zq9yX2wV4uT6sR8pN0mL1kJ3hG5fD7cB9aZx");
  std::vector<std::string> env = {"TORCH_HUB_TOKEN=" + token, "CUDA_CACHE_PATH=/tmp/x?key=AKIAIOSFODNN7EXAMPLE",
                                  "CUDA_VISIBLE_DEVICES=0,1", "GPUTRIAGE_ROOT="};
  CliRun run = Gputriage({"snapshot", "--json"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.find(token), std::string::npos) << "token leaked";
  EXPECT_EQ(run.out.find("AKIAIOSFODNN7EXAMPLE"), std::string::npos) << "AWS key leaked";
  Json s = ParseJson(run);
  EXPECT_EQ(s["env"]["variables"]["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(s["env"]["variables"]["TORCH_HUB_TOKEN"], "<redacted>");
}

// The first line of `argv`'s output, run here by the test (not by gputriage).
std::string FirstLineOf(const std::vector<std::string>& argv) {
  auto run = core::RunWithTimeout(argv, {});
  if (!run.ok() || run->exit_code != 0) return "";
  return run->stdout_data.substr(0, run->stdout_data.find('\n'));
}

const Json* EntryWithPath(const Json& list, const std::string& path) {
  for (const Json& entry : list) {
    if (entry.value("path", "") == path) return &entry;
  }
  return nullptr;
}

// What collect_env reports and the snapshot used to lack: glibc, libstdc++, compiler and cmake
// versions, checked against what the tools themselves print.
TEST(CliTest, LiveSnapshotRecordsTheToolchain) {
  CliRun run = Gputriage({"snapshot", "--json"}, {"GPUTRIAGE_ROOT="});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Json sw = ParseJson(run)["software"];
  EXPECT_EQ(sw["glibc"]["version"], gnu_get_libc_version());
  EXPECT_TRUE(sw["libstdcxx"].value("glibcxx", "").starts_with("GLIBCXX_3.4.")) << sw["libstdcxx"].dump();
  struct Expected {
    const char* path;
    std::vector<std::string> argv;  // prints the version line gputriage reads as its first line
  };
  int found = 0;
  for (const Expected& e : {Expected{"/usr/bin/gcc", {"/usr/bin/gcc", "--version"}},
                            Expected{"/usr/bin/clang", {"/usr/bin/clang", "--version"}},
                            Expected{"/usr/bin/hipcc", {"/usr/bin/hipcc", "--version"}}}) {
    if (!fs::exists(e.path)) continue;
    ++found;
    const Json* entry = EntryWithPath(sw["compilers"], e.path);
    ASSERT_NE(entry, nullptr) << e.path << " missing from " << sw["compilers"].dump();
    EXPECT_EQ(entry->value("version_line", ""), FirstLineOf(e.argv)) << entry->dump();
    EXPECT_NE(entry->value("version", ""), "") << entry->dump();
  }
  if (fs::exists("/usr/local/cuda/bin/nvcc")) {
    ++found;
    const Json* nvcc = EntryWithPath(sw["compilers"], "/usr/local/cuda/bin/nvcc");
    ASSERT_NE(nvcc, nullptr) << sw["compilers"].dump();
    EXPECT_TRUE(nvcc->value("version_line", "").starts_with("Cuda compilation tools, release ")) << nvcc->dump();
  }
  if (fs::exists("/usr/bin/cmake")) {
    ++found;
    const Json* cmake = EntryWithPath(sw["tools"], "/usr/bin/cmake");
    ASSERT_NE(cmake, nullptr) << sw["tools"].dump();
    EXPECT_EQ("cmake version " + cmake->value("version", "?"), FirstLineOf({"/usr/bin/cmake", "--version"}));
  }
  if (found == 0) GTEST_SKIP() << "no compiler or cmake at the usual paths";
  CliRun human = Gputriage({"snapshot"}, {"GPUTRIAGE_ROOT="});
  EXPECT_NE(human.out.find("toolchain glibc " + std::string(gnu_get_libc_version())), std::string::npos) << human.out;
}

TEST(CliTest, LiveDoctorOnThisMachine) {
  CliRun run = Gputriage({"doctor", "--json"}, {"GPUTRIAGE_ROOT="});
  Json j = ParseJson(run);
  ASSERT_TRUE(j.contains("findings"));
  EXPECT_EQ(run.exit_code, j["exit_code"].get<int>());
  if (j["snapshot"]["gpus"].empty()) {
    EXPECT_TRUE(HasFinding(j["findings"], "gpu.none_found"));
    EXPECT_EQ(run.exit_code, 1);
  }
  // Each collector's own time, software's parts too; the text output names the slowest part.
  const Json& ms = j["snapshot"]["collector_ms"];
  ASSERT_TRUE(ms.is_object()) << j["snapshot"].dump().substr(0, 400);
  for (const char* name : {"pci", "host", "kernel_log", "software", "software.toolchain", "software.cuda"}) {
    EXPECT_TRUE(ms.contains(name) && ms[name].is_number()) << name << ": " << ms.dump();
  }
  CliRun text = Gputriage({"doctor"}, {"GPUTRIAGE_ROOT="});
  std::smatch slowest;
  ASSERT_TRUE(
      std::regex_search(text.out, slowest, std::regex(R"(snapshot took [0-9]+ ms \(slowest: ([a-z_.]+) [0-9]+ ms\))")))
      << text.out;
  EXPECT_NE(slowest[1], "software") << "a section with parts is not the slowest collector, one of its parts is";
}

// A real kernel-log record written to /dev/kmsg (root only) shows up in a live doctor run.
TEST(CliTest, LiveKernelLogRecordIsSeen) {
  if (::geteuid() != 0) GTEST_SKIP() << "writing /dev/kmsg needs root";
  std::ofstream kmsg("/dev/kmsg");
  if (!kmsg) GTEST_SKIP() << "/dev/kmsg is not writable here";
  std::string name = "gt_cli_" + std::to_string(::getpid());
  kmsg << "<4>NVRM: Xid (PCI:0000:00:06): 43, pid=" << ::getpid() << ", name=" << name << ", channel 0x0000000a\n";
  kmsg.close();
  CliRun run = Gputriage({"doctor", "--json"}, {"GPUTRIAGE_ROOT="});
  Json j = ParseJson(run);
  const Json* xid = FindFinding(j["findings"], "kmsg.nvidia_xid_43");
  ASSERT_NE(xid, nullptr) << j["findings"].dump(2);
  bool seen = false;
  for (const Json& e : (*xid)["evidence"]) seen = seen || e["text"].get<std::string>().find(name) != std::string::npos;
  EXPECT_TRUE(seen) << xid->dump(2);
}

}  // namespace
}  // namespace gputriage
