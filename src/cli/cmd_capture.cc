// `gputriage capture PID`: attach to a running (hung) process, take the hang bundle `run
// --timeout` takes, and let the process go on.
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "cli/common.h"
#include "core/terminal.h"
#include "core/text.h"
#include "core/version.h"
#include "forensics/capture_running.h"
#include "store/data_home.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {
namespace {

struct CaptureFlags {
  std::string pid;
  std::string bundle_dir;
  std::string core_limit = "4G";
  std::string stop_wait = "1s";
  bool core = false;
  bool tree = false;
  bool json = false;
  bool no_snapshot = false;
  bool quiet = false;
};

// The exit code for a capture that failed before anything was stopped.
int ExitFor(core::ErrorCode code) { return code == core::ErrorCode::kInvalidArgument ? kExitUsage : kExitNotCaptured; }

core::Json ToJson(const forensics::CaptureRunningOutcome& o) {
  core::Json out = {{"schema_version", 1},
                    {"tool_version", core::kToolVersion},
                    {"pid", o.pid},
                    {"pid_was_thread", o.pid_was_thread},
                    {"capture", core::ToJson(core::BundleManifest{.capture = o.capture})["capture"]},
                    {"bundle", o.bundle.empty() ? core::Json(nullptr) : core::Json(o.bundle)},
                    {"detach_problems", o.detach_problems}};
  if (!o.bundle_error.empty()) out["bundle_error"] = o.bundle_error;
  if (!o.index_error.empty()) out["index_error"] = o.index_error;
  if (o.run.classification) {
    out["classification"] = {{"kind", o.run.classification->kind},
                             {"category", std::string(core::CategoryName(o.run.classification->category))},
                             {"summary", o.run.classification->summary}};
  }
  out["signature"] = o.run.signature;
  core::Json threads = core::Json::array();
  if (const core::ProcessReport* p = o.run.primary()) {
    for (const core::ThreadState& t : p->threads) {
      core::Json j = {{"tid", t.tid}, {"name", t.name}, {"frames", t.frames.size()}};
      // The innermost frame: its function, else module+offset (a stripped driver), else null.
      core::Json top(nullptr);
      if (!t.frames.empty()) {
        const core::Frame& f = t.frames.front();
        if (!f.function.empty()) {
          top = f.function;
        } else if (!f.module.empty() && f.offset) {
          top = fmt::format("{}+{}", std::filesystem::path(f.module).filename().string(), core::Hex(*f.offset));
        }
      }
      j["top"] = std::move(top);
      threads.push_back(std::move(j));
    }
  }
  out["threads"] = threads;
  core::Json not_collected = core::Json::array();
  for (const core::NotCollected& n : o.run.outcome.not_collected) {
    not_collected.push_back({{"item", n.item}, {"reason", n.reason}});
  }
  out["not_collected"] = not_collected;
  return out;
}

int Capture(const CaptureFlags& flags) {
  std::optional<int64_t> pid = core::ParseI64(flags.pid);
  if (!pid || *pid <= 0 || *pid > std::numeric_limits<int>::max()) {
    return Fail(fmt::format("capture: '{}' is not a process id (a positive number)", flags.pid), kExitUsage);
  }
  forensics::CaptureRunningRequest request;
  request.pid = static_cast<int>(*pid);
  request.tree = flags.tree;
  request.core = flags.core;
  std::optional<uint64_t> cap = core::ParseByteSize(flags.core_limit);
  if (!cap)
    return Fail(fmt::format("capture: --core-limit '{}' is not a size (examples: 512M, 4G)", flags.core_limit),
                kExitUsage);
  request.core_cap_bytes = *cap;
  std::optional<double> wait_s = core::ParseDurationSeconds(flags.stop_wait);
  if (!wait_s || *wait_s <= 0 || *wait_s > 600) {
    return Fail(
        fmt::format("capture: --stop-wait '{}' is not a duration up to 10m (examples: 500ms, 2s)", flags.stop_wait),
        kExitUsage);
  }
  request.stop_wait = std::chrono::milliseconds(static_cast<int64_t>(*wait_s * 1000));
  request.bundle_dir = flags.bundle_dir;
  if (request.bundle_dir.empty()) {
    auto home = store::DataHome();
    if (!home.ok()) return Fail(home.error().message + " (use --bundle-dir DIR)", kExitUsage);
    request.bundle_dir = *home + "/bundles";
  }
  // The index keeps the bundle's path: an absolute one, so `bundles show/prune` find it from anywhere.
  if (std::error_code ec; std::filesystem::path(request.bundle_dir).is_relative()) {
    auto absolute = std::filesystem::absolute(request.bundle_dir, ec);
    if (!ec) request.bundle_dir = absolute.lexically_normal().string();
  }
  request.tool_version = core::kToolVersion;
  if (!flags.no_snapshot) request.take_snapshot = [] { return TakeSnapshot(SnapshotFlags{}); };
  request.index_bundle = store::IndexBundleInDefaultStore;

  auto outcome = forensics::CaptureRunning(request);
  if (!outcome.ok()) return Fail(outcome.error().message, ExitFor(outcome.error().code));
  if (!flags.quiet && !flags.json) {
    std::string text = core::SanitizeForTerminal(forensics::CaptureSummaryText(*outcome), /*keep_newlines=*/true);
    std::fputs(text.c_str(), stderr);
  }
  if (flags.json) PrintJson(ToJson(*outcome));
  if (outcome->bundle.empty()) {
    return Fail("capture: bundle not written: " + outcome->bundle_error, kExitInternal);
  }
  if (outcome->capture.exited_during_capture.value_or(false)) {
    PrintError(
        fmt::format("warning: pid {} exited during the capture; the bundle has what was taken before", outcome->pid));
    return kExitCaptureIncomplete;
  }
  return kExitOk;
}

}  // namespace

