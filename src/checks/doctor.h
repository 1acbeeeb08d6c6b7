// The node-health checks of `gputriage doctor`: each looks at a snapshot and returns findings
// with their evidence. Checks read only the snapshot, so they run the same on a live snapshot,
// a saved one, or one taken under --root.
#pragma once

#include <vector>

#include "checks/knowledge.h"
#include "core/model.h"

namespace gputriage::checks {

/// Runs every check over `snapshot` and returns the findings (including those the snapshot
/// itself raised, such as a hung probe), most severe first.
std::vector<core::Finding> RunDoctorChecks(const core::Json& snapshot, const Knowledge& knowledge);

// The individual checks, exposed for tests. Each appends to `out`.
void CheckGpusPresent(const core::Json& snapshot, std::vector<core::Finding>& out);
void CheckPciLinks(const core::Json& snapshot, std::vector<core::Finding>& out);
void CheckBars(const core::Json& snapshot, std::vector<core::Finding>& out);
void CheckKernelLog(const core::Json& snapshot, const Knowledge& knowledge,
                    std::vector<core::Finding>& out);
void CheckNvidiaHealth(const core::Json& snapshot, std::vector<core::Finding>& out);
void CheckAmdHealth(const core::Json& snapshot, std::vector<core::Finding>& out);
void CheckDriverMismatch(const core::Json& snapshot, std::vector<core::Finding>& out);
void CheckEnvironment(const core::Json& snapshot, const Knowledge& knowledge,
                      std::vector<core::Finding>& out);

}  // namespace gputriage::checks
