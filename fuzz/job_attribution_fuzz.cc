// Feeds arbitrary bytes to the agent's readers of what a process shows (core/job_attribution.h):
// as /proc/PID/cgroup text and as /proc/PID/environ, and one events-file line (core/event.h).
// Beyond "no crash, no hang": a job read from a cgroup path comes from that path, and an event
// read back writes the same line it reads again as.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/event.h"
#include "core/job_attribution.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace core = gputriage::core;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  core::JobAttribution job = core::ParseProcCgroup(input);
  if (job.slurm_job) Check(job.cgroup && job.cgroup->find("job_" + *job.slurm_job) != std::string::npos);
  core::AddJobEnvironment(input, job);
  (void)job.Job();
  auto event = core::EventFromJson(input, "fuzz.jsonl:1");
  if (event.ok()) {
    auto again = core::EventFromJson(core::ToJson(*event).dump(), "again");
    Check(again.ok() && *again == *event);
  }
  return 0;
}
