// `gputriage run [options] -- CMD ...`: supervise a job; when it fails, write a crash bundle and
// say what happened and where.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "catalog/catalog.h"
#include "cli/common.h"
#include "collect/telemetry.h"
#include "core/fs.h"
#include "core/version.h"
#include "forensics/run_series.h"
#include "store/data_home.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {
namespace {

struct RunFlags {
  forensics::RunRequest request;  // command, repeat, bundle_dir and core come straight from the flags
  std::string timeout;
  std::string core_limit = "4G";
  std::string core;  ///< --core: "zst" (bare --core) or "raw"; "" when not given
  bool json = false;
  std::string json_file;
  bool no_trace = false;
  bool no_snapshot = false;
  bool no_telemetry = false;
  double telemetry_period_s = 0.5;
  bool quiet = false;
};

void PrintToStderr(const std::string& text) { std::fputs(text.c_str(), stderr); }

// libgputriage-record.so beside the binary: <prefix>/lib for <prefix>/bin/gputriage (the build
// tree and scripts/bundle have the same layout).
std::string RecorderLibraryPath() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return (exe.parent_path().parent_path() / "lib" / "libgputriage-record.so").string();
}

int RunJob(RunFlags& flags, CLI::App& app) {
  forensics::RunRequest& request = flags.request;
  request.core = !flags.core.empty();
  request.core_raw = flags.core == "raw";
  // Everything after the first positional belongs to the job; a leading "--" is optional.
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  request.command.insert(request.command.end(), rest.begin(), rest.end());
  // Until the job starts, a failure is gputriage's own: 125, a code the job cannot have produced.
  auto finished = forensics::FinishRunRequest(flags.timeout, flags.core_limit, &request);
  if (!finished.ok()) return Fail(finished.error().message, kExitNotStarted);
  if (request.bundle_dir.empty()) {
    auto home = store::DataHome();
    if (!home.ok()) return Fail(home.error().message + " (use --bundle-dir DIR)", kExitNotStarted);
    request.bundle_dir = *home + "/bundles";
  }
  // The index keeps the bundle's path: an absolute one, so `bundles show/prune` find it from anywhere.
  if (std::error_code ec; !request.bundle_dir.empty() && std::filesystem::path(request.bundle_dir).is_relative()) {
    auto absolute = std::filesystem::absolute(request.bundle_dir, ec);
    if (!ec) request.bundle_dir = absolute.lexically_normal().string();
  }
  const bool json = flags.json || !flags.json_file.empty();
  request.trace = !flags.no_trace;
  if (request.escalate || request.sync_only || request.torch_snapshot) request.record = true;
  if (request.record) request.recorder_library = RecorderLibraryPath();
  request.tool_version = core::kToolVersion;
  if (!flags.no_snapshot) request.take_snapshot = [] { return TakeSnapshot(SnapshotFlags{}); };
  if (!flags.no_telemetry) {
    request.start_telemetry = [helper = ProbeHelperCommand(), period = flags.telemetry_period_s] {
      return collect::StartTelemetry(helper, period);
    };
  }
  request.index_bundle = store::IndexBundleInDefaultStore;
  if (!flags.quiet) request.progress = PrintToStderr;
  if (!flags.quiet && !json) request.summary = PrintToStderr;
  request.error = PrintError;
  request.write_stderr = PrintToStderr;
  forensics::SigpipeGuard sigpipe(&request);  // `| head` closing our output must not kill us first
  auto catalog = catalog::BuiltinCatalog();
  if (!catalog.ok()) return Fail("knowledge base: " + catalog.error().message, kExitNotStarted);
  auto outcome = forensics::RunSeries(request, (*catalog)->errors);
  if (!outcome.ok()) return Fail("run: " + outcome.error().message, kExitNotStarted);
  if (outcome->cannot_execute) return outcome->exit_status;
  if (outcome->verdict && !flags.quiet && !json) PrintToStderr(forensics::VerdictText(*outcome->verdict));
  core::Json result = forensics::ToJson(*outcome, core::kToolVersion);
  if (!flags.json_file.empty()) {
    // The job's stdout stays the job's: the JSON goes to its own file. A file that cannot be
    // written is reported; the status stays the job's.
    if (auto written = core::WriteOutputFile(flags.json_file, result.dump(2) + "\n"); !written.ok())
      PrintError("--json-file " + written.error().message);
  } else if (flags.json) {
    if (outcome->stdout_mid_line) std::fputc('\n', stdout);
    PrintJson(result);
  }
  return outcome->exit_status;
}

}  // namespace

