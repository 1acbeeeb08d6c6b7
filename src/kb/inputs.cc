#include "kb/inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/file.h"
#include "core/redact_job.h"
#include "forensics/core_analysis.h"
#include "store/diff.h"

namespace gputriage::kb {
namespace {

// The last `max_bytes` of the regular file at `path` ("" for anything else: a pipe or FIFO was
// consumed by the analysis).
std::string TailOfFile(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  core::Result<std::string> tail = core::ReadFileTail(path, max_bytes);
  return tail.ok() ? std::move(tail).value() : std::string();
}

// What changed from the last good snapshot to the failure's, for the verdict's reasons. Changes
// that mean failing hardware (ECC counters up, retired pages, a GPU gone) count as hardware
// evidence too.
void AddBaselineChanges(const core::Snapshot& baseline, const core::Snapshot& snapshot, Facts& facts) {
  for (const store::Change& c : store::DiffSnapshots(baseline, snapshot)) {
    if (facts.changes.size() < 20) facts.changes.push_back(c.summary);
    if (c.kind == store::change_kind::kEccErrorsIncreased || c.kind == store::change_kind::kRetiredPagesIncreased ||
        c.kind == store::change_kind::kGpuRemoved) {
      facts.hardware_alerts.push_back("since the last good snapshot: " + c.summary);
    }
  }
}

// One path into the analyzer.
core::Result<AnalyzedInput> AddInput(Analyzer& analyzer, const std::string& path, const AnalysisRequest& request) {
  AnalyzedInput input;
  input.path = path;
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) != 0) return core::MakeError("{}: {}", path, std::strerror(errno));
  if (path != "-" && S_ISDIR(st.st_mode)) {
    GT_ASSIGN_OR_RETURN(core::Bundle bundle, core::ReadBundle(path));
    core::RedactBundle(bundle);  // before anything is derived from it, shown or stored
    analyzer.AddBundle(bundle);
    input.kind = AnalyzedInput::Kind::kBundle;
    input.process = bundle.process.primary;
    input.bundle = std::move(bundle);
    return input;
  }
  if (path != "-" && IsElfCoreFile(path)) {
    GT_ASSIGN_OR_RETURN(core::ProcessReport report, forensics::AnalyzeCore(path, request.exe));
    core::RedactProcessReport(report);
    analyzer.AddProcess(report, path);
    input.kind = AnalyzedInput::Kind::kCore;
    input.process = std::move(report);
    return input;
  }
  if (auto read = analyzer.AddLog(path); !read.ok()) return read.error();
  if (request.log_tail_bytes > 0 && path != "-") input.log_tail = TailOfFile(path, request.log_tail_bytes);
  return input;
}

}  // namespace

bool IsElfCoreFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  char header[18] = {};
  bool core = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::pread(fd, header, sizeof header, 0) == sizeof header) {
    // "\x7fELF", then e_type (little-endian) at offset 16: ET_CORE = 4.
    core = std::string_view(header, 4) ==
               "\x7f"
               "ELF" &&
           header[16] == 4 && header[17] == 0;
  }
  ::close(fd);
  return core;
}

core::Result<AnalysisOutcome> AnalyzeInputs(Analyzer& analyzer, const AnalysisRequest& request) {
  std::string label;
  for (const std::string& p : request.paths) label += (label.empty() ? "" : " ") + p;
  analyzer.Begin(label);
  AnalysisOutcome out;
  out.snapshot = request.snapshot;
  for (const std::string& path : request.paths) {
    GT_ASSIGN_OR_RETURN(AnalyzedInput input, AddInput(analyzer, path, request));
    if (!out.snapshot && input.bundle && input.bundle->snapshot) out.snapshot = input.bundle->snapshot;
    out.inputs.push_back(std::move(input));
  }
  Facts facts;
  if (out.snapshot) facts = FactsFromSnapshot(*out.snapshot);
  if (request.baseline) {
    if (!out.snapshot) {
      return core::MakeError(
          "--baseline needs the failure's own snapshot to compare with (--snapshot FILE, or a bundle that has "
          "snapshot.json)");
    }
    AddBaselineChanges(*request.baseline, *out.snapshot, facts);
  }
  out.analysis = analyzer.Finish(out.snapshot ? &facts : nullptr);
  return out;
}

bool RecognisedFailure(const AnalysisOutcome& outcome) {
  if (!outcome.analysis.matches.empty() || outcome.analysis.category != core::Category::kOther) return true;
  for (const AnalyzedInput& input : outcome.inputs) {
    if (input.process) return true;
  }
  return false;
}

core::Json ToJson(const AnalysisOutcome& outcome, std::string_view tool_version) {
  core::Json processes = core::Json::array();
  for (const AnalyzedInput& input : outcome.inputs) {
    if (!input.process) continue;
    core::Json process = core::ToJson(*input.process);
    process["source"] = input.path;
    processes.push_back(std::move(process));
  }
  core::Json out = ToJson(outcome.analysis);
  out["schema_version"] = 1;
  out["tool_version"] = tool_version;
  out["processes"] = processes;
  out["snapshot_used"] = outcome.snapshot.has_value();
  return out;
}

}  // namespace gputriage::kb
