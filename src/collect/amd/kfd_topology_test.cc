#include "collect/amd/kfd_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "collect/amd/capture_tree_for_test.h"
#include "core/text.h"

namespace gputriage::amd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ReadFixture;
using testing::SplitDashedBlocks;

constexpr const char* kMi300aNodes = "kfd-nodes-properties-4x-mi300a-6xcd-cat-all-nodes.txt";

std::vector<KfdProperties> Mi300aNodes() {
  std::vector<KfdProperties> nodes;
  for (const std::string& block : SplitDashedBlocks(ReadFixture(kMi300aNodes))) {
    nodes.push_back(ParseKfdProperties(block));
  }
  return nodes;
}

TEST(KfdProperties, ParsesEveryNodeOfTheMi300aCaptureCleanly) {
  std::vector<KfdProperties> nodes = Mi300aNodes();
  ASSERT_EQ(nodes.size(), 8u);
  for (const KfdProperties& node : nodes) EXPECT_THAT(node.problems, ::testing::IsEmpty());
  // CPU nodes: 30 lines, no SIMDs; GPU nodes: 38 lines.
  EXPECT_EQ(nodes[0].values.size(), 30u);
  EXPECT_EQ(nodes[0].Get("cpu_cores_count"), 48u);
  EXPECT_EQ(nodes[3].Get("cpu_core_id_base"), 192u);
  EXPECT_FALSE(IsKfdGpuNode(nodes[3]));
  EXPECT_EQ(nodes[4].values.size(), 38u);
  EXPECT_TRUE(IsKfdGpuNode(nodes[4]));
  EXPECT_EQ(nodes[4].Get("hive_id"), 9034655720432782706u);
  EXPECT_EQ(nodes[5].Get("unique_id"), 11940228331418201223u);  // > INT64_MAX
  EXPECT_EQ(nodes[7].Get("no_such_key"), std::nullopt);
}

TEST(KfdProperties, SummarizesAnMi300aGpuNode) {
  KfdGpuSummary gpu = SummarizeKfdGpu(Mi300aNodes()[4]);
  EXPECT_THAT(gpu.problems, ::testing::IsEmpty());
  EXPECT_EQ(gpu.gfx_target_version, 90402u);
  EXPECT_EQ(gpu.gfx_arch, "gfx942");
  EXPECT_EQ(gpu.compute_units, 228u);  // 912 SIMDs / 4 per CU: MI300A's 228 CUs
  EXPECT_EQ(gpu.simd_count, 912u);
  EXPECT_EQ(gpu.wavefront_size, 64u);
  EXPECT_EQ(gpu.max_waves_per_simd, 8u);
  EXPECT_EQ(gpu.lds_size_kb, 64u);
  EXPECT_EQ(gpu.num_xcc, 6u);
  EXPECT_EQ(gpu.max_engine_clk_mhz, 2100u);
  EXPECT_EQ(gpu.vendor_id, 0x1002u);
  EXPECT_EQ(gpu.device_id, 0x74a0u);
  EXPECT_EQ(gpu.pci_address, "0000:02:00.0");
  EXPECT_EQ(gpu.drm_render_minor, 128u);
  EXPECT_EQ(gpu.hive_id, 9034655720432782706u);
  EXPECT_EQ(gpu.unique_id, 7843934696581995200u);
}

TEST(KfdProperties, DomainsOfTheFourApusGiveFourPciAddresses) {
  std::vector<std::string> addresses;
  for (const KfdProperties& node : Mi300aNodes()) {
    if (IsKfdGpuNode(node)) addresses.push_back(*SummarizeKfdGpu(node).pci_address);
  }
  EXPECT_THAT(addresses, ElementsAre("0000:02:00.0", "0001:02:00.0", "0002:02:00.0", "0003:02:00.0"));
}

