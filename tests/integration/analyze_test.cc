// `gputriage analyze` on logs and bundles, and `gputriage kb`, run as a user would.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "integration_util.h"
#include "run_cli.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

using Out = testing::CliOutput;

Out Gt(std::vector<std::string> args, std::optional<std::string> stdin_data = std::nullopt) {
  return testing::RunCli(GT_GPUTRIAGE_BIN, std::move(args), {}, std::move(stdin_data));
}

std::string Kb(const std::string& rel) { return std::string(GT_SOURCE_DIR) + "/kb/" + rel; }

TEST(KbCommand, LintListSearch) {
  Out lint = Gt({"kb", "lint"});
  EXPECT_EQ(lint.status, 0) << lint.out << lint.err;
  EXPECT_NE(lint.out.find(", 0 problems"), std::string::npos) << lint.out;
  Out dir_lint = Gt({"kb", "lint", "--dir", std::string(GT_SOURCE_DIR) + "/kb"});
  EXPECT_EQ(dir_lint.status, 0) << dir_lint.out;
  Out list = Gt({"kb", "list", "--json"});
  Json j = Json::parse(list.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << list.out;
  EXPECT_GE(j.value("count", 0), 60);
  Out search = Gt({"kb", "search", "UTCL2"});
  EXPECT_EQ(search.status, 0);
  EXPECT_NE(search.out.find("amdgpu-sdma-page-fault-kernel-6-18"), std::string::npos) << search.out;
}

TEST(KbCommand, LintNamesABrokenEntryAndAnalyzeRefusesIt) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "kb/issues");
  // Without its tables a kb/ directory is refused, naming the first one missing.
  Out no_tables = Gt({"analyze", "--kb-dir", tmp / "kb", "-"}, "CUDA error: out of memory\n");
  EXPECT_EQ(no_tables.status, 3);
  EXPECT_NE(no_tables.err.find("kb/tables/nvidia-xid.yaml is missing from the knowledge base"), std::string::npos)
      << no_tables.err;
  fs::copy(Kb("tables"), tmp / "kb/tables");
  fs::copy(Kb("env-vars.yaml"), tmp / "kb/env-vars.yaml");
  fs::copy(Kb("issues/cuda-illegal-memory-access.yaml"), tmp / "kb/issues/cuda-illegal-memory-access.yaml");
  std::ofstream(tmp / "kb/issues/bad-pattern.yaml")
      << "schema: gputriage.issue/1\nid: bad-pattern\ntitle: t\nvendor: any\ncategory: oom\n"
         "verdict: unknown\nsignals:\n  - source: any\n    pattern: 'out of (memory'\nexplanation: e\n"
         "fixes:\n  - {kind: code, action: a, cost: c}\nreferences:\n  - https://example.org/x\n";
  Out lint = Gt({"kb", "lint", "--dir", tmp / "kb"});
  EXPECT_EQ(lint.status, 1);
  EXPECT_NE(lint.out.find("kb/issues/bad-pattern.yaml:9: pattern does not compile: missing ): out of (memory"),
            std::string::npos)
      << lint.out;
  Out analyze = Gt({"analyze", "--kb-dir", tmp / "kb", "-"}, "CUDA error: out of memory\n");
  EXPECT_EQ(analyze.status, 3);
  EXPECT_NE(analyze.err.find("refusing to analyze: kb/issues/bad-pattern.yaml:9: pattern does not compile"),
            std::string::npos)
      << analyze.err;
}

