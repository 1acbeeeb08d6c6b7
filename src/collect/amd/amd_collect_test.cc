// The real amd::Collect on --root trees materialised from real captures (tests/fixtures/amd/).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "collect/amd/amd.h"
#include "collect/amd/attribute_reader.h"
#include "collect/amd/capture_tree_for_test.h"
#include "core/text.h"

namespace gputriage::amd {
namespace {

using gputriage::testing::MaterializeCat;
using gputriage::testing::MaterializeGrepDot;
using gputriage::testing::MaterializeTailV;
using gputriage::testing::TailBlankLines;
using gputriage::testing::TempTree;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MaterialiseSensors;
using ::testing::Pair;
using testing::ReadFixture;
using testing::SplitDashedBlocks;
using Json = core::Json;

constexpr const char* kNodes = "/sys/class/kfd/kfd/topology/nodes";
constexpr const char* kMi300a = "kfd-nodes-properties-4x-mi300a-6xcd-cat-all-nodes.txt";
// What capture-root.sh records for a device bound to amdgpu: the `driver` link.
constexpr const char* kDriverLink = "../../../../bus/pci/drivers/amdgpu";

core::Section CollectTree(const TempTree& tree) {
  core::Result<core::OsView> os = core::OsView::Rooted(tree.root());
  EXPECT_TRUE(os.ok());
  return Collect(*os);
}

// item -> reason, failing the test on a repeated item.
std::map<std::string, std::string> Notes(const core::Section& section) {
  std::map<std::string, std::string> out;
  for (const core::NotCollected& note : section.not_collected) {
    EXPECT_TRUE(out.emplace(note.item, note.reason).second) << "repeated note for " << note.item;
  }
  return out;
}

// `count` U+FFFD replacement characters, what SanitizeUtf8 makes of control and invalid bytes.
std::string Fffd(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += "\xEF\xBF\xBD";
  return out;
}

void WriteMi300aNode(const TempTree& tree, int node, int block) {
  std::vector<std::string> blocks = SplitDashedBlocks(ReadFixture(kMi300a));
  ASSERT_EQ(blocks.size(), 8u);
  tree.Write(fmt::format("{}/{}/properties", kNodes, node), blocks[block]);
}

TEST(AmdCollect, FourMi300aApusFromTheKfdCapture) {
  TempTree tree;
  for (int node = 0; node < 8; ++node) WriteMi300aNode(tree, node, node);
  core::Section section = CollectTree(tree);
  const Json& data = section.data;

  ASSERT_EQ(data["kfd"]["nodes"].size(), 8u);
  EXPECT_EQ(data["kfd"]["nodes"][0]["kind"], "cpu");
  EXPECT_EQ(data["kfd"]["nodes"][0]["properties"]["cpu_cores_count"], 48);
  EXPECT_FALSE(data["kfd"]["nodes"][0].contains("gfx_arch"));
  EXPECT_EQ(data["kfd"]["nodes"][5]["kind"], "gpu");
  EXPECT_EQ(data["kfd"]["nodes"][5]["gfx_arch"], "gfx942");
  EXPECT_EQ(data["kfd"]["nodes"][5]["pci_address"], "0001:02:00.0");
  EXPECT_EQ(data["kfd"]["nodes"][5]["properties"]["unique_id"], "0xa5b43667c73cac87");
  EXPECT_EQ(data["kfd"]["nodes"][5]["properties"]["hive_id"], "0x7d618b829458cd72");
  EXPECT_EQ(data["kfd"]["io_links"], Json::array());

  const Json& gpus = data["gpus"];
  ASSERT_EQ(gpus.size(), 4u);
  const Json& gpu = gpus[0];
  EXPECT_EQ(gpu["pci_address"], "0000:02:00.0");
  EXPECT_EQ(gpu["kfd_node"], 4);
  EXPECT_EQ(gpu["gfx_arch"], "gfx942");
  EXPECT_EQ(gpu["gfx_target_version"], 90402);
  EXPECT_EQ(gpu["compute_units"], 228);
  EXPECT_EQ(gpu["simd_count"], 912);
  EXPECT_EQ(gpu["simd_per_cu"], 4);
  EXPECT_EQ(gpu["wavefront_size"], 64);
  EXPECT_EQ(gpu["max_waves_per_simd"], 8);
  EXPECT_EQ(gpu["lds_size_kb"], 64);
  EXPECT_EQ(gpu["num_xcc"], 6);
  EXPECT_EQ(gpu["vendor_id"], "0x1002");
  EXPECT_EQ(gpu["device_id"], "0x74a0");
  EXPECT_EQ(gpu["xgmi_hive_id"], "0x7d618b829458cd72");
  EXPECT_EQ(gpu["unique_id"], "6cdb410c2f219ac0");
  EXPECT_EQ(gpu["drm_render_minor"], 128);
  EXPECT_EQ(gpu["clocks"]["max_sclk_mhz"], 2100);
  // Nothing in the capture says how much memory there is: absent, not 0.
  EXPECT_FALSE(gpu.contains("vram_total_bytes"));
  EXPECT_FALSE(gpu.contains("sysfs_path"));
  EXPECT_EQ(gpus[3]["pci_address"], "0003:02:00.0");
  EXPECT_EQ(gpus[3]["kfd_node"], 7);
  EXPECT_EQ(gpus[3]["drm_render_minor"], 152);
  EXPECT_EQ(gpus[3]["unique_id"], "5f8fb5cf1f014be1");
  EXPECT_EQ(data["rocm"]["installations"], Json::array());
  EXPECT_FALSE(data.contains("smi"));  // never loaded for a captured tree

  std::map<std::string, std::string> notes = Notes(section);
  EXPECT_EQ(notes.size(), 4u + 8u * 2u);  // no sysfs per GPU; no gpu_id/name per node
  EXPECT_EQ(notes["amd.gpus[0001:02:00.0]"], "no amdgpu attributes: /sys/bus/pci/devices/0001:02:00.0 does not exist");
  EXPECT_EQ(notes["amd.kfd.nodes[6].gpu_id"],
            "cannot read /sys/class/kfd/kfd/topology/nodes/6/gpu_id: No such file or directory");
  EXPECT_EQ(notes["amd.kfd.nodes[6].name"],
            "cannot read /sys/class/kfd/kfd/topology/nodes/6/name: No such file or directory");
}

TEST(AmdCollect, PolarisClocksFromGrepAndVramFromCat) {
  TempTree tree;
  MaterializeGrepDot(ReadFixture("grep-dot-drm-card1-device-pp_dpm_sclk-mclk-pcie-power-profile-excerpt.txt"),
                     tree.root());
  MaterializeCat(ReadFixture("mem_info_vram_used-and-total-cat-nixos.txt"), tree.root());
  tree.Link("/sys/class/drm/card0/device/driver", kDriverLink);
  tree.Link("/sys/class/drm/card1/device/driver", kDriverLink);
  core::Section section = CollectTree(tree);

  const Json& gpus = section.data["gpus"];
  ASSERT_EQ(gpus.size(), 2u);
  const Json& nixos = gpus[0];
  EXPECT_EQ(nixos["drm_card"], "card0");
  EXPECT_FALSE(nixos.contains("pci_address"));
  EXPECT_EQ(nixos["sysfs_path"], "/sys/class/drm/card0/device");
  EXPECT_EQ(nixos["vram_total_bytes"], 8573157376u);
  EXPECT_EQ(nixos["vram_used_bytes"], 6812925952u);
  EXPECT_FALSE(nixos.contains("clocks"));

  const Json& polaris = gpus[1];
  EXPECT_EQ(polaris["drm_card"], "card1");
  EXPECT_EQ(polaris["clocks"]["sclk_mhz"], 1233);
  EXPECT_EQ(polaris["clocks"]["sclk_levels_mhz"], Json({300, 588, 976, 1065, 1130, 1192, 1233, 1268}));
  // The excerpt starts at mclk level 2, unmarked: the current memory clock is unknown.
  EXPECT_FALSE(polaris["clocks"].contains("mclk_mhz"));
  EXPECT_EQ(polaris["clocks"]["mclk_levels_mhz"], Json({1750}));
  EXPECT_EQ(polaris["pcie_dpm"], Json({{"current_speed_gts", 8.0}, {"current_width", 16}}));
  EXPECT_FALSE(polaris.contains("vram_total_bytes"));

  std::map<std::string, std::string> notes = Notes(section);
  EXPECT_EQ(notes["amd.gpus[card1].clocks.mclk_mhz"],
            "/sys/class/drm/card1/device/pp_dpm_mclk: no level is marked current ('*')");
  EXPECT_EQ(notes["amd.gpus[card1].vram_total_bytes"],
            "cannot read /sys/class/drm/card1/device/mem_info_vram_total: No such file or "
            "directory");
  EXPECT_EQ(notes["amd.gpus[card0].clocks.sclk_mhz"],
            "cannot read /sys/class/drm/card0/device/pp_dpm_sclk: No such file or directory");
  EXPECT_EQ(notes["amd.gpus[card0].hwmon"], "cannot list /sys/class/drm/card0/device/hwmon: No such file or directory");
  EXPECT_EQ(notes["amd.kfd"],
            "/sys/class/kfd does not exist although amdgpu drives 2 GPUs: without amdkfd, ROCm "
            "and HIP see no GPU");
  // Optional board strings and the RAS directory are not expected on a consumer card.
  EXPECT_FALSE(notes.contains("amd.gpus[card1].product_name"));
  EXPECT_FALSE(notes.contains("amd.gpus[card1].ras"));
}

// lm-sensors names each amdgpu chip after its PCI location ("amdgpu-pci-0300" is bus 03,
// device 00 of domain 0), which places the hwmon files under the right device.
TEST(AmdCollect, HwmonSensorsOfThreeBoards) {
  TempTree tree;
  struct Board {
    const char* fixture;
    const char* address;
  };
  for (Board board : {Board{"hwmon-lm-sensors-amdgpu-rx7900xt-edge-junction-mem-ppt.txt", "0000:03:00.0"},
                      Board{"hwmon-lm-sensors-amdgpu-2019-temp1-power1-legacy-labels.txt", "0000:04:00.0"},
                      Board{"hwmon-lm-sensors-amdgpu-apu-6850u-vddnb-ppt-no-crit.txt", "0000:33:00.0"}}) {
    std::string dir = std::string("/sys/bus/pci/devices/") + board.address;
    tree.Link(dir + "/driver", kDriverLink);
    MaterialiseSensors(tree, dir + "/hwmon/hwmon0", ReadFixture(board.fixture));
  }
  core::Section section = CollectTree(tree);
  const Json& gpus = section.data["gpus"];
  ASSERT_EQ(gpus.size(), 3u);

  EXPECT_EQ(gpus[0]["pci_address"], "0000:03:00.0");
  EXPECT_EQ(gpus[0]["temperatures_c"], Json({{"edge", 37.0}, {"junction", 39.0}, {"mem", 60.0}}));
  EXPECT_EQ(gpus[0]["power_mw"], 19000);
  EXPECT_EQ(gpus[0]["power_cap_mw"], 250000);
  EXPECT_EQ(gpus[0]["fan_rpm"], 0);  // a real 0 RPM (fan stopped at idle), not unknown

  EXPECT_EQ(gpus[1]["temperatures_c"], Json({{"temp1", 64.0}}));
  EXPECT_EQ(gpus[1]["power_mw"], 16160);
  EXPECT_EQ(gpus[1]["power_cap_mw"], 35000);
  EXPECT_EQ(gpus[1]["fan_rpm"], 3997);

  EXPECT_EQ(gpus[2]["temperatures_c"], Json({{"edge", 67.0}}));
  EXPECT_EQ(gpus[2]["power_mw"], 17080);
  EXPECT_FALSE(gpus[2].contains("power_cap_mw"));
  EXPECT_FALSE(gpus[2].contains("fan_rpm"));

  std::map<std::string, std::string> notes = Notes(section);
  for (const auto& [item, reason] : notes) {
    EXPECT_FALSE(item.find("temperatures_c") != std::string::npos || item.find("power") != std::string::npos ||
                 item.find("fan") != std::string::npos)
        << item << ": " << reason;
  }
}

TEST(AmdCollect, DrmCardLinkLeadsToThePciDeviceAndItsPcieLevel) {
  TempTree tree;
  MaterializeTailV(ReadFixture("pci-link-speed-width-tail-v-gpu-0000-01-00.0-x8.txt"), tree.root(),
                   TailBlankLines::kDropOneSeparator);
  tree.Link("/sys/bus/pci/devices/0000:01:00.0/driver", kDriverLink);
  tree.Link("/sys/class/drm/card1/device", "../../../bus/pci/devices/0000:01:00.0");
  MaterializeCat(ReadFixture("pp_dpm_pcie-x8-two-levels-pcie5-card.txt"), tree.root());
  core::Section section = CollectTree(tree);
  const Json& gpus = section.data["gpus"];
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0]["pci_address"], "0000:01:00.0");
  EXPECT_EQ(gpus[0]["drm_card"], "card1");
  EXPECT_EQ(gpus[0]["sysfs_path"], "/sys/bus/pci/devices/0000:01:00.0");
  EXPECT_EQ(gpus[0]["pcie_dpm"], Json({{"current_speed_gts", 16.0}, {"current_width", 8}}));
}

