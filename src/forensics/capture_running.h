// `gputriage capture PID`: the hang bundle of a process that is already running (a production
// job that hung outside `gputriage run`). Each thread is attached with PTRACE_SEIZE and stopped
// with PTRACE_INTERRUPT (no signal is sent, nothing the process can see changes), its stack is
// taken as `run --timeout` takes it (CaptureLive), and every thread is let go with PTRACE_DETACH
// and no signal, before the snapshot and the bundle are written.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/bundle.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "forensics/crash_bundle.h"

namespace gputriage::forensics {

struct CaptureRunningRequest {
  int pid = 0;        ///< the process (a thread id names its process)
  bool tree = false;  ///< also capture its descendants (at most max_processes in all)
  size_t max_processes = 8;
  std::string bundle_dir;  ///< where the bundle goes; created when missing
  bool core = false;       ///< also write an ELF core of the process (while it is stopped)
  uint64_t core_cap_bytes = 4ull << 30;
  std::string kmsg_path = "/dev/kmsg";  ///< empty: no kernel log
  /// How long a thread gets to stop after PTRACE_INTERRUPT; a thread blocked in the kernel (a
  /// GPU driver call in uninterruptible sleep) stops only when it returns to user space.
  std::chrono::milliseconds stop_wait{1000};
  std::string tool_version;
  /// The node's snapshot for the bundle, taken after the process was let go; null: none
  /// (--no-snapshot).
  std::function<core::Result<core::Snapshot>()> take_snapshot;
  /// Records the written bundle in the history database; may be null.
  std::function<core::Result<int64_t>(const core::BundleRecord& record)> index_bundle;
};

struct CaptureRunningOutcome {
  int pid = 0;  ///< the process captured (the thread group of the pid asked for)
  /// The pid asked for was a thread of `pid`, not a process.
  bool pid_was_thread = false;
  RunAssessment run;  ///< hang_dumps: the process first, then its descendants
  core::BundleCapture capture;
  std::string bundle;        ///< "" when not written
  std::string bundle_error;  ///< why it was not written
  std::string index_error;   ///< written, but not indexed in the history database
  /// Problems letting the process go: a thread that could not be detached (it is released
  /// when gputriage exits, as the kernel detaches every tracee of an exiting tracer).
  std::vector<std::string> detach_problems;
};

/// Captures the running process `request.pid` (and with `tree` its descendants), lets it go, and
/// writes its bundle. Fails, before anything was stopped, with a message naming the pid:
/// kInvalidArgument when the pid is not a positive number, is gputriage itself or its parent;
/// kNotFound when there is no such process, it is a zombie, or it exited before a thread could
/// be stopped; kPermissionDenied when ptrace is refused (saying why: another tracer and its pid,
/// the uids, kernel.yama.ptrace_scope, CAP_SYS_PTRACE); kUnsupported for a kernel thread. A
/// process that exits during the capture is an outcome (capture.exited_during_capture) with
/// what was taken; a bundle that cannot be written is an outcome with bundle_error.
core::Result<CaptureRunningOutcome> CaptureRunning(const CaptureRunningRequest& request);

/// Why PTRACE_SEIZE of `pid` failed with `err`: the tracer already attached (TracerPid of
/// /proc/PID/status, with its name), the uids when they differ and this process lacks
/// CAP_SYS_PTRACE, kernel.yama.ptrace_scope, a set-user-ID (non-dumpable) process, seccomp.
std::string PtraceRefusalReason(int pid, int err);

/// The summary `capture` prints on stderr: what was captured, where the main thread waits, what
/// was not collected, and the bundle.
std::string CaptureSummaryText(const CaptureRunningOutcome& outcome);

}  // namespace gputriage::forensics
