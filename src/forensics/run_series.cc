#include "forensics/run_series.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/fs.h"
#include "core/redact.h"
#include "core/signals.h"
#include "core/terminal.h"
#include "core/text.h"
#include "forensics/escalate.h"
#include "forensics/exec_failure.h"
#include "forensics/gpu_record.h"
#include "forensics/gpu_signature.h"
#include "forensics/torch_snapshot.h"

namespace gputriage::forensics {
namespace {

void Say(const std::function<void(const std::string&)>& sink, const std::string& text) {
  if (sink) sink(text);
}

// gputriage's own messages on stderr: the first after a job's unfinished line starts a new one.
// They quote what the job controls (thread and file names, command lines, error lines), so each
// is made safe for a terminal first: escape sequences, C1 controls and bidi overrides become
// U+FFFD (the job's own output passes through untouched, as without gputriage).
class Speaker {
 public:
  explicit Speaker(const RunRequest& request) : request_(request) {}
  void Progress(const std::string& text) { Say(request_.progress, text); }
  void Summary(const std::string& text) { Say(request_.summary, text); }
  void Error(const std::string& text) { Say(request_.error, text); }
  // After a run: whether the job left stderr mid-line.
  void AfterJob(bool mid_line) { mid_line_ = mid_line; }

 private:
  void Say(const std::function<void(const std::string&)>& sink, const std::string& text) {
    if (!sink) return;
    if (mid_line_ && request_.write_stderr) request_.write_stderr("\n");
    mid_line_ = false;
    // What gputriage says quotes the job's output (the failing line, the signature): secrets in
    // it are redacted as in the bundle, the index and analyze. The job's own output passes
    // through untouched.
    sink(core::SanitizeForTerminal(core::RedactText(text), /*keep_newlines=*/true));
  }
  const RunRequest& request_;
  bool mid_line_ = false;
};

}  // namespace

SigpipeGuard::SigpipeGuard(RunRequest* request) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_);
  request->job_ignores_sigpipe = old_.sa_handler == SIG_IGN;
}

SigpipeGuard::~SigpipeGuard() { sigaction(SIGPIPE, &old_, nullptr); }

core::Result<void> FinishRunRequest(std::string_view timeout, std::string_view core_limit, RunRequest* request) {
  if (request->command.empty()) {
    return core::MakeError("run: no command given (usage: gputriage run [OPTIONS] -- CMD [ARGS...])");
  }
  if (request->repeat < 1 || request->repeat > 10000) {
    return core::MakeError("run: --repeat must be between 1 and 10000, not {}", request->repeat);
  }
  if (!timeout.empty()) {
    std::optional<double> seconds = core::ParseDurationSeconds(timeout);
    if (!seconds || *seconds <= 0) {
      return core::MakeError("run: --timeout '{}' is not a duration (examples: 90, 30s, 500ms, 10m, 2h)", timeout);
    }
    request->timeout = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
  }
  std::optional<uint64_t> core_cap = core::ParseByteSize(core_limit);
  if (!core_cap) return core::MakeError("run: --core-limit '{}' is not a size (examples: 512M, 4G)", core_limit);
  request->core_cap_bytes = *core_cap;
  return {};
}

core::BundleRecord BundleRecordOf(const RunAssessment& run, const std::string& path,
                                  const std::vector<std::string>& argv) {
  core::BundleRecord row;
  row.created_at = core::FormatUtcIso(core::NowEpochSeconds());
  row.path = path;
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  row.command = core::SanitizeUtf8(command);
  if (!run.outcome.captured_running) row.exit_status = run.outcome.ShellStatus();  // still running
  if (const core::ProcessReport* p = run.primary(); p && p->signal) row.signal = core::SignalName(*p->signal);
  row.kind = run.classification->kind;
  row.category = std::string(core::CategoryName(run.classification->category));
  row.signature = run.signature;
  row.summary = run.classification->summary;
  return row;
}

