#include "core/job_attribution.h"

#include <gtest/gtest.h>

#include <string>

#include "capture_tree.h"

namespace gputriage::core {
namespace {

// /proc/PID/cgroup as real Slurm and Kubernetes nodes showed it (tests/fixtures/cgroup, each
// with its source).
TEST(JobAttribution, RealCgroupPathsOfSlurmAndKubernetesNodes) {
  JobAttribution v1 = ParseProcCgroup(testing::ReadCapture("cgroup/slurm-v1-step-batch.txt"));
  EXPECT_EQ(v1.slurm_job, "13759490");
  EXPECT_EQ(v1.slurm_step, "batch");
  EXPECT_EQ(v1.Job(), "13759490");
  EXPECT_EQ(v1.cgroup, "/slurm/uid_2687/job_13759490/step_batch/task_0");
  JobAttribution v2 = ParseProcCgroup(testing::ReadCapture("cgroup/slurm-v2-step-0.txt"));
  EXPECT_EQ(v2.slurm_job, "4749");
  EXPECT_EQ(v2.slurm_step, "0");
  EXPECT_EQ(v2.systemd_unit, std::nullopt);  // slurmstepd's scope is not the job

  JobAttribution crio = ParseProcCgroup(testing::ReadCapture("cgroup/k8s-crio-systemd-v1.txt"));
  EXPECT_EQ(crio.pod, "a5c1f8d5-1919-434d-add7-4afaafdaef89");
  EXPECT_EQ(crio.container, "5eed917563583925ffdbd40a64efb2aaffe58638e57add8becaf460fe74f5b1c");
  EXPECT_EQ(crio.Job(), crio.pod);
  JobAttribution containerd = ParseProcCgroup(testing::ReadCapture("cgroup/k8s-containerd-colon-v1.txt"));
  EXPECT_EQ(containerd.pod, "0125ec2f-b64a-4868-8f5b-94b56cbab864");
  EXPECT_EQ(containerd.container, "ee4b20e90ac7f42a10bd004d05646b13d8ab5e2c5e7cbc01abf8006bac016459");
  JobAttribution docker = ParseProcCgroup(testing::ReadCapture("cgroup/k8s-docker-systemd-v1.txt"));
  EXPECT_EQ(docker.pod, "7d4424e6-bb13-42f4-a47a-45a4828bf54d");
  EXPECT_EQ(docker.container, "d0b3604b67ac7930dd34ba3a796627e3e4717d12309e90a4afe3f38b6816ac98");
}

TEST(JobAttribution, SystemdUnitsAndNothing) {
  JobAttribution unit = ParseProcCgroup("0::/system.slice/ollama.service\n");
  EXPECT_EQ(unit.systemd_unit, "ollama.service");
  EXPECT_EQ(unit.Job(), "ollama.service");
  JobAttribution session = ParseProcCgroup("0::/user.slice/user-1000.slice/session-3.scope\n");
  EXPECT_EQ(session.systemd_unit, "session-3.scope");
  JobAttribution root = ParseProcCgroup("0::/\n");
  EXPECT_EQ(root.Job(), std::nullopt);
  EXPECT_EQ(root.cgroup, "/");
  EXPECT_EQ(ParseProcCgroup("").Job(), std::nullopt);
  EXPECT_EQ(ParseProcCgroup(std::string(100000, ':')).Job(), std::nullopt);
}

TEST(JobAttribution, RanksFromTheEnvironment) {
  JobAttribution job;
  std::string environ("PATH=/usr/bin\0SLURM_JOB_ID=4242\0SLURM_PROCID=3\0LOCAL_RANK=1\0RANK=9\0", 67);
  AddJobEnvironment(environ, job);
  EXPECT_EQ(job.env_slurm_job, "4242");
  EXPECT_EQ(job.rank, "3");  // SLURM_PROCID wins over RANK
  EXPECT_EQ(job.local_rank, "1");
  EXPECT_EQ(job.Job(), "4242");
  JobAttribution torchrun;
  AddJobEnvironment(std::string("RANK=7\0SLURM_LOCALID=2\0", 23), torchrun);
  EXPECT_EQ(torchrun.rank, "7");
  EXPECT_EQ(torchrun.local_rank, "2");
}

}  // namespace
}  // namespace gputriage::core
