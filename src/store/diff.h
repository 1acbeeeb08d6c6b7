// A semantic diff of two snapshots (docs/snapshot-schema.md): what changed on the machine that
// can explain a new crash — a GPU gone or swapped, a link that trained down, a driver, ROCm or
// PyTorch update, a new class of kernel-log error, rising ECC counters, a changed environment
// variable or kernel command line. Readings that move by themselves (temperature, power,
// utilization, memory used, current clocks, uptime, collected_at, collection_ms) are never
// changes; neither is a value that one of the two snapshots did not know (absent or null).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/snapshot.h"

namespace gputriage::store {

/// The stable change kinds, listed in severity-class order (see DiffSnapshots).
namespace change_kind {
// Class 0: the hardware is failing or different.
inline constexpr std::string_view kGpuRemoved = "gpu_removed";
inline constexpr std::string_view kGpuChanged = "gpu_changed";
inline constexpr std::string_view kLinkDowntrained = "link_downtrained";
inline constexpr std::string_view kEccErrorsIncreased = "ecc_errors_increased";
inline constexpr std::string_view kRetiredPagesIncreased = "retired_pages_increased";
inline constexpr std::string_view kKernelLogNewClass = "kernel_log_new_class";
// Class 1: the driver, kernel or host configuration changed.
inline constexpr std::string_view kPcieErrorsIncreased = "pcie_errors_increased";
inline constexpr std::string_view kGpuAdded = "gpu_added";
inline constexpr std::string_view kDriverChanged = "driver_changed";
inline constexpr std::string_view kKernelChanged = "kernel_changed";
inline constexpr std::string_view kHostChanged = "host_changed";
// Class 2: the software stack changed, or a link recovered.
inline constexpr std::string_view kComponentVersionChanged = "component_version_changed";
inline constexpr std::string_view kComponentRemoved = "component_removed";
inline constexpr std::string_view kComponentAdded = "component_added";
inline constexpr std::string_view kLinkRestored = "link_restored";
// Class 3: the environment of the process changed.
inline constexpr std::string_view kEnvChanged = "env_changed";
inline constexpr std::string_view kEnvAdded = "env_added";
inline constexpr std::string_view kEnvRemoved = "env_removed";
}  // namespace change_kind

/// One difference between two snapshots.
struct Change {
  std::string kind;     // one of change_kind
  std::string path;     // where: "gpus[0000:00:06.0].driver", "software.packages[rocm-core]",
                        // "env.variables.HIP_VISIBLE_DEVICES", "kernel_log.counts[nvidia.xid]"
  core::Json before;    // the old value; null for an addition
  core::Json after;     // the new value; null for a removal
  std::string summary;  // one line for humans: "ROCm rocm-core 6.3.3 -> 6.4.1"
  bool operator==(const Change&) const = default;
};

/// The severity class of `kind` (0 = most severe, as grouped in change_kind); 4 for a kind
/// this build does not know.
int ChangeSeverityClass(std::string_view kind);

/// Every semantic change from `before` to `after`, ordered by severity class, then path, then
/// kind, so the same pair always yields the same list. A section one of the two did not know
/// (absent) yields no change; identical snapshots yield none. Does not throw.
std::vector<Change> DiffSnapshots(const core::Snapshot& before, const core::Snapshot& after);

/// {"kind", "path", "before", "after", "summary"}.
void to_json(core::Json& j, const Change& change);

/// {"changes": [Change, ...]}: the JSON form of a diff.
core::Json DiffToJson(const std::vector<Change>& changes);

}  // namespace gputriage::store