TEST(AmdCollect, TruncatedNodeFromTheRvsTrace) {
  TempTree tree;
  std::string properties =
      testing::RvsGpupProperties(ReadFixture("rvs-gpup-kfd-properties-trace-log-rocm5.3-excerpt.txt"), "38156");
  tree.Write(std::string(kNodes) + "/0/properties", properties);
  tree.Write(std::string(kNodes) + "/0/gpu_id", "38156\n");
  core::Section section = CollectTree(tree);
  const Json& gpus = section.data["gpus"];
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0], Json({{"kfd_node", 0}, {"gpu_id", 38156}, {"simd_count", 144}}));
  std::map<std::string, std::string> notes = Notes(section);
  EXPECT_EQ(notes["amd.kfd.nodes[0]"],
            "/sys/class/kfd/kfd/topology/nodes/0/properties: no gfx_target_version line (older "
            "kernels do not print it); no location_id line: PCI address unknown");
}

TEST(AmdCollect, DamagedFilesBecomeOneNoteEachAndNoValue) {
  TempTree tree;
  static constexpr char kGarbage[] =
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\xff\xfe\n\x01\x02 7\n";
  tree.Write(std::string(kNodes) + "/0/properties", std::string_view(kGarbage, sizeof(kGarbage) - 1));
  tree.MakeDir(std::string(kNodes) + "/1/properties");
  WriteMi300aNode(tree, 2, 4);
  tree.Write(std::string(kNodes) + "/2/gpu_id", "41234\n");
  tree.Write(std::string(kNodes) + "/2/name", "ip discovery\n");
  tree.MakeDir(std::string(kNodes) + "/not-a-node");

  const std::string dev = "/sys/bus/pci/devices/0000:02:00.0";
  tree.Link(dev + "/driver", kDriverLink);
  tree.Write(dev + "/mem_info_vram_total", "18446744073709551615\n");
  tree.Write(dev + "/mem_info_vram_used", "abc\n");
  tree.Write(dev + "/mem_info_gtt_total", "");
  tree.Write(dev + "/mem_info_gtt_used", "1024\n");
  tree.Write(dev + "/gpu_busy_percent", "250\n");
  tree.Write(dev + "/pp_dpm_sclk", "\xff\xfe\x01\n");
  tree.Write(dev + "/pp_dpm_mclk", "0: 900Mhz *\n");
  tree.Write(dev + "/vbios_version", "113-D67301-063\n");
  tree.Write(dev + "/product_name", "\n");
  tree.Write(dev + "/hwmon/hwmon5/temp1_input", "-999999999\n");
  tree.Write(dev + "/hwmon/hwmon5/temp1_label", "edge\n");
  tree.Write(dev + "/hwmon/hwmon5/temp2_input", "\xff\xfe");
  tree.Write(dev + "/hwmon/hwmon5/temp2_label", "junction\n");
  tree.Write(dev + "/hwmon/hwmon5/temp3_input", "45000\n");
  tree.Write(dev + "/hwmon/hwmon5/temp3_label", "mem\n");
  tree.Write(dev + "/hwmon/hwmon5/power1_average", "12e3\n");
  tree.Write(dev + "/hwmon/hwmon5/fan1_input", "99999999999\n");
  tree.Write(dev + "/ras/umc_err_count", "ue: x\n");
  tree.Write(dev + "/ras/gfx_err_count", "ue: 0\nce: 2\n");
  tree.Write(dev + "/ras/features", "feature mask: 0x3fff\n");
  core::Section section = CollectTree(tree);

  const Json& nodes = section.data["kfd"]["nodes"];
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["node"], 2);
  EXPECT_EQ(nodes[0]["name"], "ip discovery");
  const Json& gpus = section.data["gpus"];
  ASSERT_EQ(gpus.size(), 1u);
  const Json& gpu = gpus[0];
  EXPECT_EQ(gpu["pci_address"], "0000:02:00.0");
  EXPECT_EQ(gpu["gpu_id"], 41234);
  EXPECT_EQ(gpu["kfd_name"], "ip discovery");
  EXPECT_EQ(gpu["gfx_arch"], "gfx942");
  EXPECT_EQ(gpu["gtt_used_bytes"], 1024);
  EXPECT_EQ(gpu["vbios_version"], "113-D67301-063");
  EXPECT_EQ(gpu["clocks"], Json({{"max_sclk_mhz", 2100}, {"mclk_mhz", 900}, {"mclk_levels_mhz", {900}}}));
  EXPECT_EQ(gpu["temperatures_c"], Json({{"mem", 45.0}}));
  EXPECT_EQ(gpu["ras"], Json({{"gfx", {{"ue", 0}, {"ce", 2}}}}));
  for (const char* key : {"vram_total_bytes", "vram_used_bytes", "gtt_total_bytes", "busy_percent", "power_mw",
                          "fan_rpm", "product_name", "marketing_name"}) {
    EXPECT_FALSE(gpu.contains(key)) << key;
  }

  std::map<std::string, std::string> notes = Notes(section);
  const std::string n = kNodes;
  std::map<std::string, std::string> expected = {
      {"amd.kfd.nodes[0]",
       // Line 1 is two fields, split at the NULs: "\x7f" "ELF\x02\x01\x01" and "\xff\xfe".
       n +
           "/0/properties: line 1: not a property name: \"\xEF\xBF\xBD"
           "ELF" +
           Fffd(8) + "\"; line 2: not a property name: \"" + Fffd(2) + " 7\"; no \"name value\" line in 18 bytes"},
      {"amd.kfd.nodes[1]", "cannot read " + n + "/1/properties: not read: it is a directory, not a regular file"},
      {"amd.gpus[0000:02:00.0].vram_total_bytes",
       dev + "/mem_info_vram_total: implausible value 18446744073709551615 (expected <= "
             "1125899906842624)"},
      {"amd.gpus[0000:02:00.0].vram_used_bytes", dev + "/mem_info_vram_used: not an unsigned decimal: \"abc\""},
      {"amd.gpus[0000:02:00.0].gtt_total_bytes", dev + "/mem_info_gtt_total: not an unsigned decimal: \"\""},
      {"amd.gpus[0000:02:00.0].busy_percent", dev + "/gpu_busy_percent: implausible value 250 (expected <= 100)"},
      {"amd.gpus[0000:02:00.0].clocks.sclk_mhz",
       dev + "/pp_dpm_sclk: line 1: expected \"N: <value> [*]\": \"\xEF\xBF\xBD\xEF\xBF\xBD"
             "\xEF\xBF\xBD\"; no DPM level in 4 bytes"},
      {"amd.gpus[0000:02:00.0].temperatures_c.edge",
       dev + "/hwmon/hwmon5/temp1_input: implausible value -999999999 (expected -100000..250000)"},
      {"amd.gpus[0000:02:00.0].temperatures_c.junction",
       dev + "/hwmon/hwmon5/temp2_input: not a decimal integer: \"\xEF\xBF\xBD\xEF\xBF\xBD\""},
      {"amd.gpus[0000:02:00.0].power_mw", dev + "/hwmon/hwmon5/power1_average: not an unsigned decimal: \"12e3\""},
      {"amd.gpus[0000:02:00.0].fan_rpm",
       dev + "/hwmon/hwmon5/fan1_input: implausible value 99999999999 (expected <= 100000)"},
      {"amd.gpus[0000:02:00.0].ras.umc",
       dev + "/ras/umc_err_count: line 1: expected \"ue: N\", \"ce: N\" or \"de: N\": \"ue: x\"; "
             "no \"ue:\" or \"ce:\" count in 6 bytes"},
  };
  EXPECT_EQ(notes, expected);
}

