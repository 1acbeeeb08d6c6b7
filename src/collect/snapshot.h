// Layer 1: the environment snapshot. One pass, collectors in parallel, each recording what it
// could not read; vendor probes that can block in the driver run in helper processes under a
// watchdog, so the snapshot completes with partial data when the driver hangs.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/os_view.h"
#include "core/snapshot.h"

namespace gputriage::collect {

struct SnapshotOptions {
  /// How long a vendor probe may take before it is abandoned (and reported as hung).
  std::chrono::milliseconds probe_timeout{5000};
  /// How long each in-process collector (PCI, host, kernel log, software) may take before it is
  /// abandoned and named in not_collected. Reads never block on FIFOs (core::OsView); this bounds
  /// the rest: a hung network mount, a sysfs attribute stuck in a driver.
  std::chrono::milliseconds collector_timeout{20000};
  /// When not empty, vendor probes run as `<helper_command...> NAME [--root DIR]` in a helper
  /// process under the watchdog (e.g. {"/usr/bin/gputriage-probe"} or {"gputriage",
  /// "__probe"}); when empty they run in this process (tests, fuzzers).
  std::vector<std::string> helper_command;
  /// A Python interpreter to ask about torch/jax/tensorflow (time-boxed); none by default.
  std::optional<std::string> python;
  std::chrono::milliseconds python_timeout{30000};
  /// The environment ("NAME=value") to report; used only on the live machine.
  std::vector<std::string> environment;
  /// A directory where collectors may keep what is slow to read and tied to a file's identity
  /// (the toolchain's `--version` results: tool-versions.json; doctor's undefined-symbol check:
  /// closure-symbols.json); none: everything is read anew.
  std::optional<std::string> cache_dir;
};

/// Collects a snapshot. Never fails: everything that could not be collected is listed in
/// `not_collected`, and probe hangs become findings.
core::Snapshot CollectSnapshot(const core::OsView& os, const SnapshotOptions& options);

/// The same as the collectors write it, before it is read into the typed model: the sections
/// assembled as docs/snapshot-schema.md lays them out. CollectSnapshot reads this; tests check
/// that the typed model keeps every member of it.
core::Json CollectSnapshotJson(const core::OsView& os, const SnapshotOptions& options);

/// Runs the vendor probe `name` in this process and returns its section as JSON (what the
/// helper process prints). Fails for an unknown probe name.
core::Result<core::Json> RunProbeInProcess(const core::OsView& os, const std::string& name);

/// Folds a vendor probe's section into the snapshot's `gpus` (matched by PCI address),
/// `software.<probe>` and, for its `peers` (pairs of GPUs), `peers` (the snapshot's
/// `topology.peers`). Exposed for tests.
void MergeVendorSection(const std::string& probe, const core::Section& section, core::Json& gpus, core::Json& software,
                        core::Json& peers);

}  // namespace gputriage::collect
