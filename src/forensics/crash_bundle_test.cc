#include "forensics/crash_bundle.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "catalog/catalog.h"
#include "forensics/run_series.h"

namespace gputriage::forensics {
using core::FaultLocation;
using core::Frame;
using core::ProcessReport;
using core::ThreadState;
namespace {

SuperviseOutcome Segv() {
  SuperviseOutcome o;
  o.root_pid = 77;
  o.term_signal = SIGSEGV;
  o.started_at_epoch_s = 1796227200;  // 2026-12-02T16:00:00Z
  ProcessReport p;
  p.pid = 77;
  p.signal = SIGSEGV;
  p.si_code = SEGV_MAPERR;
  p.fault_address = 0;
  p.fault_location = FaultLocation{"null-page", std::nullopt, "address 0x0: a null pointer was dereferenced"};
  ThreadState t;
  t.tid = 77;
  Frame f;
  f.function = "null_deref";
  f.module = "/opt/job/bin/crasher";
  t.frames = {f};
  p.threads = {t};
  o.crashes.push_back(p);
  o.stdout_tail = "out\n";
  o.stderr_tail = "err\n";
  o.job_pids = {77};
  return o;
}

TEST(CrashBundle, AssessesAndWritesAtomically) {
  testing::TempDir tmp;
  RunAssessment run = Assess(Segv());
  ASSERT_TRUE(run.failed());
  EXPECT_EQ(run.classification->kind, "null-dereference");
  EXPECT_EQ(run.signature, "SIGSEGV/null-dereference null_deref");
  ASSERT_EQ(run.findings.size(), 1u);
  EXPECT_EQ(run.findings[0].id, "run.null-dereference");
  EXPECT_EQ(run.findings[0].layer, 4);
  BundleInput input;
  input.parent_dir = tmp / "b";
  input.argv = {"/opt/job/bin/crasher", "null"};
  input.tool_version = "test";
  input.snapshot_missing_reason = "not taken in this test";
  auto written = WriteBundle(run, input);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(written->path, tmp / "b/20261202T160000Z-crasher-77");
  auto second = WriteBundle(run, input);  // same second, same pid: a new name, not a clash
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->path, tmp / "b/20261202T160000Z-crasher-77-2");
  std::ifstream in(written->path + "/manifest.json");
  core::Json m = core::Json::parse(in);
  EXPECT_EQ(m["kind"], "gputriage.crash-bundle");
  EXPECT_EQ(m["exit_status"], 139);
  EXPECT_EQ(m["files"]["snapshot.json"]["reason"], "not taken in this test");
  EXPECT_TRUE(m["files"]["stdout.tail"]["present"]);
  size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(tmp / "b")) {
    EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos);
    ++entries;
  }
  EXPECT_EQ(entries, 2u);
}

TEST(CrashBundle, AnotherProcesssXidIsNotTheRunsSignature) {
  auto catalog = catalog::BuiltinCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  // tests/fixtures/kernel_log/h200-dmesg-xid31-xid43.txt, once naming another pid, once ours.
  SuperviseOutcome other = Segv();
  other.kmsg.push_back({.message = "NVRM: Xid (PCI:0000:00:06): 43, pid=719, name=python3, channel 0x0000000a"});
  EXPECT_EQ(RunSignature(Assess(std::move(other)), (*catalog)->errors), "SIGSEGV/null-dereference null_deref");
  SuperviseOutcome ours = Segv();
  ours.kmsg.push_back({.message = "NVRM: Xid (PCI:0000:00:06): 43, pid=77, name=crasher, channel 0x0000000a"});
  EXPECT_EQ(RunSignature(Assess(std::move(ours)), (*catalog)->errors), "gpu: Xid 43");
}

TEST(CrashBundle, UnwritableDirectoryIsAnErrorNamingIt) {
  testing::TempDir tmp;
  std::ofstream(tmp / "file") << "x";
  RunAssessment run = Assess(Segv());
  BundleInput input;
  input.parent_dir = tmp / "file/bundles";
  auto written = WriteBundle(run, input);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().message.rfind(tmp / "file/bundles: cannot create the bundle directory:", 0), 0u)
      << written.error().message;
}