TEST(AnalyzeCommand, JsonContractOnARealLog) {
  Out o = Gt({"analyze", "--json", Kb("issues/hsa-memory-access-fault-gpu-node.match.log")});
  EXPECT_EQ(o.status, 1) << o.err;
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  EXPECT_EQ(j.value("category", ""), "page-fault");
  EXPECT_GT(j.value("confidence", 0.0), 0.5);
  EXPECT_LE(j.value("confidence", 2.0), 1.0);
  EXPECT_TRUE(j["verdict"].is_string());
  ASSERT_TRUE(j["matches"].is_array() && !j["matches"].empty());
  const Json& m = j["matches"][0];
  EXPECT_EQ(m.value("id", ""), "hsa-memory-access-fault-gpu-node");
  for (const char* key : {"id", "title", "category", "fix", "references", "evidence"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_NE(m["evidence"][0].value("line", "").find("Memory access fault by GPU node-"), std::string::npos);
  EXPECT_TRUE(j["next_steps"].is_array() && !j["next_steps"].empty());
}

TEST(AnalyzeCommand, StdinGzipAndHumanOutput) {
  Out o = Gt({"analyze", "-"}, "noise\nRuntimeError: CUDA error: an illegal memory access was encountered\n");
  EXPECT_EQ(o.status, 1);
  EXPECT_NE(o.out.find("category: illegal-address"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("[cuda-illegal-memory-access]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("evidence stdin:2: RuntimeError: CUDA error"), std::string::npos) << o.out;
  testing::TempDir tmp;
  std::string gz = tmp / "job.log.gz";
  ASSERT_EQ(
      system(
          ("printf 'x\\nhipErrorNoBinaryForGpu: Unable to find code object for all current devices!\\n' | gzip > " + gz)
              .c_str()),
      0);
  Out g = Gt({"analyze", "--json", gz});
  Json j = Json::parse(g.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << g.out << g.err;
  EXPECT_EQ(j.value("category", ""), "arch-mismatch");
  EXPECT_EQ(j["input"].value("compression", ""), "gzip");
  // Truncated before its first byte of text: a clear error naming the file, exit 2.
  ASSERT_EQ(system(("head -c 12 " + gz + " > " + gz + ".cut").c_str()), 0);
  Out cut = Gt({"analyze", gz + ".cut"});
  EXPECT_EQ(cut.status, 2);
  EXPECT_EQ(cut.err, "gputriage: " + gz +
                         ".cut: truncated gzip stream after 0 bytes of text; nothing in it could "
                         "be read\n");
}

// Failed before: a truncated .gz made `analyze` give no analysis at all and drop the other
// inputs of the command; now the lines before the damage are used and a warning names the file.
TEST(AnalyzeCommand, ATruncatedGzipIsAnalysedUpToTheDamage) {
  testing::TempDir tmp;
  std::string gz = tmp / "dmesg.log.gz";
  std::string cmd =
      "(for i in $(seq 1 20000); do echo \"step $i loss 0.25\"; done; "
      "echo 'NVRM: Xid (PCI:0000:61:00): 79, pid=1, name=python3, GPU has fallen off the bus.'; "
      "for i in $(seq 1 20000); do echo \"after $i\"; done) | gzip > " +
      gz + " && head -c $(( $(stat -c %s " + gz + ") * 3 / 4 )) " + gz + " > " + gz + ".cut";
  ASSERT_EQ(system(cmd.c_str()), 0);
  Out o = Gt({"analyze", "--json", gz + ".cut", "-"},
             "RuntimeError: CUDA error: an illegal memory access was encountered\n");
  EXPECT_EQ(o.status, 1) << o.err;
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out << o.err;
  ASSERT_EQ(j["xids"].size(), 1u) << j["xids"].dump();
  EXPECT_EQ(j["xids"][0]["code"], 79);
  EXPECT_EQ(j["gpu_signature"]["error"], "cudaErrorIllegalAddress");
  ASSERT_EQ(j["warnings"].size(), 1u);
  std::string warning = j["warnings"][0];
  EXPECT_EQ(warning.rfind(gz + ".cut: truncated gzip stream after ", 0), 0u) << warning;
  // Under --json the warning on stderr is a JSON line too.
  Json err = Json::parse(o.err, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << o.err;
  EXPECT_EQ(err["error"].value("code", ""), "warning");
  EXPECT_EQ(err["error"].value("message", ""), "warning: " + warning);
  EXPECT_TRUE(err["error"]["exit_code"].is_null());
}

// Failed before: `report -` had no stderr section (the tail was taken by reopening the path).
TEST(ReportCommand, StandardInputKeepsItsStderrSection) {
  Out o = Gt({"report", "-"}, "hello\nRuntimeError: CUDA error: an illegal memory access was encountered\n");
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("End of stderr:\n\n```\nhello\nRuntimeError: CUDA error: an illegal memory access was "
                       "encountered\n```"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("- [x] stderr of the job"), std::string::npos) << o.out;
}

TEST(AnalyzeCommand, BinaryGarbageAndUnmatchedInput) {
  testing::TempDir tmp;
  std::string junk = tmp / "junk.bin";
  {
    std::ofstream out(junk, std::ios::binary);
    for (int i = 0; i < 200000; ++i) out.put(static_cast<char>((i * 2654435761u) >> 13));
  }
  // Failed before: the junk was classified (one tester's file: "numerical, 0.55").
  Out o = Gt({"analyze", "--json", junk});
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_EQ(o.out, "");
  Json err = Json::parse(o.err, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << o.err;
  EXPECT_EQ(err["error"].value("message", "").rfind(junk + ": not a log (binary data: ", 0), 0u) << o.err;
  EXPECT_EQ(err["error"].value("path", ""), junk);
  // /dev/zero is refused after its first 64 KiB, not read forever.
  Out zero = Gt({"analyze", "/dev/zero"});
  EXPECT_EQ(zero.status, 2);
  EXPECT_EQ(zero.err, "gputriage: /dev/zero: not a log (nothing but NUL bytes)\n");
  Out none = Gt({"analyze", "--json", "-"}, "Segmentation fault (core dumped) in my_solver::step at iteration 42\n");
  Json j = Json::parse(none.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_FALSE(j.value("known_issue_matched", true));
  EXPECT_FALSE(j["search_links"].empty());
}

// --baseline: what changed since the last good snapshot is a verdict reason. The snapshots are
// this machine's own (`gputriage snapshot --json`), the failing one with a variable added.
TEST(AnalyzeCommand, BaselineChangesAreVerdictReasons) {
  Out snap = Gt({"snapshot", "--json"});
  Json current = Json::parse(snap.out, nullptr, false);
  ASSERT_FALSE(current.is_discarded()) << snap.err;
  Json baseline = current;
  current["env"]["variables"]["HSA_OVERRIDE_GFX_VERSION"] = "10.3.0";
  testing::TempDir tmp;
  std::string cur_path = tmp / "current.json", base_path = tmp / "baseline.json";
  std::ofstream(cur_path) << current.dump();
  std::ofstream(base_path) << baseline.dump();
  Out o = Gt({"analyze", "--json", "--snapshot", cur_path, "--baseline", base_path, "-"},
             "RuntimeError: CUDA error: an illegal memory access was encountered\n");
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.err;
  bool found = false;
  for (const Json& r : j["verdict_reasons"]) {
    found = found ||
            r.get<std::string>() == "changed since the last good snapshot: env HSA_OVERRIDE_GFX_VERSION=10.3.0 added";
  }
  EXPECT_TRUE(found) << j["verdict_reasons"].dump();
  EXPECT_EQ(j["verdict"], "unknown") << "an environment variable is neither the driver nor the stack";

  // A new OS kernel (where amdgpu lives) and nothing else in the stack: the first suspect.
  ASSERT_TRUE(current["host"]["kernel"]["release"].is_string()) << current["host"].dump();
  current["host"]["kernel"]["release"] = current["host"]["kernel"]["release"].get<std::string>() + "-new";
  std::ofstream(cur_path) << current.dump();
  Out k = Gt({"analyze", "--json", "--snapshot", cur_path, "--baseline", base_path, "-"},
             "RuntimeError: CUDA error: an illegal memory access was encountered\n");
  Json kj = Json::parse(k.out, nullptr, false);
  ASSERT_FALSE(kj.is_discarded()) << k.err;
  EXPECT_EQ(kj["verdict"], "driver-firmware") << kj["verdict_reasons"].dump();
  Out alone = Gt({"analyze", "--baseline", base_path, "-"}, "x\n");
  EXPECT_EQ(alone.status, 2);
  EXPECT_NE(alone.err.find("--baseline needs the failure's own snapshot"), std::string::npos) << alone.err;
}

// --snapshot takes a stored snapshot as `snapshot diff` does: "latest" reads the history database.
TEST(AnalyzeCommand, SnapshotOptionTakesAStoredSnapshot) {
  testing::TempDir home;
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  ro.extra_env = {"GPUTRIAGE_HOME=" + home.path()};
  const std::string root = std::string(GT_FIXTURES_DIR) + "/h200-root";
  auto saved = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "snapshot", "--save", "--json", "--root", root}, ro);
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ(saved->exit_code, 0) << saved->stderr_tail;
  std::string file = home / "snapshot.json";
  std::ofstream(file) << saved->stdout_data;
  const std::string log = "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  std::map<std::string, Json> versions;
  for (const std::string& arg : {std::string("latest"), file}) {
    ro.stdin_data = log;
    auto analyzed = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", "--json", "--snapshot", arg, "-"}, ro);
    ASSERT_TRUE(analyzed.ok());
    Json j = Json::parse(analyzed->stdout_data, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << analyzed->stderr_tail;
    versions[arg] = j["gpu_signature"]["versions"];
  }
  // The captured H200 tree's driver and kernel, read from the stored copy as from the file.
  EXPECT_EQ(versions["latest"].value("nvidia-driver", ""), "580.159.04") << versions["latest"].dump();
  EXPECT_EQ(versions["latest"], versions[file]);
  ro.stdin_data = log;
  auto missing = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", "--snapshot", "12345", "-"}, ro);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->exit_code, 2) << missing->stderr_tail;
}

// A 100 MB line (binary junk with no newline) is cut at the line limit, the real error after it
// is still found, and memory stays bounded: the child's peak RSS is far below the line's size.
TEST(AnalyzeCommand, AHundredMegabyteLineIsCutAndMemoryStaysBounded) {
  // Written a mebibyte at a time: this process stays small, so the children's peak RSS
  // (which counts what a child inherits at fork) measures gputriage.
  testing::TempDir tmp;
  std::string path = tmp / "long-line.log";
  {
    std::ofstream out(path, std::ios::binary);
    std::string block(1u << 20, 'x');
    for (size_t i = 0; i < block.size(); i += 4093) block[i] = static_cast<char>(i * 2654435761u >> 24);
    for (char& c : block) {
      if (c == '\n') c = ' ';
    }
    for (int i = 0; i < 100; ++i) out << block;
    out << "\nRuntimeError: CUDA error: an illegal memory access was encountered\n";
  }
  Out o = Gt({"analyze", "--json", path});
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.err;
  EXPECT_EQ(j["input"]["cut_lines"], 1) << j["input"].dump();
  EXPECT_EQ(j["input"]["lines"], 2);
  EXPECT_EQ(j["category"], "illegal-address");
  EXPECT_EQ(j["gpu_signature"]["error"], "cudaErrorIllegalAddress");
  long peak = PeakRssKiB({"analyze", "--json", path});
  ASSERT_GT(peak, 0);
  EXPECT_LT(peak, 64 * 1024) << "peak RSS of gputriage analyze, KiB";
}

// Failed before: JSON nested 100,000 levels deep crashed `snapshot show --json` (SIGSEGV, a
// stack overflow); every JSON input now goes through core::ParseJson's depth limit.
TEST(SnapshotCommand, DeeplyNestedJsonIsRefusedNotACrash) {
  testing::TempDir tmp;
  std::string path = tmp / "deep.json";
  std::ofstream(path) << R"({"schema_version":1,"software":{"python_probe":)" << std::string(100000, '[')
                      << std::string(100000, ']') << "}}";
  Out show = Gt({"snapshot", "show", path});
  EXPECT_EQ(show.status, 2);
  EXPECT_EQ(show.err, "gputriage: " + path +
                          ": JSON nested deeper than 256 levels at line 1, column 302 (byte 302); not a file gputriage "
                          "writes\n");
  // Under --json the same error is a JSON line.
  Out json = Gt({"snapshot", "show", "--json", path});
  EXPECT_EQ(json.status, 2);
  EXPECT_EQ(json.err, core::Json({{"error",
                                   {{"code", "usage"},
                                    {"exit_code", 2},
                                    {"message", path + ": JSON nested deeper than 256 levels at line 1, column 302 "
                                                       "(byte 302); not a file gputriage writes"},
                                    {"path", path}}}})
                              .dump() +
                          "\n");
  Out report = Gt({"report", "--snapshot", path, "-"}, "x\n");
  EXPECT_EQ(report.status, 2);
  EXPECT_NE(report.err.find("JSON nested deeper than 256 levels"), std::string::npos) << report.err;
}

// A crash bundle as a tester made it: process.json `{}` and a 2 GB (sparse) stderr.tail. The pid
// is unknown, not 0 (failed before: "pid 0"); the tail is read from its end with a bound, so
// both commands stay small.
TEST(AnalyzeCommand, ABundleWithAHugeTailAndNoPid) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "bundle");
  std::ofstream(tmp / "bundle/process.json") << "{}";
  {
    std::ofstream tail(tmp / "bundle/stderr.tail");
    tail << "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  }
  fs::resize_file(tmp / "bundle/stderr.tail", uint64_t{2} << 30);
  std::ofstream(tmp / "bundle/stderr.tail", std::ios::app) << "\nRuntimeError: CUDA error: out of memory\n";
  Out analyze = Gt({"analyze", tmp / "bundle"});
  EXPECT_EQ(analyze.status, 1) << analyze.err;
  EXPECT_NE(analyze.out.find("bundle: pid unknown\n"), std::string::npos) << analyze.out.substr(0, 400);
  Out report = Gt({"report", "--format", "json", tmp / "bundle"});
  EXPECT_EQ(report.status, 0) << report.err;
  Json j = Json::parse(report.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << report.err;
  EXPECT_LT(PeakRssKiB({"report", "--format", "json", tmp / "bundle"}), 128 * 1024) << "peak RSS of report, KiB";
  EXPECT_LT(PeakRssKiB({"analyze", tmp / "bundle"}), 128 * 1024) << "peak RSS of analyze, KiB";
}

}  // namespace
}  // namespace gputriage