namespace {

// What a series carries from run to run.
struct Series {
  const RunRequest& request;
  const catalog::ErrorCodes& errors;
  Speaker speaker;
  std::optional<std::string> core_unavailable;  // why --core cannot write into the bundle directory
  std::map<std::string, int> counts;            // failures per signature so far
  bool stdout_mid_line = false;                 // the last job left our stdout mid-line
  std::optional<int> stop_signal;               // gputriage was told to stop: no further runs
};

// Removes what killed runs left in the bundle directory; checks that --core has somewhere to
// write (the job runs either way).
void PrepareBundleDir(Series& series) {
  const RunRequest& request = series.request;
  StaleCleanup cleanup = RemoveStalePartials(request.bundle_dir);
  if (!cleanup.removed.empty()) {
    series.speaker.Progress(
        fmt::format("gputriage: removed {} partial file{} of runs that were killed before "
                    "finishing ({:.1f} MiB): {}\n",
                    cleanup.removed.size(), cleanup.removed.size() == 1 ? "" : "s",
                    static_cast<double>(cleanup.bytes) / (1 << 20), fmt::join(cleanup.removed, ", ")));
  }
  for (const std::string& error : cleanup.errors) {
    series.speaker.Error("cannot remove the partial file of a killed run: " + error);
  }
  if (!request.core) return;
  if (auto made = core::MakeDirectories(request.bundle_dir, 0700); !made.ok()) {
    series.core_unavailable =
        fmt::format("{}: cannot create the bundle directory ({})", request.bundle_dir, made.error().message);
    series.speaker.Error("--core: " + *series.core_unavailable + "; the job runs without writing a core file");
  }
}

// Writes the failed run's bundle (with a snapshot when asked) and indexes it; the bundle's path,
// or "" when it could not be written (the reason goes to the error sink and to *error).
std::string WriteRunBundle(Series& series, const RunAssessment& run, std::string* error) {
  const RunRequest& request = series.request;
  BundleInput input;
  input.parent_dir = request.bundle_dir;
  input.argv = request.command;
  input.tool_version = request.tool_version;
  input.raw_core = request.core_raw;
  if (!request.take_snapshot) {
    input.snapshot_missing_reason = "--no-snapshot";
  } else if (core::Result<core::Snapshot> snapshot = request.take_snapshot(); snapshot.ok()) {
    input.snapshot = std::move(*snapshot);
  } else {
    input.snapshot_missing_reason = snapshot.error().message;
  }
  auto written = WriteBundle(run, input);
  if (!written.ok()) {
    *error = written.error().message;
    series.speaker.Error("crash bundle not written: " + written.error().message);
    return "";
  }
  if (request.index_bundle) {
    auto indexed = request.index_bundle(BundleRecordOf(run, written->path, request.command));
    if (!indexed.ok()) {
      series.speaker.Error("crash bundle written but not indexed in the store: " + indexed.error().message);
    }
  }
  return written->path;
}

SuperviseOptions OptionsFor(const Series& series) {
  const RunRequest& request = series.request;
  SuperviseOptions options;
  options.argv = request.command;
  options.timeout = request.timeout;
  options.trace = request.trace;
  options.job_ignores_sigpipe = request.job_ignores_sigpipe;
  if (request.core && !series.core_unavailable) {
    options.core_path = PartialCorePath(request.bundle_dir);
    options.core_size_cap_bytes = request.core_cap_bytes;
  }
  return options;
}

// A run that did not fail: its core is not kept; a non-zero status and tracing side effects are
// said.
void PassedRun(Series& series, const RunAssessment& run, const RunRecord& record) {
  if (run.outcome.core_file) ::unlink(run.outcome.core_file->c_str());
  if (run.gpu_calls) {
    const core::GpuCalls& g = *run.gpu_calls;
    int64_t calls = 0, launches = 0;
    for (const core::GpuRecordedProcess& p : g.processes) calls += p.calls, launches += p.launches;
    series.speaker.Summary(fmt::format(
        "gputriage: recorder: {} GPU call{} ({} launch{}) in {} process{}, none failed\n", calls, calls == 1 ? "" : "s",
        launches, launches == 1 ? "" : "es", g.processes.size(), g.processes.size() == 1 ? "" : "es"));
  }
  if (record.status != 0) {
    series.speaker.Summary(
        fmt::format("gputriage: job exited with status {}; no crash and no known error in its "
                    "output, so no bundle was written\n",
                    record.status));
  }
  if (!record.trace_effects.empty()) series.speaker.Summary(TraceEffectsText(record.trace_effects));
}

// --torch-snapshot: the allocator snapshot the job wrote during this run (an older file at that
// path is another run's and is not used), or why there is none.
void AttachTorchSnapshot(core::GpuCalls& calls, const std::string& path, std::filesystem::file_time_type job_start) {
  std::error_code ec;
  auto written = std::filesystem::last_write_time(path, ec);
  if (ec) {
    calls.not_recorded.push_back(
        {"torch-snapshot", fmt::format("the job wrote no PyTorch allocator snapshot at {} ({}); "
                                       "it writes one with torch.cuda.memory._dump_snapshot",
                                       path, ec.message())});
    return;
  }
  if (written < job_start) {
    calls.not_recorded.push_back(
        {"torch-snapshot",
         fmt::format("{} is older than this run: not used (the job did not write it this time)", path)});
    return;
  }
  auto memory = ReadTorchSnapshot(path);
  if (!memory.ok()) {
    calls.not_recorded.push_back({"torch-snapshot", memory.error().message});
    return;
  }
  calls.torch_memory = std::move(*memory);
}

// What the user is told when the job's output could not all be passed on (a full disk).
std::string OutputLossText(std::string_view stream, const OutputLoss& lost) {
  return fmt::format(
      "gputriage: the job's {} could not be written where it was going: {} (after {} bytes; {} bytes of the "
      "job's output were lost{}); gputriage exits 1 if the job itself exits 0\n",
      stream, std::strerror(lost.error), lost.passed_on_bytes, lost.lost_bytes,
      lost.job_write_failed ? ", and the job's next write to it failed (EPIPE)"
                            : ", and the job was left running: it does not ignore SIGPIPE, so failing its writes "
                              "would have killed it");
}

// One supervised run; writes a bundle when it failed with a signature not seen before.
core::Result<RunRecord> RunOnce(Series& series, bool* cannot_execute) {
  const RunRequest& request = series.request;
  RecordSession recording;
  if (request.record) recording.Start(request.recorder_library, request.bundle_dir, PartialWriterTag());
  auto job_start = std::filesystem::file_time_type::clock::now();
  SuperviseOptions options = OptionsFor(series);
  options.env_overrides = recording.env();
  // Python's faulthandler prints every Python thread's stack on SIGSEGV/SIGFPE/SIGABRT/SIGBUS/
  // SIGILL, which lands in stderr.tail; a value the user set is kept. Other programs ignore it.
  if (std::getenv("PYTHONFAULTHANDLER") == nullptr) options.env_overrides.push_back("PYTHONFAULTHANDLER=1");
  std::unique_ptr<core::TelemetrySession> telemetry;
  if (request.start_telemetry) telemetry = request.start_telemetry();
  core::Result<SuperviseOutcome> supervised = Supervise(options);
  std::optional<core::TelemetryRecording> sampled;
  if (telemetry) sampled = telemetry->Stop(supervised.ok() ? supervised->started_monotonic_s : 0);
  if (!supervised.ok()) return supervised.error();
  SuperviseOutcome outcome = std::move(*supervised);
  series.speaker.AfterJob(outcome.stderr_mid_line);
  series.stdout_mid_line = outcome.stdout_mid_line;
  series.stop_signal = outcome.forwarded_signal;
  if (request.core && series.core_unavailable) outcome.core_note = *series.core_unavailable;
  RunRecord record;
  record.status = outcome.ShellStatus();
  record.timed_out = outcome.timed_out;
  record.stdout_lost = outcome.stdout_lost;
  record.stderr_lost = outcome.stderr_lost;
  for (const auto& [stream, lost] :
       {std::pair{"standard output", &outcome.stdout_lost}, std::pair{"standard error", &outcome.stderr_lost}}) {
    if (*lost) series.speaker.Error(OutputLossText(stream, **lost));
  }
  // The job's output did not all reach its destination: a job that says it succeeded did not,
  // as far as whoever reads that output is concerned (`echo x > /full/disk` exits 1 too).
  if (record.status == 0 && (outcome.stdout_lost || outcome.stderr_lost)) record.status = 1;
  record.trace_effects = outcome.trace_effects;
  if (outcome.exec_errno) {
    series.speaker.Error(DescribeExecFailure(request.command[0], *outcome.exec_errno));
    *cannot_execute = true;
    return record;
  }
  // A run of a --repeat series that ended because gputriage itself was told to stop (SIGINT,
  // SIGTERM, SIGHUP, passed on to the job) is not a reproduction of anything: no bundle, and the
  // series' verdict is over the runs that finished.
  if (request.repeat > 1 && outcome.forwarded_signal) {
    record.interrupted = true;
    if (outcome.core_file) ::unlink(outcome.core_file->c_str());
    return record;
  }
  RunAssessment run = Assess(std::move(outcome));
  if (request.record) {
    if (recording.not_possible()) {
      run.gpu_calls_missing = "--record: " + *recording.not_possible();
      series.speaker.Error("--record: " + *recording.not_possible() + "; the job ran without the recorder");
    } else {
      core::GpuCalls calls = recording.Read(series.errors, request.command.front());
      if (request.torch_snapshot) AttachTorchSnapshot(calls, *request.torch_snapshot, job_start);
      AddGpuCalls(run, std::move(calls), series.errors);
    }
  }
  // After the recorder: GPU calls that failed can make a run failed that exited 0.
  if (sampled) AddTelemetry(run, std::move(*sampled));
  // PyTorch's flight-recorder dumps (a collective timed out): written by the job during this run,
  // read only for a failed run (a bundle's; a passing run of a series keeps nothing of them).
  if (run.failed()) {
    auto lookup = [](const char* name) { return std::getenv(name); };
    std::string fr_prefix = FlightRecorderPrefix(lookup);
    if (std::optional<FlightRecorderFiles> dumps = CollectFlightRecorderDumps(fr_prefix, job_start)) {
      AddCollectives(run, std::move(*dumps));
    } else if (FlightRecorderDumpsOnTimeout(lookup)) {
      run.collectives_missing = fmt::format(
          "the job asked PyTorch for flight-recorder dumps on a collective timeout (TORCH_NCCL_DUMP_ON_TIMEOUT) but "
          "wrote none at {}<rank> during the run (PyTorch writes them when a collective times out)",
          fr_prefix);
    }
  }
  if ((request.escalate || request.sync_only) && Escalatable(run)) {
    EscalateRequest er{.command = request.command,
                       .sync_only = request.sync_only,
                       .recorder_library = request.recorder_library,
                       .record_parent = request.bundle_dir,
                       .writer_tag = PartialWriterTag(),
                       .timeout = request.timeout,
                       .progress = [&](const std::string& text) { series.speaker.Progress(text); },
                       .device_assert = run.classification->category == core::Category::kDeviceAssert
                                            ? run.classification->summary
                                            : std::string()};
    AddEscalation(run, Escalate(er, run.outcome.duration_s, series.errors));
  } else if ((request.escalate || request.sync_only) && run.failed()) {
    series.speaker.Progress(
        fmt::format("gputriage: {}: the failure ({}) is not an asynchronous GPU error; nothing to rerun\n",
                    request.sync_only ? "--sync" : "--escalate", core::CategoryName(run.classification->category)));
  }
  if (!run.failed()) {
    PassedRun(series, run, record);
    return record;
  }
  record.failed = true;
  run.signature = RunSignature(run, series.errors);
  record.kind = run.classification->kind;
  record.category = std::string(core::CategoryName(run.classification->category));
  record.summary = run.classification->summary;
  record.signature = run.signature;
  if (series.counts.count(run.signature) == 0) {
    record.bundle = WriteRunBundle(series, run, &record.bundle_error);
    record.bundle_not_written = record.bundle.empty();
  }
  // Taken into the bundle by now; still here when the bundle failed or was not due.
  if (run.outcome.core_file) ::unlink(run.outcome.core_file->c_str());
  series.speaker.Summary(RunSummaryText(run, record.bundle));
  core::Json process = core::ToJson(ProcessFileOf(run));
  record.process_summary = {{"signal", process["signal"]},
                            {"si_code", process["si_code"]},
                            {"fault_address", process["fault_address"]},
                            {"crashed_thread", process["crashed_thread"]}};
  return record;
}

// Each bundle learns how the whole series went (analyze and report use it for the verdict).
void WriteRepeatFiles(const RunRequest& request, const RunSeriesOutcome& outcome,
                      const std::map<std::string, int>& counts) {
  const SeriesVerdict& v = *outcome.verdict;
  std::vector<core::RepeatRun> series;
  for (const RunRecord& r : outcome.runs) {
    if (series.size() >= core::kRepeatSeriesMax) break;
    if (r.interrupted) continue;  // not part of the verdict
    core::RepeatRun run{.run = r.index, .failed = r.failed, .exit_status = r.status, .timed_out = r.timed_out};
    if (r.failed) {
      run.signature = r.signature;
      run.category = r.category;
    }
    series.push_back(std::move(run));
  }
  std::vector<core::SignatureCount> signatures;
  for (const auto& [signature, count] : v.signatures) signatures.push_back({signature, count});
  for (const RunRecord& r : outcome.runs) {
    if (r.bundle.empty()) continue;
    core::RepeatStats stats{.runs = v.runs,
                            .passes = v.passes,
                            .failures = v.failures,
                            .same_signature = counts.at(r.signature),
                            .distinct_signatures = static_cast<int64_t>(v.signatures.size()),
                            .verdict = v.verdict,
                            .series = series,
                            .signatures = signatures};
    auto written = WriteFileDurably(r.bundle, "repeat.json", core::ToJson(stats).dump(2) + "\n");
    if (!written.ok()) Say(request.error, "repeat.json not written: " + written.error().message);
  }
}

}  // namespace