TEST(CrashBundle, ACleanExitIsNotAFailure) {
  SuperviseOutcome o;
  o.exit_code = 0;
  RunAssessment run = Assess(o);
  EXPECT_FALSE(run.failed());
  EXPECT_TRUE(run.findings.empty());
  EXPECT_EQ(ProcessFileOf(run).exit_status, 0);
}

TEST(CrashBundle, PartialFilesNameTheirWriterAndOnlyStaleOnesAreRemoved) {
  testing::TempDir tmp;
  const std::string tag = PartialWriterTag();  // host_pid_starttime of this process
  EXPECT_EQ(PartialCorePath(tmp.path()), tmp / (".core.partial-" + tag));
  const std::string host = tag.substr(0, tag.find('_'));
  for (const std::string& name : std::vector<std::string>{
           ".core.partial-" + tag, ".core.partial-" + tag + ".tmp.a1B2c3", ".x-1.partial-" + tag + "_a1B2c3",
           // A writer on this host that is gone (pid 999999999 cannot exist).
           ".core.partial-" + host + "_999999999_5", ".x-2.partial-" + host + "_999999999_5_zzzzzz",
           // Not ours to judge, or not a partial file at all.
           ".core.partial-elsewhere_999999999_5", "20261202T160000Z-x-3", ".core.partial-" + host + "_abc_5",
           ".core.partial-7"}) {
    std::ofstream(tmp / name) << "data";
  }
  StaleCleanup cleanup = RemoveStalePartials(tmp.path());
  EXPECT_TRUE(cleanup.errors.empty());
  std::vector<std::string> removed = cleanup.removed;
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{tmp / (".core.partial-" + host + "_999999999_5"),
                                               tmp / (".x-2.partial-" + host + "_999999999_5_zzzzzz")}));
  EXPECT_EQ(cleanup.bytes, 8u);
  EXPECT_TRUE(std::filesystem::exists(tmp / (".core.partial-" + tag)));
  EXPECT_TRUE(std::filesystem::exists(tmp / ".core.partial-7"));  // an earlier version's, fresh
  EXPECT_TRUE(RemoveStalePartials(tmp / "missing").removed.empty());
}

TEST(CrashBundle, DurableWriteReplacesTheFileWhole) {
  testing::TempDir tmp;
  ASSERT_TRUE(WriteFileDurably(tmp.path(), "repeat.json", "old\n").ok());
  ASSERT_TRUE(WriteFileDurably(tmp.path(), "repeat.json", "new\n").ok());
  std::ifstream in(tmp / "repeat.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "new\n");
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 1u);  // no temp file left
  auto failed = WriteFileDurably(tmp / "missing", "x", "y");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find(tmp / "missing/"), std::string::npos) << failed.error().message;
}

TEST(CrashBundle, TracingSideEffectsBecomeWarningsAndAreInTheSummary) {
  SuperviseOutcome o = Segv();
  o.trace_effects.push_back({"tracer-in-job", 0, "a tracer in the job failed: rerun with --no-trace",
                             "strace: ptrace(PTRACE_TRACEME, ...): Operation not permitted"});
  o.timeout = std::chrono::milliseconds(90000);
  RunAssessment run = Assess(std::move(o));
  ASSERT_EQ(run.findings.size(), 2u);
  EXPECT_EQ(run.findings[1].id, "run.trace-side-effect.tracer-in-job");
  EXPECT_EQ(run.findings[1].severity, core::Severity::kWarning);
  std::string text = RunSummaryText(run, "");
  EXPECT_NE(text.find("gputriage: note: a tracer in the job failed: rerun with --no-trace\n"), std::string::npos)
      << text;
  run.outcome.timed_out = true;
  run.outcome.duration_s = 93.4;  // the limit is said, not how long stopping took
  EXPECT_EQ(RunSummaryText(run, "").rfind("gputriage: timed out after 90 s (--timeout 90s); job terminated", 0), 0u)
      << RunSummaryText(run, "");  // no hang dump (untraced): no "stacks dumped"
}

}  // namespace
}  // namespace gputriage::forensics

