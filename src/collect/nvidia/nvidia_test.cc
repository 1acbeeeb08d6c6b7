// The real nvidia::Collect on rooted trees built from captured files, and on the live machine.
// The NVML half runs only where a libnvidia-ml is installed; elsewhere that test is skipped
// with the reason, and the "library missing" path is asserted instead.
#include "collect/nvidia/nvidia.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "capture_tree.h"
#include "collect/nvidia/nvml.h"

namespace gputriage::nvidia {
namespace {

using core::Json;
using core::NotCollected;

// A fixture's captured text: everything after its "# source:" line.
std::string Capture(const std::string& name) { return gputriage::testing::ReadCapture("nvidia/" + name); }

// A scratch directory laid out like a captured tree, and the collector run on it.
class NvidiaTree : public gputriage::testing::TempTree {
 public:
  core::Section Collect() const {
    auto os = core::OsView::Rooted(root());
    EXPECT_TRUE(os.ok());
    return nvidia::Collect(*os);
  }
};

std::string RootNote(const std::string& root) {
  return "not queried: --root " + root + " is a captured tree, and NVML can only ask the driver of the live machine";
}

TEST(NvidiaCollectRooted, H200CapturedTree) {
  std::string root = std::string(GT_FIXTURES_DIR) + "/h200-root";
  auto os = core::OsView::Rooted(root);
  ASSERT_TRUE(os.ok());
  core::Section section = Collect(*os);

  ASSERT_EQ(section.not_collected.size(), 1u);
  EXPECT_EQ(section.not_collected[0], (NotCollected{"nvidia.nvml", RootNote(root)}));
  EXPECT_TRUE(section.findings.empty());

  const Json& data = section.data;
  EXPECT_EQ(data["driver_version"], "580.159.04");
  EXPECT_FALSE(data.contains("cuda_driver_version"));  // NVML only: unknown, not zero
  const Json& procfs = data["procfs"];
  EXPECT_EQ(procfs["version_line"],
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
            "(nixbld@)");
  EXPECT_EQ(procfs["driver_version"], "580.159.04");
  EXPECT_EQ(procfs["kernel_module"], "open");
  EXPECT_EQ(procfs["arch"], "x86_64");
  EXPECT_EQ(procfs["gcc_version"], "gcc version 15.3.0 (GCC)");
  EXPECT_EQ(procfs["gpus"]["0000:00:06.0"]["GPU Firmware"], "580.159.04");
  EXPECT_EQ(procfs["gpus"]["0000:00:06.0"]["DMA Mask"], "0xfffffffffffff");

  ASSERT_EQ(data["gpus"].size(), 1u);
  const Json& gpu = data["gpus"][0];
  EXPECT_EQ(gpu["pci_address"], "0000:00:06.0");
  EXPECT_EQ(gpu["source"], "procfs");
  EXPECT_EQ(gpu["name"], "NVIDIA H200");
  EXPECT_EQ(gpu["uuid"], "GPU-6562dc0d-c3be-5b83-aaf0-0ec13858250e");
  EXPECT_EQ(gpu["vbios_version"], "96.00.a5.00.1a");
  EXPECT_EQ(gpu["device_minor"], 0);
  EXPECT_EQ(gpu["excluded"], false);
  EXPECT_EQ(gpu["procfs"]["Bus Type"], "PCIe");
  EXPECT_EQ(gpu["procfs"]["IRQ"], "41");
  // Telemetry comes from NVML only: absent under --root.
  for (const char* key : {"index", "memory_total_bytes", "temperature_c", "power_draw_mw", "clocks", "ecc", "serial"}) {
    EXPECT_FALSE(gpu.contains(key)) << key;
  }
}

struct VersionCase {
  const char* fixture;
  const char* driver_version;
  const char* arch;
};

class NvidiaCollectVersions : public ::testing::TestWithParam<VersionCase> {};

TEST_P(NvidiaCollectVersions, TreeWithL4) {
  NvidiaTree tree;
  tree.Write("proc/driver/nvidia/version", Capture(GetParam().fixture));
  tree.Write("proc/driver/nvidia/gpus/0000:70:00.0/information", Capture("information-l4-0000-70-00.0.txt"));
  core::Section section = tree.Collect();

  ASSERT_EQ(section.not_collected.size(), 1u);
  EXPECT_EQ(section.not_collected[0], (NotCollected{"nvidia.nvml", RootNote(tree.root())}));
  EXPECT_EQ(section.data["driver_version"], GetParam().driver_version);
  EXPECT_EQ(section.data["procfs"]["arch"], GetParam().arch);
  EXPECT_EQ(section.data["procfs"]["kernel_module"], "open");

  ASSERT_EQ(section.data["gpus"].size(), 1u);
  const Json& gpu = section.data["gpus"][0];
  EXPECT_EQ(gpu["pci_address"], "0000:70:00.0");
  EXPECT_EQ(gpu["name"], "NVIDIA L4");
  EXPECT_EQ(gpu["uuid"], "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689");
  EXPECT_EQ(gpu["vbios_version"], "95.04.65.00.13");
  EXPECT_EQ(gpu["device_minor"], 0);
  EXPECT_EQ(gpu["excluded"], false);
  EXPECT_EQ(gpu["procfs"].size(), 10u);
  EXPECT_EQ(gpu["procfs"]["DMA Size"], "47 bits");
}

INSTANTIATE_TEST_SUITE_P(
    Captures, NvidiaCollectVersions,
    ::testing::Values(VersionCase{"version-open-565.57.01-ubuntu24.04.txt", "565.57.01", "x86_64"},
                      VersionCase{"version-open-525.60.11-arch-trailing-spaces.txt", "525.60.11", "x86_64"},
                      VersionCase{"version-open-aarch64-jetson-35.3.1.txt", "35.3.1", "aarch64"},
                      VersionCase{"version-open-515.43.04-first-line-cut.txt", "515.43.04", "x86_64"}));

TEST(NvidiaCollectRooted, BinaryInformationFileIsNotedWithItsPath) {
  NvidiaTree tree;
  tree.Write("proc/driver/nvidia/version", Capture("version-open-565.57.01-ubuntu24.04.txt"));
  tree.Write("proc/driver/nvidia/gpus/0000:01:00.0/information", std::string("\x7f"
                                                                             "ELF\x02\x01\x01\0\0\0",
                                                                             10));
  core::Section section = tree.Collect();

  ASSERT_EQ(section.not_collected.size(), 2u);
  EXPECT_EQ(section.not_collected[0].item, "nvidia.procfs");
  EXPECT_EQ(section.not_collected[0].reason,
            tree.root() +
                "/proc/driver/nvidia/gpus/0000:01:00.0/information: 7 control or NUL bytes in 10 "
                "bytes (not a text file?); not 'Key: value': line 1 "
                "\"\xEF\xBF\xBD"
                "ELF\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"; no 'Key: value' lines; "
                "does not end with a newline (truncated?)");
  EXPECT_EQ(section.not_collected[1].item, "nvidia.nvml");

  // The GPU is still listed (the directory says it exists), with nothing invented.
  ASSERT_EQ(section.data["gpus"].size(), 1u);
  const Json& gpu = section.data["gpus"][0];
  EXPECT_EQ(gpu["pci_address"], "0000:01:00.0");
  EXPECT_FALSE(gpu.contains("name"));
  EXPECT_FALSE(gpu.contains("uuid"));
  EXPECT_EQ(gpu["procfs"], Json::object());
  // The result must serialise (all strings valid UTF-8).
  EXPECT_NO_THROW(Json(section).dump());
}

TEST(NvidiaCollectRooted, TruncatedFilesAreNotedWithTheirPaths) {
  NvidiaTree tree;
  std::string version = Capture("version-open-565.57.01-ubuntu24.04.txt");
  std::string information = Capture("information-l4-0000-70-00.0.txt");
  tree.Write("proc/driver/nvidia/version", version.substr(0, 14));  // "NVRM version: "
  tree.Write("proc/driver/nvidia/gpus/0000:70:00.0/information",
             information.substr(0, information.find("GPU UUID") + 6));
  core::Section section = tree.Collect();

  ASSERT_EQ(section.not_collected.size(), 3u);
  EXPECT_EQ(
      section.not_collected[0],
      (NotCollected{"nvidia.procfs", tree.root() + "/proc/driver/nvidia/version: no 'Kernel Module' in the NVRM "
                                                   "version line; no driver version number in the NVRM version line"}));
  EXPECT_EQ(section.not_collected[1],
            (NotCollected{"nvidia.procfs", tree.root() + "/proc/driver/nvidia/gpus/0000:70:00.0/information: not 'Key: "
                                                         "value': line 3 \"GPU UU\"; missing Bus Type, Bus Location "
                                                         "(truncated?); does not end with a newline (truncated?)"}));
  EXPECT_FALSE(section.data.contains("driver_version"));
  const Json& gpu = section.data["gpus"][0];
  EXPECT_EQ(gpu["name"], "NVIDIA L4");
  EXPECT_FALSE(gpu.contains("uuid"));
}

TEST(NvidiaCollectRooted, NoDriverDirectory) {
  NvidiaTree tree;
  tree.Write("proc/cpuinfo", "");
  core::Section section = tree.Collect();
  ASSERT_EQ(section.not_collected.size(), 2u);
  EXPECT_EQ(
      section.not_collected[0],
      (NotCollected{"nvidia.procfs", tree.root() + "/proc/driver/nvidia: no such directory (the nvidia kernel module "
                                                   "is not loaded, or this tree was captured without it)"}));
  EXPECT_EQ(section.data["gpus"], Json::array());
  EXPECT_EQ(section.data["procfs"], (Json{{"gpus", Json::object()}}));
}

TEST(NvidiaCollectRooted, UnreadableVersionFileNamesTheErrno) {
  NvidiaTree tree;
  tree.Write("proc/driver/nvidia/gpus/0000:70:00.0/information", Capture("information-l4-0000-70-00.0.txt"));
  core::Section section = tree.Collect();
  ASSERT_EQ(section.not_collected.size(), 2u);
  EXPECT_EQ(section.not_collected[0],
            (NotCollected{"nvidia.procfs", tree.root() + "/proc/driver/nvidia/version: No such file or directory"}));
  EXPECT_EQ(section.data["gpus"][0]["name"], "NVIDIA L4");
}

bool NvmlLoadable() {
  for (const char* name : {"libnvidia-ml.so.1", "libnvidia-ml.so"}) {
    if (void* handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      ::dlclose(handle);
      return true;
    }
  }
  return false;
}

TEST(NvidiaCollectLive, NvmlMissingIsNoted) {
  if (NvmlLoadable()) GTEST_SKIP() << "a libnvidia-ml is installed here; see NvmlOnARealGpu";
  core::Section section = Collect(core::OsView::Live());
  std::vector<NotCollected> nvml;
  for (const NotCollected& note : section.not_collected) {
    if (note.item == "nvidia.nvml") nvml.push_back(note);
  }
  ASSERT_EQ(nvml.size(), 1u);
  EXPECT_EQ(nvml[0].reason,
            "cannot load libnvidia-ml.so.1: cannot open shared object file: No such file or "
            "directory; libnvidia-ml.so: cannot open shared object file: No such file or "
            "directory");
  EXPECT_TRUE(section.findings.empty());
  EXPECT_FALSE(section.data.contains("cuda_driver_version"));
}

TEST(NvidiaCollectLive, NvmlOnARealGpu) {
  if (!NvmlLoadable()) {
    GTEST_SKIP() << "no libnvidia-ml.so.1 on this machine: the NVML path needs an NVIDIA driver";
  }
  core::Section section = Collect(core::OsView::Live());
  if (const char* dump = std::getenv("GT_NVIDIA_DUMP_JSON")) {
    std::ofstream(dump) << Json(section).dump(2) << "\n";
  }
  for (const NotCollected& note : section.not_collected) {
    std::printf("note: %s: %s\n", note.item.c_str(), note.reason.c_str());
  }
  EXPECT_TRUE(section.findings.empty());
  const Json& data = section.data;
  ASSERT_TRUE(data.contains("driver_version"));
  if (data["procfs"].contains("driver_version")) {
    EXPECT_EQ(data["driver_version"], data["procfs"]["driver_version"]);
  }
  ASSERT_TRUE(data.contains("cuda_driver_version"));
  EXPECT_TRUE(std::regex_match(data["cuda_driver_version"].get<std::string>(), std::regex(R"(\d+\.\d+)")));
  EXPECT_TRUE(data.contains("nvml_version"));
  ASSERT_FALSE(data["gpus"].empty());
  for (const Json& gpu : data["gpus"]) {
    ASSERT_TRUE(gpu.contains("index")) << gpu.dump();  // listed by NVML
    EXPECT_TRUE(std::regex_match(gpu["pci_address"].get<std::string>(),
                                 std::regex(R"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7])")));
    EXPECT_TRUE(gpu["uuid"].get<std::string>().starts_with("GPU-"));
    EXPECT_FALSE(gpu["name"].get<std::string>().empty());
    EXPECT_GT(gpu["memory_total_bytes"].get<uint64_t>(), 0u);
    EXPECT_GE(gpu["memory_total_bytes"].get<uint64_t>(), gpu["memory_used_bytes"].get<uint64_t>());
    if (gpu.contains("procfs") && gpu["procfs"].contains("GPU UUID")) {
      EXPECT_EQ(gpu["procfs"]["GPU UUID"], gpu["uuid"]);
    }
  }
}

// The entry points older drivers fall back to (v1 memory, nvmlDeviceGetTemperatureV on drivers
// that dropped the old call, the pre-R535 throttle-reason name, CUDA version v1) must read the
// same GPU the same way: this checks their struct layouts on real hardware.
TEST(NvidiaCollectLive, NvmlFallbackEntryPointsAgree) {
  if (!NvmlLoadable()) {
    GTEST_SKIP() << "no libnvidia-ml.so.1 on this machine: the NVML path needs an NVIDIA driver";
  }
  auto lib = NvmlLibrary::Load();
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  NvmlReport modern = QueryNvml(*lib, "");

  void* handle = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr);
  lib->DeviceGetMemoryInfoV2 = nullptr;  // -> nvmlDeviceGetMemoryInfo (v1)
  lib->DeviceGetTemperature = nullptr;   // -> nvmlDeviceGetTemperatureV
  lib->DeviceGetClocksEventReasons = reinterpret_cast<decltype(lib->DeviceGetClocksEventReasons)>(
      ::dlsym(handle, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  lib->SystemGetCudaDriverVersion =
      reinterpret_cast<decltype(lib->SystemGetCudaDriverVersion)>(::dlsym(handle, "nvmlSystemGetCudaDriverVersion"));
  NvmlReport legacy = QueryNvml(*lib, "");
  ::dlclose(handle);

  EXPECT_TRUE(modern.notes.empty());
  EXPECT_TRUE(legacy.notes.empty());
  EXPECT_EQ(legacy.system["cuda_driver_version"], modern.system["cuda_driver_version"]);
  ASSERT_EQ(legacy.gpus.size(), modern.gpus.size());
  for (size_t i = 0; i < modern.gpus.size(); ++i) {
    const Json& a = modern.gpus[i];
    const Json& b = legacy.gpus[i];
    std::printf("modern: %s\nlegacy: %s\n", a.dump().c_str(), b.dump().c_str());
    EXPECT_EQ(b["memory_total_bytes"], a["memory_total_bytes"]);
    // v1's "used" includes the memory the driver reserves, which v2 reports apart.
    if (a.contains("memory_reserved_bytes")) {
      EXPECT_GE(b["memory_used_bytes"].get<uint64_t>(), a["memory_reserved_bytes"].get<uint64_t>());
    }
    EXPECT_FALSE(b.contains("memory_reserved_bytes"));
    if (a.contains("temperature_c") && lib->DeviceGetTemperatureV != nullptr) {
      EXPECT_NEAR(b["temperature_c"].get<double>(), a["temperature_c"].get<double>(), 5.0);
    }
    EXPECT_EQ(b.contains("throttle_reasons"), a.contains("throttle_reasons"));
    EXPECT_EQ(b["uuid"], a["uuid"]);
    EXPECT_EQ(b["pci_address"], a["pci_address"]);
  }
}

TEST(NvmlHelpers, FormatCudaDriverVersion) {
  EXPECT_EQ(FormatCudaDriverVersion(13000), "13.0");
  EXPECT_EQ(FormatCudaDriverVersion(12020), "12.2");
  EXPECT_EQ(FormatCudaDriverVersion(11080), "11.8");
  EXPECT_EQ(FormatCudaDriverVersion(0), std::nullopt);
  EXPECT_EQ(FormatCudaDriverVersion(-1), std::nullopt);
}

TEST(NvmlHelpers, ClocksEventReasonNames) {
  EXPECT_EQ(ClocksEventReasonNames(0), std::vector<std::string>{});
  EXPECT_EQ(ClocksEventReasonNames(0x1), std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(ClocksEventReasonNames(0x44), (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(ClocksEventReasonNames(0x1ff).size(), 9u);
  EXPECT_EQ(ClocksEventReasonNames(0x208), (std::vector<std::string>{"hw_slowdown", "0x200"}));
}

TEST(NvmlHelpers, ReturnName) {
  EXPECT_EQ(ReturnName(nvml::kErrorLibRmVersionMismatch), "NVML_ERROR_LIB_RM_VERSION_MISMATCH");
  EXPECT_EQ(ReturnName(nvml::kErrorDriverNotLoaded), "NVML_ERROR_DRIVER_NOT_LOADED");
  EXPECT_EQ(ReturnName(nvml::kErrorNotSupported), "NVML_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(ReturnName(999), "NVML_ERROR_UNKNOWN");
  EXPECT_EQ(ReturnName(42), "NVML_ERROR_42");
}

TEST(NvmlHelpers, ComputeModeName) {
  EXPECT_EQ(ComputeModeName(0), "default");
  EXPECT_EQ(ComputeModeName(3), "exclusive_process");
  EXPECT_EQ(ComputeModeName(7), "unknown_7");
}

TEST(NvmlHelpers, LibraryFileVersion) {
  EXPECT_EQ(LibraryFileVersion("/nonexistent/libnvidia-ml.so.535.183.01"), "535.183.01");
  EXPECT_EQ(LibraryFileVersion("/nonexistent/libnvidia-ml.so.1"), std::nullopt);
  EXPECT_EQ(LibraryFileVersion(""), std::nullopt);
}

TEST(NvmlHelpers, StructVersionsMatchNvmlH) {
  // NVML_STRUCT_VERSION(Memory, 2) and NVML_STRUCT_VERSION(Temperature, 1).
  EXPECT_EQ(nvml::kMemoryV2Version, 0x02000028u);
  EXPECT_EQ(nvml::kTemperatureV1Version, 0x0100000Cu);
}

// nvmlGpuTopologyLevel_t, nvmlGpuP2PStatus_t and nvmlIntNvLinkDeviceType_t values as nvml.h
// numbers them, in the words nvidia-smi topo -m's legend uses.
TEST(NvmlHelpers, TopologyAndPeerNames) {
  EXPECT_EQ(TopologyLevelName(0), "internal");
  EXPECT_EQ(TopologyLevelName(10), "PIX");
  EXPECT_EQ(TopologyLevelName(20), "PXB");
  EXPECT_EQ(TopologyLevelName(30), "PHB");
  EXPECT_EQ(TopologyLevelName(40), "NODE");
  EXPECT_EQ(TopologyLevelName(50), "SYS");
  EXPECT_EQ(TopologyLevelName(35), "level_35");
  EXPECT_EQ(P2pStatusName(0), "ok");
  EXPECT_EQ(P2pStatusName(1), "chipset_not_supported");
  EXPECT_EQ(P2pStatusName(3), "ioh_topology_not_supported");
  EXPECT_EQ(P2pStatusName(4), "disabled_by_regkey");
  EXPECT_EQ(P2pStatusName(6), "unknown");
  EXPECT_EQ(P2pStatusName(9), "status_9");
  EXPECT_EQ(P2pStatusName(-1), "status_-1");
  EXPECT_EQ(NvLinkDeviceTypeName(0), "gpu");
  EXPECT_EQ(NvLinkDeviceTypeName(2), "switch");
  EXPECT_EQ(NvLinkDeviceTypeName(0xFF), "unknown");
}

// Probe GPUs as QueryDevice writes them: `links` active links to `remote` of type `type`, and
// `down` inactive links after them.
Json ProbeGpu(const std::string& address, int links, const std::string& remote, const std::string& type, int down = 0) {
  Json gpu{{"pci_address", address}, {"nvlink", Json::array()}};
  for (int i = 0; i < links + down; ++i) {
    Json link{{"link", i}, {"active", i < links}};
    if (i < links) {
      if (!remote.empty()) link["remote_pci_address"] = remote;
      link["remote_device_type"] = type;
    }
    gpu["nvlink"].push_back(link);
  }
  return gpu;
}

TEST(NvmlPeers, DirectLinksAreCountedOnce) {
  // Two GPUs joined by a bridge of 4 links: each side names the other.
  Json a = ProbeGpu("0000:17:00.0", 4, "0000:65:00.0", "gpu", 8);
  Json b = ProbeGpu("0000:65:00.0", 4, "0000:17:00.0", "gpu", 8);
  NvLinkBond bond = CountNvLinks(a, b);
  EXPECT_EQ(bond.links, 4u);
  EXPECT_FALSE(bond.via_switch);
  Json peer = PeerJson(a, b, 50, Json{{"read", "ok"}, {"write", "ok"}, {"nvlink", "ok"}});
  EXPECT_EQ(peer["path"], "NV4");
  EXPECT_EQ(peer["pcie_path"], "SYS");
  EXPECT_EQ(peer["nvlinks"], 4);
  EXPECT_FALSE(peer.contains("via_switch"));
  EXPECT_EQ(peer["p2p"]["read"], "ok");
  EXPECT_EQ(peer["source"], "nvml");
  // One side's remote query failed: the other side's answer still counts.
  Json a_unknown = ProbeGpu("0000:17:00.0", 4, "", "gpu");
  EXPECT_EQ(CountNvLinks(a_unknown, b).links, 4u);
}

TEST(NvmlPeers, LinksIntoSwitchesBondThroughTheFabric) {
  // An HGX board: every active link goes into an NVSwitch (nvidia-smi topo -m: NV18).
  Json a = ProbeGpu("0000:18:00.0", 18, "0000:05:00.0", "switch");
  Json b = ProbeGpu("0000:2a:00.0", 16, "0000:06:00.0", "switch", 2);
  NvLinkBond bond = CountNvLinks(a, b);
  EXPECT_EQ(bond.links, 16u);
  EXPECT_TRUE(bond.via_switch);
  Json peer = PeerJson(a, b, 40, Json{{"nvlink", "ok"}});
  EXPECT_EQ(peer["path"], "NV16");
  EXPECT_EQ(peer["via_switch"], true);
  // The driver refuses NVLink P2P between them (another fabric partition): the PCIe path stands.
  Json refused = PeerJson(a, b, 40, Json{{"nvlink", "not_supported"}});
  EXPECT_EQ(refused["path"], "NODE");
  EXPECT_FALSE(refused.contains("nvlinks"));
}

TEST(NvmlPeers, PcieOnlyPairs) {
  Json a{{"pci_address", "0000:3b:00.0"}};
  Json b{{"pci_address", "0000:5e:00.0"}};
  EXPECT_EQ(CountNvLinks(a, b).links, 0u);
  Json peer = PeerJson(a, b, 20, Json{{"read", "ok"}, {"write", "ok"}});
  EXPECT_EQ(peer["path"], "PXB");
  EXPECT_EQ(peer["pcie_path"], "PXB");
  // Neither the common ancestor nor P2P answered: no path is invented.
  Json unknown = PeerJson(a, b, std::nullopt, Json::object());
  EXPECT_FALSE(unknown.contains("path"));
  EXPECT_FALSE(unknown.contains("p2p"));
  // Only one of the two has links into switches: no fabric between them.
  Json c = ProbeGpu("0000:18:00.0", 18, "0000:05:00.0", "switch");
  EXPECT_EQ(CountNvLinks(c, a).links, 0u);
}

}  // namespace
}  // namespace gputriage::nvidia
