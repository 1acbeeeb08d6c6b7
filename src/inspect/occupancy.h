// Per-architecture GPU limits (kb/tables/gpu-arch-limits.yaml, embedded at build time) and the
// occupancy they allow a kernel: resident warps per SM (NVIDIA) or waves per SIMD (AMD) as a
// fraction of the architecture's maximum, and which resource binds.
//
// Methods, both from public sources cited in the table's header:
// - NVIDIA: the CUDA Occupancy Calculator (cuda_occupancy.h,
// cudaOccMaxActiveBlocksPerMultiprocessor)
//   with the default carveout and only static shared memory: blocks per SM = min of the warp,
//   register (per-warp allocation rounded to the allocation unit, whole warps per SM
//   sub-partition), shared-memory (use + reserved, rounded to the allocation unit) and block
//   limits.
// - AMD: the LLVM AMDGPU backend (IsaInfo::getNumWavesPerEUWithNumVGPRs, the SGPR budget, and
//   AMDGPUSubtarget::getOccupancyWithLocalMemSize): waves per SIMD = min of the VGPR, SGPR and
//   workgroup/LDS limits.
// A limit the table does not state makes the estimate unavailable (fraction nullopt) with an
// explanation naming it; nothing is guessed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "inspect/model.h"

namespace gputriage::inspect {

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
core::Result<std::vector<ArchLimits>> ParseArchLimitsTable(std::string_view yaml,
                                                           std::string_view source);

/// "sm_90a" / "sm_100f" / "compute_90" -> "sm_90" / "sm_100" / "sm_90";
/// "gfx90a:sramecc+:xnack-" and "amdgcn-amd-amdhsa--gfx90a:xnack-" -> "gfx90a". Other text is
/// returned lower-cased and otherwise unchanged.
std::string CanonicalArchName(std::string_view arch);

/// The embedded table's entry for `arch` (any spelling CanonicalArchName accepts), or nullptr when
/// the architecture is not in the table or the table did not load. Lives as long as the program.
const ArchLimits* FindArchLimits(std::string_view arch);

/// Every entry of the embedded table, in file order (empty when it did not load).
const std::vector<ArchLimits>& AllArchLimits();

/// Why the embedded table did not load (one message); empty in a correct build.
const std::vector<std::string>& ArchLimitProblems();

/// An occupancy estimate.
struct Occupancy {
  /// Resident warps per SM (NVIDIA) or waves per SIMD (AMD) over the architecture's maximum,
  /// 0..1; nullopt when an input or a limit is unknown (the explanation names it). 0 means the
  /// kernel cannot be resident at all with these resources.
  std::optional<double> fraction;
  int active_blocks_or_waves = 0;  ///< blocks per SM (NVIDIA), waves per SIMD (AMD)
  /// The binding resource: "registers", "shared memory", "threads", "blocks" (NVIDIA); "VGPRs",
  /// "SGPRs", "LDS", "threads", "waves" (AMD). "threads" also when the block or workgroup is
  /// larger than the architecture allows. Empty when the fraction is unknown.
  std::string limiter;
  std::string explanation;  ///< one line with the numbers, or what is missing
};

/// Block size assumed for an NVIDIA kernel without launch bounds (and an AMD kernel without a
/// recorded maximum workgroup size); the explanation says when it was assumed.
inline constexpr uint32_t kDefaultBlockSize = 256;

struct NvidiaKernelResources {
  std::optional<uint32_t> registers_per_thread;
  std::optional<uint32_t> static_shared_bytes;
  std::optional<uint32_t> block_size;  ///< threads per block
};

/// CUDA Occupancy Calculator method for one block size, without dynamic shared memory and with
/// the default shared-memory carveout.
Occupancy EstimateNvidiaOccupancy(const NvidiaKernelResources& kernel, const ArchLimits& limits);

struct AmdKernelResources {
  /// The code object's .vgpr_count: on gfx90a and later already VGPRs + AGPRs (LLVM's total).
  std::optional<uint32_t> vgprs;
  /// .agpr_count; on gfx908 a separate file, counted as max(vgprs, agprs).
  std::optional<uint32_t> agprs;
  std::optional<uint32_t> sgprs;           ///< .sgpr_count (includes VCC, FLAT_SCRATCH, XNACK_MASK)
  std::optional<uint32_t> lds_bytes;       ///< .group_segment_fixed_size
  std::optional<uint32_t> workgroup_size;  ///< work-items per workgroup
  std::optional<uint32_t> wavefront_size;
  /// The amdhsa runtime (ROCm, HIP) runs with the trap handler on, which reserves
  /// trap_handler_sgprs SGPRs per wave on architectures whose SGPRs limit occupancy.
  bool trap_handler = true;
};

/// LLVM AMDGPU occupancy method: waves per SIMD.
Occupancy EstimateAmdOccupancy(const AmdKernelResources& kernel, const ArchLimits& limits);

/// Occupancy of an inspected kernel on `limits`' architecture. NVIDIA: registers, static shared
/// memory and, as block size, the launch bound (max_threads) or kDefaultBlockSize. AMD: the
/// metadata's register counts, LDS, wavefront size and, as workgroup size,
/// .max_flat_workgroup_size or kDefaultBlockSize.
Occupancy EstimateOccupancy(const Kernel& kernel, const ArchLimits& limits);

}  // namespace gputriage::inspect