// An MI300-class GPU split into compute partitions: KFD adds one node per partition and puts
// the partition index in location_id's function bits (kfd_topology.c, GC 9.4.3). Built from
// the captured MI300A node with only domain/location_id changed. Not verified on hardware.
TEST(AmdCollect, PartitionNodesBelongToOneDevice) {
  TempTree tree;
  std::string block = SplitDashedBlocks(ReadFixture(kMi300a))[4];
  auto with_location = [&](const char* location) {
    std::string out = block;
    out.replace(out.find("location_id 512"), 15, std::string("location_id ") + location);
    return out;
  };
  tree.Write(std::string(kNodes) + "/1/properties", with_location("49409"));  // 0xc101
  tree.Write(std::string(kNodes) + "/2/properties", with_location("49408"));  // 0xc100
  tree.Link("/sys/bus/pci/devices/0000:c1:00.0/driver", kDriverLink);
  core::Section section = CollectTree(tree);
  const Json& gpus = section.data["gpus"];
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0]["pci_address"], "0000:c1:00.0");
  EXPECT_EQ(gpus[0]["kfd_node"], 1);
  EXPECT_EQ(gpus[0]["kfd_nodes"], Json({1, 2}));
  EXPECT_EQ(gpus[0]["compute_units"], 456);
  EXPECT_EQ(gpus[0]["num_xcc"], 12);
  EXPECT_EQ(gpus[0]["gfx_arch"], "gfx942");
}

