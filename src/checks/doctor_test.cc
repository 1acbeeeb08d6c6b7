#include "checks/doctor.h"

#include "core/snapshot.h"

#include <gtest/gtest.h>

namespace gputriage::checks {
namespace {

using core::Json;

const catalog::Catalog& Kb() {
  auto loaded = catalog::BuiltinCatalog();
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  return **loaded;
}

// The checks read the typed model; tests write the snapshot's JSON form and read it as a saved
// snapshot would be read.
std::vector<core::Finding> RunDoctorChecks(const Json& snapshot, const catalog::Catalog& knowledge) {
  return checks::RunDoctorChecks(core::SnapshotFromJsonUnchecked(snapshot), knowledge);
}

const core::Finding* Find(const std::vector<core::Finding>& findings, const std::string& id) {
  for (const auto& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

Json Gpu(const char* address) {
  return Json{{"vendor", "nvidia"}, {"pci_address", address}, {"name", "NVIDIA H200"}, {"driver", "nvidia"}};
}

TEST(DoctorTest, NoGpuIsAnError) {
  auto findings = RunDoctorChecks(Json{{"gpus", Json::array()}}, Kb());
  const auto* f = Find(findings, "gpu.none_found");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, core::Severity::kError);
  EXPECT_EQ(f->title, "No GPU found on this machine");
}

TEST(DoctorTest, LinkWidthAndSpeed) {
  Json gpu = Gpu("0000:c1:00.0");
  gpu["link"] = {{"current_speed_gts", 2.5}, {"max_speed_gts", 32.0}, {"current_width", 8}, {"max_width", 16}};
  auto findings = RunDoctorChecks(Json{{"gpus", {gpu}}}, Kb());
  const auto* width = Find(findings, "pci.link_width_downtrained");
  ASSERT_NE(width, nullptr);
  EXPECT_EQ(width->severity, core::Severity::kWarning);
  EXPECT_EQ(width->title, "PCIe link of 0000:c1:00.0 (NVIDIA H200) runs at x8 of x16");
  const auto* speed = Find(findings, "pci.link_speed_below_max");
  ASSERT_NE(speed, nullptr);
  EXPECT_EQ(speed->severity, core::Severity::kInfo);
  gpu["link"]["current_width"] = 16;
  gpu["link"]["current_speed_gts"] = 32.0;
  EXPECT_EQ(Find(RunDoctorChecks(Json{{"gpus", {gpu}}}, Kb()), "pci.link_width_downtrained"), nullptr);
}

TEST(DoctorTest, XidRecordsAreGroupedAndRatedFromTheTable) {
  Json records = Json::array();
  for (int i = 0; i < 3; ++i) {
    records.push_back({{"class", "nvidia.xid"},
                       {"time", "2026-12-02T10:00:0" + std::to_string(i) + "Z"},
                       {"message", "NVRM: Xid (PCI:0000:00:06): 43, pid=719, name=python3, channel 0x0000000a"},
                       {"xid", {{"code", 43}, {"pci", "0000:00:06"}, {"pid", 719}, {"process", "python3"}}}});
  }
  records.push_back(
      {{"class", "nvidia.xid"}, {"message", "NVRM: Xid (PCI:0000:00:06): 9999, x"}, {"xid", {{"code", 9999}}}});
  auto findings = RunDoctorChecks(Json{{"gpus", {Gpu("0000:00:06.0")}}, {"kernel_log", {{"records", records}}}}, Kb());
  const auto* f43 = Find(findings, "kmsg.nvidia_xid_43");
  ASSERT_NE(f43, nullptr);
  EXPECT_EQ(f43->evidence.size(), 3u);
  EXPECT_NE(f43->title.find("(3 records), last at 2026-12-02T10:00:02Z"), std::string::npos) << f43->title;
  EXPECT_EQ(f43->severity, Kb().xid.at(43).severity);
  const auto* unknown = Find(findings, "kmsg.nvidia_xid_9999");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->severity, core::Severity::kError);
}

TEST(DoctorTest, AmdgpuRecordsAreClassified) {
  Json records = Json::array({
      {{"class", "amdgpu"},
       {"message",
        "amdgpu 0000:03:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32769, for process "
        "python3 pid 4242 thread python3 pid 4242)"}},
      {{"class", "amdgpu"},
       {"message",
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236"}},
      {{"class", "gpu_reset"}, {"message", "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"}},
      {{"class", "oom"}, {"message", "Out of memory: Killed process 4242 (python3) total-vm:1234kB"}},
      {{"class", "amdgpu"}, {"message", "amdgpu: SMU is initialized successfully!"}},
  });
  auto findings = RunDoctorChecks(Json{{"gpus", Json::array()}, {"kernel_log", {{"records", records}}}}, Kb());
  EXPECT_NE(Find(findings, "kmsg.amdgpu_vm_fault"), nullptr);
  EXPECT_NE(Find(findings, "kmsg.amdgpu_ring_timeout"), nullptr);
  EXPECT_NE(Find(findings, "kmsg.gpu_reset"), nullptr);
  EXPECT_NE(Find(findings, "kmsg.oom_killer"), nullptr);
  size_t kmsg_findings = 0;
  for (const auto& f : findings) kmsg_findings += f.id.rfind("kmsg.", 0) == 0;
  EXPECT_EQ(kmsg_findings, 4u) << "an informational amdgpu line must not become a finding";
}

TEST(DoctorTest, UserSpaceDriverMismatch) {
  Json snapshot = {
      {"gpus", {Gpu("0000:00:06.0")}},
      {"software",
       {{"kernel_modules", {{"nvidia", {{"version", "580.159.04"}}}}},
        {"libraries",
         {{{"name", "libcuda"}, {"version", "580.95.05"}, {"path", "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05"}},
          {{"name", "libcuda"}, {"version", "590.10"}, {"path", "/usr/local/cuda/compat/libcuda.so.590.10"}},
          {{"name", "libnvidia-ml"},
           {"version", "580.159.04"},
           {"path", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04"}}}}}}};
  auto findings = RunDoctorChecks(snapshot, Kb());
  const auto* f = Find(findings, "nvidia.driver_userspace_mismatch");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->evidence.size(), 2u);  // the module + the one mismatched library (compat is fine)
  EXPECT_EQ(f->evidence[1].source, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  snapshot["software"]["libraries"].erase(0);
  EXPECT_EQ(Find(RunDoctorChecks(snapshot, Kb()), "nvidia.driver_userspace_mismatch"), nullptr);
}

TEST(DoctorTest, EnvironmentRulesNameTheGpuArchitecture) {
  Json gpu = {{"vendor", "amd"}, {"pci_address", "0000:03:00.0"}, {"driver", "amdgpu"}, {"gfx_arch", "gfx1031"}};
  Json snapshot = {{"gpus", {gpu}},
                   {"env", {{"variables", {{"HSA_OVERRIDE_GFX_VERSION", "10.3.0"}, {"HIP_VISIBLE_DEVICES", "0"}}}}}};
  auto findings = RunDoctorChecks(snapshot, Kb());
  const auto* f = Find(findings, "env.hsa_override_gfx_version");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, core::Severity::kWarning);
  EXPECT_NE(f->detail.find("The GPUs here report gfx1031."), std::string::npos) << f->detail;
  EXPECT_EQ(f->evidence[0].text, "HSA_OVERRIDE_GFX_VERSION=10.3.0");
}

TEST(DoctorTest, NvmlHealthCounters) {
  Json gpu = Gpu("0000:00:06.0");
  gpu["nvidia"] = {{"uuid", "GPU-1"},
                   {"ecc", {{"volatile_uncorrected", 2}}},
                   {"remapped_rows", {{"pending", true}, {"failure", false}}},
                   {"throttle_reasons", {{"active", {"sw_power_cap", "hw_thermal_slowdown"}}}}};
  auto findings = RunDoctorChecks(Json{{"gpus", {gpu}}}, Kb());
  EXPECT_NE(Find(findings, "nvidia.ecc_uncorrected"), nullptr);
  EXPECT_NE(Find(findings, "nvidia.row_remap_pending"), nullptr);
  const auto* t = Find(findings, "nvidia.throttling");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->title, "0000:00:06.0 (NVIDIA H200) is throttled: hw_thermal_slowdown");
  // Most severe first.
  for (size_t i = 1; i < findings.size(); ++i) {
    EXPECT_GE(static_cast<int>(findings[i - 1].severity), static_cast<int>(findings[i].severity));
  }
}

// MIG mode as the NVML collector writes it: booleans (a reader expecting a number never saw it).
TEST(DoctorTest, MigEnabledAsTheCollectorWritesIt) {
  Json gpu = Gpu("0000:00:06.0");
  gpu["nvidia"] = {{"uuid", "GPU-1"}, {"mig_mode", {{"current", true}, {"pending", true}}}};
  auto findings = RunDoctorChecks(Json{{"gpus", {gpu}}}, Kb());
  const auto* f = Find(findings, "nvidia.mig_enabled");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "0000:00:06.0 (NVIDIA H200) has MIG enabled");
  EXPECT_EQ(f->evidence.at(0).text, "current enabled, pending enabled");
  gpu["nvidia"]["mig_mode"] = {{"current", false}, {"pending", false}};
  EXPECT_EQ(Find(RunDoctorChecks(Json{{"gpus", {gpu}}}, Kb()), "nvidia.mig_enabled"), nullptr);
}

// software.nvidia.device_count comes from nvmlDeviceGetCount; a GPU bound to the driver that
// NVML does not list is an error.
TEST(DoctorTest, GpuBoundButMissingFromNvml) {
  Json listed = Gpu("0000:00:06.0");
  listed["nvidia"] = {{"uuid", "GPU-1"}};
  Json missing = Gpu("0000:00:07.0");
  Json snapshot = {{"gpus", {listed, missing}}, {"software", {{"nvidia", {{"device_count", 1}}}}}};
  auto findings = RunDoctorChecks(snapshot, Kb());
  const auto* f = Find(findings, "nvidia.gpu_not_in_nvml");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "GPU 0000:00:07.0 (NVIDIA H200) is on the bus but NVML does not list it");
  EXPECT_EQ(f->evidence.at(0).text, "nvmlDeviceGetCount: 1");
}

}  // namespace
}  // namespace gputriage::checks

namespace gputriage::checks {
namespace {

TEST(DoctorTest, OddShapesDoNotThrow) {
  auto RunDoctorChecks = [](const Json& json, const catalog::Catalog& knowledge) {
    return checks::RunDoctorChecks(core::SnapshotFromJsonUnchecked(json), knowledge);
  };
  for (const char* text : {"null", "[]", "{\"gpus\": {\"a\": 1}}", "{\"gpus\": [1, \"x\", null]}",
                           "{\"gpus\": [{\"nvidia\": {\"remapped_rows\": 5, \"mig_mode\": {\"current\": \"x\"}}}]}",
                           "{\"kernel_log\": {\"records\": [{\"xid\": 5}, 3, {\"class\": 7}]}}",
                           "{\"findings\": [1, {\"id\": 3}], \"env\": {\"variables\": [1]}}"}) {
    Json snapshot = Json::parse(text);
    EXPECT_NO_THROW(RunDoctorChecks(snapshot, Kb())) << text;
  }
}

}  // namespace
}  // namespace gputriage::checks
