// `gputriage run` and `gputriage analyze` on real crashing programs (tests/crashers), run as a
// user would run them: each test checks the signal, si_code, faulting function, classification
// and exit status, and that the job's stdout and stderr passed through byte for byte.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
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

const std::string kNoPtrace = std::string(GT_CRASHERS_DIR) + "/no_ptrace";
const std::string kJobTree = std::string(GT_CRASHERS_DIR) + "/job_tree";
const std::string kRanks = std::string(GT_CRASHERS_DIR) + "/ranks";
const std::string kPrintIds = std::string(GT_CRASHERS_DIR) + "/print_ids";
const std::string kLeak = std::string(GT_CRASHERS_DIR) + "/leak";

struct JobRun {
  int status = -1;  // gputriage's exit status
  std::string out, err;
  std::string bundle;  // newest bundle directory, "" when none
  Json process, manifest;
};

// --json prints its document after the job's own stdout, starting on a line of its own.
Json TrailingJson(const std::string& out) {
  size_t at = out.rfind("\n{\n");
  at = at == std::string::npos ? 0 : at + 1;
  return Json::parse(out.substr(at), nullptr, false);
}

void WriteText(const std::string& path, std::string_view content) { std::ofstream(path, std::ios::binary) << content; }

std::string NewestBundle(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (entry.is_directory() && name[0] != '.') names.push_back(entry.path().string());
  }
  if (names.empty()) return {};
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return fs::last_write_time(a) < fs::last_write_time(b) ||
           (fs::last_write_time(a) == fs::last_write_time(b) && a < b);
  });
  return names.back();
}

class RunTest : public ::testing::Test {
 protected:
  JobRun Run(std::vector<std::string> job, std::vector<std::string> options = {},
             std::optional<std::string> stdin_data = std::nullopt, std::vector<std::string> prefix = {},
             std::vector<std::string> env = {}) {
    std::vector<std::string> args = prefix;
    args.push_back(GT_GPUTRIAGE_BIN);
    args.push_back("run");
    args.push_back("--bundle-dir");
    args.push_back(bundles_);
    args.push_back("--no-snapshot");
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("--");
    args.insert(args.end(), job.begin(), job.end());
    core::RunOptions ro;
    ro.timeout = std::chrono::milliseconds(60000);
    ro.max_stderr_bytes = 1 << 20;
    ro.extra_env = {"GPUTRIAGE_HOME=" + (tmp_ / "home")};
    ro.extra_env.insert(ro.extra_env.end(), env.begin(), env.end());
    ro.stdin_data = std::move(stdin_data);
    auto outcome = core::RunWithTimeout(args, ro);
    JobRun r;
    if (!outcome.ok()) {
      ADD_FAILURE() << outcome.error().message;
      return r;
    }
    r.status = outcome->exit_code.value_or(-1);
    r.out = outcome->stdout_data;
    r.err = outcome->stderr_tail;
    r.bundle = NewestBundle(bundles_);
    if (!r.bundle.empty()) {
      r.process = Json::parse(ReadAll(r.bundle + "/process.json"), nullptr, false);
      r.manifest = Json::parse(ReadAll(r.bundle + "/manifest.json"), nullptr, false);
    }
    return r;
  }

  // The job's markers passed through exactly, and the bundle kept them.
  void ExpectPassThrough(const JobRun& r, const std::string& mode) {
    std::string out_marker = "crasher " + mode + ": stdout\n";
    std::string err_marker = "crasher " + mode + ": stderr\n";
    EXPECT_EQ(r.out, out_marker);
    EXPECT_EQ(r.err.rfind(err_marker, 0), 0u) << r.err;
    if (!r.bundle.empty()) {
      EXPECT_EQ(ReadAll(r.bundle + "/stdout.tail"), out_marker);
      EXPECT_EQ(ReadAll(r.bundle + "/stderr.tail").rfind(err_marker, 0), 0u);
    }
  }

  static std::string TopFunction(const Json& process) {
    const Json& threads = process["threads"];
    if (!threads.is_array() || threads.empty() || threads[0]["frames"].empty()) return "";
    return threads[0]["frames"][0].value("function", "");
  }

  static bool AnyFrame(const Json& process, const std::string& function) {
    for (const Json& f : process["threads"][0]["frames"]) {
      if (f.value("function", "") == function) return true;
    }
    return false;
  }

  void ExpectCrash(const JobRun& r, const char* signal, const char* si_code, const char* function, const char* kind,
                   int status) {
    ASSERT_FALSE(r.bundle.empty()) << "no bundle; stderr:\n" << r.err;
    EXPECT_EQ(r.status, status) << r.err;
    EXPECT_EQ(r.process.value("signal", ""), signal);
    EXPECT_EQ(r.process.value("si_code", ""), si_code);
    EXPECT_EQ(TopFunction(r.process), function) << r.process["threads"][0]["frames"].dump(1);
    EXPECT_EQ(r.process["classification"].value("kind", ""), kind) << r.process["classification"].dump(1);
    EXPECT_TRUE(r.process["disassembly"].is_object());
    EXPECT_EQ(r.process.value("exit_status", -1), status);
  }

  void SetUp() override { bundles_ = tmp_ / "bundles"; }

  testing::TempDir tmp_;
  std::string bundles_;
};

bool CpuHasFlag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
}