std::string RunSignature(const RunAssessment& run, const catalog::ErrorCodes& errors) {
  SignatureScanner scanner(errors);
  for (std::string_view line : core::Split(run.outcome.stderr_tail, '\n')) {
    if (scanner.WantedPattern().empty()) break;
    scanner.Line(line);
  }
  for (const CorrelatedRecord& r : run.kernel_log) {
    if (scanner.WantedPattern().empty()) break;
    if (r.other_process) continue;  // another process's Xid or fault is not this run's signature
    scanner.Line(r.record.message);
  }
  GpuSignature gpu = scanner.Finish({}, {});
  if (!gpu.empty()) return "gpu: " + gpu.Key();
  const core::ProcessReport* p = run.primary();
  if (p && !p->threads.empty() && !run.outcome.timed_out) return run.signature;
  // Redacted before it is normalised (as analyze's signatures are): digit runs become N, and a
  // token shortened so would no longer be recognised.
  return run.classification->kind + " " + NormalizeLine(core::RedactText(run.classification->summary));
}

int ExitStatusOf(const RunRecord& record) { return record.timed_out ? kTimedOutStatus : record.status; }

core::Result<RunSeriesOutcome> RunSeries(const RunRequest& request, const catalog::ErrorCodes& errors) {
  RunSeriesOutcome outcome;
  Series series{.request = request, .errors = errors, .speaker = Speaker(request)};
  PrepareBundleDir(series);
  std::vector<std::string> order;
  std::optional<int> first_failure_status;
  int passes = 0;
  for (int i = 1; i <= request.repeat; ++i) {
    if (request.repeat > 1) series.speaker.Progress(fmt::format("gputriage: run {}/{}\n", i, request.repeat));
    GT_ASSIGN_OR_RETURN(RunRecord record, RunOnce(series, &outcome.cannot_execute));
    record.index = i;
    outcome.exit_status = ExitStatusOf(record);
    outcome.stdout_mid_line = series.stdout_mid_line;
    if (outcome.cannot_execute) return outcome;
    if (record.interrupted) {
      series.speaker.Progress(
          fmt::format("gputriage: {} received during run {} of {}: stopped; that run is left out "
                      "of the verdict\n",
                      core::SignalName(*series.stop_signal), i, request.repeat));
      outcome.interrupted_run = record.index = i;
      outcome.runs.push_back(std::move(record));
      break;
    }
    if (record.failed) {
      if (series.counts.count(record.signature) == 0) order.push_back(record.signature);
      ++series.counts[record.signature];
      if (!first_failure_status) first_failure_status = ExitStatusOf(record);
    } else if (record.status == 0) {
      ++passes;
    }
    outcome.runs.push_back(std::move(record));
    if (series.stop_signal && i < request.repeat) {
      series.speaker.Progress(fmt::format("gputriage: {} received: stopping after run {} of {}\n",
                                          core::SignalName(*series.stop_signal), i, request.repeat));
      break;
    }
  }
  if (request.repeat > 1) {
    SeriesVerdict v;
    v.runs = static_cast<int>(outcome.runs.size()) - (outcome.interrupted_run ? 1 : 0);
    v.passes = passes;
    for (const std::string& sig : order) {
      v.signatures.emplace_back(sig, series.counts[sig]);
      v.failures += series.counts[sig];
    }
    v.verdict = v.runs == 0            ? "interrupted"
                : v.failures == 0      ? "not-reproduced"
                : v.failures == v.runs ? "deterministic"
                                       : "flaky";
    outcome.verdict = v;
    outcome.exit_status = first_failure_status.value_or(outcome.exit_status);
    WriteRepeatFiles(request, outcome, series.counts);
  }
  return outcome;
}

