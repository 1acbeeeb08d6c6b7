// The verdict's reasons beyond the category: what the kernel log says (amdgpu VM faults, the Xid
// catalog's class of each Xid seen and on how many GPUs), the snapshot's hardware health, how a
// `run --repeat` series went, and what changed since the last good snapshot. Hardware evidence
// turns an undecided verdict into "hardware".
#pragma once

#include "catalog/xid.h"
#include "kb/analysis.h"
#include "kb/scan.h"

namespace gputriage::kb {

/// Appends the reasons to `a` (verdict_reasons, xids, vm_faults) and settles its verdict when no
/// known issue decided it. `facts` may be null (no snapshot).
void AddVerdictEvidence(const ScanFindings& found, const catalog::XidTable& xid, const Facts* facts, Analysis& a);

}  // namespace gputriage::kb
