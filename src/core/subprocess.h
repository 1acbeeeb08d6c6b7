// Running helper processes under a watchdog. Diagnostic calls hang exactly when the GPU is sick
// (NVML or amdgpu sysfs reads stuck in the driver), so anything that can block in the driver runs
// in a child process that we can abandon: on expiry the child's process group gets SIGKILL and,
// if it does not die (uninterruptible sleep in the driver), it is left behind rather than waited
// for. The caller always gets control back by the deadline (plus a short grace period).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gputriage::core {

struct RunOptions {
  std::chrono::milliseconds timeout{5000};
  /// Bytes of stdout kept; the rest is drained and counted in `stdout_dropped_bytes`.
  size_t max_stdout_bytes = 16u << 20;
  /// Bytes of stderr kept (the last ones).
  size_t max_stderr_bytes = 64u << 10;
  /// Extra "NAME=value" entries added to the inherited environment.
  std::vector<std::string> extra_env;
  /// Data written to the child's stdin, then closed. Without it stdin is /dev/null.
  std::optional<std::string> stdin_data;
};

struct ProcessOutcome {
  bool timed_out = false;
  /// Set when the child exited normally.
  std::optional<int> exit_code;
  /// Set when the child was killed by a signal (including our SIGKILL after a timeout).
  std::optional<int> term_signal;
  /// True when the child ignored SIGKILL for the grace period and was abandoned (stuck in D).
  bool abandoned = false;
  std::string stdout_data;
  std::string stderr_tail;
  size_t stdout_dropped_bytes = 0;
  double elapsed_s = 0;
  int pid = 0;
};

/// Runs argv[0] (looked up in PATH when it has no '/') with `argv`, waits at most
/// `options.timeout`. Fails only when the process could not be started (the message names the
/// program and errno); a timeout or a crash is a normal outcome.
Result<ProcessOutcome> RunWithTimeout(const std::vector<std::string>& argv, const RunOptions& options);

/// A one-line human description: "exited with status 2", "killed by SIGSEGV", "timed out
/// after 5.0 s".
std::string DescribeOutcome(const ProcessOutcome& outcome, const RunOptions& options);

}  // namespace gputriage::core
