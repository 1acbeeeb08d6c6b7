// `gputriage run [--repeat N] [--timeout D] [--bundle-dir DIR] [--core] [--json] -- CMD ...`:
// supervise a job; when it fails, write a crash bundle and say what happened and where.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "cli/common.h"
#include "core/clock.h"
#include "core/text.h"
#include "core/version.h"
#include "forensics/crash_bundle.h"
#include "core/signals.h"
#include "kb/analysis.h"
#include "kb/signature.h"
#include "store/data_home.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {
namespace {

using core::Json;

struct RunFlags {
  std::vector<std::string> command;
  int repeat = 1;
  std::string timeout;
  std::string bundle_dir;
  bool json = false;
  bool core = false;
  std::string core_limit = "4G";
  bool no_trace = false;
  bool no_snapshot = false;
  bool quiet = false;
};

struct RunResult {
  int status = 0;
  bool failed = false;
  std::string kind, category, summary, signature, bundle;
  Json process_summary;
};

void Progress(const RunFlags& flags, const std::string& text) {
  if (!flags.quiet) std::fputs(text.c_str(), stderr);
}

std::string IndexBundle(const forensics::RunAssessment& run, const std::string& path,
                        const std::vector<std::string>& argv) {
  auto db = store::DefaultDatabasePath();
  if (!db.ok()) return db.error().message;
  auto opened = store::SnapshotStore::Open(*db);
  if (!opened.ok()) return opened.error().message;
  store::BundleRow row;
  row.created_at = core::FormatUtcIso(core::NowEpochSeconds());
  row.path = path;
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  row.command = core::SanitizeUtf8(command);
  row.exit_status = run.outcome.ShellStatus();
  if (const core::ProcessReport* p = run.primary(); p && p->signal) {
    row.signal = core::SignalName(*p->signal);
  }
  row.kind = run.classification->kind;
  row.category = std::string(core::CategoryName(run.classification->category));
  row.signature = run.signature;
  row.summary = run.classification->summary;
  auto saved = opened->SaveBundle(row);
  return saved.ok() ? "" : saved.error().message;
}

// What runs of the same failure group by. A GPU failure's host stack is all libcuda or
// libamdhip64 frames, so when the job's stderr or kernel log names a GPU error the signature is
// the GPU side: the runtime's error code and the failing kernel ("gpu: cudaErrorAssert in
// indexFuncSmallIndex"). Otherwise a crash keeps its host signature (signal and top frames), and
// a failure without a stack (timeout, error exit) its error line normalised (numbers, addresses,
// pids, sizes and shapes blanked).
std::string RunSignature(const forensics::RunAssessment& run) {
  kb::SignatureScanner scanner;
  for (std::string_view line : core::Split(run.outcome.stderr_tail, '\n')) {
    if (scanner.WantedPattern().empty()) break;
    scanner.Line(line);
  }
  for (const forensics::CorrelatedRecord& r : run.kernel_log) {
    if (scanner.WantedPattern().empty()) break;
    scanner.Line(r.record.message);
  }
  kb::GpuSignature gpu = scanner.Finish(nullptr);
  if (!gpu.empty()) return "gpu: " + gpu.Key();
  const core::ProcessReport* p = run.primary();
  if (p && !p->threads.empty() && !run.outcome.timed_out) return run.signature;
  return run.classification->kind + " " + kb::NormalizeLine(run.classification->summary);
}

// One supervised run; writes a bundle when it failed and `want_bundle` says so.
core::Result<RunResult> RunOnce(const RunFlags& flags, const std::string& bundle_dir,
                                std::optional<double> timeout_s, uint64_t core_cap,
                                const std::function<bool(const std::string&)>& want_bundle) {
  forensics::SuperviseOptions options;
  options.argv = flags.command;
  if (timeout_s) options.timeout = std::chrono::milliseconds(static_cast<int64_t>(*timeout_s * 1000));
  options.trace = !flags.no_trace;
  if (flags.core) {
    if (auto made = store::MakeDirectories(bundle_dir, 0700); !made.ok()) return made.error();
    options.core_path = fmt::format("{}/.core.partial-{}", bundle_dir, getpid());
    options.core_size_cap_bytes = core_cap;
  }
  GT_ASSIGN_OR_RETURN(forensics::SuperviseOutcome outcome, forensics::Supervise(options));
  RunResult result;
  result.status = outcome.ShellStatus();
  if (outcome.exec_errno) {
    int err = *outcome.exec_errno;
    PrintError(fmt::format("{}: {}", flags.command[0],
                           err == ENOENT ? "command not found" : std::strerror(err)));
    result.kind = "cannot-execute";
    return result;
  }
  forensics::RunAssessment run = forensics::Assess(std::move(outcome));
  if (!run.failed()) {
    if (run.outcome.core_file) unlink(run.outcome.core_file->c_str());
    if (result.status != 0 && !flags.json) {
      Progress(flags, fmt::format("gputriage: job exited with status {}; no crash and no known "
                                  "error in its output, so no bundle was written\n", result.status));
    }
    return result;
  }
  result.failed = true;
  run.signature = RunSignature(run);
  result.kind = run.classification->kind;
  result.category = std::string(core::CategoryName(run.classification->category));
  result.summary = run.classification->summary;
  result.signature = run.signature;
  if (want_bundle(run.signature)) {
    forensics::BundleInput input;
    input.parent_dir = bundle_dir;
    input.argv = flags.command;
    input.tool_version = core::kToolVersion;
    if (flags.no_snapshot) {
      input.snapshot_missing_reason = "--no-snapshot";
    } else {
      SnapshotFlags snapshot_flags;
      auto snapshot = TakeSnapshot(snapshot_flags);
      if (snapshot.ok()) {
        input.snapshot = std::move(*snapshot);
      } else {
        input.snapshot_missing_reason = snapshot.error().message;
      }
    }
    auto written = forensics::WriteBundle(run, input);
    if (!written.ok()) {
      PrintError("crash bundle not written: " + written.error().message);
    } else {
      result.bundle = written->path;
      if (std::string err = IndexBundle(run, written->path, flags.command); !err.empty()) {
        PrintError("crash bundle written but not indexed in the store: " + err);
      }
    }
  } else if (run.outcome.core_file) {
    unlink(run.outcome.core_file->c_str());
  }
  if (!flags.json) Progress(flags, forensics::RunSummaryText(run, result.bundle));
  Json process = core::ToJson(forensics::ProcessFileOf(run));
  result.process_summary = {{"signal", process["signal"]},
                            {"si_code", process["si_code"]},
                            {"fault_address", process["fault_address"]},
                            {"crashed_thread", process["crashed_thread"]}};
  return result;
}

Json ResultJson(const RunResult& r, int index) {
  Json j = {{"run", index}, {"exit_status", r.status}, {"failed", r.failed}};
  if (r.failed) {
    j["classification"] = {{"kind", r.kind}, {"category", r.category}, {"summary", r.summary}};
    j["signature"] = r.signature;
    j["bundle"] = r.bundle.empty() ? Json(nullptr) : Json(r.bundle);
    j.update(r.process_summary);
  }
  return j;
}

int RunJob(RunFlags& flags, CLI::App& app) {
  // Everything after the first positional belongs to the job; a leading "--" is optional.
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  flags.command.insert(flags.command.end(), rest.begin(), rest.end());
  if (flags.command.empty()) {
    PrintError("run: no command given (usage: gputriage run [OPTIONS] -- CMD [ARGS...])");
    return kExitUsage;
  }
  if (flags.repeat < 1 || flags.repeat > 10000) {
    PrintError(fmt::format("run: --repeat must be between 1 and 10000, not {}", flags.repeat));
    return kExitUsage;
  }
  std::optional<double> timeout_s;
  if (!flags.timeout.empty()) {
    timeout_s = core::ParseDurationSeconds(flags.timeout);
    if (!timeout_s || *timeout_s <= 0) {
      PrintError(fmt::format("run: --timeout '{}' is not a duration (examples: 90, 30s, 500ms, 10m, 2h)",
                             flags.timeout));
      return kExitUsage;
    }
  }
  auto core_cap = core::ParseByteSize(flags.core_limit);
  if (!core_cap) {
    PrintError(fmt::format("run: --core-limit '{}' is not a size (examples: 512M, 4G)", flags.core_limit));
    return kExitUsage;
  }
  std::string bundle_dir = flags.bundle_dir;
  if (bundle_dir.empty()) {
    auto home = store::DataHome();
    if (!home.ok()) {
      PrintError(home.error().message + " (use --bundle-dir DIR)");
      return kExitInternal;
    }
    bundle_dir = *home + "/bundles";
  }

  std::map<std::string, int> signature_counts;
  std::vector<std::string> signature_order;
  auto first_of_signature = [&](const std::string& signature) {
    return signature_counts.find(signature) == signature_counts.end();
  };
  std::map<std::string, std::string> bundle_of_signature;
  Json runs = Json::array();
  int passes = 0;
  std::optional<int> first_failure_status;
  int last_status = 0;
  for (int i = 1; i <= flags.repeat; ++i) {
    if (flags.repeat > 1) Progress(flags, fmt::format("gputriage: run {}/{}\n", i, flags.repeat));
    auto result = RunOnce(flags, bundle_dir, timeout_s, *core_cap, first_of_signature);
    if (!result.ok()) {
      PrintError("run: " + result.error().message);
      return kExitInternal;
    }
    last_status = result->status;
    if (result->kind == "cannot-execute") return result->status;
    if (result->failed) {
      if (!signature_counts.count(result->signature)) signature_order.push_back(result->signature);
      ++signature_counts[result->signature];
      if (!result->bundle.empty()) bundle_of_signature[result->signature] = result->bundle;
      if (!first_failure_status) first_failure_status = result->status;
    } else if (result->status == 0) {
      ++passes;
    }
    runs.push_back(ResultJson(*result, i));
  }
  int failures = 0;
  for (auto& [sig, count] : signature_counts) failures += count;
  Json out = {{"schema_version", 1}, {"tool_version", core::kToolVersion}, {"runs", runs}};
  if (flags.repeat > 1) {
    std::string verdict = failures == 0              ? "not-reproduced"
                          : failures == flags.repeat ? "deterministic"
                                                     : "flaky";
    Json signatures = Json::array();
    for (const std::string& sig : signature_order) {
      signatures.push_back({{"signature", sig}, {"count", signature_counts[sig]}});
    }
    // Each bundle learns how the whole series went (analyze and report use it for the verdict).
    for (const auto& [sig, path] : bundle_of_signature) {
      Json repeat = {{"runs", flags.repeat},
                     {"passes", passes},
                     {"failures", failures},
                     {"same_signature", signature_counts[sig]},
                     {"distinct_signatures", signature_order.size()},
                     {"verdict", verdict}};
      std::ofstream file(path + "/repeat.json");
      file << repeat.dump(2) << "\n";
      if (!file.flush()) PrintError(fmt::format("{}/repeat.json: could not be written", path));
    }
    out["verdict"] = {{"verdict", verdict},
                      {"runs", flags.repeat},
                      {"passes", passes},
                      {"failures", failures},
                      {"other_nonzero_exits", flags.repeat - passes - failures},
                      {"failure_rate", static_cast<double>(failures) / flags.repeat},
                      {"distinct_signatures", signatures}};
    if (!flags.json) {
      std::string text;
      if (verdict == "not-reproduced") {
        text = fmt::format("gputriage: not reproduced: {} of {} runs passed", passes, flags.repeat);
        if (passes != flags.repeat) text += fmt::format(", {} exited non-zero without a crash", flags.repeat - passes);
        text += "\n";
      } else if (verdict == "deterministic") {
        text = fmt::format("gputriage: deterministic: {} of {} runs failed", failures, flags.repeat);
        text += signature_order.size() == 1
                    ? " with the same signature\n"
                    : fmt::format(" but with {} different signatures (a race or memory corruption?)\n",
                                  signature_order.size());
      } else {
        text = fmt::format("gputriage: flaky: {} of {} runs failed ({:.0f}%)\n", failures,
                           flags.repeat, 100.0 * failures / flags.repeat);
      }
      for (const std::string& sig : signature_order) {
        text += fmt::format("  {:>4}x  {}\n", signature_counts[sig], sig);
      }
      Progress(flags, text);
    }
  }
  if (flags.json) PrintJson(out);
  return flags.repeat > 1 ? first_failure_status.value_or(last_status) : last_status;
}

}  // namespace

