// NVIDIA driver state for the snapshot: NVML (loaded with dlopen, live machine only) and the
// files under /proc/driver/nvidia (through the OsView, so also under --root).
#pragma once

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::nvidia {

/// Collects everything NVIDIA-specific. Never fails: what it cannot read goes into
/// `not_collected` with the reason. May block inside the driver (NVML): callers on the live
/// machine run it in a helper process under a watchdog. With `os.live() == false` NVML is not
/// touched. `data` layout is documented in docs/snapshot-schema.md ("nvidia" probe).
core::Section Collect(const core::OsView& os);

}  // namespace gputriage::nvidia
