// The kernel log, GPU-related records only: /dev/kmsg (records since boot, non-blocking), with
// syslog(2) (what dmesg uses) as the fallback, and wall-clock times from the boot time.
#pragma once

#include <cstddef>
#include <optional>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::kernel_log {

struct Options {
  /// At most this many GPU-related records are kept (the newest); the count of all is kept.
  size_t max_records = 2000;
  /// Only records with a monotonic timestamp at or after this (microseconds since boot).
  std::optional<uint64_t> since_monotonic_us;
};

/// Collects GPU-related kernel-log records (amdgpu, kfd, NVRM/Xid, iommu, AER, MCE, OOM killer).
/// Never fails: "no permission to read /dev/kmsg: run as root" and the like go into
/// `not_collected`. Layout of `data`: docs/snapshot-schema.md ("kernel_log").
core::Section Collect(const core::OsView& os, const Options& options);

}  // namespace gputriage::kernel_log