// A runtime-suspended GPU is not woken to read its sensors (constructed tree).
TEST(AmdCollect, SuspendedGpuIsNotWoken) {
  TempTree tree;
  const std::string dev = "/sys/bus/pci/devices/0000:03:00.0";
  tree.Link(dev + "/driver", kDriverLink);
  tree.Write(dev + "/power/runtime_status", "suspended\n");
  tree.Write(dev + "/mem_info_vram_total", "17163091968\n");
  tree.Write(dev + "/pp_dpm_sclk", "0: 500Mhz *\n");
  core::Section section = CollectTree(tree);
  const Json& gpu = section.data["gpus"][0];
  EXPECT_EQ(gpu["runtime_status"], "suspended");
  EXPECT_EQ(gpu["vram_total_bytes"], 17163091968u);
  EXPECT_FALSE(gpu.contains("clocks"));
  std::map<std::string, std::string> notes = Notes(section);
  EXPECT_EQ(notes["amd.gpus[0000:03:00.0].sensors"],
            dev +
                "/power/runtime_status is \"suspended\": busy percent, clocks, sensors and RAS "
                "counters were not read, so as not to wake the GPU");
  EXPECT_FALSE(notes.contains("amd.gpus[0000:03:00.0].clocks.sclk_mhz"));
}

