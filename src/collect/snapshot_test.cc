// The typed snapshot model against what the real collectors write, on the captured fixtures:
// every member they write survives the round trip (JSON -> core::Snapshot -> JSON, byte for
// byte), and the typed fields the consumers read are filled. A writer and a reader that drift
// apart (a flag written as a bool and read as a number, a directory written under one key and
// read under another) fail here.
#include "collect/snapshot.h"

#include <gtest/gtest.h>

#include <string>

#include "capture_tree.h"
#include "collect/amd/capture_tree_for_test.h"
#include "core/snapshot.h"

namespace gputriage::collect {
namespace {

using core::Json;
using gputriage::testing::TempTree;

// A snapshot of `root` as the collectors write it (vendor probes in this process).
Json CollectedJson(const std::string& root) {
  core::Result<core::OsView> os = core::OsView::Rooted(root);
  EXPECT_TRUE(os.ok()) << root;
  return CollectSnapshotJson(*os, SnapshotOptions{});
}

// Reads `json` into the model and checks that writing it back gives the same document.
core::Snapshot RoundTrip(const Json& json) {
  core::Snapshot snapshot = core::SnapshotFromJsonUnchecked(json);
  EXPECT_TRUE(snapshot.read_problems.empty()) << snapshot.read_problems.front();
  EXPECT_EQ(core::ToJson(snapshot).dump(2), json.dump(2));
  return snapshot;
}

std::string H200RootDir() { return std::string(GT_FIXTURES_DIR) + "/h200-root"; }

TEST(SnapshotModel, H200TreeRoundTripsAndFillsWhatConsumersRead) {
  Json json = CollectedJson(H200RootDir());
  core::Snapshot s = RoundTrip(json);

  ASSERT_TRUE(s.host.has_value());
  EXPECT_EQ(s.host->hostname, "vm");
  EXPECT_EQ(s.host->kernel->release, "6.18.44-fc-v973-gpu");
  EXPECT_EQ(s.host->os->pretty_name, "Ubuntu 24.04.3 LTS");
  EXPECT_EQ(s.host->cpu->logical_cpus, 16u);
  EXPECT_EQ(s.host->memory->total_bytes, 135128870912u);
  ASSERT_TRUE(s.host->cmdline->flags.has_value());

  ASSERT_EQ(s.GpuList().size(), 1u);
  const core::Gpu& gpu = s.GpuList()[0];
  EXPECT_EQ(gpu.Label(), "0000:00:06.0 (NVIDIA H200)");
  EXPECT_EQ(gpu.vendor, "nvidia");
  EXPECT_EQ(gpu.driver, "nvidia");
  EXPECT_EQ(gpu.device_id, "0x2335");
  EXPECT_EQ(gpu.link->current_width, 16u);
  EXPECT_EQ(gpu.link->max_speed_gts, 32.0);
  ASSERT_EQ(gpu.bars->size(), 3u);
  EXPECT_EQ((*gpu.bars)[0].size_bytes, 16777216u);
  // Under --root only the procfs part of the NVIDIA probe exists.
  ASSERT_TRUE(gpu.nvidia.has_value());
  EXPECT_EQ(gpu.nvidia->source, "procfs");
  EXPECT_EQ(gpu.nvidia->uuid, "GPU-6562dc0d-c3be-5b83-aaf0-0ec13858250e");
  EXPECT_EQ(gpu.nvidia->device_minor, 0u);
  EXPECT_EQ(gpu.nvidia->excluded, false);

  const core::Software& sw = *s.software;
  EXPECT_EQ(sw.kernel_modules->at("nvidia").version, "580.159.04");
  EXPECT_EQ(sw.nvidia->driver_version, "580.159.04");
  EXPECT_EQ(sw.nvidia->procfs->driver_version, "580.159.04");
  EXPECT_EQ(sw.nvidia->procfs->kernel_module, "open");
  EXPECT_GE(sw.packages->size(), 40u);
  EXPECT_EQ(sw.cuda->installations->front().path, "/usr/local/cuda");

  ASSERT_TRUE(s.kernel_log.has_value());
  EXPECT_EQ(s.kernel_log->source, "file");
  EXPECT_EQ(s.kernel_log->records_total, 359u);
  ASSERT_EQ(s.kernel_log->records->size(), 5u);
  EXPECT_EQ(s.kernel_log->records->front().log_class, "nvidia.nvrm");
  EXPECT_EQ(s.kernel_log->counts->at("nvidia.nvrm"), 5u);
  EXPECT_EQ(s.root, H200RootDir());
}

// The NVML probe's answer captured on the H200 (tests/fixtures/nvidia/h200-live), merged into
// the captured tree's GPU as the snapshot merges it.
TEST(SnapshotModel, H200NvmlProbeRoundTripsWithItsHealthFields) {
  Json json = CollectedJson(H200RootDir());
  Json probe =
      Json::parse(gputriage::testing::ReadFixture("nvidia/h200-live/probe-nvidia.json", {.missing_fails_test = true}));
  Json peers = Json::array();
  MergeVendorSection("nvidia", probe.get<core::Section>(), json["gpus"], json["software"], peers);
  core::Snapshot s = RoundTrip(json);

  const core::NvidiaGpu& nv = *s.GpuList().at(0).nvidia;
  EXPECT_EQ(nv.name, "NVIDIA H200");
  EXPECT_EQ(nv.memory_total_bytes, 150754820096u);
  EXPECT_EQ(nv.ecc->mode_current, true);
  EXPECT_EQ(nv.ecc->volatile_uncorrected, 0u);
  EXPECT_EQ(nv.remapped_rows->pending, false);
  EXPECT_EQ(nv.remapped_rows->failure, false);
  // mig_mode is written as booleans; doctor's MIG check reads this field.
  ASSERT_TRUE(nv.mig_mode.has_value());
  EXPECT_EQ(nv.mig_mode->current, false);
  EXPECT_EQ(nv.throttle_reasons->active, std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(nv.compute_mode, "default");
  EXPECT_EQ(nv.persistence_mode, true);
  EXPECT_EQ(nv.pcie->max_gen, 5u);
  EXPECT_EQ(nv.temperature_c, 36);
  EXPECT_EQ(s.software->nvidia->cuda_driver_version, "13.0");
  EXPECT_EQ(s.software->nvidia->nvml_library, "/usr/local/nvidia/lib64/libnvidia-ml.so.1");
}

// The probe as `gputriage __probe nvidia` printed it on an H200 on 2026-12-03: the members added
// since the first capture (device_count, compute_capability) reach the typed model, where doctor
// (nvidia.gpu_not_in_nvml) and inspect's coverage (the GPU's sm_XX) read them.
TEST(SnapshotModel, H200ProbeOfTodayFillsDeviceCountAndComputeCapability) {
  Json json = CollectedJson(H200RootDir());
  Json probe = Json::parse(
      gputriage::testing::ReadFixture("nvidia/h200-live-2026-12-03/probe-nvidia.json", {.missing_fails_test = true}));
  Json peers = Json::array();
  MergeVendorSection("nvidia", probe.get<core::Section>(), json["gpus"], json["software"], peers);
  core::Snapshot s = RoundTrip(json);
  ASSERT_TRUE(s.software && s.software->nvidia);
  EXPECT_EQ(s.software->nvidia->device_count, 1u);
  const core::NvidiaGpu& nv = *s.GpuList().at(0).nvidia;
  EXPECT_EQ(nv.compute_capability, "9.0");
  EXPECT_EQ(nv.uuid, "GPU-0de66b95-469f-c2d7-95e8-aca463459986");
  EXPECT_EQ(nv.mig_mode->current, false);
  std::vector<core::GpuArch> gpus = core::GpuArchitectures(s);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].arch, "sm_90");
}

// PyTorch installed in a site directory: the file scan records where its libraries are, which
// doctor's coverage check reads.
TEST(SnapshotModel, TorchLibraryDirectoryIsWrittenByTheCollector) {
  TempTree tree;
  gputriage::testing::CopyTree(H200RootDir(), tree.root());
  const std::string site = "/usr/lib/python3/dist-packages";
  tree.Write(site + "/torch/version.py",
             "__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n");
  tree.Write(site + "/torch/lib/libtorch_cuda.so", "not a real library");
  core::Snapshot s = RoundTrip(CollectedJson(tree.root()));
  const core::TorchInstall* torch = s.Torch();
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->version, "2.11.0+cu130");
  EXPECT_EQ(torch->cuda, "13.0");
  EXPECT_EQ(torch->lib_dir, site + "/torch/lib");
  EXPECT_EQ(torch->bundled_libraries, std::vector<std::string>{"libtorch_cuda.so"});
}

