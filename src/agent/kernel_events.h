// A kernel-log record as a GPU event: what the knowledge base's tables say it is (an NVIDIA Xid
// by nvidia-xid.yaml; amdgpu VM faults, ring timeouts, resets, RAS, AER, IOMMU faults, machine
// checks and the OOM killer by kernel-log-rules.yaml), the GPU it names, and the process and
// job it hit. Records that are no event (boot chatter, other drivers) give none.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "catalog/catalog.h"
#include "core/event.h"
#include "core/job_attribution.h"
#include "kmsg/kmsg.h"

namespace gputriage::agent {

/// A GPU of the node as events name it.
struct GpuIdentity {
  int64_t index = 0;
  std::optional<std::string> uuid;
};

struct EventContext {
  std::string host;
  const catalog::Catalog* catalog = nullptr;
  /// The node's GPUs by PCI bus id ("0000:00:06.0"); events of other devices carry the bus id only.
  std::map<std::string, GpuIdentity> gpus;
  /// The job of a process (its /proc/PID/cgroup and environ); tests give their own.
  std::function<core::JobAttribution(int pid)> job_of;
  /// The process's executable (/proc/PID/exe), when it is still there.
  std::function<std::optional<std::string>(int pid)> executable_of;
};

/// The event for `record` seen at `epoch_seconds`; nullopt when it is no GPU event.
std::optional<core::GpuEvent> EventFromRecord(const kmsg::Record& record, const EventContext& context,
                                              double epoch_seconds);

/// The job of a live process, read from /proc/PID/cgroup and /proc/PID/environ (the environment
/// only where this process may read it).
core::JobAttribution JobOfProcess(int pid);

/// /proc/PID/exe's target, when readable.
std::optional<std::string> ExecutableOfProcess(int pid);

}  // namespace gputriage::agent
