// Host facts for the snapshot: identity, kernel, OS, CPU, memory, uptime, the kernel command
// line flags that matter for GPUs, IOMMU state, and whether we run in a VM or a container.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::collect {

/// Reads /proc, /etc and /sys through `os`. Never fails; unreadable items become notes.
/// Layout: docs/snapshot-schema.md ("host").
core::Section CollectHost(const core::OsView& os);

/// Parses /proc/cpuinfo text: {model, vendor, logical_cpus, flags_count, flags: {name: bool}}
/// for the flags GPU stacks care about. Exposed for tests.
core::Json ParseCpuInfo(std::string_view cpuinfo);

/// The flags from a kernel command line that matter for GPUs (iommu, amd_iommu, intel_iommu,
/// pci, hugepages*, amdgpu.*, nvidia.*, nouveau.*, pcie_*, ...): {name: value or true}.
core::Json ParseCmdlineFlags(std::string_view cmdline);

/// /etc/os-release text -> {pretty_name, id, version_id}.
core::Json ParseOsRelease(std::string_view text);

}  // namespace gputriage::collect