constexpr const char* kNodes = "/sys/class/kfd/kfd/topology/nodes";
constexpr const char* kDriverLink = "../../../../bus/pci/drivers/amdgpu";

// Four MI300A APUs from a real KFD capture, with amdgpu sysfs (memory, sensors from a real
// lm-sensors capture, RAS counters) for the first.
TEST(SnapshotModel, AmdKfdAndSysfsRoundTripAndFillWhatConsumersRead) {
  TempTree tree;
  std::vector<std::string> blocks = amd::testing::SplitDashedBlocks(
      amd::testing::ReadFixture("kfd-nodes-properties-4x-mi300a-6xcd-cat-all-nodes.txt"));
  ASSERT_EQ(blocks.size(), 8u);
  for (int node = 0; node < 8; ++node) {
    tree.Write(fmt::format("{}/{}/properties", kNodes, node), blocks[node]);
  }
  const std::string dev = "/sys/bus/pci/devices/0000:02:00.0";
  tree.Link(dev + "/driver", kDriverLink);
  tree.Write(dev + "/vendor", "0x1002\n");
  tree.Write(dev + "/device", "0x74a0\n");
  tree.Write(dev + "/class", "0x120000\n");
  tree.Write(dev + "/mem_info_vram_total", "137438953472\n");
  tree.Write(dev + "/mem_info_vram_used", "1048576\n");
  tree.Write(dev + "/product_name", "AMD Instinct MI300A\n");
  tree.Write(dev + "/gpu_busy_percent", "3\n");
  tree.Write(dev + "/ras/umc_err_count", "ue: 1\nce: 7\n");
  amd::testing::MaterialiseSensors(
      tree, dev + "/hwmon/hwmon0",
      amd::testing::ReadFixture("hwmon-lm-sensors-amdgpu-rx7900xt-edge-junction-mem-ppt.txt"));

  core::Snapshot s = RoundTrip(CollectedJson(tree.root()));
  ASSERT_EQ(s.GpuList().size(), 4u);
  const core::Gpu& gpu = s.GpuList()[0];
  EXPECT_EQ(gpu.pci_address, "0000:02:00.0");
  EXPECT_EQ(gpu.vendor, "amd");
  EXPECT_EQ(gpu.gfx_arch, "gfx942");
  EXPECT_EQ(gpu.name, "AMD Instinct MI300A");
  ASSERT_TRUE(gpu.amd.has_value());
  const core::AmdGpu& amd = *gpu.amd;
  EXPECT_EQ(amd.compute_units, 228u);
  EXPECT_EQ(amd.wavefront_size, 64u);
  EXPECT_EQ(amd.gfx_target_version, 90402u);
  EXPECT_EQ(amd.vram_total_bytes, 137438953472u);
  EXPECT_EQ(gpu.MemoryBytes(), 137438953472u);
  EXPECT_EQ(amd.busy_percent, 3u);
  EXPECT_EQ(amd.ras->at("umc").ue, 1u);
  EXPECT_EQ(amd.ras->at("umc").ce, 7u);
  EXPECT_EQ(amd.temperatures_c->at("junction"), 39.0);
  EXPECT_EQ(amd.clocks->max_sclk_mhz, 2100u);
  EXPECT_EQ(s.GpuList()[3].gfx_arch, "gfx942");
  ASSERT_EQ(core::GpuArchitectures(s).size(), 4u);
  EXPECT_EQ(core::GpuArchitectures(s)[0].arch, "gfx942");
  ASSERT_TRUE(s.software->amd.has_value());
  EXPECT_TRUE(s.software->amd->kfd.is_object());
}

