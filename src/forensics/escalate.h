// `run --escalate` / `run --sync`: after a run failed with an asynchronous GPU error (an illegal
// address, a GPU page fault, a device-side assert), run the job again to name the launch that
// faulted. First with synchronous launches (CUDA_LAUNCH_BLOCKING=1, AMD_SERIALIZE_KERNEL=3) and
// the flight recorder: the error then surfaces right after the kernel that caused it, the newest
// launch before it. Then, on NVIDIA, under compute-sanitizer's memcheck restricted to that kernel
// (--kernel-name kns=NAME): the file:line, thread, block and address of the bad access; on AMD,
// with the ROCm debug agent (HSA_TOOLS_LIB): the stopped wave's kernel, source line and the
// faulting page. Each step's command, cost and result go into escalation.json.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error_codes.h"
#include "core/gpu_calls.h"
#include "forensics/crash_bundle.h"

namespace gputriage::forensics {

struct EscalateRequest {
  std::vector<std::string> command;                  ///< the job
  bool sync_only = false;                            ///< --sync: the synchronous step only
  std::string recorder_library;                      ///< libgputriage-record.so
  std::string record_parent;                         ///< where record directories go (the bundle directory)
  std::string writer_tag;                            ///< PartialWriterTag()
  std::optional<std::chrono::milliseconds> timeout;  ///< per step, as the job's
  std::function<void(const std::string&)> progress;  ///< "escalation: rerunning ..." lines
  /// The failure's own message when it was a device-side assert ("Indexing.cu:1021: ... Assertion
  /// `...` failed."): the kernel's own check fired before any bad access, so memcheck has nothing
  /// to add and is not run; the assert's file:line becomes the location.
  std::string device_assert;
};

/// "FILE:LINE" from a device-side assert's message; nullopt when it names none.
std::optional<std::string> AssertLocation(std::string_view message);

/// Whether escalation can name more for this run: it failed with an asynchronous GPU error.
bool Escalatable(const RunAssessment& run);

/// The ROCm debug agent: $HSA_TOOLS_LIB when it names it, else librocm-debug-agent.so.2 in
/// $ROCM_PATH/lib, /opt/rocm/lib or the system's library directories; nullopt when none.
std::optional<std::string> FindDebugAgent();

/// compute-sanitizer from PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; nullopt when none.
std::optional<std::string> FindComputeSanitizer();

/// Runs the steps. `job_seconds` is the failed run's own duration (for the cost comparison).
core::Escalation Escalate(const EscalateRequest& request, double job_seconds, const catalog::ErrorCodes& errors);

/// Adds the escalation to the run: escalation.json's content, a finding naming the kernel (and
/// the access the sanitizer saw), and the kernel in the run's summary.
void AddEscalation(RunAssessment& run, core::Escalation escalation);

}  // namespace gputriage::forensics
