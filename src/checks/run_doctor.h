// `gputriage doctor` as one library call: a snapshot of the node, every node-health check on it,
// and whether the installed PyTorch carries GPU code for this node's GPUs.
#pragma once

#include <vector>

#include "collect/snapshot.h"
#include "core/model.h"
#include "core/os_view.h"
#include "core/result.h"
#include "core/snapshot.h"

namespace gputriage::checks {

struct DoctorReport {
  core::Snapshot snapshot;
  std::vector<core::Finding> findings;  ///< most severe first
};

/// Takes the snapshot, runs the checks (RunDoctorChecks) and the PyTorch coverage check
/// (inspect::LibraryCoverageFindings). On the live machine, when the snapshot's file scan did
/// not find PyTorch's library directory, asks `python3` on PATH where torch is (importlib, no
/// import) and records it in the snapshot. Fails only when the built-in knowledge base is broken.
core::Result<DoctorReport> RunDoctor(const core::OsView& os, const collect::SnapshotOptions& options);

}  // namespace gputriage::checks
