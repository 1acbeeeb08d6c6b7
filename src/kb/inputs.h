// What `analyze` and `report` are given, sorted out once: each path is a crash bundle directory,
// an ELF core file or a log (gzip and zstd read; "-" is stdin), and all of them are evidence of
// one failure. The snapshot the known issues' conditions are checked against is --snapshot's, else
// the first bundle's; --baseline adds what changed since a snapshot from when the job worked.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bundle.h"
#include "core/process.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "kb/analysis.h"

namespace gputriage::kb {

struct AnalysisRequest {
  std::vector<std::string> paths;
  std::string exe;                         ///< --exe: the executable of a core file
  std::optional<core::Snapshot> snapshot;  ///< --snapshot
  std::optional<core::Snapshot> baseline;  ///< --baseline
  /// Keep the last `log_tail_bytes` of each log's decoded text, pipes and compressed logs too (the
  /// report quotes them); 0: none.
  size_t log_tail_bytes = 0;
  /// Called while a log is read: its name, raw bytes read so far, its size when it is a regular
  /// file (0 for a pipe). For a progress display.
  std::function<void(std::string_view name, uint64_t bytes, uint64_t size)> progress;
};

/// One input as it was read.
struct AnalyzedInput {
  enum class Kind { kLog, kBundle, kCore };
  Kind kind = Kind::kLog;
  std::string path;
  std::optional<core::Bundle> bundle;          ///< kBundle
  std::optional<core::ProcessReport> process;  ///< kCore, and kBundle's primary process
  std::string log_tail;                        ///< kLog, when asked for: the end of its decoded text
  /// Why the input is left out (not a log, nothing readable); empty when it was analysed.
  std::string refused;
};

struct AnalysisOutcome {
  Analysis analysis;
  std::vector<AnalyzedInput> inputs;
  std::optional<core::Snapshot> snapshot;  ///< the one the conditions were checked against
  /// What the user should know about the inputs, each naming one: an input left out because it
  /// is not a log, a compressed log damaged after some lines (those lines were analysed).
  std::vector<std::string> warnings;
};

/// Reads every input into `analyzer` (Begin .. Finish). Each path is opened once: a directory is
/// a crash bundle, a file starting with an ELF core header a core, anything else a log read as
/// a stream from that same descriptor (so a pipe, a FIFO or "-" loses nothing to the sniffing).
/// An input that is not a log (binary data) or holds nothing readable (a compressed stream
/// damaged before its first byte of text) is left out with a warning naming it; a compressed log
/// damaged later is analysed up to the damage, with a warning. Fails naming the input that
/// cannot be opened or read (missing, not a bundle, a damaged core, an ELF core on a pipe), when
/// every input was left out (kInvalidArgument, one line per input), and when a baseline is given
/// without the failure's own snapshot.
core::Result<AnalysisOutcome> AnalyzeInputs(Analyzer& analyzer, const AnalysisRequest& request);

/// True when the inputs show a recognised failure (`analyze` exits 1): a known issue matched, the
/// category is not "other", or an input carried a process report (a core or a bundle's crash).
bool RecognisedFailure(const AnalysisOutcome& outcome);

/// `analyze --json`: ToJson(outcome.analysis) with schema_version 1, `tool_version`, processes
/// (each input's process report as core::ToJson writes it, plus "source": the input's path),
/// snapshot_used (whether a snapshot was checked against) and warnings (outcome.warnings).
core::Json ToJson(const AnalysisOutcome& outcome, std::string_view tool_version);

}  // namespace gputriage::kb
