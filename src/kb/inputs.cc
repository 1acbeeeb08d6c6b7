#include "kb/inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/redact_job.h"
#include "core/scoped_fd.h"
#include "corefile/core_notes.h"
#include "forensics/core_analysis.h"
#include "pack/packed_bundle.h"
#include "pack/zstd_stream.h"
#include "store/diff.h"

namespace gputriage::kb {
namespace {

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
    if (c.kind == store::change_kind::kDriverChanged || c.kind == store::change_kind::kKernelChanged) {
      if (facts.driver_changes.size() < 5) facts.driver_changes.push_back(c.summary);
    } else if (c.kind == store::change_kind::kComponentVersionChanged ||
               c.kind == store::change_kind::kComponentAdded || c.kind == store::change_kind::kComponentRemoved) {
      if (facts.stack_changes.size() < 5) facts.stack_changes.push_back(c.summary);
    }
  }
}

// The first `n` bytes of `fd` (fewer at its end): a pipe may give them in several reads.
core::Result<std::string> ReadPrefix(int fd, std::string_view name, size_t n) {
  std::string prefix(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, prefix.data() + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return core::ErrnoError(errno, "{}: read failed", name);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  prefix.resize(got);
  return prefix;
}

// "\x7fELF", then e_type (little-endian) at offset 16: ET_CORE = 4.
bool IsElfCoreHeader(std::string_view header) {
  return header.size() >= 18 &&
         header.substr(0, 4) ==
             "\x7f"
             "ELF" &&
         header[16] == 4 && header[17] == 0;
}

// How much of a zstd input is read to see what it decompresses to (an ELF core, a tar of a
// packed bundle, else a log): a zstd block is at most 128 KiB, so two hold the first bytes.
constexpr size_t kZstdSniffBytes = 256u << 10;
// The largest core decompressed to a temp file: systemd-coredump keeps cores up to 32 GiB
// (ProcessSizeMax), `run --core-limit` caps ours (4 GiB by default).
constexpr uint64_t kZstdCoreMaxBytes = 64ull << 30;

void ReplaceAll(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// A zstd-compressed ELF core (ours, core.zst, or systemd-coredump's core.*.zst): decompressed to
// a private temp directory (removed when done), then read as a core; messages name the input,
// not the temp file.
core::Result<core::ProcessReport> AnalyzeZstdCore(const std::string& name, int fd, std::string prefix,
                                                  const AnalysisRequest& request) {
  GT_ASSIGN_OR_RETURN(pack::PrivateTempDir temp, pack::PrivateTempDir::Create("gputriage-core-"));
  std::string core_path = temp.path() + "/core";
  std::optional<uint64_t> stopped_at;  // decompression stopped at the core's described extent
  unsigned long long content = ZSTD_getFrameContentSize(prefix.data(), prefix.size());
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != ZSTD_CONTENTSIZE_ERROR) {
    if (content > kZstdCoreMaxBytes) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                                 "{}: a zstd core of {} bytes, more than the {} gputriage decompresses", name, content,
                                 kZstdCoreMaxBytes);
    }
    struct statvfs vfs {};
    if (::statvfs(temp.path().c_str(), &vfs) == 0 &&
        static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize < content) {
      return core::MakeError(
          "{}: decompressing this core needs {} bytes in {}, which has {} free; set TMPDIR to a "
          "larger file system, or decompress it yourself (zstd -d) and analyze the core",
          name, content, temp.path(), static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize);
    }
  }
  {
    core::ScopedFd out(::open(core_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!out.valid()) return core::ErrnoError(errno, "{}: cannot create", core_path);
    pack::ByteSource source = pack::PrefixThenFd(std::move(prefix), fd, name);
    // Only as far as the core's ELF headers describe: failed before, a 608 KB core.zst with zeros
    // after its core wrote 10 GiB to $TMPDIR.
    GT_ASSIGN_OR_RETURN(pack::ZstdCopyStats copied,
                        pack::DecompressZstd(source, out.get(), kZstdCoreMaxBytes, name, core_path,
                                             [](std::string_view head) { return corefile::CoreExtent(head); }));
    stopped_at = copied.stopped_at_extent ? std::optional<uint64_t>(copied.out_bytes) : std::nullopt;
  }
  core::Result<core::ProcessReport> report = forensics::AnalyzeCore(core_path, request.exe);
  if (!report.ok()) {
    core::Error error = report.error();
    ReplaceAll(error.message, core_path, name);
    return error;
  }
  for (core::NotCollected& n : report->not_collected) ReplaceAll(n.reason, core_path, name);
  if (stopped_at) {
    report->not_collected.push_back(
        {"data after the core", fmt::format("{}: decompressed only the {} bytes its ELF headers describe; what follows "
                                            "in the stream is no part of the core and was not read",
                                            name, *stopped_at)});
  }
  return std::move(*report);
}

core::Result<AnalyzedInput> BundleInput(Analyzer& analyzer, const std::string& path, core::Bundle bundle) {
  AnalyzedInput input;
  input.path = path;
  core::RedactBundle(bundle);  // before anything is derived from it, shown or stored
  analyzer.AddBundle(bundle);
  input.kind = AnalyzedInput::Kind::kBundle;
  input.process = bundle.process.primary;
  input.bundle = std::move(bundle);
  return input;
}

