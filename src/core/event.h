// A GPU event on a node (`gputriage agent`, `gputriage events`): a kernel-log record about a GPU
// (an NVIDIA Xid, an amdgpu VM fault, a reset, a RAS or AER error, the OOM killer) with what it
// means, what to do, the GPU it names and the process and job it hit. The agent is its one
// author; the events file holds one ToJson per line; EventFromJson reads it back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json_parse.h"
#include "core/result.h"

namespace gputriage::core {

struct GpuEvent {
  std::string time;                     ///< RFC 3339 UTC with milliseconds, when the agent saw it
  std::string host;                     ///< the node's hostname
  std::string kind;                     ///< where it came from: "kernel_log"
  std::string error_type;               ///< "xid_31", "amdgpu_vm_fault", "gpu_reset", "oom_killer", ...
  std::optional<std::string> severity;  ///< "critical", "error", "warning", "info" (the catalog's)
  std::optional<int64_t> gpu;           ///< the GPU's index on the node, when the record names a known GPU
  std::optional<std::string> gpu_uuid;
  std::optional<std::string> pci_bus_id;  ///< "0000:00:06.0"
  std::optional<int64_t> pid;             ///< the process the record names
  std::optional<std::string> executable;  ///< /proc/PID/exe when the process was still there
  std::optional<std::string> job;         ///< Slurm job id, else the Kubernetes pod UID, else the systemd unit
  std::optional<std::string> job_step;    ///< Slurm step ("0", "batch", "extern")
  std::optional<std::string> rank;        ///< SLURM_PROCID or RANK of the process
  std::optional<std::string> local_rank;  ///< LOCAL_RANK or SLURM_LOCALID
  std::optional<std::string> pod;         ///< Kubernetes pod UID
  std::optional<std::string> container;   ///< container id (containerd, CRI-O, Docker)
  std::optional<std::string> systemd_unit;
  std::optional<std::string> cgroup;  ///< the process's cgroup path the job was read from
  std::optional<std::string> bundle;  ///< the gputriage bundle of the job, when it ran under `run`
  std::string message;                ///< the kernel-log record's text (redacted)
  std::optional<uint64_t> kmsg_seq;   ///< its /dev/kmsg sequence number
  std::string meaning;                ///< what the catalog says it means
  std::string action;                 ///< what the catalog says to do

  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("time", s.time);
    v("host", s.host);
    v("kind", s.kind);
    v("error_type", s.error_type);
    v("severity", s.severity);
    v("gpu", s.gpu);
    v("gpu_uuid", s.gpu_uuid);
    v("pci_bus_id", s.pci_bus_id);
    v("pid", s.pid);
    v("executable", s.executable);
    v("job", s.job);
    v("job_step", s.job_step);
    v("rank", s.rank);
    v("local_rank", s.local_rank);
    v("pod", s.pod);
    v("container", s.container);
    v("systemd_unit", s.systemd_unit);
    v("cgroup", s.cgroup);
    v("bundle", s.bundle);
    v("message", s.message);
    v("kmsg_seq", s.kmsg_seq);
    v("meaning", s.meaning);
    v("action", s.action);
  }
  bool operator==(const GpuEvent&) const = default;
};

/// The event as one JSON object. The contract's keys (time, host, kind, error_type, gpu, pid,
/// job, pod, bundle) are always there, null when unknown; the other unknown ones are left out.
Json ToJson(const GpuEvent& event);

/// One line of an events file. Fails naming `source` when it is not a JSON object with time,
/// host, kind and error_type strings.
Result<GpuEvent> EventFromJson(std::string_view line, std::string_view source);

}  // namespace gputriage::core
