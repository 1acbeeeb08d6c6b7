// The bug report (`gputriage report`): everything collected about a failure, filled into the
// sections a GitHub issue needs — Environment, Reproduction, Diagnostics, Troubleshooting,
// known issues — as Markdown ready to paste, as one self-contained HTML file, or as JSON.
// Every piece of text that came from the job or the machine passes through secret redaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/snapshot.h"
#include "kb/analysis.h"

namespace gputriage::report {

/// What a report is made of; absent parts are reported as not collected.
struct ReportInput {
  std::string source;                    ///< the bundle directory or log file
  std::optional<core::Json> manifest;    ///< bundle manifest.json
  std::optional<core::Json> repeat;      ///< bundle repeat.json (run --repeat statistics)
  std::optional<core::Json> process;     ///< bundle process.json
  std::optional<core::Snapshot> snapshot;  ///< snapshot.json or --snapshot
  std::string stderr_tail;
  std::string kmsg;                      ///< kmsg.log (raw records)
  kb::Analysis analysis;
  /// How often the same signature was seen before (from the store), when known.
  std::optional<int> same_signature_count;
};

/// The report as a JSON document: {title, environment, reproduction, failure, diagnostics,
/// troubleshooting, known_issues, next_steps}. Secrets are redacted.
core::Json BuildReport(const ReportInput& input);

/// Markdown for a GitHub issue.
std::string RenderMarkdown(const core::Json& report);

/// One self-contained HTML file (inline CSS, no scripts, no external resources).
std::string RenderHtml(const core::Json& report);

}  // namespace gputriage::report