Command CaptureCommand() {
  return Command{
      "capture", "Attach to a running (hung) process, write its hang bundle, and let it go on.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<CaptureFlags>();
        app.description(
            "Usage: gputriage capture [OPTIONS] PID\n\n"
            "For a job that is already hung and was not started under `gputriage run`. Each thread "
            "of PID is attached with PTRACE_SEIZE and stopped with PTRACE_INTERRUPT (no signal is "
            "sent; threads that appear meanwhile are attached too), every thread's registers and "
            "symbolised stack and the memory map are taken, and every thread is detached with "
            "PTRACE_DETACH and no signal: the process continues as before. Then the bundle "
            "`run --timeout` writes is written (manifest.json with a `capture` member, "
            "process.json, kmsg.log with the kernel-log records since the process started, "
            "snapshot.json, libraries.json, findings.json; classification `captured-running`) "
            "under --bundle-dir and indexed. Needs ptrace permission on PID: the same user "
            "(and kernel.yama.ptrace_scope 0) or CAP_SYS_PTRACE (root), and no other tracer "
            "(gdb, strace) attached.\n\n"
            "Exit status: 0 captured, detached, bundle written; 2 usage error (not a pid, PID is "
            "gputriage itself or its parent); 3 the bundle could not be written; 4 nothing "
            "captured: no such process, a zombie, a kernel thread, ptrace refused (the message "
            "says why: another tracer and its pid, the uids, Yama, CAP_SYS_PTRACE); 5 the "
            "process exited during the capture (the bundle has what was taken).");
        app.footer(
            "Exit status: 0 captured; 2 usage error; 3 bundle not written; 4 not captured (no such process, "
            "zombie, ptrace refused); 5 the process exited during the capture.");
        app.add_option("pid", flags->pid, "The process to capture (a thread id captures its process)")
            ->required()
            ->type_name("PID");
        app.add_option("--bundle-dir", flags->bundle_dir,
                       "Where the bundle goes (default: $GPUTRIAGE_HOME/bundles, else "
                       "$XDG_DATA_HOME/gputriage/bundles, else ~/.local/share/gputriage/bundles)")
            ->type_name("DIR");
        app.add_flag("--tree", flags->tree,
                     "Also capture the process's descendants (each stopped and let go in turn; 8 processes "
                     "in all at most), as hang dumps in process.json");
        app.add_flag("--core", flags->core,
                     "Also write an ELF core of the process into the bundle (while it is stopped: a large "
                     "process stays stopped for as long as writing takes)");
        app.add_option("--core-limit", flags->core_limit,
                       "Stop writing memory to the core after SIZE (default 4G); device mappings are never read")
            ->type_name("SIZE");
        app.add_option("--stop-wait", flags->stop_wait,
                       "How long a thread gets to stop (default 1s); one blocked in the kernel (a GPU driver "
                       "call) stops only when it returns, and is listed as not stopped")
            ->type_name("DURATION");
        app.add_flag("--json", flags->json,
                     "Print {pid, capture, classification, signature, threads, bundle, not_collected} as JSON on "
                     "stdout instead of the summary on stderr");
        app.add_flag("--no-snapshot", flags->no_snapshot,
                     "Do not add a snapshot of the node (snapshot.json) to the bundle");
        app.add_flag("-q,--quiet", flags->quiet, "Print nothing of gputriage's own on stderr except errors");
        return [flags]() { return Capture(*flags); };
      }};
}

}  // namespace gputriage::cli