// The RVS trace prints the first properties of gpu 38156 before the capture was cut: the
// real shape of a truncated properties file.
TEST(KfdProperties, TruncatedRvsTraceLacksTheIdentity) {
  std::string properties =
      testing::RvsGpupProperties(ReadFixture("rvs-gpup-kfd-properties-trace-log-rocm5.3-excerpt.txt"), "38156");
  KfdProperties props = ParseKfdProperties(properties);
  EXPECT_THAT(props.problems, ::testing::IsEmpty());
  EXPECT_EQ(props.values.size(), 4u);
  EXPECT_EQ(props.Get("simd_count"), 144u);
  ASSERT_TRUE(IsKfdGpuNode(props));
  KfdGpuSummary gpu = SummarizeKfdGpu(props);
  EXPECT_EQ(gpu.gfx_arch, std::nullopt);
  EXPECT_EQ(gpu.compute_units, std::nullopt);  // simd_per_cu was cut off: unknown, not 0
  EXPECT_EQ(gpu.pci_address, std::nullopt);
  EXPECT_THAT(gpu.problems, ElementsAre("no gfx_target_version line (older kernels do not print it)",
                                        "no location_id line: PCI address unknown"));
}

TEST(KfdProperties, TruncatedMidLineKeepsTheLinesBefore) {
  std::string node = SplitDashedBlocks(ReadFixture(kMi300aNodes))[4];
  std::string cut = node.substr(0, node.find("gfx_target_version") + 8);  // "gfx_targ"
  KfdProperties props = ParseKfdProperties(cut);
  EXPECT_EQ(props.Get("simd_per_cu"), 4u);
  EXPECT_THAT(props.problems, ElementsAre("line 19: expected \"name value\": \"gfx_targ\""));
  KfdGpuSummary gpu = SummarizeKfdGpu(props);
  EXPECT_EQ(gpu.compute_units, 228u);
  EXPECT_EQ(gpu.gfx_arch, std::nullopt);
}

TEST(KfdProperties, GarbageBytesAreDescribedNotParsed) {
  static constexpr char kBytes[] =
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\xff\xfe simd_count\n\x01\x02 7\n";
  KfdProperties props = ParseKfdProperties(std::string_view(kBytes, sizeof(kBytes) - 1));
  EXPECT_TRUE(props.values.empty());
  ASSERT_EQ(props.problems.size(), 3u);
  EXPECT_THAT(props.problems[0], HasSubstr("line 1: expected \"name value\": \"\xEF\xBF\xBD"
                                           "ELF"));
  EXPECT_THAT(props.problems[1], HasSubstr("line 2: not a property name"));
  EXPECT_EQ(props.problems[2], "no \"name value\" line in 29 bytes");
}

TEST(KfdProperties, RejectsSignsOverflowHexAndDuplicates) {
  KfdProperties props = ParseKfdProperties(
      "simd_count -1\n"
      "hive_id 18446744073709551616\n"  // 2^64
      "device_id 0x74a0\n"
      "Vendor_ID 4098\n"
      "wave_front_size 64\n"
      "wave_front_size 32\n"
      "lds_size_in_kb 64 kb\n");
  EXPECT_EQ(props.values.size(), 1u);
  EXPECT_EQ(props.Get("wave_front_size"), 64u);
  EXPECT_THAT(props.problems, ElementsAre("line 1: value is not an unsigned 64-bit decimal: \"simd_count -1\"",
                                          "line 2: value is not an unsigned 64-bit decimal: "
                                          "\"hive_id 18446744073709551616\"",
                                          "line 3: value is not an unsigned 64-bit decimal: \"device_id 0x74a0\"",
                                          "2 more malformed lines", "1 repeated property name (first value kept)"));
}