// The layout of iolink_show() in kfd_topology.c; no capture of io_links is among the fixtures,
// so the values here are illustrative (a PCIe link to the CPU node, an XGMI link to a peer).
TEST(AmdCollect, IoLinksWithTheirTypes) {
  TempTree tree;
  WriteMi300aNode(tree, 0, 0);
  WriteMi300aNode(tree, 1, 4);
  const std::string links = std::string(kNodes) + "/1/io_links";
  tree.Write(links + "/0/properties",
             "type 2\nversion_major 0\nversion_minor 0\nnode_from 1\nnode_to 0\nweight 20\n"
             "min_latency 0\nmax_latency 0\nmin_bandwidth 312\nmax_bandwidth 64000\n"
             "recommended_transfer_size 0\nflags 1\n");
  tree.Write(links + "/1/properties",
             "type 11\nversion_major 0\nversion_minor 0\nnode_from 1\nnode_to 2\nweight 15\n"
             "min_latency 0\nmax_latency 0\nmin_bandwidth 0\nmax_bandwidth 0\n"
             "recommended_transfer_size 0\nflags 0\n");
  tree.Write(links + "/2/properties", "type x\n");
  core::Section section = CollectTree(tree);
  EXPECT_EQ(section.data["kfd"]["io_links"], Json::parse(R"([
              {"from_node": 1, "to_node": 0, "type": "pcie", "type_id": 2, "weight": 20,
               "min_bandwidth_mbs": 312, "max_bandwidth_mbs": 64000, "flags": "0x00000001"},
              {"from_node": 1, "to_node": 2, "type": "xgmi", "type_id": 11, "weight": 15,
               "flags": "0x00000000"}])"));
  std::map<std::string, std::string> notes = Notes(section);
  EXPECT_EQ(notes["amd.kfd.nodes[1].io_links[2]"],
            links +
                "/2/properties: line 1: value is not an unsigned 64-bit decimal: \"type x\"; "
                "no \"name value\" line in 7 bytes");
}

