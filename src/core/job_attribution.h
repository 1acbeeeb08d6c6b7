// Which job a process belongs to, read from what the kernel shows of it: its cgroup path
// (/proc/PID/cgroup) as a Slurm job and step, a Kubernetes pod and container, or a systemd
// unit; and its environment (/proc/PID/environ) for Slurm's and torchrun's rank variables.
// Parsers of text a process controls (its environment) or the kernel writes: bounded, never
// throwing, tested on /proc/PID/cgroup contents of real Slurm and Kubernetes nodes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gputriage::core {

struct JobAttribution {
  std::optional<std::string> slurm_job;      ///< "4242" from .../job_4242/...
  std::optional<std::string> slurm_step;     ///< "0", "batch", "extern" from .../step_0/...
  std::optional<std::string> pod;            ///< the Kubernetes pod UID, with dashes
  std::optional<std::string> container;      ///< a container id (64 hex digits)
  std::optional<std::string> systemd_unit;   ///< "ollama.service", "session-3.scope"
  std::optional<std::string> cgroup;         ///< the path these were read from
  std::optional<std::string> rank;           ///< SLURM_PROCID, else RANK
  std::optional<std::string> local_rank;     ///< LOCAL_RANK, else SLURM_LOCALID
  std::optional<std::string> env_slurm_job;  ///< SLURM_JOB_ID from the environment

  /// The job's name for an event: the Slurm job, else the pod, else the systemd unit.
  std::optional<std::string> Job() const;
};

/// Reads the contents of /proc/PID/cgroup ("0::/path" for cgroup v2, "N:controllers:/path" for
/// v1): every hierarchy's path is looked at, the cgroup v2 one first. `cgroup` is the path the
/// job came from (the v2 path when nothing was found).
JobAttribution ParseProcCgroup(std::string_view text);

/// Adds what the process's environment (/proc/PID/environ: NUL-separated NAME=value) says:
/// SLURM_JOB_ID, SLURM_PROCID or RANK, LOCAL_RANK or SLURM_LOCALID.
void AddJobEnvironment(std::string_view environ, JobAttribution& job);

}  // namespace gputriage::core
