// `gputriage run`'s engine: start a job, pass its output through, follow its whole process
// tree with ptrace (PTRACE_SEIZE, no system-call tracing: the job only stops at signals and
// process events), and capture any process that takes a fatal signal before it dies. The
// supervisor is the job's child subreaper while it runs, so every process the job starts stays
// below it (double-forked and setsid'd ones too) and can be found, signalled and reaped.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/process.h"
#include "core/result.h"
#include "forensics/trace_effects.h"
#include "kmsg/kmsg.h"

namespace gputriage::forensics {

struct SuperviseOptions {
  std::vector<std::string> argv;  ///< the job; argv[0] is looked up in PATH like a shell does
  /// "NAME=value" entries set in the job's environment (replacing a variable of that name);
  /// the rest is this process's environment.
  std::vector<std::string> env_overrides;
  /// Stop the job after this long: dump every thread's stack, SIGTERM every process of the
  /// tree, SIGKILL what is left after `kill_grace`.
  std::optional<std::chrono::milliseconds> timeout;
  /// Also how long the processes left after the job's main process exited, following a SIGTERM,
  /// SIGINT or SIGHUP sent to the supervisor, get between SIGTERM and SIGKILL.
  std::chrono::milliseconds kill_grace{2000};
  bool trace = true;                    ///< false: no ptrace at all (exit status and logs only)
  std::string kmsg_path = "/dev/kmsg";  ///< empty: do not read the kernel log
  size_t tail_bytes = 1u << 20;         ///< kept of stdout and of stderr, each (the last bytes)
  size_t max_captures = 4;              ///< crashed processes captured per run
  /// When set, the first crashed process is also written as an ELF core file here (capped).
  std::optional<std::string> core_path;
  uint64_t core_size_cap_bytes = 4ull << 30;
  int stdout_fd = 1;  ///< where the job's stdout is passed through
  int stderr_fd = 2;
  /// Whether the job starts with SIGPIPE ignored; nullopt: as this process had it when
  /// Supervise was called (what the job would inherit without a supervisor).
  std::optional<bool> job_ignores_sigpipe;
};

/// One of the job's output streams could not be passed on to where it was going.
struct OutputLoss {
  int error = 0;                 ///< errno of the failed write (ENOSPC, EIO, EFBIG, ...)
  uint64_t passed_on_bytes = 0;  ///< what reached the destination before
  uint64_t lost_bytes = 0;       ///< the job's output after that, read and not passed on
  /// The supervisor closed its end of the job's pipe, so the job's next write to the stream
  /// failed (EPIPE) as its write to the destination would have. Only when every process of the
  /// job ignored SIGPIPE: otherwise closing it would have killed the job with a signal the
  /// disk error would not have sent, and the output was read and dropped instead.
  bool job_write_failed = false;
};

struct SuperviseOutcome {
  int root_pid = 0;
  std::optional<int> exit_code;    ///< the job exited normally
  std::optional<int> term_signal;  ///< the job was killed by this signal
  bool timed_out = false;
  /// Not a supervised run: `gputriage capture` attached to a process that was already running
  /// and left it running. No exit status, no output tails; `hang_dumps` holds what was captured.
  bool captured_running = false;
  std::optional<std::chrono::milliseconds> timeout;  ///< the timeout that was in effect
  /// A SIGTERM, SIGINT or SIGHUP the supervisor received and passed on to the job's tree.
  std::optional<int> forwarded_signal;
  /// Processes of the tree still alive after SIGKILL (blocked in the kernel, e.g. in a GPU
  /// driver call); the supervisor gave up waiting for them.
  std::vector<int> left_running;
  std::optional<int> exec_errno;  ///< the command could not be executed (errno of execvp)
  bool traced = false;            ///< ptrace was in effect

  std::vector<core::ProcessReport> crashes;     ///< processes captured at a fatal signal, in order
  std::vector<core::ProcessReport> hang_dumps;  ///< stacks taken when the timeout expired
  size_t crashes_not_captured = 0;              ///< fatal signals beyond max_captures

  std::string stdout_tail, stderr_tail;
  uint64_t stdout_bytes = 0, stderr_bytes = 0;
  /// Passing the stream on failed with EPIPE (the reader of `| head` exited): the supervisor
  /// closed its end, so the job's next write got EPIPE/SIGPIPE as it would have without it.
  bool stdout_reader_gone = false, stderr_reader_gone = false;
  /// Passing the stream on failed with another error (a full disk: ENOSPC; EIO): the job's
  /// output from then on could not reach its destination.
  std::optional<OutputLoss> stdout_lost, stderr_lost;
  /// The supervisor's own fd 1 (fd 2) last received a byte of the job's output that was not a
  /// newline, through either stream when both lead to the same file, pipe or terminal: the
  /// supervisor's own output there must start on a new line.
  bool stdout_mid_line = false, stderr_mid_line = false;
  /// Side effects of the tracing noticed during the run (privilege dropped on exec, tools in the
  /// job that need ptrace themselves), in the order seen.
  std::vector<TraceEffect> trace_effects;

  std::vector<kmsg::Record> kmsg;
  std::string kmsg_raw;
  size_t kmsg_lost = 0;

  std::set<int> job_pids;  ///< every process and thread id of the job's tree seen
  std::vector<core::NotCollected> not_collected;

  double started_at_epoch_s = 0;   ///< wall clock at start
  double started_monotonic_s = 0;  ///< CLOCK_MONOTONIC seconds at start
  double duration_s = 0;
  /// CLOCK_MONOTONIC seconds when the first fatal signal stopped the job; 0 when none.
  double first_crash_monotonic_s = 0;
  double first_capture_ms = 0;           ///< time spent capturing the first crash
  std::optional<std::string> core_file;  ///< written core, when requested and successful
  std::optional<std::string> core_note;  ///< what happened to the requested core

  /// The job's status as a shell reports it: exit code, 128+signal, 127 (not found) or 126.
  int ShellStatus() const;
};

/// Runs the job to completion. Fails only when the supervisor itself cannot work (pipes,
/// fork); a job that cannot be executed is an outcome with `exec_errno` set. What could not
/// be collected (ptrace refused, kernel log unreadable) is in `not_collected`.
core::Result<SuperviseOutcome> Supervise(const SuperviseOptions& options);

/// CLOCK_MONOTONIC in seconds.
double MonotonicSeconds();

}  // namespace gputriage::forensics
