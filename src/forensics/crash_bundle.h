// From a supervised run to its verdict and its crash bundle (docs/design.md "The crash bundle"): the
// kernel log correlated with the job, the classification, the findings, and the bundle
// directory written atomically (temp directory + rename) by the supervisor, not the job, so it
// survives the job's container teardown.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/error_codes.h"
#include "core/bundle.h"
#include "core/collectives.h"
#include "core/gpu_calls.h"
#include "core/model.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "core/telemetry.h"
#include "forensics/classify.h"
#include "forensics/collectives.h"
#include "forensics/kmsg_watch.h"
#include "forensics/supervisor.h"

namespace gputriage::forensics {

/// A run, judged.
struct RunAssessment {
  SuperviseOutcome outcome;
  std::vector<CorrelatedRecord> kernel_log;
  std::optional<core::Classification> classification;  ///< nullopt: the run did not fail
  std::string signature;                               ///< CrashSignature when failed
  std::vector<core::Finding> findings;
  /// What the flight recorder saw (`run --record`); nullopt when it was not asked for.
  std::optional<core::GpuCalls> gpu_calls;
  /// Why --record could not record (set instead of gpu_calls).
  std::optional<std::string> gpu_calls_missing;
  /// `run --escalate`/`--sync`: the reruns that named the faulting kernel.
  std::optional<core::Escalation> escalation;
  /// GPU telemetry sampled during the run (telemetry.csv); nullopt: not sampled (--no-telemetry).
  std::optional<core::TelemetryRecording> telemetry;
  /// PyTorch's flight-recorder dumps the job wrote during the run (collectives.json and the dumps
  /// as fr_trace_rank_<N>); nullopt: none was found.
  std::optional<core::CollectiveReport> collectives;
  std::vector<std::pair<std::string, std::string>> collective_files;  ///< bundle name, bytes
  /// Why there is no collectives.json ("the job enabled the flight recorder but wrote no dump").
  std::string collectives_missing;

  bool failed() const { return classification.has_value(); }
  /// The process the failure is about: the first crash, else the first hang dump; null when
  /// the job died without a capture (exit with an error, SIGKILL, ptrace refused).
  const core::ProcessReport* primary() const {
    if (!outcome.crashes.empty()) return &outcome.crashes.front();
    if (!outcome.hang_dumps.empty()) return &outcome.hang_dumps.front();
    return nullptr;
  }
};

/// Correlates the kernel log, classifies, and builds the findings. Takes the outcome.
RunAssessment Assess(SuperviseOutcome outcome);

/// Takes in the telemetry sampled during the run (t_s from the job's start). For a failed run, a
/// GPU slowed down (thermal, power brake, hardware slowdown, power cap) in the `window_s` seconds
/// before the failure is a finding ("telemetry.slowdown_before_failure").
void AddTelemetry(RunAssessment& run, core::TelemetryRecording telemetry, double window_s = 10);

/// Adds what the flight recorder saw: where the kernel log's faulting addresses fall among the
/// allocations, and — for a run that did not fail otherwise — a failure when GPU calls returned
/// errors the job ignored (a launch with no kernel image in a job that exited 0).
void AddGpuCalls(RunAssessment& run, core::GpuCalls calls, const catalog::ErrorCodes& errors);

/// Takes in PyTorch's flight-recorder dumps the job wrote (forensics/collectives.h) and their
/// findings.
void AddCollectives(RunAssessment& run, FlightRecorderFiles files);

/// process.json of the run: the primary process's report with the job's exit status, the
/// classification, the other crashed processes and hang dumps, and the correlated kernel-log
/// records. When no process was captured, the report's `signal` is the signal that killed the
/// job (or none) and it has no threads.
core::ProcessFile ProcessFileOf(const RunAssessment& run);

struct BundleInput {
  std::string parent_dir;         ///< --bundle-dir; created when missing
  std::vector<std::string> argv;  ///< the job's command
  std::string tool_version;
  std::optional<core::Snapshot> snapshot;  ///< snapshot.json; nullopt with the reason below
  std::string snapshot_missing_reason;
  /// `gputriage capture`: how the running process was captured (manifest.json's `capture`).
  std::optional<core::BundleCapture> capture;
  /// The time in the bundle's name (epoch seconds); nullopt: the run's start. A capture is
  /// named by when it was taken, so the newest still sorts last.
  std::optional<double> named_at_epoch_s;
  /// `run --core=raw`: the core goes in as it was written (`core`), not compressed (`core.zst`).
  bool raw_core = false;
};

struct BundleWritten {
  std::string path;
  double write_ms = 0;
};

/// Writes the bundle of a failed run under input.parent_dir as "<UTC time>-<name>-<pid>"
/// (sortable: the newest sorts last), through a hidden temp directory
/// ".<name>.partial-<PartialWriterTag()>_XXXXXX" renamed into place. Every file and the temp
/// directory are fsynced before the rename and the parent directory after it, so a power loss
/// leaves no complete-looking bundle of empty files.
/// A core written during the capture (SuperviseOutcome::core_file) is compressed into the bundle
/// as core.zst (streaming zstd; the raw file is removed), or moved in as `core` with raw_core or
/// when compression fails.
/// manifest.json lists every file of the layout, present or not, and why not. Fails naming
/// the directory when it cannot be created or written.
core::Result<BundleWritten> WriteBundle(const RunAssessment& run, const BundleInput& input);

/// Names this process as the writer of partial files: "<host>_<pid>_<start time>" (the host
/// name with each character other than a letter, digit or '.' as '-'; the start time in clock
/// ticks from /proc/self/stat). A pid with its start time names one process for good; the host
/// keeps the files of another machine sharing the bundle directory out of our judgement.
std::string PartialWriterTag();

/// Where `run --core` writes the core before the bundle takes it in: "DIR/.core.partial-<tag>"
/// (corefile::WriteCore writes it through "<that>.tmp.XXXXXX").
std::string PartialCorePath(const std::string& bundle_dir);

struct StaleCleanup {
  std::vector<std::string> removed;  ///< paths
  uint64_t bytes = 0;                ///< what they held
  std::vector<std::string> errors;   ///< "PATH: why" for what could not be removed
};

/// Removes from `bundle_dir` what runs killed before they finished left behind: the files
/// ".core.partial-<tag>[.tmp.XXXXXX]" and the directories ".<name>.partial-<tag>_XXXXXX" whose
/// writer is gone (this host, and no process with that pid and start time). Names of earlier
/// versions, which do not say who wrote them (".core.partial-<pid>", ".<name>.partial-XXXXXX"),
/// go once unmodified for 24 hours. Another host's files, a running writer's files and every
/// other entry stay. A missing directory has nothing to clean.
StaleCleanup RemoveStalePartials(const std::string& bundle_dir);

/// Writes `data` as `dir/name` so that a crash or power loss leaves the old file or the whole new
/// one: a temp file beside it, fsynced, renamed over it, and `dir` fsynced. Fails naming the path.
core::Result<void> WriteFileDurably(const std::string& dir, const std::string& name, std::string_view data);

/// The one-paragraph summary `run` prints on stderr: what happened, where (the first frame in
/// the user's own code), the kernel log, and where the bundle is ("" when none was written).
std::string RunSummaryText(const RunAssessment& run, const std::string& bundle_path);

}  // namespace gputriage::forensics