// A log or a core file, opened once: the bytes sniffed to tell a core from a log are the start of
// the log, so a pipe, a FIFO or standard input is read once and loses nothing. Sets `refused`
// (and returns no error) for an input that is not a log or holds nothing readable.
core::Result<AnalyzedInput> AddFileInput(Analyzer& analyzer, const std::string& path, int fd, bool regular,
                                         const AnalysisRequest& request, AnalysisOutcome& out) {
  AnalyzedInput input;
  input.path = path;
  std::string name = path == "-" ? "stdin" : path;
  GT_ASSIGN_OR_RETURN(std::string prefix, ReadPrefix(fd, name, 18));
  // A zstd stream may hold a core or a packed bundle, and an uncompressed tar a packed bundle:
  // read enough to see which (a log gets these bytes as its start, so nothing is lost).
  std::string decoded;
  if (prefix.size() == 18 && pack::HasZstdMagic(prefix)) {
    GT_ASSIGN_OR_RETURN(std::string more, ReadPrefix(fd, name, kZstdSniffBytes - prefix.size()));
    prefix += more;
    decoded = pack::PeekZstd(prefix, 512);
  } else if (prefix.size() == 18 && !IsElfCoreHeader(prefix)) {
    GT_ASSIGN_OR_RETURN(std::string more, ReadPrefix(fd, name, 512 - prefix.size()));
    prefix += more;
    decoded = prefix;
  }
  if (pack::LooksLikeTar(decoded)) {
    GT_ASSIGN_OR_RETURN(core::Bundle bundle,
                        pack::ReadPackedBundleModel(pack::PrefixThenFd(std::move(prefix), fd, name), name));
    return BundleInput(analyzer, path, std::move(bundle));
  }
  if (IsElfCoreHeader(decoded) && pack::HasZstdMagic(prefix)) {
    GT_ASSIGN_OR_RETURN(core::ProcessReport report, AnalyzeZstdCore(name, fd, std::move(prefix), request));
    core::RedactProcessReport(report);  // before anything is derived from it, shown or stored
    analyzer.AddProcess(report, path);
    input.kind = AnalyzedInput::Kind::kCore;
    input.process = std::move(report);
    return input;
  }
  if (IsElfCoreHeader(prefix)) {
    if (!regular) {
      return core::MakeError("{}: an ELF core file on a pipe; save it to a file and give that file's path", name);
    }
    GT_ASSIGN_OR_RETURN(core::ProcessReport report, forensics::AnalyzeCore(path, request.exe));
    core::RedactProcessReport(report);  // before anything is derived from it, shown or stored
    analyzer.AddProcess(report, path);
    input.kind = AnalyzedInput::Kind::kCore;
    input.process = std::move(report);
    return input;
  }
  ReadOptions options;
  options.refuse_binary = true;
  options.keep_tail_bytes = request.log_tail_bytes;
  if (request.progress) {
    struct stat st {};
    uint64_t size = regular && ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    options.progress = [&request, name, size](uint64_t bytes) { request.progress(name, bytes, size); };
  }
  core::Result<ReadStats> read = analyzer.AddLog(fd, prefix, name, options);
  if (!read.ok() && read.error().code != core::ErrorCode::kInvalidArgument) return read.error();
  if (!read.ok()) {
    input.refused = read.error().message + "; left out of the analysis";
  } else if (!read->damage.empty() && read->bytes == 0) {
    input.refused = read->damage + "; nothing in it could be read";
  } else if (!read->damage.empty()) {
    out.warnings.push_back(fmt::format("{}; the {} lines before it were analysed", read->damage, read->lines));
  }
  if (read.ok()) input.log_tail = std::move(read->tail);
  return input;
}

// One path into the analyzer.
core::Result<AnalyzedInput> AddInput(Analyzer& analyzer, const std::string& path, const AnalysisRequest& request,
                                     AnalysisOutcome& out) {
  if (path == "-") return AddFileInput(analyzer, path, STDIN_FILENO, false, request, out);
  core::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return core::MakeError("{}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return core::MakeError("{}: cannot stat: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    GT_ASSIGN_OR_RETURN(core::Bundle bundle, core::ReadBundle(path));
    // What of the bundle could not be used (a missing process.json, a damaged file) is said.
    for (const core::NotCollected& problem : bundle.problems) {
      out.warnings.push_back(fmt::format("{}/{}: {}", path, problem.item, problem.reason));
    }
    return BundleInput(analyzer, path, std::move(bundle));
  }
  return AddFileInput(analyzer, path, fd.get(), S_ISREG(st.st_mode), request, out);
}

}  // namespace

core::Result<AnalysisOutcome> AnalyzeInputs(Analyzer& analyzer, const AnalysisRequest& request) {
  std::string label;
  for (const std::string& p : request.paths) label += (label.empty() ? "" : " ") + p;
  analyzer.Begin(label);
  AnalysisOutcome out;
  out.snapshot = request.snapshot;
  std::vector<std::string> refused;
  for (const std::string& path : request.paths) {
    GT_ASSIGN_OR_RETURN(AnalyzedInput input, AddInput(analyzer, path, request, out));
    if (!input.refused.empty()) {
      refused.push_back(std::move(input.refused));
      continue;
    }
    if (!out.snapshot && input.bundle && input.bundle->snapshot) out.snapshot = input.bundle->snapshot;
    out.inputs.push_back(std::move(input));
  }
  if (out.inputs.empty() && !refused.empty()) {
    // Nothing was analysed: say why for each input, without the "left out" of a partial run.
    std::string why;
    for (const std::string& r : refused) {
      why += (why.empty() ? "" : "\n") + r.substr(0, r.rfind("; left out of the analysis"));
    }
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}", why);
  }
  out.warnings.insert(out.warnings.begin(), refused.begin(), refused.end());
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
  out["warnings"] = outcome.warnings;
  return out;
}

}  // namespace gputriage::kb