// No capture of an /opt/rocm tree is among the fixtures: this one follows the layout ROCm's
// packages install (rocm-core's .info/version and include/rocm-core/rocm_version.h, and
// /opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-X.Y.Z). Absolute link targets must resolve
// inside the tree, not on this machine.
TEST(AmdCollect, RocmInstallationsUnderOpt) {
  TempTree tree;
  tree.Write("/opt/rocm-6.3.3/.info/version", "6.3.3-74\n");
  tree.Link("/etc/alternatives/rocm", "/opt/rocm-6.3.3");
  tree.Link("/opt/rocm", "/etc/alternatives/rocm");
  tree.Write("/opt/rocm-5.7.1/include/rocm-core/rocm_version.h",
             "#ifndef ROCM_VERSION_H\n#define ROCM_VERSION_MAJOR   5\n#define ROCM_VERSION_MINOR "
             "  7\n#define ROCM_VERSION_PATCH   1\n#endif\n");
  tree.MakeDir("/opt/rocm-6.0.0/lib");
  tree.Link("/opt/rocm-gone", "/opt/nowhere");
  tree.Write("/opt/rocm-junk/.info/version", "\x01\x02\n");
  tree.MakeDir("/opt/rocmy");
  core::Section section = CollectTree(tree);
  EXPECT_EQ(section.data["rocm"]["installations"], Json::parse(R"([
    {"path": "/opt/rocm", "version": "6.3.3-74", "version_source": ".info/version",
     "link_target": "/etc/alternatives/rocm", "resolves_to": "/opt/rocm-6.3.3"},
    {"path": "/opt/rocm-5.7.1", "version": "5.7.1",
     "version_source": "include/rocm-core/rocm_version.h"},
    {"path": "/opt/rocm-6.0.0", "version": "6.0.0", "version_source": "directory name"},
    {"path": "/opt/rocm-6.3.3", "version": "6.3.3-74", "version_source": ".info/version"},
    {"path": "/opt/rocm-junk"}])"));
  std::map<std::string, std::string> notes = Notes(section);
  EXPECT_EQ(
      notes,
      (std::map<std::string, std::string>{
          {"amd.rocm.installations[/opt/rocm-gone]", "/opt/rocm-gone: link to /opt/nowhere, which is not a directory"},
          {"amd.rocm.installations[/opt/rocm-junk]",
           "/opt/rocm-junk/.info/version: not a version: \"\xEF\xBF\xBD\xEF\xBF\xBD\""}}));
}