core::Json ToJson(const RunSeriesOutcome& outcome, const std::string& tool_version) {
  core::Json runs = core::Json::array();
  for (const RunRecord& r : outcome.runs) {
    core::Json j = {{"run", r.index}, {"exit_status", r.status}, {"failed", r.failed}, {"timed_out", r.timed_out}};
    if (r.interrupted) j["interrupted"] = true;
    core::Json lost = core::Json::array();
    for (const auto& [stream, loss] : {std::pair{"stdout", &r.stdout_lost}, std::pair{"stderr", &r.stderr_lost}}) {
      if (!*loss) continue;
      lost.push_back({{"stream", stream},
                      {"error", std::strerror((*loss)->error)},
                      {"passed_on_bytes", (*loss)->passed_on_bytes},
                      {"lost_bytes", (*loss)->lost_bytes},
                      {"job_write_failed", (*loss)->job_write_failed}});
    }
    if (!lost.empty()) j["output_lost"] = std::move(lost);
    if (r.failed) {
      // Redacted as the bundle and the index are: the summary and signature quote the job's output.
      j["classification"] = {{"kind", r.kind}, {"category", r.category}, {"summary", core::RedactText(r.summary)}};
      j["signature"] = core::RedactText(r.signature);
      j["bundle"] = r.bundle.empty() ? core::Json(nullptr) : core::Json(r.bundle);
      if (!r.bundle_error.empty()) j["bundle_error"] = core::RedactText(r.bundle_error);
      j.update(r.process_summary);
    }
    if (!r.trace_effects.empty()) {
      core::Json effects = core::Json::array();
      for (const TraceEffect& e : r.trace_effects) {
        effects.push_back({{"kind", e.kind},
                           {"pid", e.pid ? core::Json(e.pid) : core::Json(nullptr)},
                           {"note", core::RedactText(e.note)},
                           {"evidence", core::RedactText(e.evidence)}});
      }
      j["tracing_side_effects"] = effects;
    }
    runs.push_back(std::move(j));
  }
  core::Json out = {{"schema_version", 1}, {"tool_version", tool_version}, {"runs", runs}};
  if (outcome.verdict) {
    const SeriesVerdict& v = *outcome.verdict;
    core::Json signatures = core::Json::array();
    for (const auto& [sig, count] : v.signatures) {
      signatures.push_back({{"signature", core::RedactText(sig)}, {"count", count}});
    }
    out["verdict"] = {{"verdict", v.verdict},
                      {"runs", v.runs},
                      {"passes", v.passes},
                      {"failures", v.failures},
                      {"other_nonzero_exits", v.runs - v.passes - v.failures},
                      {"failure_rate", v.runs > 0 ? static_cast<double>(v.failures) / v.runs : 0.0},
                      {"distinct_signatures", signatures}};
    if (outcome.interrupted_run) out["verdict"]["interrupted_run"] = outcome.interrupted_run;
  }
  return out;
}

std::string VerdictText(const SeriesVerdict& v) {
  std::string text;
  if (v.verdict == "interrupted") return "gputriage: interrupted before any run finished: no verdict\n";
  if (v.verdict == "not-reproduced") {
    text = fmt::format("gputriage: not reproduced: {} of {} runs passed", v.passes, v.runs);
    if (v.passes != v.runs) text += fmt::format(", {} exited non-zero without a crash", v.runs - v.passes);
    text += "\n";
  } else if (v.verdict == "deterministic") {
    text = fmt::format("gputriage: deterministic: {} of {} runs failed", v.failures, v.runs);
    text += v.signatures.size() == 1 ? " with the same signature\n"
                                     : fmt::format(" but with {} different signatures (a race or memory corruption?)\n",
                                                   v.signatures.size());
  } else {
    text = fmt::format("gputriage: flaky: {} of {} runs failed ({:.0f}%)\n", v.failures, v.runs,
                       100.0 * v.failures / v.runs);
  }
  for (const auto& [sig, count] : v.signatures) text += fmt::format("  {:>4}x  {}\n", count, sig);
  return text;
}

}  // namespace gputriage::forensics
