// The bug report (`gputriage report`): everything collected about a failure, filled into the
// sections a GitHub issue needs — Environment, Reproduction, Diagnostics, Troubleshooting,
// known issues — as Markdown ready to paste, as one self-contained HTML file, or as JSON.
// Every piece of text that came from the job or the machine passes through secret redaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/bundle.h"
#include "core/model.h"
#include "core/snapshot.h"
#include "kb/analysis.h"
#include "report/timeline.h"
#include "store/snapshot_store.h"

namespace gputriage::report {

/// What a report is made of; absent parts are reported as not collected.
struct ReportInput {
  std::string source;                            ///< the bundle directory or log file
  std::optional<core::BundleManifest> manifest;  ///< bundle manifest.json
  std::optional<core::RepeatStats> repeat;       ///< bundle repeat.json (run --repeat statistics)
  std::optional<core::ProcessFile> process;      ///< bundle process.json
  std::optional<core::Snapshot> snapshot;        ///< snapshot.json or --snapshot
  std::string stderr_tail;
  std::string kmsg;                              ///< kmsg.log (raw records)
  std::vector<core::TelemetrySample> telemetry;  ///< telemetry.csv, t_s from the job's start
  kb::Analysis analysis;
  /// How often the same signature was seen before (from the store), when known.
  std::optional<int64_t> same_signature_count;
  /// --baseline: a snapshot from before (a good run, a stored one) to diff the failure's against.
  std::optional<core::Snapshot> baseline;
  std::string baseline_source;  ///< the operand that named it ("12", "good.json")
};

/// The report as a JSON document: {title, environment, reproduction, failure, diagnostics,
/// troubleshooting, known_issues, next_steps}. Secrets are redacted.
core::Json BuildReport(const ReportInput& input);

/// The run as a timeline (HTML only; not part of the JSON document): the job's start, the
/// failure (t = 0), the bundle, and every GPU kernel-log record of the run — those naming the
/// job and those naming another process or none — with their times relative to the failure
/// when the bundle lets them be placed (see Timeline::alignment). Texts are redacted.
/// `recorded` is false for a log (no run).
Timeline BuildTimeline(const ReportInput& input);

/// One thread's stack for the HTML report's collapsible list (texts redacted).
struct ThreadStack {
  std::string title;  ///< "thread 4242 \"python3\" (crashed), 20 frames"
  bool crashed = false;
  std::vector<std::string> frames;  ///< "#0  cudaDeviceSynchronize (libcudart.so.13+0x44675)"
};

/// Every thread of the bundle's primary process, the crashed (or main) one first.
std::vector<ThreadStack> BuildThreadStacks(const ReportInput& input);

/// A report as `report` renders it: the JSON document, the run's timeline and the threads.
struct Report {
  core::Json json;
  Timeline timeline;
  std::vector<ThreadStack> threads;
};

/// What `report` is asked for: logs and bundles of one failure, an optional snapshot.
struct ReportRequest {
  std::vector<std::string> paths;
  std::optional<core::Snapshot> snapshot;  ///< --snapshot (a bundle has its own)
  std::optional<core::Snapshot> baseline;  ///< --baseline
  std::string baseline_source;
};

/// Analyses the inputs (kb::AnalyzeInputs with `analyzer`), fills the report from the first
/// bundle (or the logs' last 1 MiB) and counts earlier bundles with the same signature in `store`
/// (may be null). Fails naming an input that cannot be read.
core::Result<Report> MakeReport(kb::Analyzer& analyzer, const ReportRequest& request, store::SnapshotStore* store);

/// Markdown for a GitHub issue.
std::string RenderMarkdown(const core::Json& report);

/// One self-contained HTML file: the Markdown report rendered by md4c (raw HTML in the text shown
/// as text, links only to http:, https: and mailto:, images shown as their alt text) with the
/// run's timeline as inline SVG and a table of the run's GPU kernel-log records after the title.
/// Inline CSS, no scripts, no event handlers, nothing loaded from elsewhere (a
/// Content-Security-Policy says so too). Every text from the inputs is escaped; the texts of
/// `report` and `timeline` are already redacted. When md4c fails, the Markdown is shown escaped
/// in a <pre>.
/// `threads`, when given, become a collapsible list (<details>) after the failure: the crashed
/// thread open, the others closed.
std::string RenderHtml(const core::Json& report, const Timeline& timeline,
                       const std::vector<ThreadStack>& threads = {});

}  // namespace gputriage::report
