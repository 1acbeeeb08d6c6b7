// `gputriage run` as one library call: supervise the job (once, or --repeat N times), judge each
// run, write a bundle per distinct failure signature, and tell a deterministic failure from a
// flaky one. What the library cannot know (how to take a snapshot, where the history database
// is) comes in as callbacks from the command line.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error_codes.h"
#include "core/bundle.h"
#include "core/model.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "core/telemetry.h"
#include "forensics/crash_bundle.h"
#include "forensics/trace_effects.h"

namespace gputriage::forensics {

/// What runs of the same failure group by. A GPU failure's host stack is all libcuda or
/// libamdhip64 frames, so when the job's stderr or kernel log names a GPU error the signature is
/// the GPU side: the runtime's error code and the failing kernel ("gpu: cudaErrorAssert in
/// indexFuncSmallIndex"). Otherwise a crash keeps its host signature (signal and top frames), and
/// a failure without a stack (timeout, error exit) its error line normalised (numbers, addresses,
/// pids, sizes and shapes blanked).
std::string RunSignature(const RunAssessment& run, const catalog::ErrorCodes& errors);

/// The history database's row for a bundle written for `run`.
core::BundleRecord BundleRecordOf(const RunAssessment& run, const std::string& bundle_path,
                                  const std::vector<std::string>& argv);

struct RunRequest;

/// Ignores SIGPIPE in this process while it lives, so that writing to a stdout or stderr whose
/// reader is gone (`gputriage run ... | head -1`) fails with EPIPE instead of killing gputriage
/// before its bundle and summary are written; remembers how SIGPIPE was set before, which is what
/// the job inherits (RunRequest::job_ignores_sigpipe).
class SigpipeGuard {
 public:
  /// Also sets request->job_ignores_sigpipe to how SIGPIPE was before.
  explicit SigpipeGuard(RunRequest* request);
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  struct sigaction old_ {};
};

struct RunRequest {
  std::vector<std::string> command;  ///< the job
  int repeat = 1;
  std::optional<std::chrono::milliseconds> timeout;
  /// Where bundles go. Partial files that killed runs left there are removed first
  /// (RemoveStalePartials). When it cannot be created the job still runs: a bundle or core due
  /// is reported as not written.
  std::string bundle_dir;
  bool trace = true;
  bool core = false;
  /// `--core=raw`: keep the core uncompressed in the bundle (`core`, not `core.zst`).
  bool core_raw = false;
  /// --record: load the flight recorder (recorder_library) into the job and write what it saw
  /// into the bundle as gpu_calls.json.
  bool record = false;
  std::string recorder_library;  ///< path of libgputriage-record.so
  /// --escalate: after an asynchronous GPU error, rerun with synchronous launches and then under
  /// compute-sanitizer to name the kernel (escalation.json). --sync: the first rerun only.
  bool escalate = false;
  bool sync_only = false;
  /// --torch-snapshot: where the job writes PyTorch's allocator snapshot when it fails
  /// (torch.cuda.memory._dump_snapshot); read after the run, its tensors placed around faulting
  /// addresses. Implies record.
  std::optional<std::string> torch_snapshot;
  /// Whether the job starts with SIGPIPE ignored; nullopt: as this process has it.
  std::optional<bool> job_ignores_sigpipe;
  uint64_t core_cap_bytes = 4ull << 30;
  std::string tool_version;
  /// Starts sampling GPU telemetry for one run (telemetry.csv); null: none is sampled
  /// (--no-telemetry). Called just before each run's job starts, stopped when it has ended.
  std::function<std::unique_ptr<core::TelemetrySession>()> start_telemetry;
  /// The node's snapshot for a bundle; null: none is taken (the bundle says --no-snapshot).
  std::function<core::Result<core::Snapshot>()> take_snapshot;
  /// Records a written bundle (BundleRecordOf it) in the history database and returns its id;
  /// fails saying why it could not. May be null.
  std::function<core::Result<int64_t>(const core::BundleRecord& record)> index_bundle;
  /// The three sinks below all write to gputriage's stderr (fd 2): the first text after a job
  /// whose output left that stream mid-line gets a newline in front.
  /// gputriage's own progress lines for stderr ("run 2/5"); null when quiet.
  std::function<void(const std::string& text)> progress;
  /// What each run was (its summary paragraph, "exited with status 1; no bundle"); null when
  /// quiet or when the caller prints JSON instead.
  std::function<void(const std::string& text)> summary;
  /// Errors worth saying even when quiet (a bundle that could not be written).
  std::function<void(const std::string& text)> error;
  /// Writes text to stderr as it is: the newline after a job's unfinished line. May be null.
  std::function<void(const std::string& text)> write_stderr;
};

/// Completes `request` from `gputriage run`'s words and checks it: `timeout` is a duration
/// ("90", "30s", "500ms", "10m", "2h"; empty for none) and becomes request->timeout,
/// `core_limit` a size ("512M", "4G") and becomes request->core_cap_bytes. Fails, with the
/// message for the user, when there is no command, --repeat is outside 1..10000, or the timeout
/// or the core limit does not parse ("run: --timeout 'x' is not a duration (examples: ...)").
core::Result<void> FinishRunRequest(std::string_view timeout, std::string_view core_limit, RunRequest* request);

/// One run of the job.
struct RunRecord {
  int index = 1;
  int status = 0;  ///< as a shell reports it
  bool failed = false;
  std::string kind, category, summary, signature;
  std::string bundle;               ///< "" when none was written
  bool bundle_not_written = false;  ///< the run failed with a new signature but writing its bundle failed
  std::string bundle_error;         ///< why, when it was not written
  bool timed_out = false;           ///< --timeout ended it (status is the job's, e.g. 143)
  /// The job's output could not all be passed on (a full disk); the status is then 1 where the
  /// job exited 0.
  std::optional<OutputLoss> stdout_lost, stderr_lost;
  /// A run of a --repeat series stopped because gputriage was told to stop (SIGINT, SIGTERM,
  /// SIGHUP): not counted in the verdict, no bundle.
  bool interrupted = false;
  std::vector<TraceEffect> trace_effects;
  /// The process file's signal, si_code, fault_address and crashed_thread (JSON forms).
  core::Json process_summary = core::Json::object();
};

/// How a --repeat series went.
struct SeriesVerdict {
  std::string verdict;  ///< "deterministic", "flaky", "not-reproduced"; "interrupted" when no run finished
  int runs = 0;
  int passes = 0;
  int failures = 0;
  std::vector<std::pair<std::string, int>> signatures;  ///< distinct signatures, first seen first
};

struct RunSeriesOutcome {
  std::vector<RunRecord> runs;
  std::optional<SeriesVerdict> verdict;  ///< with --repeat > 1
  /// The run during which gputriage was told to stop (the series stopped there); 0: none.
  int interrupted_run = 0;
  /// What `run` exits with: the job's own status; with --repeat the first failed run's (the last
  /// run's when none failed); 127/126 when the command could not be executed; 124
  /// (kTimedOutStatus, like GNU timeout) for a run that --timeout ended.
  int exit_status = 0;
  bool cannot_execute = false;
  /// The last job left gputriage's stdout mid-line: output printed there next (--json) must
  /// start with a newline.
  bool stdout_mid_line = false;
};

/// The status `run` gives for a run --timeout ended, as GNU timeout does.
inline constexpr int kTimedOutStatus = 124;

/// Runs the series. Fails when supervising itself fails (not when the job fails). The exit
/// status is the job's (see RunSeriesOutcome); a bundle that could not be written is reported
/// (error sink, RunRecord::bundle_error) and does not change it.
core::Result<RunSeriesOutcome> RunSeries(const RunRequest& request, const catalog::ErrorCodes& errors);

/// run --json: {schema_version, tool_version, runs: [...], verdict?}.
core::Json ToJson(const RunSeriesOutcome& outcome, const std::string& tool_version);

/// The verdict for humans: "gputriage: flaky: 2 of 5 runs failed (40%)" and one line per
/// signature.
std::string VerdictText(const SeriesVerdict& verdict);

}  // namespace gputriage::forensics