TEST(KfdProperties, AbsurdValuesAreProblemsNotFacts) {
  KfdGpuSummary gpu = SummarizeKfdGpu(
      ParseKfdProperties("simd_count 912\nsimd_per_cu 0\nwave_front_size 7\ngfx_target_version 4294967295\n"
                         "num_xcc 100000\nlocation_id 65536\ndomain 0\nvendor_id 4098\n"));
  EXPECT_EQ(gpu.simd_count, 912u);
  EXPECT_EQ(gpu.compute_units, std::nullopt);
  EXPECT_EQ(gpu.wavefront_size, std::nullopt);
  EXPECT_EQ(gpu.gfx_arch, std::nullopt);
  EXPECT_EQ(gpu.gfx_target_version, std::nullopt);
  EXPECT_EQ(gpu.num_xcc, std::nullopt);
  EXPECT_EQ(gpu.pci_address, std::nullopt);
  EXPECT_EQ(gpu.vendor_id, 0x1002u);
  EXPECT_THAT(
      gpu.problems,
      ElementsAre("gfx_target_version 4294967295 names no gfx target", "simd_per_cu 0 is implausible (expected 1..16)",
                  "wave_front_size 7 is neither 32 nor 64", "num_xcc 100000 is implausible (expected 1..64)",
                  "domain 0 location_id 65536 is no PCI address"));
}

TEST(GfxArchName, DecodesTheKernelsTargetVersions) {
  EXPECT_EQ(GfxArchName(90010), "gfx90a");
  EXPECT_EQ(GfxArchName(110000), "gfx1100");
  EXPECT_EQ(GfxArchName(90402), "gfx942");
  EXPECT_EQ(GfxArchName(100300), "gfx1030");
  EXPECT_EQ(GfxArchName(120001), "gfx1201");
  EXPECT_EQ(GfxArchName(90012), "gfx90c");
  EXPECT_EQ(GfxArchName(100301), "gfx1031");
  EXPECT_EQ(GfxArchName(90000), "gfx900");
  EXPECT_EQ(GfxArchName(0), std::nullopt);
  EXPECT_EQ(GfxArchName(99), std::nullopt);       // major 0
  EXPECT_EQ(GfxArchName(91600), std::nullopt);    // minor 16: not one hex digit
  EXPECT_EQ(GfxArchName(90016), std::nullopt);    // stepping 16
  EXPECT_EQ(GfxArchName(1000000), std::nullopt);  // major 100
}

// rocminfo prints the runtime's own ISA names ("Name: gfx90a"); the names decoded from KFD
// target versions must be spelled exactly the same way, including the hex letters.
TEST(GfxArchName, MatchesTheNamesRocminfoPrints) {
  std::set<std::string> rocminfo_names;
  for (const char* file : {"gfx942-mi300x-vf-rocm7.2.4-runtime1.18-rock6.16.13.txt",
                           "mixed-gfx1100-gfx1201-gfx1031-2x-epyc-numa-rocm6.4.1-runtime1.15-"
                           "ext1.7-empty-uuid.txt",
                           "gfx90a-mi210-x2-rocm6.3.3-runtime1.14-dmabuf-no.txt",
                           "gfx1030-rx6800xt-wsl2-rocm6.1.3-runtime1.1-no-rock-line-no-uuid-no-"
                           "bdfid.txt",
                           "truncated-elided-gfx1031-rx6800m-gfx90c-apu-runtime1.1-ext1.6.txt"}) {
    std::string rocminfo = ReadFixture(file);  // outlives the views SplitLines returns
    for (std::string_view line : core::SplitLines(rocminfo)) {
      std::vector<std::string_view> fields = core::SplitWhitespace(line);
      if (fields.size() == 2 && fields[0] == "Name:" && fields[1].starts_with("gfx")) {
        rocminfo_names.emplace(fields[1]);
      }
    }
  }
  EXPECT_EQ(rocminfo_names,
            (std::set<std::string>{"gfx1030", "gfx1031", "gfx1100", "gfx1201", "gfx90a", "gfx90c", "gfx942"}));
  for (uint64_t version : {90010, 90012, 90402, 100300, 100301, 110000, 120001}) {
    EXPECT_TRUE(rocminfo_names.contains(*GfxArchName(version))) << version;
  }
}

