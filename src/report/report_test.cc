#include "report/report.h"

#include <gtest/gtest.h>

#include "kb/next_steps.h"

namespace gputriage::report {
namespace {

using core::Json;

ReportInput Sample() {
  ReportInput in;
  in.source = "/bundles/20261202T171000Z-python3-474";
  in.manifest = core::BundleManifest{};
  in.manifest->command = {"python3", "train.py", "--token=ghp_0123456789abcdefghijABCDEFGHIJ012345"};
  in.manifest->exit_status = 1;
  in.manifest->signature = "gpu-device-assert x";
  in.manifest->timings = core::BundleTimings{.started_at = "2026-12-02T17:10:00Z"};
  in.process = core::ProcessFileFromJson(Json{
      {"signal", nullptr},
      {"classification", {{"kind", "gpu-device-assert"}, {"summary", "Assertion `dstIndex < dstAddDimSize` failed."}}},
      {"threads", Json::array()},
      {"kernel_log",
       {{{"message", "NVRM: Xid (PCI:0000:00:06): 43, pid=474, name=python3"}, {"job_pid", 474}},
        {{"message", "unrelated"}, {"job_pid", nullptr}}}}});
  in.snapshot = core::SnapshotFromJsonUnchecked(
      Json{{"host", {{"os", {{"pretty_name", "Ubuntu 24.04"}}}, {"kernel", {{"release", "6.8.0"}}}}},
           {"gpus", {{{"name", "NVIDIA H200"}, {"pci_address", "0000:00:06.0"}, {"driver", "nvidia"}}}},
           {"software", {{"nvidia", {{"driver_version", "580.159.04"}, {"cuda_driver_version", "13.0"}}}}},
           {"env", {{"variables", {{"CUDA_LAUNCH_BLOCKING", "1"}}}}}});
  in.stderr_tail = "loading\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\n<script>alert(1)</script>\n";
  in.analysis.category = core::Category::kDeviceAssert;
  in.analysis.confidence = 0.8;
  in.analysis.verdict = core::Verdict::kApplication;
  in.analysis.next_steps = {"Rerun under `gputriage run --repeat 5 -- CMD`."};
  in.same_signature_count = 3;
  return in;
}

TEST(Report, FillsEverySectionAndRedactsSecrets) {
  ReportInput in = Sample();
  Json r = BuildReport(in);
  std::string md = RenderMarkdown(r);
  for (const char* section : {"### Environment", "### Reproduction", "### What happened", "### Diagnostics",
                              "### Troubleshooting attempted", "### Known issues", "### Next steps"}) {
    EXPECT_NE(md.find(section), std::string::npos) << section;
  }
  EXPECT_NE(md.find("| Component | Version or value |\n|---|---|\n| OS | Ubuntu 24.04 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| GPU | NVIDIA H200 at 0000:00:06.0, driver nvidia |"), std::string::npos) << md;
  EXPECT_NE(md.find("| NVIDIA driver | 580.159.04 (CUDA 13.0) |"), std::string::npos);
  EXPECT_NE(md.find("| Variable | Value |\n|---|---|\n| `CUDA_LAUNCH_BLOCKING` | `1` |"), std::string::npos);
  EXPECT_NE(md.find("NVRM: Xid (PCI:0000:00:06): 43, pid=474"), std::string::npos);
  EXPECT_EQ(md.find("unrelated"), std::string::npos);  // kernel-log records not tied to the job stay out
  EXPECT_NE(md.find("CUDA_LAUNCH_BLOCKING=1 was set"), std::string::npos);
  EXPECT_NE(md.find("Same signature seen in 3 bundle(s)."), std::string::npos);
  EXPECT_NE(md.find("- [x] node snapshot"), std::string::npos);
  EXPECT_EQ(md.find("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"), std::string::npos) << md;
  EXPECT_EQ(md.find("ghp_0123456789abcdefghijABCDEFGHIJ012345"), std::string::npos) << md;
  std::string html = RenderHtml(r, BuildTimeline(in));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(Report, RepeatStatisticsAndTheGpuSignature) {
  ReportInput in = Sample();
  std::string once = RenderMarkdown(BuildReport(in));
  EXPECT_NE(once.find("_Repeat statistics: run once; `gputriage run --repeat 5 -- CMD`"), std::string::npos) << once;
  in.repeat = core::RepeatStats{
      .runs = 5, .passes = 0, .failures = 5, .same_signature = 5, .distinct_signatures = 1, .verdict = "deterministic"};
  in.analysis.gpu_signature.error = "cudaErrorAssert";
  in.analysis.gpu_signature.kernel = "indexFuncSmallIndex";
  std::string md = RenderMarkdown(BuildReport(in));
  EXPECT_NE(md.find("Repeated with `gputriage run --repeat 5`: failed 5 of 5 runs (deterministic), 5 with this "
                    "signature, 1 distinct signature(s)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("GPU signature: `cudaErrorAssert in indexFuncSmallIndex`"), std::string::npos);
}

// The series run by run and the failures per signature, as tables; a signature with '|' or a
// backtick stays one cell.
TEST(Report, RepeatSeriesAsTables) {
  ReportInput in = Sample();
  in.repeat = core::RepeatStats{
      .runs = 3, .passes = 1, .failures = 2, .same_signature = 1, .distinct_signatures = 2, .verdict = "flaky"};
  in.repeat->series = {{.run = 1, .failed = true, .exit_status = 139, .signature = "SIGSEGV/null a|b"},
                       {.run = 2, .failed = false, .exit_status = 0},
                       {.run = 3, .failed = true, .exit_status = 143, .timed_out = true, .signature = "hang `x`"}};
  in.repeat->signatures = {{"SIGSEGV/null a|b", 1}, {"hang `x`", 1}};
  Json r = BuildReport(in);
  ASSERT_EQ(r["reproduction"]["repeat"]["series"].size(), 3u);
  EXPECT_EQ(r["reproduction"]["repeat"]["series"][1]["signature"], nullptr);
  std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("| Run | Result | Exit status | Signature |\n|---:|---|---:|---|\n"
                    "| 1 | **failed** | 139 | SIGSEGV/null a\\|b |\n"
                    "| 2 | passed | 0 |  |\n"
                    "| 3 | **failed** (timeout) | 143 | `` hang `x` `` |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| Failed runs | Signature |\n|---:|---|\n| 1 | SIGSEGV/null a\\|b |\n"), std::string::npos);
  // md4c reads them as tables with four and two columns.
  std::string html = RenderHtml(r, BuildTimeline(in));
  EXPECT_NE(html.find("<th align=\"right\">Run</th>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>passed</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>SIGSEGV/null a|b</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td><code>hang `x`</code></td>"), std::string::npos) << html;
}

// Text from the job keeps its underscores: ctypes/__init__.py is not bold, CUDA_LAUNCH_BLOCKING
// keeps its own, and code spans the text means stay code.
TEST(Report, MarkdownTextIsEscapedOutsideCodeSpans) {
  ReportInput in = Sample();
  in.analysis.next_steps = {"Python was running ctypes/__init__.py:525 (string_at) *here*",
                            "Rerun under `gputriage run -- a_*b`."};
  std::string md = RenderMarkdown(BuildReport(in));
  EXPECT_NE(md.find("- Python was running ctypes/\\_\\_init\\_\\_.py:525 (string_at) \\*here\\*\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- Rerun under `gputriage run -- a_*b`.\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- CUDA_LAUNCH_BLOCKING=1 was set"), std::string::npos) << md;
  std::string html = RenderHtml(BuildReport(in), BuildTimeline(in));
  EXPECT_NE(html.find("ctypes/__init__.py:525 (string_at) *here*"), std::string::npos) << html;
  EXPECT_EQ(html.find("<strong>init</strong>"), std::string::npos);
}

// Failed before: the Markdown report's title kept raw HTML from the job (an image that loads
// on render, an unclosed <details> that folds the rest of the report away); HTML and JSON
// escaped it.
TEST(Report, TheJobsTextNeverBecomesHtmlInTheMarkdown) {
  ReportInput in = Sample();
  in.process->primary.classification->summary = "failed <img src=https://x.example/t.png> <details> & more";
  std::string md = RenderMarkdown(BuildReport(in));
  EXPECT_NE(md.find("## failed \\<img src=https://x.example/t.png> \\<details> \\& more\n"), std::string::npos) << md;
  for (const char* tag : {"<img", "<details>"}) {
    for (size_t at = md.find(tag); at != std::string::npos; at = md.find(tag, at + 1)) {
      EXPECT_TRUE(at > 0 && md[at - 1] == '\\') << tag << " unescaped at " << at << ":\n" << md;
    }
  }
  // Code spans are code: a backquoted <T> stays as it is.
  in.analysis.next_steps = {"See `std::vector<int>` and <b>this</b>."};
  md = RenderMarkdown(BuildReport(in));
  EXPECT_NE(md.find("- See `std::vector<int>` and \\<b>this\\</b>.\n"), std::string::npos) << md;
}

// --baseline: what changed on the machine since, as a table; nothing, said; no snapshot, said.
TEST(Report, ChangesSinceTheBaseline) {
  ReportInput in = Sample();
  core::Snapshot before = *in.snapshot;
  before.software->nvidia->driver_version = "570.86.15";
  before.env->variables->erase("CUDA_LAUNCH_BLOCKING");
  in.baseline = before;
  in.baseline_source = "good.json";
  Json r = BuildReport(in);
  ASSERT_TRUE(r["baseline"]["changes"].is_array()) << r["baseline"];
  EXPECT_EQ(r["baseline"]["source"], "good.json");
  std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("### Changes since the baseline\n\nBaseline: good.json\n\n| Change | Where | Before | After |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `570.86.15` | `580.159.04` |"), std::string::npos) << md;
  EXPECT_NE(md.find("`env.variables.CUDA_LAUNCH_BLOCKING`"), std::string::npos) << md;
  EXPECT_LT(md.find("### Changes since the baseline"), md.find("### Reproduction"));
  in.baseline = *in.snapshot;
  EXPECT_NE(RenderMarkdown(BuildReport(in)).find("_no change: the machine's GPUs, driver"), std::string::npos);
  in.snapshot.reset();
  EXPECT_EQ(BuildReport(in)["baseline"]["not_collected"], "the failure has no snapshot to compare with the baseline");
  in.baseline.reset();
  EXPECT_FALSE(BuildReport(in).contains("baseline"));
}

// Every thread of the process for the HTML's collapsible list: the crashed one first and open.
TEST(Report, ThreadStacksForTheHtml) {
  ReportInput in = Sample();
  in.process = core::ProcessFileFromJson(
      Json{{"pid", 474},
           {"signal", "SIGSEGV"},
           {"threads",
            {{{"tid", 480},
              {"name", "worker"},
              {"frames", {{{"pc", 4096}, {"function", "crash_here"}, {"module", "/x/libz.so"}, {"offset", 16}}}}},
             {{"tid", 474}, {"name", "python3"}, {"frames", {{{"pc", 8192}, {"function", "main"}}}}}}}});
  std::vector<ThreadStack> threads = BuildThreadStacks(in);
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].title, "thread 480 \"worker\" (crashed), 1 frame(s)");
  EXPECT_TRUE(threads[0].crashed);
  EXPECT_EQ(threads[1].title, "thread 474 \"python3\" (main thread), 1 frame(s)");
  ASSERT_EQ(threads[0].frames.size(), 1u);
  EXPECT_NE(threads[0].frames[0].find("crash_here"), std::string::npos) << threads[0].frames[0];
  std::string html = RenderHtml(BuildReport(in), BuildTimeline(in), threads);
  EXPECT_NE(
      html.find("<h3>Threads (2)</h3>\n<details open><summary>thread 480 &quot;worker&quot; (crashed), 1 frame(s)"),
      std::string::npos)
      << html;
  EXPECT_NE(html.find("<details><summary>thread 474 &quot;python3&quot; (main thread)"), std::string::npos);
}

TEST(Report, SaysWhatWasNotCollected) {
  ReportInput in;
  in.source = "job.log";
  in.analysis.category = core::Category::kOther;
  Json r = BuildReport(in);
  std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("_no snapshot: pass --snapshot FILE"), std::string::npos) << md;
  EXPECT_NE(md.find("_a log only: the command and its exit status are not known"), std::string::npos);
  EXPECT_NE(md.find("_none matched in gputriage's knowledge base_"), std::string::npos);
  EXPECT_NE(md.find("- [ ] process report"), std::string::npos);
}

