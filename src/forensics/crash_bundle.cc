#include "forensics/crash_bundle.h"

#include <set>

#include "catalog/catalog.h"
#include "libs/libs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/bundle.h"
#include "core/scoped_fd.h"
#include "core/signals.h"
#include "core/text.h"
#include "forensics/gpu_record.h"
#include "forensics/process_tree.h"
#include "pack/zstd_stream.h"

namespace gputriage::forensics {
using core::Classification;
using core::Frame;
using core::Hex;
using core::ProcessReport;
using core::SiCodeMeaning;
using core::SiCodeName;
using core::SignalName;
using core::ThreadState;
namespace {

using core::Json;

std::string UtcStamp(double epoch_s, const char* format) {
  std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string SafeName(const std::string& argv0) {
  std::string base = std::filesystem::path(argv0).filename().string();
  std::string out;
  for (char c : base) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
    if (out.size() == 32) break;
  }
  return out.empty() ? "job" : out;
}

std::string FrameLine(const Frame& f) {
  std::string text = f.function.empty() ? Hex(f.pc) : f.function;
  if (f.file) return fmt::format("{} at {}{}", text, *f.file, f.line ? fmt::format(":{}", *f.line) : "");
  if (!f.module.empty()) {
    std::string base = std::filesystem::path(f.module).filename().string();
    return fmt::format("{} in {}{}", text, base, f.offset ? "+" + Hex(*f.offset) : "");
  }
  return text;
}

// Flushes `path` (a file or a directory) to the disk. A filesystem that cannot fsync a
// directory (EINVAL) has nothing more to offer, and is not an error.
core::Result<void> SyncPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return core::MakeError("{}: cannot open to fsync: {}", path, std::strerror(errno));
  int synced = fsync(fd);
  int err = errno;
  close(fd);
  if (synced != 0 && err != EINVAL) return core::MakeError("{}: fsync: {}", path, std::strerror(err));
  return {};
}

// Writes a new file and fsyncs it before closing: a bundle's files reach the disk before the
// rename that makes the bundle visible.
core::Result<void> WriteFile(const std::string& path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return core::MakeError("{}: {}", path, std::strerror(errno));
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return core::MakeError("{}: write: {}", path, std::strerror(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    int err = errno;
    close(fd);
    return core::MakeError("{}: fsync: {}", path, std::strerror(err));
  }
  if (close(fd) != 0) return core::MakeError("{}: close: {}", path, std::strerror(errno));
  return {};
}

std::string FixFor(const Classification& c) {
  if (c.kind == "stack-overflow") {
    return "Find the recursion in the repeated frames of the crashed thread; raise the stack "
           "size only when the depth is legitimate (ulimit -s for the main thread, "
           "pthread_attr_setstacksize / threading.stack_size for others).";
  }
  if (c.kind == "illegal-instruction-isa") {
    return "Rebuild for this CPU (drop -march=native or pick an older -march level), or install "
           "a build made for a baseline x86-64 level.";
  }
  if (c.kind == "oom-killed") {
    return "Reduce host memory use (data-loader workers, pinned-memory pools, dataset caching) or "
           "raise the job's memory limit.";
  }
  if (c.kind == "captured-running") {
    return "Look at where each thread waits (process.json): a thread in a GPU runtime's wait or a "
           "collective (NCCL/RCCL) points at the device or at another rank; capture again in a minute "
           "to tell a hang (the same stacks) from slow progress.";
  }
  if (c.kind == "hang") {
    return "Look at where each thread waits (process.json hang dump); rerun with a larger "
           "--timeout if the job is only slow.";
  }
  return {};
}

core::Severity SeverityFor(const Classification& c) {
  return c.category == core::Category::kHardware ? core::Severity::kCritical : core::Severity::kError;
}

}  // namespace

void AddTelemetry(RunAssessment& run, core::TelemetryRecording telemetry, double window_s) {
  run.telemetry = std::move(telemetry);
  if (!run.failed() || run.telemetry->samples.empty()) return;
  const SuperviseOutcome& o = run.outcome;
  double failure_t = o.first_crash_monotonic_s > 0 ? o.first_crash_monotonic_s - o.started_monotonic_s : o.duration_s;
  // Per GPU: the slowdown reasons seen in the window, and the hottest sample there.
  struct Seen {
    std::set<std::string> reasons;
    size_t samples = 0, slowed = 0;
    std::optional<int> max_temperature_c;
    std::optional<double> max_power_w;
    std::string last_line;
  };
  std::map<int, Seen> gpus;
  for (const core::TelemetrySample& s : run.telemetry->samples) {
    if (s.t_s < failure_t - window_s || s.t_s > failure_t + 0.5) continue;
    Seen& seen = gpus[s.device];
    ++seen.samples;
    if (s.temperature_c && (!seen.max_temperature_c || *s.temperature_c > *seen.max_temperature_c)) {
      seen.max_temperature_c = s.temperature_c;
    }
    if (s.power_w && (!seen.max_power_w || *s.power_w > *seen.max_power_w)) seen.max_power_w = s.power_w;
    bool slowed = false;
    for (const std::string& r : s.throttle_reasons) {
      if (core::IsSlowdownReason(r)) {
        seen.reasons.insert(r);
        slowed = true;
      }
    }
    if (slowed) {
      ++seen.slowed;
      seen.last_line = fmt::format("t={:+.1f} s from the failure: {}", s.t_s - failure_t, core::TelemetryCsvLine(s));
    }
  }
  for (const auto& [device, seen] : gpus) {
    if (seen.reasons.empty()) continue;
    // A power cap at full load is routine; thermal, power-brake and hardware slowdowns are not.
    bool only_power_cap = seen.reasons.size() == 1 && seen.reasons.count("sw_power_cap") == 1;
    core::Finding f;
    f.id = "telemetry.slowdown_before_failure";
    f.layer = 4;
    f.severity = only_power_cap ? core::Severity::kInfo : core::Severity::kWarning;
    f.title = fmt::format("GPU {} was slowed down ({}) in the {:g} s before the failure", device,
                          fmt::join(seen.reasons, ", "), window_s);
    f.detail = fmt::format("{} of {} samples in that window had a slowdown reason active", seen.slowed, seen.samples);
    if (seen.max_temperature_c) f.detail += fmt::format("; up to {} °C", *seen.max_temperature_c);
    if (seen.max_power_w) f.detail += fmt::format(", {:.0f} W", *seen.max_power_w);
    f.detail += only_power_cap ? ". The power cap held the clocks down: usual under full load, worth a look only "
                                 "if the failure is a hang or a timeout."
                               : ". A thermal, power-brake or hardware slowdown right before a failure points at "
                                 "cooling or power delivery rather than at the job.";
    f.evidence.push_back({.source = "telemetry.csv", .text = seen.last_line});
    if (!only_power_cap) {
      f.fix =
          "Check the GPU's cooling and power (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; amd-smi metric); "
          "run `gputriage validate --level 3` to see whether the slowdown recurs under load.";
    }
    run.findings.push_back(std::move(f));
  }
}

RunAssessment Assess(SuperviseOutcome outcome) {
  RunAssessment run;
  run.outcome = std::move(outcome);
  run.kernel_log = Correlate(run.outcome.kmsg, run.outcome.job_pids);
  FailureContext ctx;
  ctx.process = run.primary();
  ctx.exit_code = run.outcome.exit_code;
  ctx.term_signal = run.outcome.term_signal;
  ctx.timed_out = run.outcome.timed_out;
  ctx.captured_running = run.outcome.captured_running;
  ctx.stderr_tail = run.outcome.stderr_tail;
  ctx.kernel_log = &run.kernel_log;
  ctx.job_pids = &run.outcome.job_pids;
  ctx.output_reader_gone = run.outcome.stdout_reader_gone || run.outcome.stderr_reader_gone;
  run.classification = Classify(ctx);
  if (!run.classification) return run;
  Classification& c = *run.classification;
  if (!run.outcome.crashes.empty()) {
    // Keep the classification inside the process report too (process.json's member). With a
    // timeout too, the crash came first and is what the run is classified by.
    run.outcome.crashes.front().classification = c;
  }
  // A timeout's stacks vary from run to run; a capture is grouped by where its main thread waits.
  bool hang_only = run.outcome.timed_out && run.outcome.crashes.empty();
  run.signature = CrashSignature(hang_only ? nullptr : run.primary(), c);
  core::Finding finding;
  finding.id = "run." + c.kind;
  finding.layer = 4;
  finding.severity = SeverityFor(c);
  finding.title = c.summary;
  finding.detail = c.detail;
  finding.evidence = c.evidence;
  finding.fix = FixFor(c);
  run.findings.push_back(std::move(finding));
  // The tracing may have changed what the job did: said next to the failure, with the fix.
  for (const TraceEffect& effect : run.outcome.trace_effects) {
    core::Finding side;
    side.id = "run.trace-side-effect." + effect.kind;
    side.layer = 4;
    side.severity = core::Severity::kWarning;
    side.title = effect.note;
    side.evidence.push_back({effect.pid ? fmt::format("pid {}", effect.pid) : "job output", effect.evidence});
    side.fix = "Rerun with --no-trace to see the job behave as it does without gputriage.";
    run.findings.push_back(std::move(side));
  }
  return run;
}

namespace {

std::string CallName(const core::GpuErrorCount& e) {
  return e.result_name ? fmt::format("{} ({})", *e.result_name, e.result) : fmt::format("error {}", e.result);
}

std::string LaunchText(const core::GpuCall& c) {
  return fmt::format("{} grid {} block {} on stream {} (pid {}, {}, {:.3f} ms)", c.kernel.value_or("?"),
                     core::DimsText(c.grid), core::DimsText(c.block), c.stream.value_or("?"), c.pid, c.api, c.t_ms);
}

}  // namespace

void AddGpuCalls(RunAssessment& run, core::GpuCalls calls, const catalog::ErrorCodes& errors) {
  for (uint64_t address : FaultAddresses(run.kernel_log))
    calls.attributions.push_back(AttributeAddress(calls, address));
  std::sort(calls.errors.begin(), calls.errors.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  int64_t failed = calls.FailedCalls();
  if (!run.failed() && failed > 0) {
    // The job did not fail by its own account, but GPU calls returned errors it ignored.
    // The first failed call the record kept (the cause; later ones often follow from it), else the
    // most frequent.
    core::GpuErrorCount top = calls.errors.front();
    std::string kernel;
    for (const core::GpuCall& call : calls.calls) {
      if (call.result == 0) continue;
      top = {.api = call.api, .result = call.result, .result_name = call.result_name, .count = 1};
      if (call.kernel) kernel = fmt::format(" (kernel {})", *call.kernel);
      break;
    }
    const catalog::ErrorCode* code = errors.FindByValue(ApiVendor(top.api), static_cast<int>(top.result));
    Classification c;
    c.kind = "gpu-api-error";
    c.category = code ? code->category : core::Category::kOther;
    std::string status = run.outcome.exit_code ? fmt::format("exited with status {}", *run.outcome.exit_code) : "ended";
    c.summary = fmt::format("the job {} but {} GPU call{} failed, the first {}{} with {}", status, failed,
                            failed == 1 ? "" : "s", top.api, kernel, CallName(top));
    c.detail = fmt::format("{}The job did not act on these return codes; the flight recorder saw them.",
                           code && !code->message.empty() ? "\"" + code->message + "\". " : "");
    for (const core::GpuErrorCount& e : calls.errors) {
      c.evidence.push_back({"gpu_calls.json", fmt::format("{} returned {} x{}", e.api, CallName(e), e.count)});
    }
    run.classification = c;
    run.signature = fmt::format("gpu-api-error {} {}", top.api, top.result_name.value_or(std::to_string(top.result)));
    core::Finding finding;
    finding.id = "run.gpu-api-error";
    finding.layer = 4;
    finding.severity = SeverityFor(c);
    finding.title = c.summary;
    finding.detail = c.detail;
    finding.evidence = c.evidence;
    run.findings.push_back(std::move(finding));
  }
  if (run.failed() && !calls.candidates.empty()) {
    core::Finding finding;
    finding.id = "run.gpu-candidates";
    finding.layer = 4;
    finding.severity = core::Severity::kInfo;
    finding.title =
        fmt::format("{} kernel launch{} since the last successful synchronisation; newest: {}", calls.candidates.size(),
                    calls.candidates.size() == 1 ? "" : "es", calls.candidates.front().kernel.value_or("?"));
    finding.detail = "An asynchronous GPU error surfaces at a later call: the kernel that faulted is among these.";
    for (const core::GpuCall& c : calls.candidates) finding.evidence.push_back({"gpu_calls.json", LaunchText(c)});
    run.findings.push_back(std::move(finding));
  }
  for (const core::GpuAddressAttribution& a : calls.attributions) {
    core::Finding finding;
    finding.id = "run.gpu-fault-address";
    finding.layer = 4;
    finding.severity = core::Severity::kInfo;
    finding.title = fmt::format("faulting address {}: {}", a.address, a.summary);
    finding.evidence.push_back({"kmsg.log", a.address});
    run.findings.push_back(std::move(finding));
  }
  run.gpu_calls = std::move(calls);
}

void AddCollectives(RunAssessment& run, FlightRecorderFiles files) {
  for (core::Finding& f : CollectiveFindings(files.report)) run.findings.push_back(std::move(f));
  run.collectives = std::move(files.report);
  run.collective_files = std::move(files.files);
  for (const std::string& p : files.problems) run.outcome.not_collected.push_back({"flight-recorder dump", p});
}

core::ProcessFile ProcessFileOf(const RunAssessment& run) {
  const SuperviseOutcome& o = run.outcome;
  core::ProcessFile file;
  if (const ProcessReport* primary = run.primary()) {
    file.primary = *primary;
  } else {
    file.primary.pid = o.root_pid;
    file.primary.signal = o.term_signal;
  }
  if (!o.captured_running) file.exit_status = o.ShellStatus();  // a captured process is still running
  file.exit_code = o.exit_code;
  file.term_signal = o.term_signal;
  file.timed_out = o.timed_out;
  if (run.classification) file.primary.classification = *run.classification;
  file.signature = run.signature;
  for (size_t i = 1; i < o.crashes.size(); ++i) file.other_crashed_processes.push_back(o.crashes[i]);
  if (o.crashes_not_captured) file.crashed_processes_not_captured = o.crashes_not_captured;
  for (const ProcessReport& h : o.hang_dumps) {
    if (&h != run.primary()) file.hang_dumps.push_back(h);
  }
  for (const CorrelatedRecord& r : run.kernel_log) {
    file.kernel_log.push_back(
        {core::SanitizeUtf8(r.record.message), r.log_class, r.record.monotonic_us, r.job_pid, r.xid, r.oom_kill});
  }
  return file;
}

namespace {

// A bundle being written: a hidden ".<name>.partial-XXXXXX" directory beside the final one,
// removed when writing fails, renamed into place when it succeeds.
struct Staging {
  std::string dir;
  core::BundleManifest manifest;

  // Writes `file` and records it as present with its size.
  core::Result<void> Put(const std::string& file, std::string_view data) {
    GT_RETURN_IF_ERROR(WriteFile(dir + "/" + file, data));
    manifest.files[file] = {.present = true, .bytes = data.size()};
    return {};
  }
  void Absent(const std::string& file, std::string reason) {
    manifest.files[file] = {.present = false, .reason = std::move(reason)};
  }
};

std::string Pretty(const Json& json) { return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"; }

// The shared objects the crashed (or captured) process had mapped, in address order, with their
// components, releases and the findings of `libs` (two copies, mixed releases, the version
// matrix); nullopt without a memory map.
std::optional<core::LibraryReport> LoadedLibrariesOf(const RunAssessment& run) {
  const ProcessReport* primary = run.primary();
  if (!primary || primary->maps.empty()) return std::nullopt;
  auto tables = catalog::BuiltinLibraryTables();
  if (!tables.ok()) return std::nullopt;
  std::vector<std::string> paths;
  std::set<std::string> seen;
  for (const core::Mapping& m : primary->maps) {
    if (m.path.empty() || m.path.front() != '/' || m.file_offset != 0 || m.path.ends_with(" (deleted)")) continue;
    if (m.path.starts_with("/dev/") || m.path.starts_with("/memfd:") || !seen.insert(m.path).second) continue;
    paths.push_back(m.path);
  }
  core::LibraryReport report = libs::LoadedLibraries(paths, "bundle", **tables);
  report.pid = primary->pid;
  return report;
}

// process.json, the output tails, kmsg.log, snapshot.json, libraries.json and findings.json.
core::Result<void> WriteRecords(const RunAssessment& run, const BundleInput& input, Staging& staging) {
  const SuperviseOutcome& o = run.outcome;
  GT_RETURN_IF_ERROR(staging.Put("process.json", Pretty(core::ToJson(ProcessFileOf(run)))));
  if (o.captured_running) {
    const char* why =
        "not available: `capture` attached to a process it did not start; its output goes where it was started to";
    staging.Absent("stdout.tail", why);
    staging.Absent("stderr.tail", why);
  } else {
    GT_RETURN_IF_ERROR(staging.Put("stdout.tail", o.stdout_tail));
    GT_RETURN_IF_ERROR(staging.Put("stderr.tail", o.stderr_tail));
  }
  bool kmsg_missing = false;
  for (const core::NotCollected& n : o.not_collected) {
    if (n.item == "kernel log during the run") {
      staging.Absent("kmsg.log", n.reason);
      kmsg_missing = true;
    }
  }
  if (!kmsg_missing) GT_RETURN_IF_ERROR(staging.Put("kmsg.log", o.kmsg_raw));
  if (input.snapshot) {
    GT_RETURN_IF_ERROR(staging.Put("snapshot.json", Pretty(core::ToJson(*input.snapshot))));
  } else {
    staging.Absent("snapshot.json", input.snapshot_missing_reason);
  }
  if (run.gpu_calls) {
    GT_RETURN_IF_ERROR(staging.Put("gpu_calls.json", Pretty(core::ToJson(*run.gpu_calls))));
  } else {
    staging.Absent("gpu_calls.json",
                   run.gpu_calls_missing.value_or("not recorded: `run --record` records the job's GPU calls"));
  }
  if (run.escalation) {
    GT_RETURN_IF_ERROR(staging.Put("escalation.json", Pretty(core::ToJson(*run.escalation))));
  } else {
    staging.Absent("escalation.json",
                   "not run: `run --escalate` reruns a job that failed with an asynchronous GPU error");
  }
  if (run.telemetry && !run.telemetry->samples.empty()) {
    GT_RETURN_IF_ERROR(staging.Put("telemetry.csv", core::TelemetryCsv(run.telemetry->samples)));
    if (!run.telemetry->note.empty()) staging.manifest.files["telemetry.csv"].note = run.telemetry->note;
  } else if (run.telemetry) {
    staging.Absent("telemetry.csv", run.telemetry->note.empty() ? "no sample was taken" : run.telemetry->note);
  } else if (o.captured_running) {
    staging.Absent("telemetry.csv",
                   "not sampled: `capture` takes a running process at one moment; `run` samples GPU telemetry "
                   "during a job");
  } else {
    staging.Absent("telemetry.csv", "not sampled (--no-telemetry)");
  }
  if (run.collectives) {
    GT_RETURN_IF_ERROR(staging.Put("collectives.json", Pretty(core::ToJson(*run.collectives))));
    for (const auto& [name, bytes] : run.collective_files) GT_RETURN_IF_ERROR(staging.Put(name, bytes));
  } else {
    staging.Absent("collectives.json", run.collectives_missing.empty()
                                           ? "no PyTorch flight-recorder dump was written during the run"
                                           : run.collectives_missing);
  }
  if (std::optional<core::LibraryReport> libraries = LoadedLibrariesOf(run)) {
    GT_RETURN_IF_ERROR(staging.Put("libraries.json", Pretty(core::ToJson(*libraries))));
  } else {
    staging.Absent("libraries.json", "no memory map of a crashed or captured process: nothing loaded to list");
  }
  Json findings = {{"schema_version", core::kFindingsSchemaVersion}, {"findings", run.findings}};
  return staging.Put("findings.json", Pretty(findings));
}

// zstd's default level: cores (mostly zero pages and repeated heap) shrink several times at a few
// hundred MB/s per core; higher levels cost far more time for a few percent.
constexpr int kCoreZstdLevel = 3;

// Compresses the raw core `from` into `dest` (streaming zstd, bounded memory) and fsyncs it;
// removes a partial `dest` on failure. Returns the compressed size.
core::Result<pack::ZstdCopyStats> CompressCore(const std::string& from, const std::string& dest) {
  core::ScopedFd in(open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return core::MakeError("{}: {}", from, std::strerror(errno));
  core::ScopedFd out(open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out.valid()) return core::MakeError("{}: {}", dest, std::strerror(errno));
  auto stats = pack::CompressZstd(in.get(), out.get(), kCoreZstdLevel, from, dest);
  if (stats.ok() && fsync(out.get()) != 0) stats = core::MakeError("{}: fsync: {}", dest, std::strerror(errno));
  if (!stats.ok()) unlink(dest.c_str());
  return stats;
}

// The raw core moves into the bundle as `core`.
void MoveRawCore(const SuperviseOutcome& o, Staging& staging, std::string note) {
  std::string dest = staging.dir + "/core";
  if (rename(o.core_file->c_str(), dest.c_str()) == 0) {
    struct stat st {};
    stat(dest.c_str(), &st);
    // corefile::WriteCore does not fsync; the bundle's rename must not publish a hollow core.
    if (auto synced = SyncPath(dest); !synced.ok()) note += (note.empty() ? "" : "; ") + synced.error().message;
    staging.manifest.files["core"] = {.present = true, .bytes = static_cast<uint64_t>(st.st_size), .note = note};
  } else {
    staging.Absent("core", fmt::format("{}: cannot move it into the bundle: {}", *o.core_file, std::strerror(errno)));
  }
}

// The core file written during the capture moves in, compressed as core.zst unless `raw_core`;
// the files of the layout that `run` does not write are listed with why.
void MoveCoreAndListTheRest(const SuperviseOutcome& o, Staging& staging, bool raw_core) {
  if (o.core_file && !raw_core) {
    std::string dest = staging.dir + "/core.zst";
    auto stats = CompressCore(*o.core_file, dest);
    if (stats.ok()) {
      unlink(o.core_file->c_str());
      std::string note = fmt::format("{}{}zstd of a {}-byte ELF core (zstd -d core.zst; analyze reads it as it is)",
                                     o.core_note.value_or(""), o.core_note ? "; " : "", stats->in_bytes);
      staging.manifest.files["core.zst"] = {.present = true, .bytes = stats->out_bytes, .note = note};
      staging.Absent("core", "compressed as core.zst (run --core=raw keeps the core uncompressed)");
    } else {
      // Keep the core uncompressed rather than lose it.
      MoveRawCore(o, staging,
                  o.core_note.value_or("") + (o.core_note ? "; " : "") + "not compressed: " + stats.error().message);
      staging.Absent("core.zst", "compression failed: " + stats.error().message + "; the core is kept uncompressed");
    }
  } else if (o.core_file) {
    MoveRawCore(o, staging, o.core_note.value_or(""));
    staging.Absent("core.zst", "run --core=raw: the core is uncompressed (core)");
  } else {
    std::string reason =
        o.core_note ? *o.core_note : "not requested (--core writes one; a GPU job's memory can be hundreds of GB)";
    staging.Absent("core", reason);
    staging.Absent("core.zst", reason);
  }
  staging.Absent("report.md", "not written by `run`: `gputriage report BUNDLE` writes the report from the bundle");
}

// The manifest's members other than `files`; `begin` is when writing started (monotonic).
void FillManifest(const RunAssessment& run, const BundleInput& input, double begin, core::BundleManifest& m) {
  const SuperviseOutcome& o = run.outcome;
  m.schema_version = 1;
  m.kind = "gputriage.crash-bundle";
  m.tool_version = input.tool_version;
  m.created_at = UtcStamp(static_cast<double>(std::time(nullptr)), "%Y-%m-%dT%H:%M:%SZ");
  m.command = input.argv;
  if (!o.captured_running) m.exit_status = o.ShellStatus();  // a captured process has not exited
  m.traced = o.traced;
  if (run.classification) {
    m.classification =
        core::BundleClassification{.kind = run.classification->kind,
                                   .category = std::string(core::CategoryName(run.classification->category)),
                                   .summary = run.classification->summary};
  }
  m.signature = run.signature;
  core::BundleTimings timings{.started_at = UtcStamp(o.started_at_epoch_s, "%Y-%m-%dT%H:%M:%SZ"),
                              .duration_s = o.duration_s};
  if (o.first_crash_monotonic_s > 0) {
    timings.capture_ms = o.first_capture_ms;
    timings.signal_to_bundle_ms = (MonotonicSeconds() - o.first_crash_monotonic_s) * 1000.0;
  }
  timings.bundle_write_ms = (MonotonicSeconds() - begin) * 1000.0;
  m.timings = timings;
  if (!o.captured_running) {
    m.output = core::BundleOutput{
        .stdout_bytes = o.stdout_bytes, .stderr_bytes = o.stderr_bytes, .tail_limit_bytes = 1u << 20};
  }
  m.capture = input.capture;
  m.kernel_log = core::BundleKernelLog{.records = o.kmsg.size(), .lost = o.kmsg_lost};
  m.not_collected = o.not_collected;
  m.files["manifest.json"] = {.present = true};
}

// Renames the staging directory to `parent/name`, or `name-2`, `name-3`... when taken.
core::Result<std::string> Publish(const std::string& staging_dir, const std::string& parent, const std::string& name) {
  std::string final_path = (std::filesystem::path(parent) / name).string();
  for (int attempt = 2; rename(staging_dir.c_str(), final_path.c_str()) != 0; ++attempt) {
    if ((errno != EEXIST && errno != ENOTEMPTY) || attempt > 100) {
      return core::MakeError("{}: cannot rename {} into place: {}", final_path, staging_dir, std::strerror(errno));
    }
    final_path = (std::filesystem::path(parent) / fmt::format("{}-{}", name, attempt)).string();
  }
  return final_path;
}

}  // namespace

core::Result<BundleWritten> WriteBundle(const RunAssessment& run, const BundleInput& input) {
  const double begin = MonotonicSeconds();
  const SuperviseOutcome& o = run.outcome;
  std::error_code ec;
  std::filesystem::create_directories(input.parent_dir, ec);
  if (ec) return core::MakeError("{}: cannot create the bundle directory: {}", input.parent_dir, ec.message());
  std::string name =
      fmt::format("{}-{}-{}", UtcStamp(input.named_at_epoch_s.value_or(o.started_at_epoch_s), "%Y%m%dT%H%M%SZ"),
                  SafeName(input.argv.empty() ? "" : input.argv[0]), o.root_pid);
  std::string tmp_template =
      (std::filesystem::path(input.parent_dir) / ("." + name + ".partial-" + PartialWriterTag() + "_XXXXXX")).string();
  std::vector<char> tmpl(tmp_template.begin(), tmp_template.end());
  tmpl.push_back('\0');
  if (!mkdtemp(tmpl.data())) {
    return core::MakeError("{}: cannot create a directory there: {}", input.parent_dir, std::strerror(errno));
  }
  Staging staging{.dir = tmpl.data()};
  auto written = [&]() -> core::Result<std::string> {
    GT_RETURN_IF_ERROR(WriteRecords(run, input, staging));
    MoveCoreAndListTheRest(o, staging, input.raw_core);
    FillManifest(run, input, begin, staging.manifest);
    GT_RETURN_IF_ERROR(WriteFile(staging.dir + "/manifest.json", Pretty(core::ToJson(staging.manifest))));
    GT_RETURN_IF_ERROR(SyncPath(staging.dir));  // its entries, before it becomes visible
    GT_ASSIGN_OR_RETURN(std::string published, Publish(staging.dir, input.parent_dir, name));
    // The rename itself. The bundle is complete either way: a failure here only means a power
    // loss now could take the whole bundle, never leave half of it.
    (void)SyncPath(input.parent_dir);
    return published;
  }();
  if (!written.ok()) {
    std::filesystem::remove_all(staging.dir, ec);
    return written.error();
  }
  return BundleWritten{*written, (MonotonicSeconds() - begin) * 1000.0};
}

namespace {

constexpr double kLegacyStaleSeconds = 24 * 3600;

// A partial file's writer, from its name; `legacy` when the name is of an earlier version.
struct PartialName {
  bool legacy = false;
  std::string host;
  int pid = 0;
  uint64_t start_time = 0;
};

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The suffix after the writer: "" (a core), ".tmp.XXXXXX" (a core being written), "_XXXXXX" (a
// bundle directory).
bool PartialSuffix(std::string_view s) {
  return s.empty() || (core::StartsWith(s, ".tmp.") && s.size() == 11) || (s[0] == '_' && s.size() == 7);
}

// ".core.partial-<tag>[.tmp.XXXXXX]" or ".<name>.partial-<tag>_XXXXXX", new or legacy.
std::optional<PartialName> ParsePartialName(std::string_view name) {
  size_t at = name.rfind(".partial-");
  if (name.empty() || name[0] != '.' || at == std::string_view::npos || at == 0) return std::nullopt;
  std::string_view rest = name.substr(at + 9);
  const bool core = core::StartsWith(name, ".core.partial-");
  size_t first = rest.find('_');
  if (first == std::string_view::npos) {
    // Earlier versions: ".core.partial-<pid>[.tmp.XXXXXX]", ".<name>.partial-XXXXXX".
    std::string_view pid = rest.substr(0, rest.find('.'));
    if ((core && AllDigits(pid) && PartialSuffix(rest.substr(pid.size()))) || (!core && rest.size() == 6)) {
      return PartialName{.legacy = true};
    }
    return std::nullopt;
  }
  size_t second = rest.find('_', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  std::string_view pid = rest.substr(first + 1, second - first - 1);
  std::string_view tail = rest.substr(second + 1);
  size_t digits = 0;
  while (digits < tail.size() && tail[digits] >= '0' && tail[digits] <= '9') ++digits;
  if (!AllDigits(pid) || digits == 0 || !PartialSuffix(tail.substr(digits))) return std::nullopt;
  if (core != (tail.substr(digits).empty() || tail[digits] == '.')) return std::nullopt;
  return PartialName{.host = std::string(rest.substr(0, first)),
                     .pid = std::atoi(std::string(pid).c_str()),
                     .start_time = std::strtoull(std::string(tail.substr(0, digits)).c_str(), nullptr, 10)};
}

std::string HostTag() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string tag;
  for (char c : std::string(host)) tag.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-');
  return tag.empty() ? "localhost" : tag;
}

bool IsStale(const PartialName& writer, const std::filesystem::path& path) {
  if (!writer.legacy) {
    if (writer.host != HostTag()) return false;
    std::optional<uint64_t> start = ProcessStartTime(writer.pid);
    return !start || *start != writer.start_time;
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return false;
  return static_cast<double>(std::time(nullptr) - st.st_mtime) > kLegacyStaleSeconds;
}

uint64_t SizeOf(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return std::filesystem::file_size(path, ec);
  uint64_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

}  // namespace

std::string PartialWriterTag() {
  return fmt::format("{}_{}_{}", HostTag(), getpid(), ProcessStartTime(getpid()).value_or(0));
}

std::string PartialCorePath(const std::string& bundle_dir) {
  return (std::filesystem::path(bundle_dir) / (".core.partial-" + PartialWriterTag())).string();
}

StaleCleanup RemoveStalePartials(const std::string& bundle_dir) {
  StaleCleanup cleanup;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(bundle_dir, ec)) {
    std::optional<PartialName> writer = ParsePartialName(entry.path().filename().string());
    if (!writer || !IsStale(*writer, entry.path())) continue;
    uint64_t bytes = SizeOf(entry.path());
    std::error_code removed;
    std::filesystem::remove_all(entry.path(), removed);
    if (removed) {
      cleanup.errors.push_back(fmt::format("{}: {}", entry.path().string(), removed.message()));
      continue;
    }
    cleanup.removed.push_back(entry.path().string());
    cleanup.bytes += bytes;
  }
  return cleanup;
}

core::Result<void> WriteFileDurably(const std::string& dir, const std::string& name, std::string_view data) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  const std::string temp = (std::filesystem::path(dir) / ("." + name + ".partial-" + PartialWriterTag())).string();
  if (auto written = WriteFile(temp, data); !written.ok()) {
    ::unlink(temp.c_str());
    return written;
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return core::MakeError("{}: cannot rename {} into place: {}", path, temp, std::strerror(err));
  }
  return SyncPath(dir);
}

std::string RunSummaryText(const RunAssessment& run, const std::string& bundle_path) {
  const SuperviseOutcome& o = run.outcome;
  std::string out;
  const ProcessReport* p = run.primary();
  if (o.exec_errno) {
    return fmt::format("gputriage: cannot run the command: {}\n", std::strerror(*o.exec_errno));
  }
  if (o.timed_out) {
    // The limit the user set, not how long stopping the tree took after it.
    double limit_s = o.timeout ? static_cast<double>(o.timeout->count()) / 1000.0 : o.duration_s;
    out += fmt::format("gputriage: timed out after {:g} s (--timeout {:g}s); {}job terminated (status {})\n", limit_s,
                       limit_s, o.hang_dumps.empty() ? "" : "stacks dumped, ", o.ShellStatus());
  } else if (p && p->signal) {
    std::string code = p->si_code ? fmt::format(" ({}: {})", SiCodeName(*p->signal, *p->si_code),
                                                SiCodeMeaning(*p->signal, *p->si_code))
                                  : "";
    out += fmt::format("gputriage: pid {} died of {}{}{}\n", p->pid ? std::to_string(*p->pid) : "?",
                       SignalName(*p->signal), code, p->fault_address ? " at " + Hex(*p->fault_address) : "");
  } else if (o.term_signal) {
    out += fmt::format("gputriage: job killed by {}{} (status {})\n", SignalName(*o.term_signal),
                       o.forwarded_signal == o.term_signal ? ", sent to gputriage and passed on to the job" : "",
                       o.ShellStatus());
  } else {
    out += fmt::format("gputriage: job exited with status {}\n", o.ShellStatus());
  }
  if (o.timed_out && p && p->signal) {
    out += fmt::format("gputriage: first failure: {} died of {}{}\n", core::ProcessLabel(*p), SignalName(*p->signal),
                       p->stopped_at_s ? fmt::format(" at +{:.2f} s", *p->stopped_at_s) : "");
  }
  if (run.classification) out += fmt::format("  what: {}\n", run.classification->summary);
  for (const core::JobProcess& jp : core::JobProcessTimeline(ProcessFileOf(run))) {
    std::string what = jp.signal ? SignalName(*jp.signal) : std::string("still running");
    std::string when = jp.stopped_at_s ? fmt::format(" at +{:.2f} s", *jp.stopped_at_s) : "";
    out += fmt::format("  process: {} {}: {}{}\n", core::JobProcessLabel(jp), core::JobProcessRoleText(jp.role), what,
                       when);
  }
  if (p && !p->threads.empty() && !p->threads.front().frames.empty()) {
    const ThreadState& t = p->threads.front();
    out += fmt::format("  where: {} (thread {}{})\n", FrameLine(t.frames.front()), t.tid,
                       t.name.empty() ? "" : " \"" + t.name + "\"");
    if (const Frame* user = FirstUserFrame(t.frames); user && user != &t.frames.front()) {
      out += fmt::format("  your code: {}\n", FrameLine(*user));
    }
  }
  if (run.gpu_calls && !run.gpu_calls->candidates.empty()) {
    const core::GpuCall& newest = run.gpu_calls->candidates.front();
    out += fmt::format("  in flight: {} launch{} since the last successful synchronisation, newest {}\n",
                       run.gpu_calls->candidates.size(), run.gpu_calls->candidates.size() == 1 ? "" : "es",
                       newest.kernel.value_or("?"));
  }
  if (run.gpu_calls) {
    for (const core::GpuCall& c : run.gpu_calls->in_progress) {
      out += fmt::format("  waiting in: {} (pid {}, thread {}, entered {:.1f} ms after the recorder started)\n", c.api,
                         c.pid, c.tid, c.t_ms);
    }
    for (const core::GpuAddressAttribution& a : run.gpu_calls->attributions) {
      out += fmt::format("  fault address {}: {}\n", a.address, a.summary);
    }
  }
  for (const core::Finding& f : run.findings) {
    if (f.id.starts_with("collective.")) out += fmt::format("  collectives: {}\n", f.title);
  }
  if (run.escalation) {
    if (run.escalation->kernel) {
      out += fmt::format("  kernel: {}{}\n", *run.escalation->kernel,
                         run.escalation->location ? " at " + *run.escalation->location : "");
    }
    for (const core::EscalationStep& s : run.escalation->steps) {
      out += fmt::format("  escalation {} ({:.1f} s): {}\n", s.step, s.seconds, s.outcome);
    }
  }
  size_t related = 0;
  std::vector<std::string> xids;
  for (const CorrelatedRecord& r : run.kernel_log) {
    if (r.job_pid) ++related;
    if (r.xid && r.job_pid) xids.push_back(fmt::format("Xid {}", *r.xid));
  }
  if (!run.kernel_log.empty()) {
    out += fmt::format("  kernel log: {} record{} during the run, {} naming this job{}\n", run.kernel_log.size(),
                       run.kernel_log.size() == 1 ? "" : "s", related,
                       xids.empty() ? "" : fmt::format(" ({})", fmt::join(xids, ", ")));
  }
  for (const core::NotCollected& n : o.not_collected) {
    out += fmt::format("  not collected: {}: {}\n", n.item, n.reason);
  }
  if (o.core_note && !o.core_file) out += fmt::format("  core: not written: {}\n", *o.core_note);
  if (!o.left_running.empty()) {
    out += fmt::format("  still running: pid {} did not die of SIGKILL within 5 s (blocked in the kernel?)\n",
                       fmt::join(o.left_running, ", "));
  }
  if (!bundle_path.empty()) out += fmt::format("  bundle: {}\n", bundle_path);
  out += TraceEffectsText(o.trace_effects);
  return out;
}

}  // namespace gputriage::forensics
