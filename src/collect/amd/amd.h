// AMD GPU state for the snapshot: amdgpu sysfs, the KFD topology, the ROCm installation, and
// ROCm SMI through dlopen (live machine only) for what sysfs lacks.
#pragma once

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::amd {

/// Collects everything AMD-specific. Never fails: what it cannot read goes into
/// `not_collected` with the reason. Some amdgpu sysfs files can block in the driver, so callers
/// on the live machine run it in a helper process under a watchdog. With `os.live() == false`
/// no library is loaded. `data` layout is documented in docs/snapshot-schema.md ("amd" probe).
core::Section Collect(const core::OsView& os);

}  // namespace gputriage::amd
