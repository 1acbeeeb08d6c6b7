// The kernel log, GPU-related records only: /dev/kmsg (records since boot, non-blocking), with
// syslog(2) (what dmesg uses) as the fallback, and wall-clock times from the boot time; and the
// previous boot's, from the persistent systemd journal (journal.h).
#pragma once

#include <cstddef>
#include <optional>

#include "collect/kernel_log/journal.h"
#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::kernel_log {

struct Options {
  /// At most this many GPU-related records are kept (the newest); the count of all is kept.
  size_t max_records = 2000;
  /// Only records with a monotonic timestamp at or after this (microseconds since boot).
  std::optional<uint64_t> since_monotonic_us;
  /// How the previous boot's records are read from the journal (`previous_boot`, with the
  /// same max_records and classes); nullopt: not read.
  std::optional<JournalOptions> previous_boot = JournalOptions{};
};

/// Collects GPU-related kernel-log records (amdgpu, kfd, NVRM/Xid, iommu, AER, MCE, OOM killer)
/// of this boot and, apart in `previous_boot`, of the boot before. Never fails: "no permission
/// to read /dev/kmsg: run as root", "the journal keeps no previous boot: ..." and the like go
/// into `not_collected` (items "kernel_log", "kernel_log.previous_boot"). Layout of `data`:
/// docs/snapshot-schema.md ("kernel_log").
core::Section Collect(const core::OsView& os, const Options& options);

}  // namespace gputriage::kernel_log