// The manifest lists every file of the layout, present or not: a kernel log that could not be
// read is absent, and the checklist says so (a manifest entry alone is not the file).
TEST(Report, KernelLogTickedOnlyWhenTheManifestSaysPresent) {
  ReportInput in = Sample();
  in.kmsg.clear();
  in.manifest->files["kmsg.log"] = core::BundleFile{.present = false, .reason = "no permission to read /dev/kmsg"};
  std::string absent = RenderMarkdown(BuildReport(in));
  EXPECT_NE(absent.find("- [ ] kernel log during the run"), std::string::npos) << absent;
  in.manifest->files["kmsg.log"] = core::BundleFile{.present = true, .bytes = 0};
  std::string present = RenderMarkdown(BuildReport(in));
  EXPECT_NE(present.find("- [x] kernel log during the run"), std::string::npos) << present;
}

// A token whose digit runs the signature's normalisation shortens ("Xy1234" -> "XyN"), and a
// URL password, in every place the report takes text from the job.
std::string HfToken() {
  std::string token = "hf_";
  for (int i = 0; i < 6; ++i) token += "Xy" + std::to_string(1234 + i);
  return token;
}

void ExpectNoSecret(const std::string& text, const std::string& what) {
  for (const char* piece : {"Xy12", "XyN", "cretPw", "hunter2", "S3cret", "alice:pw"}) {
    EXPECT_EQ(text.find(piece), std::string::npos) << what << " shows " << piece << ":\n" << text;
  }
}

