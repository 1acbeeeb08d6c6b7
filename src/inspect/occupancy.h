// The occupancy an architecture's limits (catalog::ArchLimits, kb/tables/gpu-arch-limits.yaml)
// allow a kernel: resident warps per SM (NVIDIA) or waves per SIMD (AMD) as a
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

#include "catalog/arch_limits.h"
#include "core/result.h"
#include "inspect/model.h"

namespace gputriage::inspect {

using catalog::ArchLimits;
using catalog::CanonicalArchName;
using catalog::GpuVendor;

/// The built-in catalog's limits for `arch` (any spelling CanonicalArchName accepts), or nullptr
/// when the architecture is not in kb/tables/gpu-arch-limits.yaml. Lives as long as the program.
const ArchLimits* FindArchLimits(std::string_view arch);

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
