// What kind of failure a run (or a core) was, from the signal and its context — the method's
// table: SIGSEGV (null dereference, wild pointer, stack overflow, fault inside a GPU runtime
// library), SIGBUS (device memory mapping, truncated file behind an mmap), SIGILL (an ISA
// extension this CPU lacks, or a deliberate trap), SIGABRT (the abort message in stderr and the
// aborting frame), SIGKILL (the OOM killer or another process), a hang, or a non-zero exit
// whose stderr shows a GPU runtime error or a Python exception.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/process.h"
#include "forensics/kmsg_watch.h"

namespace gputriage::forensics {

/// What is known about the failure besides the process report.
struct FailureContext {
  const core::ProcessReport* process = nullptr;  ///< the crashed (or hung) process; may be null
  std::optional<int> exit_code;
  std::optional<int> term_signal;
  bool timed_out = false;
  /// `gputriage capture PID`: the process was captured while running (attached, every thread's
  /// stack taken, detached), not stopped by a timeout and not dead: kind "captured-running".
  bool captured_running = false;
  std::string_view stderr_tail;
  const std::vector<CorrelatedRecord>* kernel_log = nullptr;
  /// Every pid of the job's tree (names the sender of a signal as one of the job's own); may be null.
  const std::set<int>* job_pids = nullptr;
  /// The job's output reader went away (`| head`): the job dying of SIGPIPE then is what a
  /// pipeline expects, not a failure.
  bool output_reader_gone = false;
};

/// A GPU-runtime or Python error found in output text.
struct OutputError {
  std::string kind;  ///< "gpu-runtime-error", "python-exception", "c10-error", ...
  core::Category category = core::Category::kOther;
  std::string line;  ///< the line that says it, verbatim (trimmed)
};

/// The most telling error line in `text` (stderr): GPU runtime errors (CUDA/HIP/HSA error
/// names and messages, device-side asserts, out-of-memory) rank before a Python exception's
/// last line; nullopt when there is none.
std::optional<OutputError> FindOutputError(std::string_view text);

/// Classifies a failure; nullopt when there was none (exit 0 and no signal, or a non-zero exit
/// with nothing in stderr that says why — not a crash this tool can explain).
std::optional<core::Classification> Classify(const FailureContext& context);

/// True when `module` is a GPU runtime or driver library (libcuda, libcudart, libamdhip64,
/// libhsa-runtime64, libnvidia-*, libcublas, librocblas, libnccl/librccl, libtorch_cuda...).
bool IsGpuRuntimeModule(std::string_view module);

/// The first frame of `frames` in the user's own code: not libc/libstdc++/the dynamic loader,
/// not a GPU runtime, not the Python interpreter, and not an abort/assert helper. nullptr when
/// every frame is system code.
const core::Frame* FirstUserFrame(const std::vector<core::Frame>& frames);

/// "crash signature": signal (or exit kind) plus the normalised top frames — function names
/// without addresses or argument lists — so that runs of the same bug compare equal.
std::string CrashSignature(const core::ProcessReport* process, const core::Classification& classification);

}  // namespace gputriage::forensics