TEST(Report, TitleLinksCommandAndEveryJobStringAreRedacted) {
  ReportInput in = Sample();
  const std::string line =
      "worker 3: nan at step 1200 pushing to https://ml:S3cretPw0rd@metrics.example.org " + HfToken();
  in.process->primary.classification->summary.clear();  // the title comes from the signature
  in.analysis.signature = "worker N: nan at step N pushing to https://ml:<redacted>@metrics.example.org <redacted>";
  in.analysis.search_links = kb::SearchLinks(line);
  in.analysis.evidence = {{"stderr:3", line}};
  in.manifest->command = {"mysql", "-uroot", "-pS3cret", "--password", "hunter2", "-e", "select 'x y'"};
  in.manifest->signature = "exit " + line;
  in.process->primary.command = "mysql -uroot -pS3cret --password hunter2";
  in.snapshot->host->hostname = "node\x1b]0;title\a-1";
  (*in.snapshot->env->variables)["NCCL_SOCKET_IFNAME"] = "eth0";
  (*in.snapshot->env->variables)["AMD_SERIALIZE_KERNEL"] = "token=hunter2";
  in.source = "/bundles/https://alice:pw@x";
  Json r = BuildReport(in);
  const std::string json = r.dump();
  const std::string md = RenderMarkdown(r);
  ExpectNoSecret(json, "json");
  ExpectNoSecret(md, "markdown");
  ExpectNoSecret(RenderHtml(r, BuildTimeline(in)), "html");
  EXPECT_EQ(r["title"], "worker N: nan at step N pushing to https://ml:<redacted>@metrics.example.org <redacted>");
  // The reproduction command, redacted, then quoted for sh.
  EXPECT_NE(md.find("mysql -uroot '-p<redacted>' --password '<redacted>' -e 'select '\\''x y'\\'''\n"),
            std::string::npos)
      << md;
  // Control characters from the machine do not reach the report.
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find('\a'), std::string::npos);
}

TEST(Report, ATitleIsRedactedBeforeItIsCut) {
  ReportInput in = Sample();
  // The summary's token straddles byte 200, where the title is cut.
  in.process->primary.classification->summary = std::string(190, 'x') + " " + HfToken();
  Json r = BuildReport(in);
  ExpectNoSecret(r["title"].get<std::string>(), "title");
  EXPECT_LE(r["title"].get<std::string>().size(), 200u);
}

}  // namespace
}  // namespace gputriage::report
