// Human-readable rendering of snapshots and findings for the terminal.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "core/snapshot.h"

namespace gputriage::cli {

/// A short summary of a snapshot: host, one line per GPU, software, kernel log, env, notes.
std::string RenderSnapshotSummary(const core::Snapshot& snapshot);

/// Findings, most severe first, each with its evidence (at most `max_evidence` lines) and fix.
std::string RenderFindings(const std::vector<core::Finding>& findings, size_t max_evidence = 3);

/// "125.8 GiB".
std::string FormatBytes(double bytes);

}  // namespace gputriage::cli
