// Private to src/checks
// doctor's checks of the links between GPUs (core::Snapshot::topology and each GPU's NVLinks).
#pragma once

#include <vector>

#include "core/model.h"
#include "core/snapshot.h"

namespace gputriage::checks {

/// nvidia.nvlink_down: a GPU with some NVLinks up and others down (all down is a GPU without a
/// bridge, as NVML itself says). topology.p2p_unavailable: two GPUs joined by NVLink or under
/// one PCIe switch (PIX, PXB) whose peer-to-peer read or write NVML refuses.
void CheckTopology(const core::Snapshot& snapshot, std::vector<core::Finding>& out);

}  // namespace gputriage::checks
