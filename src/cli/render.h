// Human-readable rendering of snapshots and findings for the terminal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/libs.h"
#include "core/model.h"
#include "core/process.h"
#include "core/snapshot.h"
#include "core/validation.h"
#include "inspect/ranking.h"
#include "kb/analysis.h"
#include "kb/inputs.h"
#include "store/diff.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {

/// A short summary of a snapshot: host, one line per GPU, software, kernel log, env, notes.
std::string RenderSnapshotSummary(const core::Snapshot& snapshot);

/// " (slowest: software.toolchain 1061 ms)": the slowest single collector of collector_ms (a
/// section whose parts are listed, such as "software", is not one); "" when unknown.
std::string SlowestCollectorText(const core::Snapshot& snapshot);
/// "; then 41 ms (slowest step: coverage 30 ms)": doctor's own steps besides the snapshot (its
/// step_ms); "" when there are none.
std::string DoctorStepsText(const std::map<std::string, double>& step_ms);

/// `snapshot` for the terminal: RenderSnapshotSummary, the findings, how long collecting took,
/// and the id it was saved under when `saved_id` is given.
std::string RenderTakenSnapshot(const core::Snapshot& snapshot, std::optional<int64_t> saved_id);

/// `snapshot list`: one line per stored snapshot (id, time, host, summary), or how to save one
/// when there is none.
std::string RenderSnapshotList(const std::vector<store::SnapshotRow>& rows);

/// `snapshot diff`: one line per change (kind, summary), or "no changes".
std::string RenderChanges(const std::vector<store::Change>& changes);

/// `libs`: one line per library (load order, component and release, where it came from), then
/// missing libraries, shadowed copies, undefined symbols, problems and findings.
std::string RenderLibraryReport(const core::LibraryReport& report);

/// `libs diff`: removed, changed and added symbols, and whether the ABI broke.
std::string RenderSymbolDiff(const core::SymbolDiff& diff);

/// `validate` for the terminal: the devices, one line per check (status, name, dtype, error,
/// time, throughput, detail), the counts and the findings.
std::string RenderValidation(const core::ValidationReport& report);
/// Two lines for doctor --validate: counts per status and the failures.
std::string RenderValidationSummary(const core::ValidationReport& report);
/// JUnit XML (the schema Jenkins and GitHub Actions test reporters read): one testsuite per
/// device, one testcase per check, <failure>, <error> and <skipped> with the check's detail.
std::string RenderJunit(const core::ValidationReport& report);

/// Findings, most severe first, each with its evidence (at most `max_evidence` lines) and fix.
std::string RenderFindings(const std::vector<core::Finding>& findings, size_t max_evidence = 3);

/// `inspect`'s findings in reading order (inspect::RankFindings), each with why it is worth
/// reading; unless `verbose`, the folded ones (facts about a known GPU library's own kernels)
/// become one line per library with their count and kinds.
std::string RenderInspectFindings(const std::vector<inspect::RankedFinding>& ranked, bool verbose);

/// A process report (a core's or a bundle's): signal, classification, the crashed thread's
/// frames, the disassembly and what was not collected, for the terminal.
std::string RenderProcessReport(const std::string& source, const core::ProcessReport& report);

/// An analysis for the terminal: category, verdict and reasons, the top known issues with their
/// evidence and fixes, the signature and the next steps.
std::string RenderAnalysis(const kb::Analysis& analysis);

/// `analyze` for the terminal: the process report of each input that has one
/// (RenderProcessReport), then a blank line and RenderAnalysis.
std::string RenderAnalysisOutcome(const kb::AnalysisOutcome& outcome);

/// "125.8 GiB".
std::string FormatBytes(double bytes);

}  // namespace gputriage::cli
