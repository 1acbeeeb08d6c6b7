// The node-health checks of `gputriage doctor`: each looks at a snapshot and returns findings
// with their evidence. Checks read only the snapshot, so they run the same on a live snapshot,
// a saved one, or one taken under --root.
#pragma once

#include <vector>

#include "catalog/catalog.h"
#include "core/model.h"
#include "core/snapshot.h"

namespace gputriage::checks {

/// Runs every check over `snapshot` and returns the findings (including those the snapshot
/// itself raised, such as a hung probe), most severe first.
std::vector<core::Finding> RunDoctorChecks(const core::Snapshot& snapshot, const catalog::Catalog& catalog);

// The individual checks, exposed for tests. Each appends to `out`.
void CheckGpusPresent(const core::Snapshot& snapshot, std::vector<core::Finding>& out);
void CheckPciLinks(const core::Snapshot& snapshot, std::vector<core::Finding>& out);
void CheckBars(const core::Snapshot& snapshot, std::vector<core::Finding>& out);
void CheckKernelLog(const core::Snapshot& snapshot, const catalog::Catalog& catalog, std::vector<core::Finding>& out);
void CheckNvidiaHealth(const core::Snapshot& snapshot, std::vector<core::Finding>& out);
void CheckAmdHealth(const core::Snapshot& snapshot, std::vector<core::Finding>& out);
void CheckDriverMismatch(const core::Snapshot& snapshot, std::vector<core::Finding>& out);
void CheckEnvironment(const core::Snapshot& snapshot, const catalog::Catalog& catalog, std::vector<core::Finding>& out);

}  // namespace gputriage::checks