namespace gputriage::forensics {
namespace {

core::TelemetrySample At(double t, std::vector<std::string> reasons, int temperature = 70) {
  core::TelemetrySample s;
  s.t_s = t;
  s.phase = "run";
  s.temperature_c = temperature;
  s.power_w = 600;
  s.throttle_reasons = std::move(reasons);
  return s;
}

TEST(CrashBundleTelemetry, AThermalSlowdownBeforeTheFailureIsAWarningAndTheCsvIsWritten) {
  SuperviseOutcome o = Segv();
  o.started_monotonic_s = 100;
  o.first_crash_monotonic_s = 130;  // the crash 30 s into the run
  RunAssessment run = Assess(std::move(o));
  core::TelemetryRecording rec;
  rec.samples = {At(5, {"hw_thermal_slowdown"}), At(25, {"gpu_idle"}),
                 At(28, {"hw_thermal_slowdown", "sw_power_cap"}, 91), At(29.5, {})};
  rec.source = "nvml";
  AddTelemetry(run, rec);
  ASSERT_EQ(run.findings.size(), 2u);
  const core::Finding& f = run.findings[1];
  EXPECT_EQ(f.id, "telemetry.slowdown_before_failure");
  EXPECT_EQ(f.severity, core::Severity::kWarning);
  EXPECT_EQ(f.title, "GPU 0 was slowed down (hw_thermal_slowdown, sw_power_cap) in the 10 s before the failure");
  EXPECT_NE(f.detail.find("1 of 3 samples"), std::string::npos) << f.detail;  // t=5 is outside the window
  EXPECT_NE(f.detail.find("up to 91 °C"), std::string::npos) << f.detail;
  ASSERT_EQ(f.evidence.size(), 1u);
  EXPECT_EQ(f.evidence[0].text.rfind("t=-2.0 s from the failure: 28.000,0,91,", 0), 0u) << f.evidence[0].text;

  testing::TempDir tmp;
  BundleInput input{.parent_dir = tmp / "b", .argv = {"crasher"}, .tool_version = "test"};
  input.snapshot_missing_reason = "not taken in this test";
  auto written = WriteBundle(run, input);
  ASSERT_TRUE(written.ok()) << written.error().message;
  auto bundle = core::ReadBundle(written->path);
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  ASSERT_EQ(bundle->telemetry.size(), 4u);
  EXPECT_EQ(bundle->telemetry[2].temperature_c, 91);
  EXPECT_TRUE(bundle->manifest->Has("telemetry.csv"));
}

TEST(CrashBundleTelemetry, APowerCapAloneIsInfoAndAPassingRunHasNoFinding) {
  SuperviseOutcome o = Segv();
  o.first_crash_monotonic_s = 0;
  o.duration_s = 12;  // no crash time: the end of the run is the failure
  RunAssessment run = Assess(std::move(o));
  core::TelemetryRecording rec;
  rec.samples = {At(11, {"sw_power_cap"})};
  AddTelemetry(run, rec);
  ASSERT_EQ(run.findings.size(), 2u);
  EXPECT_EQ(run.findings[1].severity, core::Severity::kInfo);
  EXPECT_TRUE(run.findings[1].fix.empty());

  SuperviseOutcome clean;
  clean.exit_code = 0;
  RunAssessment passed = Assess(std::move(clean));
  AddTelemetry(passed, rec);
  EXPECT_TRUE(passed.findings.empty());
  EXPECT_EQ(passed.telemetry->samples.size(), 1u);
}

TEST(CrashBundleTelemetry, NoSamplesLeaveTheReasonInTheManifest) {
  RunAssessment run = Assess(Segv());
  core::TelemetryRecording rec;
  rec.note = "no GPU to sample";
  AddTelemetry(run, rec);
  testing::TempDir tmp;
  BundleInput input{.parent_dir = tmp / "b", .argv = {"crasher"}, .tool_version = "test"};
  auto written = WriteBundle(run, input);
  ASSERT_TRUE(written.ok());
  std::ifstream in(written->path + "/manifest.json");
  core::Json m = core::Json::parse(in);
  EXPECT_EQ(m["files"]["telemetry.csv"]["present"], false);
  EXPECT_EQ(m["files"]["telemetry.csv"]["reason"], "no GPU to sample");
  EXPECT_FALSE(std::filesystem::exists(written->path + "/telemetry.csv"));
}

}  // namespace
}  // namespace gputriage::forensics