Command RunCommand() {
  return Command{
      "run",
      "Supervise a job; when it crashes, hangs or fails with a GPU error, write a crash bundle.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<RunFlags>();
        app.description(
            "Usage: gputriage run [OPTIONS] -- CMD [ARGS...]\n\n"
            "Runs CMD as a child and keeps the evidence when it dies. Output passes through "
            "unchanged (the last 1 MiB of stdout and of stderr is kept). The whole process tree "
            "is followed with ptrace (PTRACE_SEIZE, no system-call tracing): on SIGSEGV, SIGBUS, "
            "SIGILL, SIGFPE, SIGABRT, SIGTRAP or SIGSYS in any process, before it dies, its "
            "siginfo, every thread's registers and symbolised stack, the disassembly at the "
            "faulting instruction and its memory map are captured; then the signal proceeds. "
            "A non-zero exit with a GPU runtime error or Python traceback in stderr, a SIGKILL "
            "(the OOM killer is named when the kernel log shows it) and a --timeout are failures "
            "too. Kernel-log records written during the run are saved and tied to the job's "
            "pids (NVIDIA Xid, amdgpu VM faults). A failed run writes a bundle directory "
            "(manifest.json, process.json, stdout.tail, stderr.tail, kmsg.log, snapshot.json, "
            "findings.json) under --bundle-dir, indexes it, and prints a summary on stderr.\n\n"
            "Exit status: the job's own (128+N when signal N killed it; 127 when CMD is not "
            "found, 126 when it cannot be executed). With --repeat, the status of the first "
            "failed run (0 when none failed).");
        app.add_option("--repeat", flags->repeat,
                       "Run the job N times and report passes, failures and distinct crash "
                       "signatures: deterministic, flaky (with the failure rate) or not "
                       "reproduced. One bundle per distinct signature")
            ->type_name("N");
        app.add_option("--timeout", flags->timeout,
                       "Treat a job still running after DURATION (90, 30s, 10m, 2h) as hung: "
                       "dump every thread's stack, then SIGTERM the tree, SIGKILL after 2 s")
            ->type_name("DURATION");
        app.add_option("--bundle-dir", flags->bundle_dir,
                       "Where crash bundles go (default: $GPUTRIAGE_HOME/bundles, else "
                       "$XDG_DATA_HOME/gputriage/bundles, else ~/.local/share/gputriage/bundles)")
            ->type_name("DIR");
        app.add_flag("--core", flags->core,
                     "Also write an ELF core file of the first crashed process into the bundle "
                     "(off by default: a GPU job's memory can be hundreds of GB)");
        app.add_option("--core-limit", flags->core_limit,
                       "Stop writing memory to the core after SIZE (default 4G); device "
                       "mappings are never dumped")
            ->type_name("SIZE");
        app.add_flag("--json", flags->json,
                     "After the job, print {runs:[{exit_status, failed, classification, "
                     "signature, bundle, signal, si_code, fault_address, crashed_thread}], "
                     "verdict} as JSON on stdout (after the job's own stdout)");
        app.add_flag("--no-trace", flags->no_trace,
                     "Do not use ptrace (no registers, stacks or disassembly; exit status, "
                     "output and kernel log only)");
        app.add_flag("--no-snapshot", flags->no_snapshot,
                     "Do not add a snapshot of the node (snapshot.json) to the bundle");
        app.add_flag("-q,--quiet", flags->quiet, "Print nothing of gputriage's own on stderr except errors");
        app.add_option("command", flags->command, "The job: CMD [ARGS...]; put -- before it")
            ->type_name("CMD");
        app.prefix_command();
        CLI::App* self = &app;
        return [flags, self]() { return RunJob(*flags, *self); };
      }};
}

}  // namespace gputriage::cli