// The same rocminfo run on MI300-class hardware (gfx942, MI300X) as an independent check of
// what the MI300A KFD node says about its compute layout.
TEST(KfdProperties, Mi300aLayoutAgreesWithRocminfoOnGfx942) {
  std::string rocminfo = ReadFixture("gfx942-mi300x-vf-rocm7.2.4-runtime1.18-rock6.16.13.txt");
  EXPECT_THAT(rocminfo, HasSubstr("SIMDs per CU:            4"));
  EXPECT_THAT(rocminfo, HasSubstr("Wavefront Size:          64(0x40)"));
  EXPECT_THAT(rocminfo, HasSubstr("Max Waves Per CU:        32(0x20)"));  // 8 per SIMD x 4
  KfdGpuSummary gpu = SummarizeKfdGpu(Mi300aNodes()[4]);
  EXPECT_EQ(gpu.simd_per_cu, 4u);
  EXPECT_EQ(gpu.wavefront_size, 64u);
  EXPECT_EQ(*gpu.max_waves_per_simd * *gpu.simd_per_cu, 32u);
}

TEST(KfdPciAddress, EncodesBusDeviceFunction) {
  EXPECT_EQ(KfdPciAddress(0, 512), "0000:02:00.0");
  EXPECT_EQ(KfdPciAddress(0, 0xc100), "0000:c1:00.0");
  EXPECT_EQ(KfdPciAddress(3, (0x2b << 8) | (0x1f << 3) | 7), "0003:2b:1f.7");
  EXPECT_EQ(KfdPciAddress(0x10000, 0x100), "10000:01:00.0");  // VMD domains exceed 16 bits
  EXPECT_EQ(KfdPciAddress(0, 0), std::nullopt);
  EXPECT_EQ(KfdPciAddress(0, 0x10000), std::nullopt);
  EXPECT_EQ(KfdPciAddress(uint64_t{1} << 32, 0x100), std::nullopt);
}

TEST(IoLinkTypeName, NamesTheCratTypes) {
  EXPECT_EQ(IoLinkTypeName(2), "pcie");
  EXPECT_EQ(IoLinkTypeName(11), "xgmi");
  EXPECT_EQ(IoLinkTypeName(1), "hypertransport");
  EXPECT_EQ(IoLinkTypeName(0), "undefined");
  EXPECT_EQ(IoLinkTypeName(7), "reserved");
  EXPECT_EQ(IoLinkTypeName(16), "other");
  EXPECT_EQ(IoLinkTypeName(17), "unknown");
  EXPECT_EQ(IoLinkTypeName(uint64_t{1} << 40), "unknown");
}

TEST(KfdIoLink, ZeroBandwidthAndLatencyAreUnknown) {
  // The line layout of iolink_show() in kfd_topology.c; the values are illustrative.
  KfdIoLink link = SummarizeKfdIoLink(
      ParseKfdProperties("type 11\nversion_major 0\nversion_minor 0\nnode_from 4\nnode_to 5\nweight 15\n"
                         "min_latency 0\nmax_latency 0\nmin_bandwidth 50000\nmax_bandwidth 0\n"
                         "recommended_transfer_size 0\nflags 1\n"));
  EXPECT_EQ(link.type, 11u);
  EXPECT_EQ(link.node_from, 4u);
  EXPECT_EQ(link.node_to, 5u);
  EXPECT_EQ(link.weight, 15u);
  EXPECT_EQ(link.min_bandwidth_mbs, 50000u);
  EXPECT_EQ(link.max_bandwidth_mbs, std::nullopt);
  EXPECT_EQ(link.min_latency_ns, std::nullopt);
  EXPECT_EQ(link.flags, 1u);
}

}  // namespace
}  // namespace gputriage::amd
