// `gputriage doctor` as one library call: a snapshot of the node, every node-health check on it,
// and whether the installed PyTorch carries GPU code for this node's GPUs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collect/snapshot.h"
#include "core/model.h"
#include "core/os_view.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "core/validation.h"

namespace gputriage::checks {

struct DoctorReport {
  core::Snapshot snapshot;
  std::vector<core::Finding> findings;               ///< most severe first
  std::optional<core::ValidationReport> validation;  ///< doctor --validate: the level-1 checks
  /// Wall milliseconds of doctor's steps besides the snapshot: "knowledge_base" (loading the
  /// built-in catalog, at the same time as the snapshot), "torch_lookup" (python3, only when the file scan did not find
  /// torch), "checks" (the node-health rules), "coverage" (PyTorch's GPU code), "libraries" (the GPU stack's loader
  /// closure), "validate" (--validate).
  std::map<std::string, double> step_ms;
};

struct DoctorOptions {
  /// Also run `validate` level 1 on every GPU (live machine only) and add its findings.
  bool validate = false;
};

/// Takes the snapshot, runs the checks (RunDoctorChecks) and the PyTorch coverage check
/// (inspect::LibraryCoverageFindings). On the live machine, when the snapshot's file scan did
/// not find PyTorch's library directory, asks `python3` on PATH where torch is (importlib, no
/// import) and records it in the snapshot. Fails only when the built-in knowledge base is broken.
/// With `doctor.validate` on the live machine, also runs validate level 1 on every GPU; its failed
/// checks are findings (layer 2). Under --root it is not run, and a note says so.
core::Result<DoctorReport> RunDoctor(const core::OsView& os, const collect::SnapshotOptions& options,
                                     const DoctorOptions& doctor = {});

}  // namespace gputriage::checks
