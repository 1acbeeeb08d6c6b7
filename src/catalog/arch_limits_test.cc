#include "catalog/arch_limits.h"

#include <gtest/gtest.h>

#include <string>

#include "catalog/catalog.h"

namespace gputriage::catalog {
namespace {

const std::vector<ArchLimits>& Table() {
  static const std::vector<ArchLimits> kEmpty;
  auto catalog = BuiltinCatalog();
  return catalog.ok() ? (*catalog)->arch_limits : kEmpty;
}

const ArchLimits* Find(std::string_view arch) { return FindArchLimits(Table(), arch); }

const ArchLimits& Limits(std::string_view arch) {
  auto catalog = BuiltinCatalog();
  const ArchLimits* limits = catalog.ok() ? FindArchLimits((*catalog)->arch_limits, arch) : nullptr;
  if (limits == nullptr) {
    ADD_FAILURE() << arch << " is not in the table";
    static const ArchLimits kEmpty;
    return kEmpty;
  }
  return *limits;
}

// ------------------------------------------------------------------------------ the table

TEST(ArchLimitsTable, LoadsWithoutProblemsAndHasBothVendors) {
  auto catalog = BuiltinCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  size_t nvidia = 0, amd = 0;
  for (const ArchLimits& limits : (*catalog)->arch_limits) {
    (limits.vendor == GpuVendor::kNvidia ? nvidia : amd)++;
    EXPECT_FALSE(limits.references.empty()) << limits.arch;
    EXPECT_FALSE(limits.name.empty()) << limits.arch;
  }
  EXPECT_EQ(nvidia, 12u);
  EXPECT_EQ(amd, 11u);
  for (std::string_view arch :
       {"sm_70",  "sm_75",  "sm_80",  "sm_86",  "sm_87",  "sm_89",   "sm_90",   "sm_100",  "sm_120",  "gfx900",
        "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1200", "gfx1201"}) {
    EXPECT_NE(FindArchLimits((*catalog)->arch_limits, arch), nullptr) << arch;
  }
}

TEST(ArchLimitsTable, NvidiaEntriesAreConsistent) {
  for (const ArchLimits& limits : Table()) {
    if (limits.vendor != GpuVendor::kNvidia) continue;
    ASSERT_TRUE(limits.max_threads_per_sm && limits.max_warps_per_sm && limits.warp_size) << limits.arch;
    EXPECT_EQ(*limits.max_threads_per_sm, *limits.max_warps_per_sm * *limits.warp_size) << limits.arch;
    // The per-block opt-in maximum is the per-SM capacity less the reservation (PG13 Table 31).
    EXPECT_EQ(*limits.shared_memory_per_block_optin_bytes + *limits.shared_memory_reserved_per_block_bytes,
              *limits.shared_memory_per_sm_bytes)
        << limits.arch;
  }
}

// Values read off the sources by hand (see the table header): a wrong edit of the table fails here.
TEST(ArchLimitsTable, SpotValuesMatchTheSources) {
  // PG13 Table 30/31, column 9.0.
  EXPECT_EQ(Limits("sm_90").max_warps_per_sm, 64u);
  EXPECT_EQ(Limits("sm_90").max_blocks_per_sm, 32u);
  EXPECT_EQ(Limits("sm_90").shared_memory_per_sm_bytes, 228u * 1024);
  EXPECT_EQ(Limits("sm_90").shared_memory_per_block_optin_bytes, 227u * 1024);
  // Columns 8.6/8.7 (16 blocks), 8.9 (24 blocks), 12.x (48 warps, 24 blocks, 100 KB).
  EXPECT_EQ(Limits("sm_86").max_blocks_per_sm, 16u);
  EXPECT_EQ(Limits("sm_87").shared_memory_per_sm_bytes, 164u * 1024);
  EXPECT_EQ(Limits("sm_89").max_blocks_per_sm, 24u);
  EXPECT_EQ(Limits("sm_120").max_warps_per_sm, 48u);
  EXPECT_EQ(Limits("sm_120").shared_memory_per_sm_bytes, 100u * 1024);
  // Volta Tuning Guide; cuda_occupancy.h: 256-byte shared-memory granule before Ampere.
  EXPECT_EQ(Limits("sm_70").shared_memory_per_sm_bytes, 96u * 1024);
  EXPECT_EQ(Limits("sm_70").shared_memory_allocation_unit_bytes, 256u);
  EXPECT_EQ(Limits("sm_80").shared_memory_allocation_unit_bytes, 128u);
  // LLVM AMDGPUBaseInfo.cpp / AMDGPU.td.
  EXPECT_EQ(Limits("gfx906").max_waves_per_simd, 10u);
  EXPECT_EQ(Limits("gfx90a").max_waves_per_simd, 8u);
  EXPECT_EQ(Limits("gfx90a").vgprs_per_simd, (std::map<uint32_t, uint32_t>{{64, 512}}));
  EXPECT_EQ(Limits("gfx942").lds_per_workgroup_bytes, 64u * 1024);
  EXPECT_EQ(Limits("gfx950").lds_per_workgroup_bytes, 160u * 1024);
  EXPECT_EQ(Limits("gfx1030").vgpr_alloc_granule, (std::map<uint32_t, uint32_t>{{32, 16}, {64, 8}}));
  EXPECT_EQ(Limits("gfx1201").vgprs_per_simd, (std::map<uint32_t, uint32_t>{{32, 1536}, {64, 768}}));
  EXPECT_EQ(Limits("gfx1100").wavefront_sizes, (std::vector<uint32_t>{32, 64}));
  EXPECT_EQ(Limits("gfx1100").sgprs_limit_occupancy, false);
}

TEST(ArchLimitsTable, FindAcceptsTheSpellingsInBinaries) {
  EXPECT_EQ(CanonicalArchName("sm_90a"), "sm_90");
  EXPECT_EQ(CanonicalArchName("sm_100f"), "sm_100");
  EXPECT_EQ(CanonicalArchName("compute_90"), "sm_90");
  EXPECT_EQ(CanonicalArchName("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(CanonicalArchName("hipv4-amdgcn-amd-amdhsa--gfx942:xnack+"), "gfx942");
  EXPECT_EQ(CanonicalArchName("GFX1100"), "gfx1100");
  EXPECT_EQ(CanonicalArchName("sm_x"), "sm_x");
  ASSERT_NE(Find("sm_90a"), nullptr);
  EXPECT_EQ(Find("sm_90a")->arch, "sm_90");
  ASSERT_NE(Find("gfx90a:sramecc+:xnack-"), nullptr);
  EXPECT_EQ(Find("gfx90a:sramecc+:xnack-")->arch, "gfx90a");
  EXPECT_EQ(Find("gfx940"), nullptr);  // left out: feature set not confirmed
  EXPECT_EQ(Find("sm_999"), nullptr);
}

std::string ParseError(const std::string& entry) {
  const std::string yaml = "schema: gputriage.gpu-arch-limits/1\nentries:\n" + entry;
  auto parsed = ParseArchLimitsTable(yaml, "t.yaml");
  return parsed.ok() ? std::string("(parsed)") : parsed.error().message;
}

TEST(ArchLimitsTable, ParseErrorsNameTheEntryAndTheKey) {
  const std::string ok = "  - {arch: sm_90, vendor: nvidia, warp_size: 32, references: [u]}\n";
  EXPECT_EQ(ParseError(ok), "(parsed)");
  EXPECT_EQ(ParseArchLimitsTable("schema: other/1\nentries: []\n", "t.yaml").error().message,
            "t.yaml: expected a mapping with schema: gputriage.gpu-arch-limits/1");
  EXPECT_EQ(ParseError(ok + ok), "t.yaml: sm_90 is listed twice");
  EXPECT_EQ(ParseError("  - {arch: sm_90, vendor: nvidia, max_warp_per_sm: 64, references: [u]}\n"),
            "t.yaml: sm_90: unknown key 'max_warp_per_sm'");
  EXPECT_EQ(ParseError("  - {arch: sm_90, vendor: nvidia, warp_size: 0, references: [u]}\n"),
            "t.yaml: sm_90: 'warp_size' must be a positive integer");
  EXPECT_EQ(ParseError("  - {arch: sm_90, vendor: nvidia, warp_size: 32}\n"),
            "t.yaml: sm_90: needs at least one reference");
  EXPECT_EQ(ParseError("  - {arch: sm_90a, vendor: nvidia, references: [u]}\n"),
            "t.yaml: sm_90a: arch must be written as 'sm_90'");
  EXPECT_EQ(ParseError("  - {arch: gfx90a, vendor: ati, references: [u]}\n"),
            "t.yaml: gfx90a: vendor 'ati' is not one of nvidia|amd");
  EXPECT_EQ(ParseError("  - {arch: gfx90a, vendor: amd, vgprs_per_simd: [512], references: [u]}\n"),
            "t.yaml: gfx90a: 'vgprs_per_simd' must map wavefront sizes to positive integers");
}

// ------------------------------------------------------------------------- product peaks

const std::vector<ProductPeaks>& Products() {
  static const std::vector<ProductPeaks> kEmpty;
  auto catalog = BuiltinCatalog();
  return catalog.ok() ? (*catalog)->product_peaks : kEmpty;
}

std::string ProductFor(std::string_view device_name) {
  const ProductPeaks* product = FindProductPeaks(Products(), device_name);
  return product == nullptr ? std::string("(none)") : product->name;
}

TEST(ProductPeaks, EmbeddedTableLoadsWithReferencesAndKnownArches) {
  auto catalog = BuiltinCatalog();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  EXPECT_GE((*catalog)->product_peaks.size(), 10u);
  for (const ProductPeaks& product : (*catalog)->product_peaks) {
    EXPECT_FALSE(product.references.empty()) << product.name;
    EXPECT_FALSE(product.match.empty()) << product.name;
    const ArchLimits* arch = FindArchLimits((*catalog)->arch_limits, product.arch);
    ASSERT_NE(arch, nullptr) << product.name << ": " << product.arch;
    EXPECT_EQ(arch->vendor, product.vendor) << product.name;
    EXPECT_TRUE(product.memory_bandwidth_gbs.has_value() || !product.dense_tflops.empty()) << product.name;
  }
}

TEST(ProductPeaks, DeviceNamesResolveToTheirProduct) {
  EXPECT_EQ(ProductFor("NVIDIA H200"), "NVIDIA H200 SXM");
  EXPECT_EQ(ProductFor("NVIDIA H200 NVL"), "NVIDIA H200 NVL");
  EXPECT_EQ(ProductFor("NVIDIA GH200 480GB"), "(none)");
  EXPECT_EQ(ProductFor("NVIDIA H100 80GB HBM3"), "NVIDIA H100 SXM");
  EXPECT_EQ(ProductFor("NVIDIA H100 PCIe"), "NVIDIA H100 PCIe");
  EXPECT_EQ(ProductFor("nvidia h100 pcie"), "NVIDIA H100 PCIe");  // case-insensitive
  EXPECT_EQ(ProductFor("NVIDIA H100 NVL"), "(none)");             // not sourced: no match rather than a wrong one
  EXPECT_EQ(ProductFor("NVIDIA A100-SXM4-80GB"), "NVIDIA A100 SXM4 80GB");
  EXPECT_EQ(ProductFor("NVIDIA A100-SXM4-40GB"), "NVIDIA A100 SXM4 40GB");
  EXPECT_EQ(ProductFor("NVIDIA A100-PCIE-40GB"), "NVIDIA A100 PCIe 40GB");
  EXPECT_EQ(ProductFor("NVIDIA A100 80GB PCIe"), "NVIDIA A100 PCIe 80GB");
  EXPECT_EQ(ProductFor("NVIDIA L40S"), "NVIDIA L40S");
  EXPECT_EQ(ProductFor("AMD Instinct MI300X"), "AMD Instinct MI300X");
  EXPECT_EQ(ProductFor("AMD Instinct MI325X"), "AMD Instinct MI325X");
  EXPECT_EQ(ProductFor("AMD Instinct MI250X/MI250"), "AMD Instinct MI250X (one GCD)");
  EXPECT_EQ(ProductFor("AMD Instinct MI210"), "AMD Instinct MI210");
  EXPECT_EQ(ProductFor("NVIDIA GeForce RTX 4090"), "(none)");
  EXPECT_EQ(ProductFor(""), "(none)");
}

// Figures read off the sources by hand (see the table header).
TEST(ProductPeaks, SpotValuesMatchTheSources) {
  const ProductPeaks* h200 = FindProductPeaks(Products(), "NVIDIA H200");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->arch, "sm_90");
  EXPECT_EQ(h200->memory_bandwidth_gbs, 4800.0);
  EXPECT_EQ(h200->dense_tflops.at("bf16"), 989.5);  // 1,979 with sparsity, halved
  const ProductPeaks* sxm = FindProductPeaks(Products(), "NVIDIA H100 80GB HBM3");
  const ProductPeaks* pcie = FindProductPeaks(Products(), "NVIDIA H100 PCIe");
  ASSERT_NE(sxm, nullptr);
  ASSERT_NE(pcie, nullptr);
  EXPECT_EQ(sxm->memory_bandwidth_gbs, 3350.0);
  EXPECT_EQ(pcie->memory_bandwidth_gbs, 2000.0);
  EXPECT_EQ(sxm->dense_tflops.at("fp8"), 1979.0);
  EXPECT_EQ(pcie->dense_tflops.at("fp8"), 1513.0);
  EXPECT_EQ(FindProductPeaks(Products(), "NVIDIA A100-SXM4-80GB")->memory_bandwidth_gbs, 2039.0);
  EXPECT_EQ(FindProductPeaks(Products(), "NVIDIA A100-SXM4-40GB")->memory_bandwidth_gbs, 1555.0);
  const ProductPeaks* mi300x = FindProductPeaks(Products(), "AMD Instinct MI300X");
  ASSERT_NE(mi300x, nullptr);
  EXPECT_EQ(mi300x->vendor, GpuVendor::kAmd);
  EXPECT_EQ(mi300x->memory_bandwidth_gbs, 5300.0);
  EXPECT_EQ(mi300x->dense_tflops.at("fp16"), 1307.4);
  // Unknown is not zero: a figure no source states is absent.
  EXPECT_EQ(FindProductPeaks(Products(), "NVIDIA L40S")->dense_tflops.count("fp64"), 0u);
}

TEST(ProductPeaks, LongestMatchWinsAndExcludeRulesOut) {
  const std::string yaml =
      "schema: gputriage.gpu-arch-limits/1\n"
      "entries: []\n"
      "products:\n"
      "  - {name: short, vendor: nvidia, arch: sm_90, match: [X1], references: [u]}\n"
      "  - {name: long, vendor: nvidia, arch: sm_90, match: [X1 Pro], references: [u]}\n"
      "  - {name: excluded, vendor: nvidia, arch: sm_90, match: [X1 Pro Max], exclude: [lite], references: [u]}\n";
  auto table = ParseProductPeaks(yaml, "t.yaml");
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(FindProductPeaks(*table, "Vendor X1")->name, "short");
  EXPECT_EQ(FindProductPeaks(*table, "Vendor x1 pro")->name, "long");
  EXPECT_EQ(FindProductPeaks(*table, "Vendor X1 Pro Max")->name, "excluded");
  EXPECT_EQ(FindProductPeaks(*table, "Vendor X1 Pro Max Lite")->name, "long");
  EXPECT_EQ(FindProductPeaks(*table, "Vendor Y2"), nullptr);
}

std::string ProductError(const std::string& product) {
  const std::string yaml = "schema: gputriage.gpu-arch-limits/1\nentries: []\nproducts:\n" + product;
  auto parsed = ParseProductPeaks(yaml, "t.yaml");
  return parsed.ok() ? std::string("(parsed)") : parsed.error().message;
}

TEST(ProductPeaks, ParseErrorsNameTheProductAndTheKey) {
  const std::string ok =
      "  - {name: P1, vendor: nvidia, arch: sm_90, match: [P1], memory_bandwidth_gbs: 100, "
      "dense_tflops: {fp16: 1.5}, references: [u]}\n";
  EXPECT_EQ(ProductError(ok), "(parsed)");
  auto none = ParseProductPeaks("schema: gputriage.gpu-arch-limits/1\nentries: []\n", "t.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(ParseProductPeaks("schema: other/1\n", "t.yaml").error().message,
            "t.yaml: expected a mapping with schema: gputriage.gpu-arch-limits/1");
  EXPECT_EQ(ProductError(ok + ok), "t.yaml: P1 is listed twice");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90, match: [P1], bandwidth: 1, references: [u]}\n"),
            "t.yaml: P1: unknown key 'bandwidth'");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90, references: [u]}\n"),
            "t.yaml: P1: needs at least one 'match' substring");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90, match: [''], references: [u]}\n"),
            "t.yaml: P1: 'match' must hold non-empty strings");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90, match: [P1], memory_bandwidth_gbs: -5, "
                         "references: [u]}\n"),
            "t.yaml: P1: 'memory_bandwidth_gbs' must be a positive number");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90, match: [P1], dense_tflops: {fp16: 0}, "
                         "references: [u]}\n"),
            "t.yaml: P1: 'dense_tflops.fp16' must be a positive number");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90, match: [P1], dense_tflops: {int8: 10}, "
                         "references: [u]}\n"),
            "t.yaml: P1: dense_tflops key 'int8' is not one of fp64|fp32|tf32|fp16|bf16|fp8");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90, match: [P1]}\n"),
            "t.yaml: P1: needs at least one reference");
  EXPECT_EQ(ProductError("  - {vendor: nvidia, arch: sm_90, match: [P1], references: [u]}\n"),
            "t.yaml: product 0 has no name");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: ati, arch: sm_90, match: [P1], references: [u]}\n"),
            "t.yaml: P1: vendor 'ati' is not one of nvidia|amd");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, match: [P1], references: [u]}\n"), "t.yaml: P1 has no arch");
  EXPECT_EQ(ProductError("  - {name: P1, vendor: nvidia, arch: sm_90a, match: [P1], references: [u]}\n"),
            "t.yaml: P1: arch must be written as 'sm_90'");
}

TEST(ProductPeaks, ArchTableStillParsesWithProductsPresent) {
  const std::string yaml =
      "schema: gputriage.gpu-arch-limits/1\n"
      "entries:\n  - {arch: sm_90, vendor: nvidia, warp_size: 32, references: [u]}\n"
      "products:\n  - {name: P1, vendor: nvidia, arch: sm_90, match: [P1], references: [u]}\n";
  auto limits = ParseArchLimitsTable(yaml, "t.yaml");
  ASSERT_TRUE(limits.ok()) << limits.error().message;
  EXPECT_EQ(limits->size(), 1u);
}

}  // namespace
}  // namespace gputriage::catalog