TEST(AmdCollect, NoAmdGpuOnThisMachine) {
  core::OsView os = core::OsView::Live();
  if (os.Exists("/sys/class/kfd") || os.Exists("/sys/bus/pci/drivers/amdgpu")) {
    GTEST_SKIP() << "this machine has amdgpu or KFD; the test expects a machine without";
  }
  core::Section section = Collect(os);
  EXPECT_EQ(section.data["gpus"], Json::array());
  EXPECT_FALSE(section.data.contains("kfd"));
  EXPECT_FALSE(section.data.contains("smi"));  // nothing AMD: ROCm SMI is not even loaded
  EXPECT_TRUE(section.data["rocm"]["installations"].is_array());
  for (const core::NotCollected& note : section.not_collected) {
    EXPECT_TRUE(note.item.starts_with("amd.rocm")) << note.item << ": " << note.reason;
  }
}

TEST(AttributeReader, NotesEachPathOnce) {
  TempTree tree;
  tree.Write("/sys/x", "abc");
  core::Section section;
  core::OsView os = *core::OsView::Rooted(tree.root());
  AttributeReader reader(os, section);
  EXPECT_EQ(reader.ReadU64("/sys/x", "first", Presence::kExpected, 10), std::nullopt);
  EXPECT_EQ(reader.ReadI64("/sys/x", "second", Presence::kExpected, 0, 10), std::nullopt);
  EXPECT_EQ(reader.ReadText("/sys/missing", "third", Presence::kOptional), std::nullopt);
  reader.NoteOnce("amd.smi", "why");
  reader.NoteOnce("amd.smi", "why");
  reader.NoteOnce("amd.smi", "other");
  ASSERT_EQ(section.not_collected.size(), 3u);
  EXPECT_EQ(section.not_collected[0], (core::NotCollected{"first", "/sys/x: not an unsigned decimal: \"abc\""}));
  EXPECT_EQ(section.not_collected[2], (core::NotCollected{"amd.smi", "other"}));
}

}  // namespace
}  // namespace gputriage::amd