TEST(SnapshotModel, WrongTypesAreNamedAndLeftOut) {
  core::Snapshot s = core::SnapshotFromJsonUnchecked(Json::parse(R"({
      "schema_version": 1,
      "gpus": [{"pci_address": "0000:01:00.0", "nvidia": {"mig_mode": {"current": 1}}}],
      "env": {"variables": {"A": "1", "B": 2}}})"));
  EXPECT_EQ(s.read_problems,
            (std::vector<std::string>{"gpus[0].nvidia.mig_mode.current: a number where a boolean belongs",
                                      "env.variables.B: a number where a string belongs"}));
  EXPECT_FALSE(s.GpuList()[0].nvidia->mig_mode->current.has_value());
  EXPECT_EQ(s.EnvValue("A"), "1");
  EXPECT_EQ(s.EnvValue("B"), std::nullopt);
}

TEST(SnapshotModel, VersionIsChecked) {
  EXPECT_EQ(core::SnapshotFromJson(Json::array(), "x.json").error().message,
            "x.json: not a gputriage snapshot (a JSON array, not an object)");
  EXPECT_EQ(core::SnapshotFromJson(Json{{"schema_version", 2}}, "x.json").error().message,
            "x.json: snapshot schema_version 2 is newer than this gputriage (knows 1); upgrade "
            "gputriage");
  EXPECT_TRUE(core::SnapshotFromJson(Json{{"schema_version", 1}}, "x.json").ok());
}

}  // namespace
}  // namespace gputriage::collect
