// Human-readable rendering of snapshots and findings for the terminal.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "core/process.h"
#include "core/snapshot.h"
#include "kb/analysis.h"

namespace gputriage::cli {

/// A short summary of a snapshot: host, one line per GPU, software, kernel log, env, notes.
std::string RenderSnapshotSummary(const core::Snapshot& snapshot);

/// Findings, most severe first, each with its evidence (at most `max_evidence` lines) and fix.
std::string RenderFindings(const std::vector<core::Finding>& findings, size_t max_evidence = 3);

/// A process report (a core's or a bundle's): signal, classification, the crashed thread's
/// frames, the disassembly and what was not collected, for the terminal.
std::string RenderProcessReport(const std::string& source, const core::ProcessReport& report);

/// An analysis for the terminal: category, verdict and reasons, the top known issues with their
/// evidence and fixes, the signature and the next steps.
std::string RenderAnalysis(const kb::Analysis& analysis);

/// "125.8 GiB".
std::string FormatBytes(double bytes);

}  // namespace gputriage::cli