TEST_F(RunTest, NullDereference) {
  JobRun r = Run({kCrasher, "null"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "null_deref", "null-dereference", 139);
  EXPECT_EQ(r.process.value("fault_address", ""), "0x0");
  EXPECT_EQ(r.process["crashed_thread"], r.process["pid"]);
  const Json& top = r.process["threads"][0]["frames"][0];
  EXPECT_EQ(top.value("line", 0), 25);
  EXPECT_NE(top.value("file", "").find("crasher.c"), std::string::npos);
  EXPECT_NE(top.value("module", "").find("crasher"), std::string::npos);
  EXPECT_TRUE(top["offset"].is_string());
  EXPECT_TRUE(AnyFrame(r.process, "main"));
  // The faulting instruction is marked, and it is a store through a register.
  bool marked = false;
  for (const Json& i : r.process["disassembly"]["instructions"]) {
    if (i.value("faulting", false)) {
      marked = true;
      EXPECT_NE(i.value("text", "").find("mov dword ptr [r"), std::string::npos) << i.dump();
    }
  }
  EXPECT_TRUE(marked);
  EXPECT_EQ(r.process["fault_location"].value("kind", ""), "null-page");
  EXPECT_TRUE(r.process["threads"][0]["registers"].contains("rip"));
  ExpectPassThrough(r, "null");
  // Summary on stderr after the job's own output.
  EXPECT_NE(r.err.find("died of SIGSEGV (SEGV_MAPERR"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bundle: " + r.bundle), std::string::npos) << r.err;
  // Manifest accounts for every file of the layout.
  for (const char* file : {"process.json", "stdout.tail", "stderr.tail", "kmsg.log", "snapshot.json", "findings.json",
                           "telemetry.csv", "gpu_calls.json", "report.md", "core"}) {
    EXPECT_TRUE(r.manifest["files"].contains(file)) << file;
    if (!r.manifest["files"][file].value("present", false)) {
      EXPECT_FALSE(r.manifest["files"][file].value("reason", "").empty()) << file;
    } else {
      EXPECT_TRUE(fs::exists(r.bundle + "/" + file)) << file;
    }
  }
  EXPECT_EQ(r.manifest["files"]["snapshot.json"].value("reason", ""), "--no-snapshot");
  EXPECT_GT(r.manifest["timings"].value("signal_to_bundle_ms", -1.0), 0.0);
  // No temp directories left behind.
  for (const auto& entry : fs::directory_iterator(bundles_)) {
    EXPECT_EQ(entry.path().filename().string().find(".partial"), std::string::npos);
  }
}

// GPU telemetry during the run: sampled into telemetry.csv where NVML or amdgpu has a GPU (the H200),
// else the manifest says why (this build machine); --no-telemetry says that instead.
TEST_F(RunTest, TelemetryIsSampledOrItsAbsenceIsExplained) {
  JobRun r = Run({kCrasher, "null"}, {"--telemetry-period", "0.1"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  const Json& file = r.manifest["files"]["telemetry.csv"];
  if (file.value("present", false)) {
    std::string csv = ReadAll(r.bundle + "/telemetry.csv");
    EXPECT_EQ(csv.rfind("t_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,"
                        "throttle_reasons\n",
                        0),
              0u)
        << csv;
  } else {
    EXPECT_EQ(file.value("reason", "").rfind("no GPU to sample: NVML: ", 0), 0u) << file.dump();
  }
  JobRun off = Run({kCrasher, "null"}, {"--no-telemetry"});
  EXPECT_EQ(off.manifest["files"]["telemetry.csv"].value("reason", ""), "not sampled (--no-telemetry)");
}

// The sampler process itself on a captured amdgpu tree: the CSV lines `run` reads, every period.
TEST_F(RunTest, TelemetryProbeSamplesACapturedAmdgpuTree) {
  std::string root = tmp_ / "root";
  std::string dev = root + "/sys/bus/pci/devices/0000:03:00.0";
  fs::create_directories(dev + "/hwmon/hwmon2");
  fs::create_symlink("../../../../bus/pci/drivers/amdgpu", dev + "/driver");
  WriteText(dev + "/hwmon/hwmon2/temp1_input", "45000\n");
  WriteText(dev + "/hwmon/hwmon2/temp1_label", "edge\n");
  WriteText(dev + "/hwmon/hwmon2/power1_average", "123000000\n");
  WriteText(dev + "/pp_dpm_sclk", "0: 500Mhz\n1: 2100Mhz *\n");
  WriteText(dev + "/mem_info_vram_used", "1073741824\n");
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(20000);
  // head ends the sampler as run does: its reader goes away.
  auto outcome = core::RunWithTimeout(
      {"/bin/sh", "-c",
       std::string(GT_GPUTRIAGE_BIN) + " __probe telemetry --period 0.1 --root " + root + " | head -n 5"},
      ro);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  std::vector<std::string> lines;
  std::istringstream in(outcome->stdout_data);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << outcome->stdout_data;
  EXPECT_EQ(lines[0], "# source=amdgpu sysfs period_s=0.1");
  EXPECT_EQ(lines[1],
            "t_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,throttle_reasons");
  std::regex sample(R"(^[0-9]+\.[0-9]{3},0,45,123\.0,2100,,1024\.0,$)");
  for (size_t i = 2; i < 5; ++i) EXPECT_TRUE(std::regex_match(lines[i], sample)) << lines[i];
  // A tree without a GPU: the sampler says so and ends with status 3.
  fs::create_directories(tmp_ / "bundles");
  auto none = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "__probe", "telemetry", "--root", tmp_ / "bundles"}, ro);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->exit_code, 3);
  EXPECT_EQ(none->stdout_data,
            "# none: no GPU to sample: NVML: not used on a captured tree (--root); amdgpu: no device bound to it\n");
}

TEST_F(RunTest, WildPointer) {
  JobRun r = Run({kCrasher, "wild"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "wild_write", "wild-pointer", 139);
  EXPECT_EQ(r.process.value("fault_address", ""), "0x7f0000dead00");
  EXPECT_EQ(r.process["fault_location"].value("kind", ""), "unmapped");
  ExpectPassThrough(r, "wild");
}

TEST_F(RunTest, StackOverflow) {
  JobRun r = Run({kCrasher, "stack"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "recurse", "stack-overflow", 139);
  EXPECT_EQ(r.process["fault_location"].value("kind", ""), "stack-guard");
  EXPECT_TRUE(r.process["threads"][0].value("frames_truncated", false));
  ExpectPassThrough(r, "stack");
}

TEST_F(RunTest, SigbusOnTruncatedMappedFile) {
  std::string file = tmp_ / "mapped.dat";
  JobRun r = Run({kCrasher, "sigbus", file});
  ExpectCrash(r, "SIGBUS", "BUS_ADRERR", "touch_truncated", "sigbus-truncated-file", 135);
  EXPECT_EQ(r.process["fault_location"]["mapping"].value("path", ""), file);
  EXPECT_NE(r.process["classification"].value("summary", "").find(file), std::string::npos);
  ExpectPassThrough(r, "sigbus");
}

TEST_F(RunTest, IllegalInstructionFromAnIsaExtensionThisCpuLacks) {
  if (CpuHasFlag("tbm")) GTEST_SKIP() << "this CPU has AMD TBM, so BLCFILL does not fault";
  JobRun r = Run({kCrasher, "isa"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.process.value("signal", ""), "SIGILL");
  // Linux reports #UD as ILL_ILLOPN on x86.
  EXPECT_TRUE(r.process.value("si_code", "") == "ILL_ILLOPN" || r.process.value("si_code", "") == "ILL_ILLOPC");
  EXPECT_EQ(TopFunction(r.process), "use_tbm");
  EXPECT_EQ(r.process["classification"].value("kind", ""), "illegal-instruction-isa");
  EXPECT_EQ(r.process["classification"].value("category", ""), "arch-mismatch");
  EXPECT_EQ(r.process["disassembly"]["missing_on_cpu"], Json::array({"tbm"}));
  EXPECT_EQ(r.status, 132);
  ExpectPassThrough(r, "isa");
}

TEST_F(RunTest, Ud2IsADeliberateTrap) {
  JobRun r = Run({kCrasher, "ud2"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.process.value("signal", ""), "SIGILL");
  EXPECT_TRUE(r.process.value("si_code", "") == "ILL_ILLOPN" || r.process.value("si_code", "") == "ILL_ILLOPC");
  EXPECT_EQ(TopFunction(r.process), "trap_here");
  EXPECT_EQ(r.process["classification"].value("kind", ""), "deliberate-trap");
  EXPECT_EQ(r.status, 132);
  ExpectPassThrough(r, "ud2");
}

TEST_F(RunTest, IntegerDivideByZero) {
  JobRun r = Run({kCrasher, "fpe"});
  ExpectCrash(r, "SIGFPE", "FPE_INTDIV", "divide", "integer-divide-by-zero", 136);
  ExpectPassThrough(r, "fpe");
}

TEST_F(RunTest, AbortFromAFailedAssert) {
  JobRun r = Run({kCrasher, "assert"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 134);
  EXPECT_EQ(r.process.value("signal", ""), "SIGABRT");
  EXPECT_EQ(r.process.value("si_code", ""), "SI_TKILL");
  EXPECT_TRUE(AnyFrame(r.process, "check_count"));
  EXPECT_TRUE(AnyFrame(r.process, "abort"));
  const Json& c = r.process["classification"];
  EXPECT_EQ(c.value("kind", ""), "assertion-failed");
  std::string evidence = c["evidence"].dump();
  EXPECT_NE(evidence.find("Assertion `count == 3' failed."), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("aborting frame: check_count"), std::string::npos) << evidence;
  ExpectPassThrough(r, "assert");
}

TEST_F(RunTest, CrashInASecondaryThread) {
  JobRun r = Run({kCrasher, "thread"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "null_deref", "null-dereference", 139);
  EXPECT_NE(r.process["crashed_thread"], r.process["pid"]);
  EXPECT_EQ(r.process["threads"][0]["tid"], r.process["crashed_thread"]);
  EXPECT_GE(r.process["threads"].size(), 2u);  // the main thread, waiting in pthread_join
  EXPECT_TRUE(AnyFrame(r.process, "worker_crash"));
  ExpectPassThrough(r, "thread");
}

TEST_F(RunTest, CrashInAForkedChild) {
  JobRun r = Run({kCrasher, "fork"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "null_deref", "null-dereference", 139);
  ExpectPassThrough(r, "fork");
}

TEST_F(RunTest, CrashInAnExecdGrandchild) {
  JobRun r = Run({kCrasher, "exec"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "null_deref", "null-dereference", 139);
  // The grandchild ran `crasher null` after exec.
  EXPECT_NE(r.process.value("command", "").find("null"), std::string::npos);
  EXPECT_EQ(r.out, "crasher exec: stdout\ncrasher null: stdout\n");
}

TEST_F(RunTest, CrashInAVforkedAndExecdChild) {
  JobRun r = Run({kCrasher, "vfork"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "null_deref", "null-dereference", 139);
  EXPECT_NE(r.process.value("pid", 0), 0);
  EXPECT_EQ(r.out, "crasher vfork: stdout\ncrasher null: stdout\n");
}

TEST_F(RunTest, BreakpointTrapWithoutADebugger) {
  JobRun r = Run({kCrasher, "int3"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 128 + SIGTRAP);
  EXPECT_EQ(r.process.value("signal", ""), "SIGTRAP");
  EXPECT_EQ(r.process.value("si_code", ""), "SI_KERNEL");  // x86's int3
  EXPECT_EQ(TopFunction(r.process), "breakpoint_here");
  EXPECT_EQ(r.process["classification"].value("kind", ""), "breakpoint-trap");
  ExpectPassThrough(r, "int3");
}

TEST_F(RunTest, CrashInsideALibraryWithoutDebugInfo) {
  JobRun r = Run({kCrasher, "lib"});
  ExpectCrash(r, "SIGSEGV", "SEGV_MAPERR", "crashlib_store", "null-dereference", 139);
  const Json& top = r.process["threads"][0]["frames"][0];
  EXPECT_NE(top.value("module", "").find("libcrashlib.so"), std::string::npos);
  EXPECT_FALSE(top.contains("file"));  // no debug info: symbol from .dynsym only
  EXPECT_TRUE(top["offset"].is_string());
  ExpectPassThrough(r, "lib");
}

TEST_F(RunTest, PythonCrashingThroughCtypes) {
  if (system("python3 -c 'import ctypes' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 with ctypes";
  JobRun r = Run({"python3", "-c",
                  "import ctypes, sys; print('py: stdout'); print('py: stderr', file=sys.stderr); "
                  "sys.stdout.flush(); sys.stderr.flush(); ctypes.string_at(0)"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 139);
  EXPECT_EQ(r.process.value("signal", ""), "SIGSEGV");
  EXPECT_EQ(r.process.value("si_code", ""), "SEGV_MAPERR");
  EXPECT_NE(TopFunction(r.process).find("strlen"), std::string::npos) << TopFunction(r.process);
  EXPECT_EQ(r.process["classification"].value("kind", ""), "null-dereference");
  EXPECT_EQ(r.out, "py: stdout\n");
  EXPECT_EQ(r.err.rfind("py: stderr\n", 0), 0u);
  // PYTHONFAULTHANDLER=1 from run: Python's own stack is in stderr.tail, and analyze reads it.
  EXPECT_NE(ReadAll(r.bundle + "/stderr.tail").find("Fatal Python error: Segmentation fault"), std::string::npos);
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto analyzed = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", "--json", r.bundle}, ro);
  ASSERT_TRUE(analyzed.ok());
  Json a = Json::parse(analyzed->stdout_data, nullptr, false);
  ASSERT_FALSE(a.is_discarded()) << analyzed->stdout_data << analyzed->stderr_tail;
  const Json& fault = a["python_fault"];
  ASSERT_TRUE(fault.is_object()) << a.dump(1);
  EXPECT_EQ(fault.value("error", ""), "Segmentation fault");
  ASSERT_GE(fault["frames"].size(), 2u) << fault.dump();
  EXPECT_EQ(fault["frames"][0].value("function", ""), "string_at");
  EXPECT_EQ(fault["frames"][1].value("function", ""), "<module>");
}

TEST_F(RunTest, SigkillFromOutside) {
  // A sibling process kills the job's main process with SIGKILL: nothing to capture, but the
  // failure is named.
  JobRun r = Run({"sh", "-c", "(sleep 0.3; kill -KILL $$) & exec " + kCrasher + " hang"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 137);
  EXPECT_EQ(r.process.value("signal", ""), "SIGKILL");
  EXPECT_TRUE(r.process["si_code"].is_null());
  EXPECT_EQ(r.process["threads"], Json::array());
  EXPECT_EQ(r.process["classification"].value("kind", ""), "killed");
  EXPECT_EQ(r.out.rfind("crasher hang: stdout\npid ", 0), 0u);
}

TEST_F(RunTest, OomKillerNamedFromTheKernelLog) {
  // A real OOM kill: the job runs in a memory cgroup limited to 32 MiB.
  std::string cgroup;
  for (const char* base : {"/sys/fs/cgroup/memory", "/sys/fs/cgroup"}) {
    std::string dir = std::string(base) + "/gputriage-test-" + std::to_string(getpid());
    if (mkdir(dir.c_str(), 0755) != 0) continue;
    std::ofstream v1(dir + "/memory.limit_in_bytes");
    std::ofstream v2(dir + "/memory.max");
    if ((v1 << "33554432" << std::flush) || (v2 << "33554432" << std::flush)) {
      cgroup = dir;
      break;
    }
    rmdir(dir.c_str());
  }
  if (cgroup.empty()) GTEST_SKIP() << "cannot create a memory cgroup here (needs root and a writable cgroup fs)";
  std::ifstream kmsg("/dev/kmsg");
  if (!kmsg) {
    rmdir(cgroup.c_str());
    GTEST_SKIP() << "/dev/kmsg is not readable";
  }
  JobRun r = Run({"sh", "-c", "echo $$ > " + cgroup + "/cgroup.procs && exec " + kCrasher + " alloc"});
  rmdir(cgroup.c_str());
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 137);
  EXPECT_EQ(r.process["classification"].value("kind", ""), "oom-killed") << r.process["classification"].dump();
  EXPECT_EQ(r.process["classification"].value("category", ""), "oom");
  EXPECT_NE(r.process["classification"]["evidence"].dump().find("Killed process"), std::string::npos);
  EXPECT_NE(ReadAll(r.bundle + "/kmsg.log").find("Killed process"), std::string::npos);
}

// gputriage's own failures before the job starts answer 125 (like timeout and docker run), a code
// the job did not produce; a mistyped option is one of them, and the job does not run.
TEST_F(RunTest, UnknownOptionsAndBadValuesAre125AndTheJobDoesNotRun) {
  std::string marker = tmp_ / "ran";
  const std::string job = "touch " + marker;
  JobRun typo = Run({"sh", "-c", job}, {"--timout", "30m"});
  EXPECT_EQ(typo.status, 125) << typo.err;
  EXPECT_NE(typo.err.find("gputriage: run: unknown option '--timout'; did you mean '--timeout'?"), std::string::npos)
      << typo.err;
  JobRun attached = Run({"sh", "-c", job}, {"--no-such-option"});
  EXPECT_EQ(attached.status, 125) << attached.err;
  JobRun value = Run({"sh", "-c", job}, {"--repeat", "abc"});
  EXPECT_EQ(value.status, 125) << value.err;
  JobRun duration = Run({"sh", "-c", job}, {"--timeout", "soon"});
  EXPECT_EQ(duration.status, 125) << duration.err;
  EXPECT_FALSE(fs::exists(marker)) << "the job ran despite the usage error";
  // The job's own options after -- are the job's.
  JobRun own = Run({"sh", "-c", "exit 7", "--not-ours"}, {"--timeout=30s"});
  EXPECT_EQ(own.status, 7) << own.err;
}

// --json-file keeps the job's stdout the job's; Python jobs get PYTHONFAULTHANDLER=1 unless set.
TEST_F(RunTest, JsonFileAndPythonFaultHandler) {
  std::string json_file = tmp_ / "run.json";
  JobRun r = Run({"sh", "-c", "echo \"fh=$PYTHONFAULTHANDLER\"; exit 4"}, {"--json-file", json_file});
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(r.out, "fh=1\n") << "nothing of gputriage's on the job's stdout";
  Json j = Json::parse(ReadAll(json_file), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ReadAll(json_file);
  EXPECT_EQ(j["runs"][0].value("exit_status", -1), 4) << j.dump();
  EXPECT_FALSE(j["runs"][0].value("timed_out", true)) << j.dump();
  JobRun kept = Run({"sh", "-c", "echo \"fh=$PYTHONFAULTHANDLER\""}, {}, std::nullopt, {}, {"PYTHONFAULTHANDLER=0"});
  EXPECT_EQ(kept.out, "fh=0\n");
}

TEST_F(RunTest, HangStoppedByTimeoutWithStacksFirst) {
  JobRun r = Run({kCrasher, "hang"}, {"--timeout", "1s"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 124) << "like GNU timeout";
  EXPECT_TRUE(r.process.value("timed_out", false));
  EXPECT_EQ(r.process["classification"].value("kind", ""), "hang");
  EXPECT_EQ(r.process["classification"].value("category", ""), "hang-timeout");
  EXPECT_TRUE(AnyFrame(r.process, "wait_forever")) << r.process["threads"].dump(1);
  // The timeout the user gave, not how long stopping the job took.
  EXPECT_NE(r.err.find("gputriage: timed out after 1 s (--timeout 1s)"), std::string::npos) << r.err;
}

// A two-rank job (tests/crashers/ranks.c): rank 1 dies of SIGSEGV, rank 0 waits for it until the
// timeout. The run is classified by rank 1's fault, not as a hang, and says which rank failed
// first and that the timeout followed.
TEST_F(RunTest, RankThatFailsFirstIsTheCauseNotTheTimeoutThatFollows) {
  JobRun r = Run({kRanks, "hang"}, {"--timeout", "3s"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 124) << "the timeout still ended the job";
  EXPECT_TRUE(r.process.value("timed_out", false));
  EXPECT_EQ(r.process.value("signal", ""), "SIGSEGV");
  EXPECT_EQ(r.process.value("rank", -1), 1);
  EXPECT_EQ(r.process.value("local_rank", -1), 1);
  ASSERT_TRUE(r.process["stopped_at_s"].is_number());
  EXPECT_LT(r.process["stopped_at_s"].get<double>(), 3.0);
  EXPECT_EQ(r.process["classification"].value("kind", ""), "null-dereference") << r.process["classification"].dump(1);
  EXPECT_NE(r.process["classification"].value("category", ""), "hang-timeout");
  EXPECT_NE(r.process["classification"]["evidence"].dump().find("rank 1"), std::string::npos);
  // Rank 0's stacks at the timeout, with its rank and where it waited.
  const Json* rank0 = nullptr;
  for (const Json& h : r.process["hang_dumps"]) {
    if (h.value("rank", -1) == 0) rank0 = &h;
  }
  ASSERT_NE(rank0, nullptr) << r.process["hang_dumps"].dump(1);
  EXPECT_TRUE(AnyFrame(*rank0, "wait_for_peer")) << (*rank0)["threads"].dump(1);
  EXPECT_GT((*rank0)["stopped_at_s"].get<double>(), r.process["stopped_at_s"].get<double>());
  EXPECT_NE(r.err.find("first failure: rank 1 (pid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("failed first: SIGSEGV"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 0 (pid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("waiting at the timeout: still running"), std::string::npos) << r.err;
}

// PyTorch's flight recorder: a job whose collective timed out leaves `<prefix><rank>` dumps (here
// real two-rank dumps, written by the job as PyTorch's watchdog writes them, and the watchdog's
// abort). run copies them into the bundle and compares them; analyze says which rank never
// entered the collective the other waited in.
TEST_F(RunTest, FlightRecorderDumpsNameTheRankThatNeverEnteredTheCollective) {
  const std::string fixtures = std::string(GT_FIXTURES_DIR) + "/pytorch/flight-recorder/";
  const std::string prefix = tmp_ / "nccl_trace_rank_";
  WriteText(tmp_ / "stale", "");
  fs::copy_file(fixtures + "nccl-1rank-no-stacks.pkl", prefix + "5");  // written before the run: not taken
  std::string job = "cp " + fixtures + "gloo-2ranks-missing-rank0.pkl \"$TORCH_FR_DUMP_TEMP_FILE\"0 && cp " + fixtures +
                    "gloo-2ranks-missing-rank1.pkl \"$TORCH_FR_DUMP_TEMP_FILE\"1 && echo '[rank0]:[E] Watchdog caught "
                    "collective operation timeout: WorkGloo(SeqNum=3, OpType=ALLREDUCE) ran for 20000 milliseconds "
                    "before timing out.' >&2 && kill -ABRT $$";
  JobRun r = Run({"/bin/sh", "-c", job}, {}, std::nullopt, {}, {"TORCH_FR_DUMP_TEMP_FILE=" + prefix});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(ReadAll(r.bundle + "/fr_trace_rank_0"), ReadAll(fixtures + "gloo-2ranks-missing-rank0.pkl"));
  EXPECT_EQ(ReadAll(r.bundle + "/fr_trace_rank_1"), ReadAll(fixtures + "gloo-2ranks-missing-rank1.pkl"));
  EXPECT_FALSE(fs::exists(r.bundle + "/fr_trace_rank_5"));
  Json collectives = Json::parse(ReadAll(r.bundle + "/collectives.json"), nullptr, false);
  ASSERT_TRUE(collectives.is_object()) << r.err;
  ASSERT_EQ(collectives["dumps"].size(), 2u);
  EXPECT_EQ(collectives["dumps"][1]["source"], prefix + "1");
  ASSERT_EQ(collectives["stalls"].size(), 1u);
  EXPECT_EQ(collectives["stalls"][0]["missing"], Json::array({1}));
  EXPECT_EQ(collectives["stalls"][0]["seq"], 3);
  EXPECT_TRUE(r.manifest["files"]["collectives.json"].value("present", false));
  EXPECT_NE(r.err.find("rank 1 never entered all_reduce #3 of default_pg"), std::string::npos) << r.err;

  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto analyzed = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", r.bundle, "--json"}, ro);
  ASSERT_TRUE(analyzed.ok());
  Json a = Json::parse(analyzed->stdout_data, nullptr, false);
  ASSERT_TRUE(a.is_object()) << analyzed->stdout_data;
  const Json& findings = a["analyses"].is_array() ? a["analyses"][0]["collective_findings"] : a["collective_findings"];
  ASSERT_EQ(findings.size(), 1u) << a.dump(1);
  EXPECT_EQ(findings[0]["id"], "collective.rank_never_entered");
  EXPECT_NE(a.dump().find("Find out why rank 1 stopped before this collective"), std::string::npos);
  auto text = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", r.bundle}, ro);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->stdout_data.find("collectives (PyTorch's flight recorder):\n  [error] rank 1 never entered "
                                   "all_reduce #3 of default_pg, which rank 0 entered"),
            std::string::npos)
      << text->stdout_data;

  // Without dumps but with the recorder asked to dump on a timeout: the manifest says none came.
  JobRun quiet = Run({"/bin/sh", "-c", "kill -ABRT $$"}, {}, std::nullopt, {},
                     {"TORCH_FR_DUMP_TEMP_FILE=" + (tmp_ / "none_"), "TORCH_NCCL_DUMP_ON_TIMEOUT=1"});
  ASSERT_FALSE(quiet.bundle.empty());
  EXPECT_FALSE(quiet.manifest["files"]["collectives.json"].value("present", true));
  EXPECT_NE(quiet.manifest["files"]["collectives.json"].value("reason", "").find("TORCH_NCCL_DUMP_ON_TIMEOUT"),
            std::string::npos)
      << quiet.manifest["files"].dump(1);
}

// Both ranks die: rank 1's SIGSEGV first, rank 0's abort a second later. The first is the run's
// failure; the second is listed after it.
TEST_F(RunTest, RanksThatFailInTurnAreOrderedByTime) {
  JobRun r = Run({kRanks, "abort"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.process.value("signal", ""), "SIGSEGV");
  EXPECT_EQ(r.process.value("rank", -1), 1);
  ASSERT_EQ(r.process["other_crashed_processes"].size(), 1u) << r.process.dump(1);
  const Json& rank0 = r.process["other_crashed_processes"][0];
  EXPECT_EQ(rank0.value("rank", -1), 0);
  EXPECT_EQ(rank0.value("signal", ""), "SIGABRT");
  EXPECT_GT(rank0["stopped_at_s"].get<double>(), r.process["stopped_at_s"].get<double>() + 0.5);
  EXPECT_NE(r.err.find("failed after it: SIGABRT"), std::string::npos) << r.err;
}

TEST_F(RunTest, StdinStdoutStderrPassThroughByteExact) {
  std::string input;
  for (int i = 0; i < 3; ++i) {
    for (int b = 0; b < 256; ++b) input.push_back(static_cast<char>(b));
  }
  JobRun r = Run({kCrasher, "echo"}, {}, input);
  std::string expected_out;
  for (int b = 0; b < 256; ++b) expected_out.push_back(static_cast<char>(b));
  expected_out += input;
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.out, expected_out);
  EXPECT_EQ(r.err.rfind("to stderr \x01\xff\n", 0), 0u);
  EXPECT_TRUE(r.bundle.empty()) << "exit 3 without an error message is not a crash";
}

TEST_F(RunTest, KernelLogRecordsDuringTheRunAreSavedAndTiedToTheJob) {
  if (geteuid() != 0 || access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  // Real records from captured logs, with the job's pid put in: an H200 Xid 43 and an amdgpu
  // VM fault (tests/fixtures/kernel_log).
  std::string xid = "NVRM: Xid (PCI:0000:00:06): 43, pid=$$, name=python3, channel 0x0000000a";
  std::string vmfault =
      "amdgpu 0000:07:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 "
      "ring:173 vmid:8 pasid:32772, for process clinfo pid $$ thread clinfo pid $$)";
  std::string script = "printf '%s\\n' \"" + xid + "\" > /dev/kmsg; printf '%s\\n' \"" + vmfault +
                       "\" > /dev/kmsg; exec " + kCrasher + " null";
  JobRun r = Run({"sh", "-c", script});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  int pid = r.process.value("pid", 0);
  std::string kmsg = ReadAll(r.bundle + "/kmsg.log");
  EXPECT_NE(kmsg.find("Xid (PCI:0000:00:06): 43, pid=" + std::to_string(pid)), std::string::npos) << kmsg;
  EXPECT_NE(kmsg.find("for process clinfo pid " + std::to_string(pid)), std::string::npos) << kmsg;
  int tied = 0;
  bool xid43 = false;
  for (const Json& rec : r.process["kernel_log"]) {
    if (rec["job_pid"] == pid) ++tied;
    if (rec.value("xid", 0) == 43) xid43 = true;
  }
  EXPECT_EQ(tied, 2) << r.process["kernel_log"].dump(1);
  EXPECT_TRUE(xid43);
  EXPECT_NE(r.process["classification"]["evidence"].dump().find("Xid 43"), std::string::npos);
  EXPECT_NE(r.err.find("2 naming this job (Xid 43)"), std::string::npos) << r.err;
}

// `--torch-snapshot`: the job writes PyTorch's allocator snapshot (here the real one of the H200
// run in tests/fixtures/torch-snapshot, copied into place as the job's exception handler would
// write it) and the kernel log has the Xid 31 of that run with this job's pid: the faulting
// address is placed past the end of the tensor the Python line allocated. A path the job did not
// write is said in not_recorded.
TEST_F(RunTest, TorchSnapshotPlacesTheFaultAmongTheJobsTensors) {
  if (geteuid() != 0 || access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  if (system("python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 is not installed";
  std::string fixtures = std::string(GT_SOURCE_DIR) + "/tests/fixtures/torch-snapshot/";
  std::string snapshot = tmp_ / "snap.pickle";
  std::string xid =
      "NVRM: Xid (PCI:0000:00:06): 31, pid=$$, name=python3, channel 0x0000000a, intr 00000000. MMU Fault: ENGINE "
      "GRAPHICS GPC1 GPCCLIENT_T1_4 faulted @ 0x7f5d_22e00000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE";
  std::string script = "cp " + fixtures + "h200-triton-oob-after-fault.pickle " + snapshot + "; printf '%s\\n' \"" +
                       xid + "\" > /dev/kmsg; echo 'CUDA error: an illegal memory access was encountered' >&2; exit 1";
  JobRun r = Run({"sh", "-c", script}, {"--torch-snapshot", snapshot});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  Json g = Json::parse(ReadAll(r.bundle + "/gpu_calls.json"), nullptr, false);
  ASSERT_TRUE(g.is_object());
  ASSERT_TRUE(g.contains("torch_memory")) << g.dump(1).substr(0, 3000);
  EXPECT_EQ(g["torch_memory"]["segments"].size(), 3u);
  ASSERT_EQ(g["attributions"].size(), 1u) << g.dump(1).substr(0, 3000);
  const Json& a = g["attributions"][0];
  EXPECT_EQ(a.value("address", ""), "0x7f5d22e00000");
  EXPECT_EQ(a["tensor"].value("address", ""), "0x7f5d22c40000");
  EXPECT_EQ(a.value("tensor_summary", "")
                .rfind("1.5 MiB past the end of a 256 KiB tensor at 0x7f5d22c40000, allocated "
                       "at /work/main/tests/gpu/torch_snapshot_after_fault.py:21 in make_tensors",
                       0),
            0u)
      << a.dump(1);
  EXPECT_NE(r.err.find("in PyTorch's allocator snapshot: 1.5 MiB past the end of a 256 KiB tensor"), std::string::npos)
      << r.err;

  // The same path, not written during the next run: not used, and said.
  JobRun again = Run({"sh", "-c",
                      "printf '%s\\n' \"" + xid +
                          "\" > /dev/kmsg; echo 'CUDA error: an illegal memory access was encountered' >&2; exit 2"},
                     {"--torch-snapshot", snapshot});
  ASSERT_FALSE(again.bundle.empty()) << again.err;
  Json g2 = Json::parse(ReadAll(again.bundle + "/gpu_calls.json"), nullptr, false);
  ASSERT_TRUE(g2.is_object());
  EXPECT_FALSE(g2.contains("torch_memory")) << again.bundle << "\n" << again.err;
  EXPECT_NE(g2["not_recorded"].dump().find("is older than this run: not used"), std::string::npos)
      << g2["not_recorded"].dump();
}

TEST_F(RunTest, PtraceRefusedStillRunsTheJob) {
  // LeakSanitizer needs ptrace itself: in the ASan build, the leak check at exit would fail
  // under this filter and turn the exit status into 1.
  JobRun r = Run({kCrasher, "null"}, {}, std::nullopt, {kNoPtrace}, {"ASAN_OPTIONS=detect_leaks=0"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 139);
  EXPECT_EQ(r.process.value("signal", ""), "SIGSEGV");
  EXPECT_EQ(r.process["threads"], Json::array());
  EXPECT_FALSE(r.manifest.value("traced", true));
  std::string missing = r.manifest["not_collected"].dump();
  EXPECT_NE(missing.find("ptrace refused: PTRACE_SEIZE of pid"), std::string::npos) << missing;
  EXPECT_NE(missing.find("Operation not permitted"), std::string::npos) << missing;
  EXPECT_NE(r.err.find("not collected: signal capture"), std::string::npos) << r.err;
  ExpectPassThrough(r, "null");
}

TEST_F(RunTest, CommandThatDoesNotExistOrCannotRun) {
  JobRun missing = Run({"gputriage-no-such-command"});
  EXPECT_EQ(missing.status, 127);
  EXPECT_NE(missing.err.find("gputriage-no-such-command: command not found"), std::string::npos) << missing.err;
  std::string text = tmp_ / "not-executable.sh";
  WriteText(text, "echo hi\n");
  chmod(text.c_str(), 0644);
  JobRun denied = Run({text});
  EXPECT_EQ(denied.status, 126);
  EXPECT_NE(denied.err.find(text + ": Permission denied: the file has no execute permission (mode 0644)"),
            std::string::npos)
      << denied.err;
  // A directory is named as one, not as "Permission denied".
  std::string dir = tmp_ / "a-directory";
  fs::create_directories(dir);
  JobRun directory = Run({dir});
  EXPECT_EQ(directory.status, 126);
  EXPECT_NE(directory.err.find("gputriage: " + dir + ": is a directory, not a program"), std::string::npos)
      << directory.err;
  EXPECT_EQ(directory.err.find("Permission denied"), std::string::npos) << directory.err;
  // A path that does not exist, and a script whose #! interpreter does not exist.
  std::string absent = tmp_ / "absent/program";
  JobRun gone = Run({absent});
  EXPECT_EQ(gone.status, 127);
  EXPECT_NE(gone.err.find(absent + ": No such file or directory"), std::string::npos) << gone.err;
  std::string script = tmp_ / "script.sh";
  WriteText(script, "#!/nonexistent/interpreter -x\necho hi\n");
  chmod(script.c_str(), 0755);
  JobRun interp = Run({script});
  EXPECT_EQ(interp.status, 127);
  EXPECT_NE(interp.err.find(script + ": its interpreter /nonexistent/interpreter (the #! line) does not exist"),
            std::string::npos)
      << interp.err;
  EXPECT_TRUE(NewestBundle(bundles_).empty());
}

TEST_F(RunTest, GpuRuntimeErrorInStderrIsAFailure) {
  // A real CUDA error output (ggml-org/llama.cpp#27430), printed by a job that then exits 1.
  std::string fixture = std::string(GT_FIXTURES_DIR) + "/run/stderr-cuda-illegal-address.txt";
  JobRun r = Run({"sh", "-c", "tail -n +2 " + fixture + " >&2; exit 1"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.process["signal"].is_null());
  EXPECT_EQ(r.process["classification"].value("kind", ""), "gpu-illegal-address");
  EXPECT_EQ(r.process["classification"].value("category", ""), "illegal-address");
  EXPECT_NE(
      r.process["classification"].value("summary", "").find("CUDA error: an illegal memory access was encountered"),
      std::string::npos);
}

TEST_F(RunTest, RealCudaProgramWithoutAGpuGetsTheRuntimesAnswer) {
#ifndef GT_CUDA_OOB
  GTEST_SKIP() << "nvcc was not found at configure time, so tests/gpu/cuda_oob was not built";
#else
  if (access("/dev/nvidia0", F_OK) == 0)
    GTEST_SKIP() << "this machine has an NVIDIA GPU: covered by scripts/device/verify-run.sh";
  JobRun r = Run({GT_CUDA_OOB});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 1);
  // The CUDA 13 runtime, with no NVIDIA driver here, answers cudaErrorInsufficientDriver.
  EXPECT_NE(r.err.rfind("cuda_oob: cudaMalloc: cudaError", 0), std::string::npos) << r.err;
  EXPECT_EQ(r.process["classification"].value("kind", ""), "gpu-runtime-init") << r.process["classification"].dump();
  EXPECT_EQ(r.process["classification"].value("category", ""), "driver-runtime");
#endif
}

// --record on a real HIP program that ignores every return code: the real libamdhip64 fails
// each call here (no AMD GPU); the job prints "done" and exits 0, and the bundle still comes,
// with every failed call and its code in gpu_calls.json.
TEST_F(RunTest, RecordCatchesGpuErrorsAJobIgnored) {
#ifndef GT_HIP_IGNORED_ERRORS
  GTEST_SKIP() << "hipcc was not found at configure time, so tests/gpu/hip_ignored_errors was not built";
#else
  if (access("/dev/kfd", F_OK) == 0) GTEST_SKIP() << "this machine has an AMD GPU: the calls would succeed";
  JobRun r = Run({GT_HIP_IGNORED_ERRORS}, {"--record"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.process["classification"].value("kind", ""), "gpu-api-error") << r.process.dump(1);
  EXPECT_TRUE(r.manifest["files"]["gpu_calls.json"].value("present", false)) << r.manifest.dump(1);
  Json g = Json::parse(ReadAll(r.bundle + "/gpu_calls.json"), nullptr, false);
  ASSERT_TRUE(g.is_object()) << ReadAll(r.bundle + "/gpu_calls.json");
  ASSERT_TRUE(g["calls"].is_array());
  ASSERT_TRUE(g["candidates"].is_array());
  std::set<std::string> apis;
  for (const Json& c : g["calls"]) {
    apis.insert(c.value("api", ""));
    ASSERT_TRUE(c["result"].is_number_integer()) << c.dump();
    EXPECT_NE(c.value("result", 0), 0) << c.dump();  // nothing can succeed without a GPU
    EXPECT_EQ(c.value("result_name", "").rfind("hipError", 0), 0u) << c.dump();
  }
  // The kernel launch is skipped by the compiled code once its configuration fails: that call is
  // the launch's trace.
  for (const char* api : {"hipMalloc", "hipMemcpy", "__hipPushCallConfiguration", "hipDeviceSynchronize", "hipFree"}) {
    EXPECT_TRUE(apis.count(api)) << api << " not recorded: " << g["calls"].dump(1);
  }
  for (const Json& c : g["calls"]) {
    if (c.value("api", "") != "__hipPushCallConfiguration") continue;
    EXPECT_EQ(c["grid"], Json::parse("[256,1,1]"));
    EXPECT_EQ(c["block"], Json::parse("[256,1,1]"));
  }
  ASSERT_EQ(g["processes"].size(), 1u);
  EXPECT_EQ(g["processes"][0]["hooks"], Json::parse(R"(["hip"])"));
  EXPECT_EQ(g["processes"][0].value("failed_calls", 0), static_cast<int>(g["calls"].size()));
  EXPECT_NE(r.err.find("GPU calls failed, the first hipMalloc with hipError"), std::string::npos) << r.err;
#endif
}

// --escalate on a job whose output says it hit an asynchronous GPU error: the job is run again
// with synchronous launches (it sees CUDA_LAUNCH_BLOCKING=1), and escalation.json says what that
// rerun showed — here no GPU call at all, so no kernel is named and no sanitizer step follows.
TEST_F(RunTest, EscalateRerunsWithSynchronousLaunchesAndSaysWhatItFound) {
  std::string seen = tmp_ / "blocking-seen";
  JobRun r = Run({"sh", "-c",
                  "echo \"blocking=$CUDA_LAUNCH_BLOCKING serialize=$AMD_SERIALIZE_KERNEL\" >> " + seen +
                      "; echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2; exit 1"},
                 {"--escalate"});
  EXPECT_EQ(r.status, 1);
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(ReadAll(seen), "blocking= serialize=\nblocking=1 serialize=3\n");
  EXPECT_NE(r.err.find("escalation 1/2: rerunning with synchronous launches"), std::string::npos) << r.err;
  Json e = Json::parse(ReadAll(r.bundle + "/escalation.json"), nullptr, false);
  ASSERT_TRUE(e.is_object()) << ReadAll(r.bundle + "/escalation.json");
  ASSERT_EQ(e["steps"].size(), 1u) << e.dump(1);
  EXPECT_EQ(e["steps"][0].value("step", ""), "sync");
  EXPECT_EQ(e["steps"][0].value("exit_status", -1), 1);
  EXPECT_EQ(e["steps"][0].value("outcome", ""),
            "exit status 1, but no GPU call reported a context-killing error: no kernel to name");
  EXPECT_FALSE(e.contains("kernel"));
  EXPECT_GT(e.value("job_seconds", 0.0), 0.0);

  // A failure that is not an asynchronous GPU error is not rerun.
  JobRun plain = Run({kCrasher, "null"}, {"--escalate"});
  EXPECT_EQ(plain.status, 139);
  EXPECT_NE(plain.err.find("--escalate: the failure (other) is not an asynchronous GPU error; nothing to rerun"),
            std::string::npos)
      << plain.err;
  EXPECT_FALSE(fs::exists(plain.bundle + "/escalation.json"));
}

// `analyze BUNDLE` shows what the recorder saw.
TEST_F(RunTest, AnalyzeShowsTheRecordedGpuCalls) {
#ifndef GT_HIP_IGNORED_ERRORS
  GTEST_SKIP() << "hipcc was not found at configure time, so tests/gpu/hip_ignored_errors was not built";
#else
  if (access("/dev/kfd", F_OK) == 0) GTEST_SKIP() << "this machine has an AMD GPU: the calls would succeed";
  JobRun r = Run({GT_HIP_IGNORED_ERRORS}, {"--record"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto text = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", r.bundle}, ro);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->stdout_data.find("gpu calls (flight recorder):\n"), std::string::npos) << text->stdout_data;
  EXPECT_NE(text->stdout_data.find("  failed: hipMalloc -> hipError"), std::string::npos) << text->stdout_data;
  auto json = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", "--json", r.bundle}, ro);
  ASSERT_TRUE(json.ok());
  Json a = Json::parse(json->stdout_data, nullptr, false);
  ASSERT_TRUE(a.is_object()) << json->stdout_data;
  Json gpu = a.contains("analysis") ? a["analysis"]["gpu"] : a["gpu"];
  ASSERT_TRUE(gpu.is_object()) << a.dump(1).substr(0, 2000);
  EXPECT_FALSE(gpu["failed_calls"].empty());
  // And the bug report has its section, the API names in code style.
  auto md = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "report", r.bundle}, ro);
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->stdout_data.find("### GPU calls (flight recorder)\n"), std::string::npos) << md->stdout_data;
  EXPECT_NE(md->stdout_data.find("- `hipMalloc` returned hipError"), std::string::npos) << md->stdout_data;
#endif
}

// A thousand threads calling HIP at once, then a fork without exec whose child calls HIP too:
// every call is kept (the ring has room for them all), the child's under its own pid.
TEST_F(RunTest, RecordKeepsEveryThreadsCallsAndAForkedChilds) {
#ifndef GT_HIP_THREADS_FORK
  GTEST_SKIP() << "hipcc was not found at configure time, so tests/gpu/hip_threads_fork was not built";
#else
  if (access("/dev/kfd", F_OK) == 0) GTEST_SKIP() << "this machine has an AMD GPU: the calls would succeed";
  JobRun r = Run({GT_HIP_THREADS_FORK, "1000"}, {"--record"});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_NE(r.out.find("threads 1000, child 0"), std::string::npos) << r.out;
  // gpu_calls.json lists the newest 2,000 calls and says so; the counts are complete.
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  Json g = Json::parse(ReadAll(r.bundle + "/gpu_calls.json"), nullptr, false);
  ASSERT_TRUE(g.is_object());
  ASSERT_EQ(g["processes"].size(), 1u);  // one record file: the child wrote into its parent's
  EXPECT_EQ(g["processes"][0].value("calls", 0), 2001);
  EXPECT_EQ(g["processes"][0].value("calls_kept", 0), 2001);
  ASSERT_EQ(g["calls"].size(), 2000u);
  ASSERT_FALSE(g["not_recorded"].empty());
  EXPECT_NE(g["not_recorded"][0].value("reason", "").find("the newest 2000 of the 2001 calls kept are written"),
            std::string::npos)
      << g["not_recorded"].dump();
  std::map<std::string, int> per_api;
  std::set<int64_t> tids, pids;
  for (const Json& c : g["calls"]) {
    ++per_api[c.value("api", "")];
    tids.insert(c.value("tid", int64_t{0}));
    pids.insert(c.value("pid", int64_t{0}));
  }
  EXPECT_EQ(per_api["hipMalloc"], 999);  // the oldest call is the one left out
  EXPECT_EQ(per_api["hipFree"], 1000);
  EXPECT_EQ(per_api["hipDeviceSynchronize"], 1);
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_GE(tids.size(), 1001u);
#endif
}

// A job that loads HIP through a plugin with RTLD_LOCAL and unloads it, three times: the
// plugin's calls reach the recorder although libamdhip64 is not in the global scope, return their
// real codes (hipErrorInvalidDevice here, never the recorder's own), are all recorded, and the
// pinned library (a dlclose must not unmap what the recorder calls) is said in the bundle.
TEST_F(RunTest, RecordSurvivesAJobThatUnloadsAndReloadsHip) {
#ifndef GT_HIP_RELOAD
  GTEST_SKIP() << "hipcc was not found at configure time, so tests/gpu/hip_reload was not built";
#else
  if (access("/dev/kfd", F_OK) == 0) GTEST_SKIP() << "this machine has an AMD GPU: the calls would succeed";
  JobRun r = Run({GT_HIP_RELOAD}, {"--record"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* round :
       {"round 0: hipMalloc returned 101", "round 1: hipMalloc returned 101", "round 2: hipMalloc returned 101"}) {
    EXPECT_NE(r.out.find(round), std::string::npos) << r.out;
  }
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  Json g = Json::parse(ReadAll(r.bundle + "/gpu_calls.json"), nullptr, false);
  ASSERT_TRUE(g.is_object());
  ASSERT_EQ(g["calls"].size(), 3u) << g.dump(1).substr(0, 2000);
  for (const Json& c : g["calls"]) {
    EXPECT_EQ(c.value("api", ""), "hipMalloc");
    EXPECT_EQ(c.value("result", 0), 101);
  }
  ASSERT_EQ(g["processes"].size(), 1u);
  EXPECT_NE(g["processes"][0].value("note", "").find("pinned (RTLD_NODELETE)"), std::string::npos)
      << g["processes"].dump();
#endif
}

// A job with no GPU calls: the recorder is loaded, sees nothing, and the crash is what it was.
TEST_F(RunTest, RecordLeavesAJobWithoutGpuCallsAsItWas) {
  JobRun r = Run({kCrasher, "null"}, {"--record"});
  EXPECT_EQ(r.status, 139);
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.process["classification"].value("kind", ""), "null-dereference");
  Json g = Json::parse(ReadAll(r.bundle + "/gpu_calls.json"), nullptr, false);
  ASSERT_TRUE(g.is_object());
  ASSERT_EQ(g["processes"].size(), 1u) << g.dump(1);
  EXPECT_EQ(g["processes"][0].value("calls", -1), 0);
  EXPECT_EQ(g["processes"][0]["hooks"], Json::array());
  EXPECT_TRUE(g["calls"].empty());
  // The record directory is gone once the bundle has what it held.
  for (const auto& e : fs::directory_iterator(bundles_)) {
    EXPECT_EQ(e.path().filename().string().find(".record.partial-"), std::string::npos) << e.path();
  }
}

// A static executable cannot take the recorder: it runs unharmed and the bundle says why.
TEST_F(RunTest, RecordSaysWhatAStaticJobCouldNotRecord) {
  JobRun r = Run({std::string(GT_CRASHERS_DIR) + "/static_abort"}, {"--record"});
  EXPECT_EQ(r.status, 134);
  EXPECT_EQ(r.out, "static job started\n");
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  Json g = Json::parse(ReadAll(r.bundle + "/gpu_calls.json"), nullptr, false);
  ASSERT_TRUE(g.is_object());
  EXPECT_TRUE(g["processes"].empty());
  ASSERT_FALSE(g["not_recorded"].empty());
  EXPECT_EQ(g["not_recorded"][0].value("reason", ""),
            std::string(GT_CRASHERS_DIR) +
                "/static_abort is statically linked: the dynamic loader never runs, so "
                "LD_PRELOAD cannot load the recorder into it")
      << g.dump(1);
}

TEST_F(RunTest, PythonTracebackIsAFailure) {
  JobRun r = Run({"python3", "-c", "raise ValueError('bad shape (3, 4)')"});
  if (r.status == 127) GTEST_SKIP() << "no python3";
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.process["classification"].value("kind", ""), "python-exception");
  EXPECT_EQ(r.process["classification"].value("summary", ""), "ValueError: bad shape (3, 4)");
}

TEST_F(RunTest, RepeatReportsDeterministicFlakyAndNotReproduced) {
  JobRun det = Run({kCrasher, "null"}, {"--repeat", "3", "--json", "--quiet"});
  Json j = TrailingJson(det.out);
  ASSERT_FALSE(j.is_discarded()) << det.out;
  EXPECT_EQ(det.status, 139);
  EXPECT_EQ(j["verdict"].value("verdict", ""), "deterministic");
  EXPECT_EQ(j["verdict"].value("failures", 0), 3);
  ASSERT_EQ(j["verdict"]["distinct_signatures"].size(), 1u) << j.dump(1);
  EXPECT_EQ(j["verdict"]["distinct_signatures"][0].value("count", 0), 3);
  EXPECT_NE(
      j["verdict"]["distinct_signatures"][0].value("signature", "").find("SIGSEGV/null-dereference null_deref main"),
      std::string::npos);
  // One bundle per distinct signature.
  int bundles = 0;
  for (const Json& run : j["runs"]) bundles += run["bundle"].is_string() ? 1 : 0;
  EXPECT_EQ(bundles, 1);

  // Fails every other run: flaky, 50% or 67% depending on the start.
  std::string flag = tmp_ / "flip";
  JobRun flaky = Run(
      {"sh", "-c",
       "if [ -e " + flag + " ]; then rm " + flag + "; exec " + kCrasher + " fpe; else touch " + flag + "; exit 0; fi"},
      {"--repeat", "4", "--json", "--quiet"});
  Json f = TrailingJson(flaky.out);
  ASSERT_FALSE(f.is_discarded()) << flaky.out;
  EXPECT_EQ(f["verdict"].value("verdict", ""), "flaky");
  EXPECT_EQ(f["verdict"].value("failures", 0), 2);
  EXPECT_EQ(f["verdict"].value("passes", 0), 2);
  EXPECT_DOUBLE_EQ(f["verdict"].value("failure_rate", 0.0), 0.5);
  EXPECT_EQ(flaky.status, 136);

  JobRun ok = Run({kCrasher, "exit", "0"}, {"--repeat", "2"});
  EXPECT_EQ(ok.status, 0);
  EXPECT_NE(ok.err.find("not reproduced: 2 of 2 runs passed"), std::string::npos) << ok.err;
}

TEST_F(RunTest, CoreFileWrittenIntoTheBundleAndAnalyzed) {
  JobRun r = Run({kCrasher, "null"}, {"--core=raw", "--core-limit", "256M"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  ASSERT_TRUE(r.manifest["files"]["core"].value("present", false)) << r.manifest["files"].dump(1);
  std::string core = r.bundle + "/core";
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto analyzed = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", core, "--json"}, ro);
  ASSERT_TRUE(analyzed.ok());
  EXPECT_EQ(analyzed->exit_code, 1) << analyzed->stderr_tail;
  Json a = Json::parse(analyzed->stdout_data, nullptr, false);
  ASSERT_FALSE(a.is_discarded()) << analyzed->stdout_data;
  const Json& p = a["processes"][0];
  EXPECT_EQ(p.value("signal", ""), "SIGSEGV");
  EXPECT_EQ(p.value("si_code", ""), "SEGV_MAPERR");
  EXPECT_EQ(p.value("fault_address", ""), "0x0");
  EXPECT_EQ(TopFunction(p), "null_deref");
  EXPECT_EQ(p["classification"].value("kind", ""), "null-dereference");
  EXPECT_EQ(p.value("crashed_thread", 0), r.process.value("crashed_thread", -1));

  // Failed before: a core.zst with bytes after the core (here 256 MiB of zeros, a few KB
  // compressed) was decompressed whole into $TMPDIR; only what the ELF headers describe is.
  std::string padded = tmp_ / "padded.core.zst";
  auto zst = core::RunWithTimeout(
      {"sh", "-c", "{ cat '" + core + "'; head -c 268435456 /dev/zero; } | zstd -q -c > '" + padded + "'"}, ro);
  ASSERT_TRUE(zst.ok() && zst->exit_code == 0) << (zst.ok() ? zst->stderr_tail : zst.error().message);
  ASSERT_LT(fs::file_size(padded), 4u << 20);
  auto bomb = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", padded, "--json"}, ro);
  ASSERT_TRUE(bomb.ok());
  EXPECT_EQ(bomb->exit_code, 1) << bomb->stderr_tail;
  Json b = Json::parse(bomb->stdout_data, nullptr, false);
  ASSERT_FALSE(b.is_discarded()) << bomb->stdout_data;
  EXPECT_EQ(TopFunction(b["processes"][0]), "null_deref");
  EXPECT_NE(bomb->stdout_data.find("decompressed only the "), std::string::npos) << bomb->stdout_data;
  EXPECT_NE(bomb->stdout_data.find(" bytes its ELF headers describe"), std::string::npos);
}

TEST_F(RunTest, AnalyzeAKernelCore) {
  // The kernel writes `core` into the crashing process's directory when core_pattern is "core".
  std::string pattern = ReadAll("/proc/sys/kernel/core_pattern");
  if (pattern.empty() || pattern[0] == '|') GTEST_SKIP() << "core_pattern pipes cores to a handler: " << pattern;
  std::string dir = tmp_ / "kcore";
  fs::create_directories(dir);
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto crashed =
      core::RunWithTimeout({"sh", "-c", "ulimit -c unlimited; cd " + dir + " && exec " + kCrasher + " stack"}, ro);
  ASSERT_TRUE(crashed.ok());
  std::string core;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("core", 0) == 0) core = entry.path().string();
  }
  if (core.empty()) GTEST_SKIP() << "the kernel wrote no core (core_pattern '" << pattern << "')";
  auto analyzed = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", core, "--exe", kCrasher, "--json"}, ro);
  ASSERT_TRUE(analyzed.ok());
  Json a = Json::parse(analyzed->stdout_data, nullptr, false);
  ASSERT_FALSE(a.is_discarded()) << analyzed->stdout_data << analyzed->stderr_tail;
  const Json& p = a["processes"][0];
  EXPECT_EQ(p.value("signal", ""), "SIGSEGV");
  EXPECT_EQ(TopFunction(p), "recurse");
  EXPECT_EQ(p["classification"].value("kind", ""), "stack-overflow");

  // The same core, truncated: a clear error naming it, exit 2, no crash.
  std::string cut = tmp_ / "truncated.core";
  {
    std::string bytes = ReadAll(core);
    WriteText(cut, bytes.substr(0, 300));
  }
  auto bad = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", cut}, ro);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->exit_code, 2);
  EXPECT_EQ(bad->stderr_tail.rfind("gputriage: " + cut + ":", 0), 0u) << bad->stderr_tail;
}

// A GPU failure groups by what the GPU side says (error code, kernel), not by the host stack or
// the exact text: here every run also prints its own pid. The bundle learns how the series went,
// and analyze turns that into a verdict reason.
TEST_F(RunTest, GpuFailuresGroupByTheGpuSignatureAndTheBundleKnowsTheSeries) {
  // Real stderr of tests/gpu/torch_index_add_assert.py on the H200.
  std::string fixture = std::string(GT_FIXTURES_DIR) + "/run/h200-torch-index-add-assert.stderr.txt";
  JobRun r = Run({"sh", "-c", "tail -n +2 " + fixture + " >&2; echo \"worker pid $$ exiting\" >&2; exit 1"},
                 {"--repeat", "3", "--json", "--quiet"});
  Json j = TrailingJson(r.out);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(j["verdict"].value("verdict", ""), "deterministic");
  ASSERT_EQ(j["verdict"]["distinct_signatures"].size(), 1u) << j["verdict"].dump();
  EXPECT_EQ(j["verdict"]["distinct_signatures"][0].value("signature", ""),
            "gpu: cudaErrorAssert in indexFuncSmallIndex");
  std::string bundle;
  for (const Json& run : j["runs"]) {
    if (run["bundle"].is_string()) bundle = run["bundle"].get<std::string>();
  }
  ASSERT_FALSE(bundle.empty());
  std::ifstream in(bundle + "/repeat.json");
  std::stringstream text;
  text << in.rdbuf();
  Json repeat = Json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(repeat.is_discarded()) << text.str();
  EXPECT_EQ(repeat.value("runs", 0), 3);
  EXPECT_EQ(repeat.value("same_signature", 0), 3);
  // Run by run, and the counts per signature.
  ASSERT_EQ(repeat["series"].size(), 3u) << repeat.dump(1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(repeat["series"][i]["run"], i + 1);
    EXPECT_EQ(repeat["series"][i]["failed"], true);
    EXPECT_EQ(repeat["series"][i]["exit_status"], 1);
    EXPECT_EQ(repeat["series"][i]["signature"], "gpu: cudaErrorAssert in indexFuncSmallIndex");
  }
  ASSERT_EQ(repeat["signatures"].size(), 1u);
  EXPECT_EQ(repeat["signatures"][0]["count"], 3);

  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto analyzed = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", "--json", bundle}, ro);
  ASSERT_TRUE(analyzed.ok());
  Json a = Json::parse(analyzed->stdout_data, nullptr, false);
  ASSERT_FALSE(a.is_discarded()) << analyzed->stdout_data << analyzed->stderr_tail;
  EXPECT_EQ(a["gpu_signature"].value("error", ""), "cudaErrorAssert");
  EXPECT_EQ(a["gpu_signature"].value("kernel", ""), "indexFuncSmallIndex");
  bool deterministic = false;
  for (const Json& reason : a["verdict_reasons"]) {
    deterministic =
        deterministic || reason.get<std::string>().rfind("failed 3 of 3 runs with the same signature", 0) == 0;
  }
  EXPECT_TRUE(deterministic) << a["verdict_reasons"].dump();
}

TEST_F(RunTest, AnalyzeReadsBundlesAndRejectsMissingPaths) {
  JobRun r = Run({kCrasher, "fpe"});
  ASSERT_FALSE(r.bundle.empty());
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto bundle = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", "--json", r.bundle}, ro);
  ASSERT_TRUE(bundle.ok());
  Json a = Json::parse(bundle->stdout_data, nullptr, false);
  ASSERT_FALSE(a.is_discarded()) << bundle->stdout_data << bundle->stderr_tail;
  EXPECT_EQ(a["processes"][0].value("signal", ""), "SIGFPE");
  EXPECT_EQ(bundle->exit_code, 1);
  auto none = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", tmp_ / "absent"}, ro);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->exit_code, 2);
  EXPECT_NE(none->stderr_tail.find("No such file or directory"), std::string::npos);
}

TEST_F(RunTest, BundlesAreIndexedInTheStore) {
  JobRun r = Run({kCrasher, "fpe"});
  ASSERT_FALSE(r.bundle.empty());
  auto store = store::SnapshotStore::Open(tmp_ / "home/snapshots.db");
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto rows = store->ListBundles(0);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().path, r.bundle);
  EXPECT_EQ(rows->front().signal, "SIGFPE");
  EXPECT_EQ(rows->front().kind, "integer-divide-by-zero");
  EXPECT_EQ(rows->front().exit_status, 136);
  EXPECT_EQ(rows->front().signature, r.process.value("signature", ""));
}

// --- The job's processes: the whole tree stops, pipes break as they would, nothing is left. ---

// True while `pid` exists and is not a zombie (a zombie has exited; only its entry is left).
bool ProcessAlive(int pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

// The pids job_tree wrote ("CHILD GRANDCHILD"); empty when it did not write them.
std::vector<int> ReadTreePids(const std::string& pidfile) {
  std::istringstream in(ReadAll(pidfile));
  std::vector<int> pids;
  int pid = 0;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

// gputriage started in the background with its output in files, so the test can signal it.
struct Background {
  pid_t pid = -1;
  int status = -1;
  bool exited = false;

  // Waits up to `seconds` for it to exit.
  bool Wait(double seconds) {
    for (int i = 0; i < seconds * 100 && !exited; ++i) {
      if (waitpid(pid, &status, WNOHANG) == pid) exited = true;
      if (!exited) usleep(10000);
    }
    return exited;
  }
  ~Background() {
    if (pid > 0 && !exited) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
};

// Starts `gputriage run --bundle-dir BUNDLES --no-snapshot OPTIONS -- JOB` with stdout and stderr
// going to `out` and `err`.
void StartBackground(Background& bg, const std::string& bundles, const std::string& home,
                     std::vector<std::string> options, const std::vector<std::string>& job, const std::string& out,
                     const std::string& err) {
  std::vector<std::string> args = {GT_GPUTRIAGE_BIN, "run", "--bundle-dir", bundles, "--no-snapshot"};
  args.insert(args.end(), options.begin(), options.end());
  args.push_back("--");
  args.insert(args.end(), job.begin(), job.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string env = "GPUTRIAGE_HOME=" + home;
  bg.pid = fork();
  if (bg.pid == 0) {
    freopen(out.c_str(), "w", stdout);
    freopen(err.c_str(), "w", stderr);
    putenv(env.data());
    execv(argv[0], argv.data());
    _exit(126);
  }
}

TEST_F(RunTest, TimeoutStopsTheWholeTreeEvenProcessesThatIgnoreSigtermOrDetached) {
  std::string pidfile = tmp_ / "pids";
  JobRun r = Run({kJobTree, pidfile}, {"--timeout", "1s"});
  std::vector<int> pids = ReadTreePids(pidfile);
  ASSERT_EQ(pids.size(), 2u) << r.err;
  EXPECT_EQ(r.status, 124) << r.err;
  for (int pid : pids) EXPECT_FALSE(ProcessAlive(pid)) << "pid " << pid << " outlived `run --timeout`";
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  EXPECT_EQ(r.process["classification"].value("kind", ""), "hang");
}

TEST_F(RunTest, SignalsSentToGputriageReachTheWholeJobTree) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    std::string pidfile = tmp_ / ("pids-" + std::to_string(sig));
    std::string out = tmp_ / "bg.out", err = tmp_ / "bg.err";
    Background bg;
    StartBackground(bg, bundles_, tmp_ / "home", {}, {kJobTree, pidfile}, out, err);
    ASSERT_GE(bg.pid, 0);
    for (int i = 0; i < 1000 && ReadTreePids(pidfile).size() != 2; ++i) usleep(10000);
    std::vector<int> pids = ReadTreePids(pidfile);
    ASSERT_EQ(pids.size(), 2u) << ReadAll(err);
    kill(bg.pid, sig);
    ASSERT_TRUE(bg.Wait(30)) << "gputriage did not exit after " << strsignal(sig) << "; stderr:\n" << ReadAll(err);
    // The job's main process died of the forwarded signal; its status is gputriage's.
    EXPECT_TRUE(WIFEXITED(bg.status)) << bg.status;
    EXPECT_EQ(WEXITSTATUS(bg.status), 128 + sig) << ReadAll(err);
    for (int pid : pids) EXPECT_FALSE(ProcessAlive(pid)) << "pid " << pid << " outlived gputriage";
  }
}

// A signal to gputriage during a --repeat series stops the series there. The interrupted run is
// no reproduction: no bundle, and the verdict is over the runs that finished (here the first
// passed, so "not reproduced", not "flaky 50%").
TEST_F(RunTest, ASignalToGputriageEndsARepeatSeries) {
  std::string out = tmp_ / "bg.out", err = tmp_ / "bg.err", marker = tmp_ / "ran-once";
  Background bg;
  StartBackground(bg, bundles_, tmp_ / "home", {"--repeat", "3", "--json"},
                  {"sh", "-c", "test -e " + marker + " && exec " + kCrasher + " hang; touch " + marker + "; exit 0"},
                  out, err);
  ASSERT_GE(bg.pid, 0);
  for (int i = 0; i < 1000 && ReadAll(out).find(" waiting") == std::string::npos; ++i) usleep(10000);
  ASSERT_NE(ReadAll(out).find(" waiting"), std::string::npos) << ReadAll(err);
  kill(bg.pid, SIGTERM);
  ASSERT_TRUE(bg.Wait(30)) << "gputriage went on with the series; stderr:\n" << ReadAll(err);
  EXPECT_TRUE(WIFEXITED(bg.status) && WEXITSTATUS(bg.status) == 128 + SIGTERM) << bg.status;
  EXPECT_NE(ReadAll(err).find("gputriage: SIGTERM received during run 2 of 3: stopped; that run is left out of the "
                              "verdict"),
            std::string::npos)
      << ReadAll(err);
  EXPECT_TRUE(NewestBundle(bundles_).empty()) << "a bundle was written for the interrupt";
  std::string text = ReadAll(out);
  Json j = TrailingJson(text);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_EQ(j["verdict"].value("verdict", ""), "not-reproduced") << j.dump();
  EXPECT_EQ(j["verdict"].value("runs", 0), 1) << j.dump();
  EXPECT_EQ(j["verdict"].value("failures", -1), 0) << j.dump();
  EXPECT_EQ(j["verdict"].value("interrupted_run", 0), 2) << j.dump();
  ASSERT_EQ(j["runs"].size(), 2u) << j.dump();
  EXPECT_TRUE(j["runs"][1].value("interrupted", false)) << j.dump();
  EXPECT_FALSE(j["runs"][1].value("failed", true)) << j.dump();
}

TEST_F(RunTest, CoreWithABundleDirectoryThatCannotBeCreatedStillRunsTheJob) {
  WriteText(tmp_ / "a-file", "x");
  bundles_ = tmp_ / "a-file/bundles";  // below a regular file: cannot be created, even by root
  JobRun passed = Run({kCrasher, "exit", "0"}, {"--core"});
  EXPECT_EQ(passed.status, 0) << passed.err;
  EXPECT_EQ(passed.out, "crasher exit: stdout\n");
  EXPECT_NE(passed.err.find("gputriage: --core: " + bundles_ + ": cannot create the bundle directory"),
            std::string::npos)
      << passed.err;

  // A crash: the job's own status, and why neither the core nor the bundle was written.
  JobRun crashed = Run({kCrasher, "null"}, {"--core"});
  EXPECT_EQ(crashed.status, 139) << crashed.err;
  EXPECT_EQ(crashed.out, "crasher null: stdout\n");
  EXPECT_NE(crashed.err.find("cannot create the bundle directory"), std::string::npos) << crashed.err;
  EXPECT_NE(crashed.err.find("crasher null: stderr\n"), std::string::npos) << crashed.err;
  EXPECT_NE(crashed.err.find("died of SIGSEGV"), std::string::npos) << crashed.err;
  EXPECT_NE(crashed.err.find("gputriage: crash bundle not written: " + bundles_), std::string::npos) << crashed.err;

  // A failure the job itself exits 0 from (a child crashed): the status stays the job's; the
  // unwritten bundle is said on stderr and in the JSON.
  JobRun hidden = Run({"sh", "-c", kCrasher + " null; exit 0"}, {"--core", "--json"});
  EXPECT_EQ(hidden.status, 0) << hidden.err;
  EXPECT_NE(hidden.err.find("gputriage: crash bundle not written: " + bundles_), std::string::npos) << hidden.err;
  Json j = Json::parse(hidden.out.substr(hidden.out.find('{')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << hidden.out;
  EXPECT_TRUE(j["runs"][0].value("failed", false)) << j.dump();
  EXPECT_TRUE(j["runs"][0]["bundle"].is_null()) << j.dump();
  EXPECT_NE(j["runs"][0].value("bundle_error", "").find("cannot create the bundle directory"), std::string::npos)
      << j.dump();
}

// `run -- yes | head -1`: when the reader of gputriage's output goes away, the job gets the
// broken pipe it would get without gputriage, and gputriage still ends.
TEST_F(RunTest, ABrokenOutputPipeReachesTheJob) {
  std::string gt = std::string(GT_GPUTRIAGE_BIN) + " run --bundle-dir " + bundles_ + " --no-snapshot";
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  ro.extra_env = {"GPUTRIAGE_HOME=" + (tmp_ / "home")};
  auto yes = core::RunWithTimeout(
      {"bash", "-c", "timeout 20 " + gt + " -- yes | head -1; echo \"status=${PIPESTATUS[0]}\" >&2"}, ro);
  ASSERT_TRUE(yes.ok());
  EXPECT_EQ(yes->stdout_data, "y\n");
  // 141 = 128 + SIGPIPE: `yes` died of the broken pipe; 124 would be timeout(1) killing gputriage.
  EXPECT_NE(yes->stderr_tail.find("status=141"), std::string::npos) << yes->stderr_tail;
  EXPECT_TRUE(NewestBundle(bundles_).empty()) << "a job stopped by a closed reader did not fail";

  // gputriage does not die of SIGPIPE itself: the job crashes after the reader left, the bundle
  // is written, and the status is the job's (139), not 141, although --json cannot be printed.
  auto crash = core::RunWithTimeout({"bash", "-c",
                                     "timeout 20 " + gt + " --json -- sh -c 'echo a; sleep 0.5; exec " + kCrasher +
                                         " null >/dev/null 2>&1' | head -c 2; echo \"status=${PIPESTATUS[0]}\" >&2"},
                                    ro);
  ASSERT_TRUE(crash.ok());
  EXPECT_EQ(crash->stdout_data, "a\n");
  EXPECT_NE(crash->stderr_tail.find("status=139"), std::string::npos) << crash->stderr_tail;
  EXPECT_FALSE(NewestBundle(bundles_).empty()) << crash->stderr_tail;
}

// `run -- CMD > /dev/full` (a full disk: every write fails with ENOSPC): the job's output is
// never lost silently. The user is told what was lost and why, the status is not 0, and the job
// gets a write error where it can take one without being killed (it ignores SIGPIPE, as Python
// does); a job that would die of SIGPIPE is left running and its output counted as lost.
TEST_F(RunTest, OutputThatCannotBeWrittenIsNeverLostSilently) {
  std::string gt = std::string(GT_GPUTRIAGE_BIN) + " run --bundle-dir " + bundles_ + " --no-snapshot";
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  ro.extra_env = {"GPUTRIAGE_HOME=" + (tmp_ / "home")};
  auto shell = core::RunWithTimeout({"bash", "-c",
                                     "timeout 20 " + gt +
                                         " -- sh -c 'echo first; sleep 0.3; echo second; echo done >&2' >/dev/full; "
                                         "echo \"status=$?\" >&2"},
                                    ro);
  ASSERT_TRUE(shell.ok());
  const std::string& err = shell->stderr_tail;
  EXPECT_NE(err.find("done\n"), std::string::npos) << err;  // the job ran to its end
  EXPECT_NE(err.find("the job's standard output could not be written where it was going: No space left on device "
                     "(after 0 bytes; 13 bytes of the job's output were lost, and the job was left running"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("status=1\n"), std::string::npos) << err;  // the job exited 0; its output was lost

  auto python = core::RunWithTimeout(
      {"bash", "-c",
       "timeout 20 " + gt + " --json-file " + (tmp_ / "full.json") +
           " -- python3 -c 'import time; print(\"first\", flush=True); time.sleep(0.5); print(\"second\", "
           "flush=True)' >/dev/full; echo \"status=$?\" >&2"},
      ro);
  ASSERT_TRUE(python.ok());
  const std::string& perr = python->stderr_tail;
  EXPECT_NE(perr.find("and the job's next write to it failed (EPIPE)"), std::string::npos) << perr;
  EXPECT_NE(perr.find("BrokenPipeError"), std::string::npos) << perr;  // Python saw its write fail
  EXPECT_EQ(perr.find("status=0\n"), std::string::npos) << perr;
  std::string json = ReadAll(tmp_ / "full.json");
  Json j = Json::parse(json, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json << perr;
  ASSERT_EQ(j["runs"][0]["output_lost"].size(), 1u) << json;
  const Json& lost = j["runs"][0]["output_lost"][0];
  EXPECT_EQ(lost.value("stream", ""), "stdout");
  EXPECT_EQ(lost.value("error", ""), "No space left on device");
  // "first" and its newline, which Python may write apart: the pipe is closed after the first piece.
  EXPECT_GE(lost.value("lost_bytes", 0), 5);
  EXPECT_LE(lost.value("lost_bytes", 0), 6);
  EXPECT_TRUE(lost.value("job_write_failed", false));
}

// Failed before: `report BUNDLE` refused a whole bundle whose process.json was gone (a partial
// copy); it is reported from what is left, the loss named.
TEST_F(RunTest, ABundleThatLostItsProcessFileIsStillReported) {
  JobRun r = Run({"sh", "-c", "echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2; exit 1"});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  fs::remove(r.bundle + "/process.json");
  auto report = testing::RunCli(GT_GPUTRIAGE_BIN, {"report", r.bundle}, {"GPUTRIAGE_HOME=" + (tmp_ / "home")});
  EXPECT_EQ(report.status, 0) << report.err;
  EXPECT_NE(report.out.find("illegal memory access"), std::string::npos) << report.out;
  auto json = testing::RunCli(GT_GPUTRIAGE_BIN, {"report", "--format", "json", r.bundle},
                              {"GPUTRIAGE_HOME=" + (tmp_ / "home")});
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("process.json: missing"), std::string::npos) << json.out;
  auto analyzed = testing::RunCli(GT_GPUTRIAGE_BIN, {"analyze", r.bundle}, {"GPUTRIAGE_HOME=" + (tmp_ / "home")});
  EXPECT_LE(analyzed.status, 1) << analyzed.err;
}

// Leftovers of a gputriage killed with SIGKILL are removed by the next run when their writer is
// gone; a live writer's files stay.
TEST_F(RunTest, StalePartialFilesOfKilledRunsAreRemovedByTheNextRun) {
  fs::create_directories(bundles_);
  char host_buf[256] = {};
  gethostname(host_buf, sizeof host_buf - 1);
  std::string host;
  for (char c : std::string(host_buf)) host.push_back(isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-');
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  std::string self_stat = ReadAll("/proc/self/stat");
  std::istringstream fields(self_stat.substr(self_stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;  // field 22: start time in clock ticks
  const std::string live = host + "_" + std::to_string(getpid()) + "_" + field;
  const std::string stale = host + "_" + std::to_string(dead) + "_12345";
  auto put = [&](const std::string& name, size_t bytes) {
    WriteText(bundles_ + "/" + name, std::string(bytes, 'c'));
    return bundles_ + "/" + name;
  };
  std::string stale_core = put(".core.partial-" + stale, 1 << 20);
  std::string stale_tmp = put(".core.partial-" + stale + ".tmp.AbC123", 1 << 20);
  std::string stale_dir = bundles_ + "/.20261203T120000Z-train-77.partial-" + stale + "_XyZ789";
  fs::create_directories(stale_dir);
  WriteText(stale_dir + "/process.json", "{}");
  // A flight-recorder directory of a killed `run --record` (its record files inside).
  std::string stale_record = bundles_ + "/.record.partial-" + stale + "_Rec123";
  fs::create_directories(stale_record);
  WriteText(stale_record + "/gpu-record.77.ring", std::string(4096, 'r'));
  std::string live_core = put(".core.partial-" + live, 1024);
  std::string live_dir = bundles_ + "/.20261203T120000Z-train-78.partial-" + live + "_Qwe456";
  fs::create_directories(live_dir);
  // Another host's leftovers (a bundle directory on a shared filesystem) are not ours to judge.
  std::string other_host = put(".core.partial-otherhost.example_" + std::to_string(dead) + "_12345", 1024);
  // Earlier versions' names carry no writer: removed once a day old, kept while fresh.
  std::string old_legacy = put(".core.partial-" + std::to_string(dead), 1024);
  fs::last_write_time(old_legacy, fs::file_time_type::clock::now() - std::chrono::hours(48));
  std::string new_legacy = put(".core.partial-" + std::to_string(dead + 1), 1024);

  JobRun r = Run({kCrasher, "exit", "0"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const std::string& gone : {stale_core, stale_tmp, stale_dir, stale_record, old_legacy}) {
    EXPECT_FALSE(fs::exists(gone)) << gone;
  }
  for (const std::string& kept : {live_core, live_dir, other_host, new_legacy}) EXPECT_TRUE(fs::exists(kept)) << kept;
  EXPECT_NE(r.err.find("gputriage: removed 5 partial files of runs that were killed"), std::string::npos) << r.err;
}

// Each bundle file and the directory reach the disk before the rename, and the rename after it:
// observed with strace on gputriage itself (not its job, so gputriage can still trace it).
TEST_F(RunTest, BundleFilesAndDirectoryAreFsyncedAroundTheRename) {
  if (system("strace -V >/dev/null 2>&1") != 0) GTEST_SKIP() << "strace is not installed";
  std::string trace = tmp_ / "strace.txt";
  JobRun r = Run({kCrasher, "fpe"}, {}, std::nullopt, {"strace", "-y", "-e", "trace=fsync,rename", "-o", trace});
  ASSERT_FALSE(r.bundle.empty()) << r.err;
  std::string text = ReadAll(trace);
  const std::string rename_call = "rename(\"";
  size_t rename_at = text.find(rename_call + bundles_ + "/.");
  ASSERT_NE(rename_at, std::string::npos) << text;
  std::string staging = text.substr(rename_at + rename_call.size());
  staging = staging.substr(0, staging.find('"'));
  for (const char* file : {"process.json", "stdout.tail", "stderr.tail", "findings.json", "manifest.json"}) {
    EXPECT_LT(text.find(staging + "/" + file + ">) = 0"), rename_at) << file << " not fsynced first\n" << text;
  }
  EXPECT_LT(text.find(staging + ">) = 0"), rename_at) << "staging directory not fsynced first\n" << text;
  EXPECT_NE(text.find(bundles_ + ">) = 0", rename_at), std::string::npos) << "parent not fsynced after\n" << text;
}

// --- Side effects of tracing, named with the way around them. ---

TEST_F(RunTest, LeakSanitizerRefusingToRunUnderPtraceIsNamedWithNoTrace) {
  JobRun traced = Run({kLeak});
  EXPECT_NE(traced.err.find("LeakSanitizer has encountered a fatal error"), std::string::npos) << traced.err;
  EXPECT_NE(traced.err.find("gputriage: note: LeakSanitizer cannot work while gputriage traces the job"),
            std::string::npos)
      << traced.err;
  EXPECT_NE(traced.err.find("--no-trace"), std::string::npos) << traced.err;
  JobRun json = Run({kLeak}, {"--json"});
  Json j = TrailingJson(json.out);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_EQ(j["runs"][0]["tracing_side_effects"][0].value("kind", ""), "lsan-under-ptrace") << j.dump(1);
  JobRun untraced = Run({kLeak}, {"--no-trace"});
  EXPECT_NE(untraced.err.find("ERROR: LeakSanitizer: detected memory leaks"), std::string::npos) << untraced.err;
  EXPECT_EQ(untraced.err.find("gputriage: note:"), std::string::npos) << untraced.err;
}

TEST_F(RunTest, StraceInsideTheJobIsNamedWithNoTrace) {
  if (system("strace -V >/dev/null 2>&1") != 0) GTEST_SKIP() << "strace is not installed";
  JobRun r = Run({"strace", "-o", "/dev/null", "true"});
  EXPECT_NE(r.err.find("Operation not permitted"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gputriage: note: a debugger or tracer inside the job could not use ptrace"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--no-trace"), std::string::npos) << r.err;
  JobRun untraced = Run({"strace", "-o", "/dev/null", "true"}, {"--no-trace"});
  EXPECT_EQ(untraced.status, 0) << untraced.err;
  EXPECT_EQ(untraced.err.find("gputriage: note:"), std::string::npos) << untraced.err;
}

TEST_F(RunTest, SetuidProgramRunWithoutItsPrivilegeIsNamed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a set-user-ID root copy of print_ids";
  if (system("setpriv --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "setpriv (util-linux) is not installed";
  // gputriage runs as nobody (no CAP_SYS_PTRACE); the job is a set-user-ID root program.
  chmod(tmp_.path().c_str(), 0755);
  std::string program = tmp_ / "print_ids";
  fs::copy_file(kPrintIds, program);
  ASSERT_EQ(chown(program.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);
  fs::create_directories(tmp_ / "home");
  fs::create_directories(bundles_);
  chmod((tmp_ / "home").c_str(), 0777);
  chmod(bundles_.c_str(), 0777);
  std::vector<std::string> as_nobody = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  JobRun traced = Run({program}, {}, std::nullopt, as_nobody);
  EXPECT_EQ(traced.out, "uid=65534 euid=65534 gid=65534 egid=65534\n") << traced.err;
  EXPECT_NE(traced.err.find("gputriage: note: " + program +
                            " is set-user-ID root, but a traced program runs without that privilege"),
            std::string::npos)
      << traced.err;
  EXPECT_NE(traced.err.find("--no-trace"), std::string::npos) << traced.err;
  JobRun untraced = Run({program}, {"--no-trace"}, std::nullopt, as_nobody);
  EXPECT_EQ(untraced.out, "uid=65534 euid=0 gid=65534 egid=65534\n") << untraced.err;
  EXPECT_EQ(untraced.status, 0) << untraced.err;
}

// --- Wording. ---

TEST_F(RunTest, ASignalTheProcessSentItselfIsNotSaidToComeFromAnother) {
  for (const char* mode : {"raise", "selfkill"}) {
    SCOPED_TRACE(mode);
    JobRun r = Run({kCrasher, mode});
    ASSERT_FALSE(r.bundle.empty()) << r.err;
    EXPECT_EQ(r.status, 139);
    const Json& c = r.process["classification"];
    EXPECT_EQ(c.value("kind", ""), "signal-sent") << c.dump();
    EXPECT_EQ(c.value("summary", ""),
              "the process sent SIGSEGV to itself (raise(), kill(getpid())), not a memory fault")
        << c.dump();
    EXPECT_EQ(r.err.find("another process"), std::string::npos) << r.err;
  }
  // Sent by the job's shell: another process of the job, named by its pid.
  JobRun shell = Run({"sh", "-c", kCrasher + " hang & sleep 0.5; kill -SEGV $!; wait $!"});
  ASSERT_FALSE(shell.bundle.empty()) << shell.err;
  std::string summary = shell.process["classification"].value("summary", "");
  EXPECT_EQ(summary.rfind("SIGSEGV was sent by another process of the job (pid ", 0), 0u) << summary;
}

TEST_F(RunTest, GputriagesOwnOutputStartsOnANewLine) {
  JobRun json = Run({"sh", "-c", "printf 'no newline'"}, {"--json"});
  EXPECT_EQ(json.out.rfind("no newline\n{\n", 0), 0u) << json.out;
  EXPECT_FALSE(TrailingJson(json.out).is_discarded()) << json.out;
  JobRun summary = Run({"sh", "-c", "printf 'partial line' >&2; exec " + kCrasher + " null >/dev/null 2>&1"});
  EXPECT_EQ(summary.err.rfind("partial line\ngputriage: pid ", 0), 0u) << summary.err;
  // stdout and stderr on one stream (2>&1): the summary follows the job's unfinished stdout line.
  std::string both = tmp_ / "both.txt";
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  ro.extra_env = {"GPUTRIAGE_HOME=" + (tmp_ / "home")};
  auto run = core::RunWithTimeout(
      {"sh", "-c",
       std::string(GT_GPUTRIAGE_BIN) + " run --no-snapshot --bundle-dir " + bundles_ +
           " -- sh -c 'printf out-no-newline; exec " + kCrasher + " null >/dev/null 2>&1' >" + both + " 2>&1"},
      ro);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(ReadAll(both).rfind("out-no-newline\ngputriage: pid ", 0), 0u) << ReadAll(both);
}

}  // namespace
}  // namespace gputriage

namespace gputriage {
namespace {

// A job controls its thread names and file names: an escape sequence in one must reach the
// terminal only through the job's own output, never through gputriage's summary.
TEST_F(RunTest, EscapeSequencesInTheJobsNamesDoNotReachTheTerminalThroughTheSummary) {
  std::string evil = tmp_ / "cr\x1b]0;pwned\x07\x1b[2J";
  fs::copy_file(kCrasher, evil);
  fs::permissions(evil, fs::perms::owner_all);
  JobRun r = Run({evil, "null"});
  EXPECT_EQ(r.status, 139) << r.err;
  EXPECT_NE(r.err.find("gputriage:"), std::string::npos) << r.err;
  std::string ours = r.err.substr(r.err.find("gputriage:"));  // after the job's own "crasher null: stderr"
  EXPECT_EQ(ours.find('\x1b'), std::string::npos) << ours;
  EXPECT_EQ(ours.find('\x07'), std::string::npos) << ours;
  EXPECT_NE(ours.find("\xEF\xBF\xBD"), std::string::npos) << "the names are kept, their controls replaced: " << ours;
}

}  // namespace
}  // namespace gputriage
