// Per-architecture GPU limits (kb/tables/gpu-arch-limits.yaml): what a reviewed public source
// states about an architecture's warps, registers, shared memory/LDS and waves, for occupancy
// estimates (inspect) and launch-configuration checks; and, per product, the datasheet peaks
// (memory bandwidth, dense TFLOP/s) that `validate` judges measurements against. A limit or peak
// no source states is absent, never guessed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::catalog {

enum class GpuVendor { kNvidia, kAmd };

/// One architecture's limits. Every limit is optional: absent means no reviewed source states it.
/// Sizes are bytes, register counts are 32-bit registers.
struct ArchLimits {
  std::string arch;  ///< canonical name: "sm_90", "gfx90a"
  GpuVendor vendor = GpuVendor::kNvidia;
  std::string name;  ///< "Hopper (compute capability 9.0)"

  // NVIDIA, per SM unless named otherwise.
  std::optional<uint32_t> warp_size;
  std::optional<uint32_t> max_threads_per_block;
  std::optional<uint32_t> max_threads_per_sm;
  std::optional<uint32_t> max_warps_per_sm;
  std::optional<uint32_t> max_blocks_per_sm;
  std::optional<uint32_t> registers_per_sm;
  std::optional<uint32_t> max_registers_per_block;
  std::optional<uint32_t> max_registers_per_thread;
  std::optional<uint32_t> register_allocation_unit;  ///< registers, allocated per warp
  std::optional<uint32_t> register_file_partitions;  ///< SM sub-partitions
  std::optional<uint32_t> shared_memory_per_sm_bytes;
  std::optional<uint32_t> shared_memory_per_block_default_bytes;  ///< without opt-in (all static)
  std::optional<uint32_t> shared_memory_per_block_optin_bytes;    ///< dynamic, with opt-in
  std::optional<uint32_t> shared_memory_reserved_per_block_bytes;
  std::optional<uint32_t> shared_memory_allocation_unit_bytes;

  // AMD. "unit" is what a workgroup's waves share: a CU, or a WGP in workgroup-processor mode.
  std::vector<uint32_t> wavefront_sizes;  ///< supported, ascending; empty when not stated
  std::optional<uint32_t> max_workgroup_size;
  std::optional<uint32_t> lds_per_workgroup_bytes;
  std::string occupancy_unit;  ///< "CU" or "WGP"; empty when not stated
  std::optional<uint32_t> simds_per_unit;
  std::optional<uint32_t> lds_per_unit_bytes;
  std::optional<uint32_t> max_workgroups_per_unit;  ///< barrier limit, multi-wave workgroups
  std::optional<uint32_t> max_waves_per_simd;
  std::map<uint32_t, uint32_t> vgprs_per_simd;      ///< wavefront size -> VGPRs per SIMD lane
  std::map<uint32_t, uint32_t> vgpr_alloc_granule;  ///< wavefront size -> allocation granule
  std::optional<uint32_t> max_vgprs_per_wave;
  std::optional<uint32_t> max_arch_vgprs_per_wave;  ///< where AGPRs share the VGPR file
  std::optional<bool> unified_vgpr_agpr;
  std::optional<bool> sgprs_limit_occupancy;
  std::optional<uint32_t> sgprs_per_simd;
  std::optional<uint32_t> sgpr_alloc_granule;
  std::optional<uint32_t> trap_handler_sgprs;
  std::optional<uint32_t> max_sgprs_per_wave;

  std::string notes;                    ///< what is missing and why, derivations
  std::vector<std::string> references;  ///< URLs (or toolkit file names) of the sources
};

/// Parses gpu-arch-limits.yaml text (schema gputriage.gpu-arch-limits/1). Fails, naming `source`
/// and the entry, on a wrong schema, an entry without arch, vendor or references, an unknown key,
/// a value that is not a positive integer where one is expected, or an arch listed twice.
core::Result<std::vector<ArchLimits>> ParseArchLimitsTable(std::string_view yaml, std::string_view source);

/// "sm_90a" / "sm_100f" / "compute_90" -> "sm_90" / "sm_100" / "sm_90";
/// "gfx90a:sramecc+:xnack-" and "amdgcn-amd-amdhsa--gfx90a:xnack-" -> "gfx90a". Other text is
/// returned lower-cased and otherwise unchanged.
std::string CanonicalArchName(std::string_view arch);

/// The entry for `arch` (any spelling CanonicalArchName accepts) in `table`, or nullptr.
const ArchLimits* FindArchLimits(const std::vector<ArchLimits>& table, std::string_view arch);

/// A product's datasheet peaks (kb/tables/gpu-arch-limits.yaml, `products:`). Absent = no source states it.
/// Figures are per device as the runtime enumerates it (one GCD of an MI250X).
struct ProductPeaks {
  std::string name;  ///< "NVIDIA H200 SXM"
  GpuVendor vendor = GpuVendor::kNvidia;
  std::string arch;                ///< canonical arch, "sm_90", "gfx942"
  std::vector<std::string> match;  ///< case-insensitive substrings of the device name the driver reports
  /// Substrings that rule a name out (e.g. "NVL", "PCIe" for an SXM entry), may be empty.
  std::vector<std::string> exclude;
  std::optional<double> memory_bandwidth_gbs;  ///< 10^9 bytes/s
  /// Keys among "fp64", "fp32", "tf32", "fp16", "bf16", "fp8": DENSE (without sparsity) peak of the fastest units
  /// for that type (tensor/matrix cores where they apply).
  std::map<std::string, double> dense_tflops;
  /// How a figure was derived (e.g. "datasheet gives 1,979 with sparsity; dense is half, as the footnote says").
  std::string notes;
  std::vector<std::string> references;
};

/// Parses the `products:` list of the table text (absent list = empty vector). Same strictness as ParseArchLimitsTable:
/// unknown keys, missing name/vendor/arch/match/references, non-positive numbers, unknown dense_tflops keys -> error
/// naming `source` and the product.
core::Result<std::vector<ProductPeaks>> ParseProductPeaks(std::string_view yaml, std::string_view source);

/// The product whose `match` substring occurs in `device_name` (case-insensitive) and none of whose `exclude`
/// substrings do; when several match, the one with the longest matching substring; nullptr when none.
const ProductPeaks* FindProductPeaks(const std::vector<ProductPeaks>& table, std::string_view device_name);

}  // namespace gputriage::catalog