Command RunCommand() {
  return Command{
      "run", "Supervise a job; when it crashes, hangs or fails with a GPU error, write a crash bundle.",
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
            "The job's environment gets PYTHONFAULTHANDLER=1 unless it is set already (only Python "
            "reads it): a crash in native code then leaves every Python thread's stack in "
            "stderr.tail.\n\n"
            "Exit status: the job's own (128+N when signal N killed it; 127 when CMD is not "
            "found, 126 when it cannot be executed). With --repeat, the status of the first "
            "failed run (0 when none failed). 124 when --timeout ended the job, like GNU timeout. "
            "125 when gputriage failed before the job started (an unknown option or bad value, "
            "supervision that cannot start), like timeout and docker run: a code the job did not "
            "produce. A bundle that cannot be written is reported on stderr and in the JSON "
            "(bundle_error) and does not change the status.");
        app.footer(
            "Exit status: the job's own; 124 when --timeout ended it; 125 when gputriage failed before the job "
            "started.");
        app.add_option("--repeat", flags->request.repeat,
                       "Run the job N times and report passes, failures and distinct crash "
                       "signatures: deterministic, flaky (with the failure rate) or not "
                       "reproduced. One bundle per distinct signature")
            ->type_name("N");
        app.add_option("--timeout", flags->timeout,
                       "Treat a job still running after DURATION (90, 30s, 10m, 2h) as hung: dump every thread's "
                       "stack, SIGTERM all its processes (detached ones too), SIGKILL what is left after 2 s")
            ->type_name("DURATION");
        app.add_option("--bundle-dir", flags->request.bundle_dir,
                       "Where crash bundles go (default: $GPUTRIAGE_HOME/bundles, else "
                       "$XDG_DATA_HOME/gputriage/bundles, else ~/.local/share/gputriage/bundles)")
            ->type_name("DIR");
        app.add_flag("--core{zst}", flags->core,
                     "Also write an ELF core file of the first crashed process into the bundle, compressed "
                     "with zstd as core.zst (`analyze` reads it as it is; `zstd -d` gives the core for gdb); "
                     "--core=raw keeps it uncompressed as `core`. Off by default: a GPU job's memory can be "
                     "hundreds of GB")
            ->check(CLI::IsMember({"zst", "raw"}));
        app.add_option("--core-limit", flags->core_limit,
                       "Stop writing memory to the core after SIZE (default 4G); device "
                       "mappings are never dumped")
            ->type_name("SIZE");
        app.add_flag("--record", flags->request.record,
                     "Load the GPU flight recorder into the job (HIP: LD_PRELOAD; CUDA: CUDA_INJECTION64_PATH + "
                     "CUPTI). Launches, allocations, copies, synchronisations and every call's return code go to "
                     "gpu_calls.json, with the launches in flight when a GPU error surfaced; a job that exits 0 "
                     "after ignored GPU errors gets a bundle too");
        app.add_flag("--escalate", flags->request.escalate,
                     "When the job fails with an asynchronous GPU error (illegal address, page fault, device "
                     "assert), rerun it with synchronous launches and the recorder to name the faulting launch, then "
                     "under compute-sanitizer memcheck for that kernel (NVIDIA) or the ROCm debug agent (AMD) for "
                     "file:line and address; writes escalation.json. Implies --record");
        app.add_flag("--sync", flags->request.sync_only,
                     "Like --escalate, but only the synchronous rerun (no compute-sanitizer)");
        app.add_option("--torch-snapshot", flags->request.torch_snapshot,
                       "Where the job writes PyTorch's allocator snapshot when it fails (_record_memory_history() at "
                       "start, _dump_snapshot(PATH) in its exception handler): read after the run (python3, no class "
                       "loaded) to place a faulting address among the tensors. Implies --record")
            ->type_name("PATH");
        app.add_flag("--json", flags->json,
                     "After the job, print {runs:[{exit_status, failed, timed_out, classification, signature, "
                     "bundle, bundle_error, signal, si_code, fault_address, crashed_thread, tracing_side_effects}], "
                     "verdict} as JSON on stdout (after the job's own stdout, on a line of its own)");
        app.add_option("--json-file", flags->json_file,
                       "Write the --json result to FILE instead of stdout, so it does not share stdout with the "
                       "job's own output (implies --json)")
            ->type_name("FILE");
        app.add_flag("--no-trace", flags->no_trace,
                     "Do not use ptrace (no registers, stacks or disassembly; exit status, output and "
                     "kernel log only): for set-user-ID programs, LeakSanitizer, strace or gdb in the job");
        app.add_flag("--no-snapshot", flags->no_snapshot,
                     "Do not add a snapshot of the node (snapshot.json) to the bundle");
        app.add_option("--telemetry-period", flags->telemetry_period_s,
                       "Seconds between GPU telemetry samples (temperature, power, clocks, memory used, "
                       "throttle reasons of every GPU, by NVML or amdgpu sysfs in a helper process) kept "
                       "in the bundle's telemetry.csv")
            ->capture_default_str()
            ->check(CLI::Range(0.1, 10.0));
        app.add_flag("--no-telemetry", flags->no_telemetry, "Do not sample GPU telemetry during the run");
        app.add_flag("-q,--quiet", flags->quiet, "Print nothing of gputriage's own on stderr except errors");
        app.add_option("command", flags->request.command, "The job: CMD [ARGS...]; put -- before it")->type_name("CMD");
        app.prefix_command();
        CLI::App* self = &app;
        return [flags, self]() { return RunJob(*flags, *self); };
      }};
}

}  // namespace gputriage::cli
