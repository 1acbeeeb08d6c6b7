#include "core/job_attribution.h"

#include <re2/re2.h>

#include <cctype>
#include <vector>

#include "core/text.h"

namespace gputriage::core {
namespace {

// Slurm's cgroup plugins: v1 ".../slurm/uid_1000/job_4242/step_0/task_0"; v2
// ".../slurmstepd.scope/job_4242/step_batch/user/task_0" (src/plugins/cgroup, slurm 22.05+).
const RE2& SlurmJob() {
  static const RE2 re(R"((?:^|/)job_(\d{1,20})(?:/|$))");
  return re;
}
const RE2& SlurmStep() {
  static const RE2 re(R"((?:^|/)step_([A-Za-z0-9_]{1,32})(?:/|$))");
  return re;
}
// Kubernetes: the systemd driver "kubepods-burstable-pod<uid with _>.slice", the cgroupfs driver
// ".../pod<uid>/..." (pkg/kubelet/cm/cgroup_manager_linux.go).
const RE2& PodUid() {
  static const RE2 re(
      R"((?:^|[/-])pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12})(?:\.slice)?(?:[/:]|$))");
  return re;
}
// A container's scope or directory: "cri-containerd-<id>.scope", "crio-<id>.scope",
// "docker-<id>.scope", containerd's "...slice:cri-containerd:<id>" form, or a bare 64-hex
// directory (cgroupfs driver).
const RE2& ContainerId() {
  static const RE2 re(
      R"((?:^|[/:])(?:cri-containerd[-:]|crio-|docker-|containerd-)?([0-9a-f]{64})(?:\.scope)?(?:/|$))");
  return re;
}
const RE2& SystemdUnit() {
  static const RE2 re(R"(([A-Za-z0-9@_.:\\-]{1,200}\.(?:service|scope)))");
  return re;
}

// Fills `job` from one cgroup path; true when it named a job.
bool FromPath(std::string_view path, JobAttribution& job) {
  std::string slurm, step, pod, container;
  re2::StringPiece in(path.data(), path.size());
  if (RE2::PartialMatch(in, SlurmJob(), &slurm)) {
    job.slurm_job = slurm;
    if (RE2::PartialMatch(in, SlurmStep(), &step)) job.slurm_step = step;
  }
  if (RE2::PartialMatch(in, PodUid(), &pod)) {
    for (char& c : pod) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    job.pod = pod;
  }
  if (RE2::PartialMatch(in, ContainerId(), &container)) job.container = container;
  if (!job.slurm_job && !job.pod) {
    // The innermost unit: the last component that is one (a Slurm or Kubernetes path is theirs).
    std::vector<std::string_view> parts = Split(path, '/');
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      std::string unit;
      if (RE2::FullMatch(re2::StringPiece(it->data(), it->size()), SystemdUnit(), &unit)) {
        job.systemd_unit = unit;
        break;
      }
    }
  }
  return job.slurm_job || job.pod || job.container || job.systemd_unit;
}

}  // namespace

std::optional<std::string> JobAttribution::Job() const {
  if (slurm_job) return slurm_job;
  if (env_slurm_job) return env_slurm_job;
  if (pod) return pod;
  return systemd_unit;
}

JobAttribution ParseProcCgroup(std::string_view text) {
  JobAttribution job;
  std::vector<std::string_view> paths;
  std::optional<std::string_view> unified;
  size_t lines = 0;
  for (std::string_view line : Split(text.substr(0, 64 * 1024), '\n')) {
    if (++lines > 64) break;
    // "hierarchy-ID:controller-list:cgroup-path"; the path may itself contain ':'.
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view path = line.substr(second + 1);
    if (path.empty() || path.size() > 4096) continue;
    if (line.substr(0, second) == "0:") {
      unified = path;
    } else {
      paths.push_back(path);
    }
  }
  if (unified) paths.insert(paths.begin(), *unified);
  for (std::string_view path : paths) {
    JobAttribution found;
    if (FromPath(path, found)) {
      found.cgroup = std::string(path);
      return found;
    }
  }
  if (unified) job.cgroup = std::string(*unified);
  return job;
}

void AddJobEnvironment(std::string_view environ, JobAttribution& job) {
  std::optional<std::string> procid, rank, local_rank, localid;
  size_t entries = 0;
  for (std::string_view entry : Split(environ.substr(0, 1u << 20), '\0')) {
    if (++entries > 100000) break;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq);
    std::string value(entry.substr(eq + 1, 64));
    if (name == "SLURM_JOB_ID") job.env_slurm_job = value;
    if (name == "SLURM_PROCID") procid = value;
    if (name == "RANK") rank = value;
    if (name == "LOCAL_RANK") local_rank = value;
    if (name == "SLURM_LOCALID") localid = value;
  }
  if (procid || rank) job.rank = procid ? procid : rank;
  if (local_rank || localid) job.local_rank = local_rank ? local_rank : localid;
}

}  // namespace gputriage::core
