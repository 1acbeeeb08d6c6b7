#include "inspect/occupancy.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "catalog/catalog.h"

namespace gputriage::inspect {

namespace {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// ------------------------------------------------------------------------------- estimation

uint64_t DivCeil(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint64_t RoundUp(uint64_t a, uint64_t b) { return DivCeil(a, b) * b; }

std::string LimitText(uint64_t value) { return value == kNoLimit ? std::string("no limit") : std::to_string(value); }

Occupancy Unknown(std::string explanation) {
  Occupancy out;
  out.explanation = std::move(explanation);
  return out;
}

Occupancy CannotRun(std::string limiter, std::string explanation) {
  Occupancy out;
  out.fraction = 0.0;
  out.limiter = std::move(limiter);
  out.explanation = std::move(explanation);
  return out;
}

// The first limit in `required` that the table lacks, as "the table has no <name> for <arch>".
std::optional<std::string> MissingLimit(const ArchLimits& limits,
                                        std::initializer_list<std::pair<const char*, bool>> required) {
  for (const auto& [name, present] : required) {
    if (!present) {
      return fmt::format("{}: occupancy unknown: the table has no {} for {}", limits.arch, name, limits.arch);
    }
  }
  return std::nullopt;
}

// The pieces of EstimateAmdOccupancy (LLVM AMDGPU's method, waves per SIMD).

// An Unknown naming the first input the kernel lacks or the first limit the table lacks for
// `limits`' architecture; nullopt when everything the estimate needs is known. `*wave` is the
// wavefront size used (the kernel's, else the architecture's only one).
std::optional<Occupancy> AmdInputsUnknown(const AmdKernelResources& kernel, const ArchLimits& limits,
                                          uint32_t* wave_out) {
  const std::string& arch = limits.arch;
  if (limits.vendor != GpuVendor::kAmd) {
    return Unknown(fmt::format("{}: not an AMD architecture", arch));
  }
  std::optional<uint32_t> wave = kernel.wavefront_size;
  if (!wave && limits.wavefront_sizes.size() == 1) wave = limits.wavefront_sizes.front();
  if (!wave) return Unknown(fmt::format("{}: occupancy unknown: wavefront size not recorded", arch));
  if (!kernel.vgprs) return Unknown(fmt::format("{}: occupancy unknown: VGPR count not recorded", arch));
  if (!kernel.lds_bytes) return Unknown(fmt::format("{}: occupancy unknown: LDS size not recorded", arch));
  if (!kernel.workgroup_size || *kernel.workgroup_size == 0) {
    return Unknown(fmt::format("{}: occupancy unknown: workgroup size unknown", arch));
  }
  if (std::find(limits.wavefront_sizes.begin(), limits.wavefront_sizes.end(), *wave) == limits.wavefront_sizes.end()) {
    return Unknown(limits.wavefront_sizes.empty()
                       ? fmt::format("{}: occupancy unknown: the table has no wavefront sizes for {}", arch, arch)
                       : fmt::format("{}: occupancy unknown: wavefront size {} is not one the "
                                     "table lists for {}",
                                     arch, *wave, arch));
  }
  const std::string vgpr_total_name = fmt::format("VGPRs per SIMD for wave{}", *wave);
  const std::string vgpr_granule_name = fmt::format("VGPR allocation granule for wave{}", *wave);
  if (auto missing =
          MissingLimit(limits, {{"max workgroup size", limits.max_workgroup_size.has_value()},
                                {"LDS per workgroup", limits.lds_per_workgroup_bytes.has_value()},
                                {"SIMDs per CU/WGP", limits.simds_per_unit.has_value()},
                                {"LDS per CU/WGP", limits.lds_per_unit_bytes.has_value()},
                                {"max workgroups per CU/WGP", limits.max_workgroups_per_unit.has_value()},
                                {"max waves per SIMD", limits.max_waves_per_simd.has_value()},
                                {vgpr_total_name.c_str(), limits.vgprs_per_simd.count(*wave) > 0},
                                {vgpr_granule_name.c_str(), limits.vgpr_alloc_granule.count(*wave) > 0},
                                {"rule whether SGPRs limit occupancy", limits.sgprs_limit_occupancy.has_value()}})) {
    return Unknown(*missing);
  }
  if (*limits.sgprs_limit_occupancy) {
    if (auto missing =
            MissingLimit(limits, {{"SGPRs per SIMD", limits.sgprs_per_simd.has_value()},
                                  {"SGPR allocation granule", limits.sgpr_alloc_granule.has_value()},
                                  {"trap-handler SGPRs", !kernel.trap_handler || limits.trap_handler_sgprs}})) {
      return Unknown(*missing);
    }
    if (!kernel.sgprs) return Unknown(fmt::format("{}: occupancy unknown: SGPR count not recorded", arch));
  }
  *wave_out = *wave;
  return std::nullopt;
}

// A CannotRun when a workgroup of the kernel cannot be resident at all: more work-items, LDS
// or VGPRs (`vgprs`, VGPRs and AGPRs combined) than the architecture allows; else nullopt.
// Needs what AmdInputsUnknown checked.
std::optional<Occupancy> AmdCannotRun(const AmdKernelResources& kernel, const ArchLimits& limits, uint64_t vgprs) {
  const std::string& arch = limits.arch;
  const uint64_t workgroup = *kernel.workgroup_size;
  const uint64_t lds = *kernel.lds_bytes;
  if (workgroup > *limits.max_workgroup_size) {
    return CannotRun("threads", fmt::format("{}: a workgroup of {} work-items exceeds the {} "
                                            "allowed",
                                            arch, workgroup, *limits.max_workgroup_size));
  }
  if (lds > *limits.lds_per_workgroup_bytes) {
    return CannotRun("LDS", fmt::format("{}: {} B of LDS exceeds the {} B a workgroup can address", arch, lds,
                                        *limits.lds_per_workgroup_bytes));
  }
  if (limits.max_vgprs_per_wave && vgprs > *limits.max_vgprs_per_wave) {
    return CannotRun(
        "VGPRs", fmt::format("{}: {} VGPRs exceed the {} a wave can address", arch, vgprs, *limits.max_vgprs_per_wave));
  }
  return std::nullopt;
}

// Waves per SIMD that `vgprs` VGPRs per wave allow (LLVM IsaInfo::getNumWavesPerEUWithNumVGPRs),
// with the rounded allocation and the SIMD's VGPR file for the explanation.
struct AmdVgprLimit {
  uint64_t waves = 0, alloc = 0, total = 0;
};

AmdVgprLimit WavesByVgprs(uint64_t vgprs, uint32_t wave, const ArchLimits& limits) {
  const uint64_t max_waves = *limits.max_waves_per_simd;
  const uint64_t granule = limits.vgpr_alloc_granule.at(wave);
  AmdVgprLimit out;
  out.total = limits.vgprs_per_simd.at(wave);
  out.alloc = RoundUp(vgprs, granule);
  out.waves = vgprs < granule ? max_waves : std::min<uint64_t>(std::max<uint64_t>(out.total / out.alloc, 1), max_waves);
  return out;
}

// Waves per SIMD that the kernel's SGPRs allow, and the explanation's words for it. GFX9: the
// per-SIMD SGPR file over the rounded per-wave allocation plus the trap handler's reservation;
// GFX10+ SGPRs do not limit occupancy.
struct AmdSgprLimit {
  uint64_t waves = 0;
  std::string text;
};

AmdSgprLimit WavesBySgprs(const AmdKernelResources& kernel, const ArchLimits& limits) {
  const uint64_t max_waves = *limits.max_waves_per_simd;
  AmdSgprLimit out{max_waves, "SGPRs no limit on this architecture"};
  if (!*limits.sgprs_limit_occupancy) return out;
  const uint64_t trap = kernel.trap_handler ? *limits.trap_handler_sgprs : 0;
  const uint64_t sgpr_alloc = RoundUp(*kernel.sgprs, *limits.sgpr_alloc_granule) + trap;
  out.waves = std::min<uint64_t>(*limits.sgprs_per_simd / std::max<uint64_t>(sgpr_alloc, 1), max_waves);
  out.text = fmt::format("SGPRs {} ({} -> {}{} of {})", out.waves, *kernel.sgprs, sgpr_alloc - trap,
                         trap ? fmt::format(" + {} trap handler", trap) : std::string(), *limits.sgprs_per_simd);
  return out;
}

// Workgroups per CU/WGP (AMDGPUSubtarget::getOccupancyWithLocalMemSize with
// IsaInfo::getMaxWorkGroupsPerCU; single-wave workgroups use no barrier): by wave slots and
// barriers, by LDS, and the waves per SIMD they make.
struct AmdGroupLimit {
  uint64_t waves_per_group = 0, by_slots = 0, by_lds = 0, waves = 0;
};

AmdGroupLimit WavesByWorkgroups(uint64_t workgroup, uint32_t wave, uint64_t lds, const ArchLimits& limits) {
  const uint64_t max_waves = *limits.max_waves_per_simd;
  const uint64_t simds = *limits.simds_per_unit;
  AmdGroupLimit out;
  out.waves_per_group = DivCeil(workgroup, wave);
  const uint64_t wave_slots = max_waves * simds;
  out.by_slots = out.waves_per_group == 1
                     ? wave_slots
                     : std::min<uint64_t>(wave_slots / out.waves_per_group, *limits.max_workgroups_per_unit);
  out.by_lds = lds > 0 ? *limits.lds_per_unit_bytes / lds : kNoLimit;
  const uint64_t groups = std::min(out.by_slots, out.by_lds);
  out.waves = std::min(DivCeil(groups * out.waves_per_group, simds), max_waves);
  return out;
}

}  // namespace

// ------------------------------------------------------------------------------- public API

const ArchLimits* FindArchLimits(std::string_view arch) {
  auto catalog = catalog::BuiltinCatalog();
  return catalog.ok() ? catalog::FindArchLimits((*catalog)->arch_limits, arch) : nullptr;
}

Occupancy EstimateNvidiaOccupancy(const NvidiaKernelResources& kernel, const ArchLimits& limits) {
  const std::string& arch = limits.arch;
  if (limits.vendor != GpuVendor::kNvidia) {
    return Unknown(fmt::format("{}: not an NVIDIA architecture", arch));
  }
  if (!kernel.registers_per_thread) {
    return Unknown(fmt::format("{}: occupancy unknown: registers per thread not recorded", arch));
  }
  if (!kernel.static_shared_bytes) {
    return Unknown(fmt::format("{}: occupancy unknown: static shared memory not recorded", arch));
  }
  if (!kernel.block_size || *kernel.block_size == 0) {
    return Unknown(fmt::format("{}: occupancy unknown: block size unknown", arch));
  }
  if (auto missing = MissingLimit(
          limits, {{"warp size", limits.warp_size.has_value()},
                   {"max threads per block", limits.max_threads_per_block.has_value()},
                   {"max warps per SM", limits.max_warps_per_sm.has_value()},
                   {"max blocks per SM", limits.max_blocks_per_sm.has_value()},
                   {"registers per SM", limits.registers_per_sm.has_value()},
                   {"max registers per block", limits.max_registers_per_block.has_value()},
                   {"max registers per thread", limits.max_registers_per_thread.has_value()},
                   {"register allocation unit", limits.register_allocation_unit.has_value()},
                   {"register file partitions", limits.register_file_partitions.has_value()},
                   {"shared memory per SM", limits.shared_memory_per_sm_bytes.has_value()},
                   {"default shared memory per block", limits.shared_memory_per_block_default_bytes.has_value()},
                   {"reserved shared memory per block", limits.shared_memory_reserved_per_block_bytes.has_value()},
                   {"shared memory allocation unit", limits.shared_memory_allocation_unit_bytes.has_value()}})) {
    return Unknown(*missing);
  }
  const uint64_t regs = *kernel.registers_per_thread;
  const uint64_t shared = *kernel.static_shared_bytes;
  const uint64_t block = *kernel.block_size;
  const uint64_t max_warps = *limits.max_warps_per_sm;
  const uint64_t partitions = *limits.register_file_partitions;

  if (block > *limits.max_threads_per_block) {
    return CannotRun("threads", fmt::format("{}: a block of {} threads exceeds the {} threads per "
                                            "block allowed",
                                            arch, block, *limits.max_threads_per_block));
  }
  const uint64_t warps_per_block = DivCeil(block, *limits.warp_size);
  const uint64_t by_threads = max_warps / warps_per_block;

  // Registers are allocated per warp, rounded to the allocation unit; the hardware checks a
  // block's allocation as if its warps were spread over every partition (cuda_occupancy.h).
  if (regs > *limits.max_registers_per_thread) {
    return CannotRun("registers", fmt::format("{}: {} registers per thread exceed the {} allowed", arch, regs,
                                              *limits.max_registers_per_thread));
  }
  const uint64_t regs_per_warp = RoundUp(regs * *limits.warp_size, *limits.register_allocation_unit);
  const uint64_t regs_per_block = regs_per_warp * RoundUp(warps_per_block, partitions);
  if (regs_per_block > *limits.max_registers_per_block) {
    return CannotRun("registers", fmt::format("{}: a block of {} threads at {} registers per thread needs {} "
                                              "registers, more than the {} per block",
                                              arch, block, regs, regs_per_block, *limits.max_registers_per_block));
  }
  uint64_t by_registers = kNoLimit;
  if (regs_per_warp > 0) {
    const uint64_t warps_per_partition = (*limits.registers_per_sm / partitions) / regs_per_warp;
    by_registers = warps_per_partition * partitions / warps_per_block;
  }

  const uint64_t reserved = *limits.shared_memory_reserved_per_block_bytes;
  const uint64_t shared_alloc = RoundUp(shared + reserved, *limits.shared_memory_allocation_unit_bytes);
  const uint64_t shared_limit = uint64_t{*limits.shared_memory_per_block_default_bytes} + reserved;
  if (shared_alloc > shared_limit) {
    return CannotRun("shared memory", fmt::format("{}: {} B static shared memory + {} B reserved ({} B allocated) "
                                                  "exceeds the {} B a block may use without opt-in",
                                                  arch, shared, reserved, shared_alloc, shared_limit));
  }
  const uint64_t by_shared = shared_alloc > 0 ? *limits.shared_memory_per_sm_bytes / shared_alloc : kNoLimit;
  const uint64_t by_blocks = *limits.max_blocks_per_sm;

  const uint64_t blocks = std::min({by_registers, by_shared, by_threads, by_blocks});
  Occupancy out;
  out.active_blocks_or_waves = static_cast<int>(blocks);
  out.fraction = static_cast<double>(blocks * warps_per_block) / static_cast<double>(max_warps);
  if (blocks * warps_per_block == max_warps) {
    out.limiter = "threads";
  } else if (blocks == by_registers) {
    out.limiter = "registers";
  } else if (blocks == by_shared) {
    out.limiter = "shared memory";
  } else if (blocks == by_blocks) {
    out.limiter = "blocks";
  } else {
    out.limiter = "threads";
  }
  out.explanation = fmt::format(
      "{}: {} threads/block, {} registers/thread, {} B static shared: {} blocks ({} of {} warps) "
      "per SM, {:.0f}%; blocks per SM by registers {} ({} per warp), shared memory {} ({} B per "
      "block of {} B), threads {}, block limit {}",
      arch, block, regs, shared, blocks, blocks * warps_per_block, max_warps, *out.fraction * 100,
      LimitText(by_registers), regs_per_warp, LimitText(by_shared), shared_alloc, *limits.shared_memory_per_sm_bytes,
      by_threads, by_blocks);
  return out;
}

Occupancy EstimateAmdOccupancy(const AmdKernelResources& kernel, const ArchLimits& limits) {
  uint32_t wave = 0;
  if (std::optional<Occupancy> unknown = AmdInputsUnknown(kernel, limits, &wave)) return *unknown;
  // .vgpr_count already combines VGPRs and AGPRs where they share a file; on gfx908 they are
  // separate files of the same size.
  const uint64_t vgprs = std::max(*kernel.vgprs, kernel.agprs.value_or(0));
  if (std::optional<Occupancy> cannot = AmdCannotRun(kernel, limits, vgprs)) return *cannot;

  const std::string& arch = limits.arch;
  const std::string unit = limits.occupancy_unit.empty() ? "CU" : limits.occupancy_unit;
  const uint64_t max_waves = *limits.max_waves_per_simd;
  const uint64_t workgroup = *kernel.workgroup_size;
  const uint64_t lds = *kernel.lds_bytes;
  const AmdVgprLimit by_vgprs = WavesByVgprs(vgprs, wave, limits);
  const AmdSgprLimit by_sgprs = WavesBySgprs(kernel, limits);
  const AmdGroupLimit groups = WavesByWorkgroups(workgroup, wave, lds, limits);

  const uint64_t waves = std::min({by_vgprs.waves, by_sgprs.waves, groups.waves});
  Occupancy out;
  out.active_blocks_or_waves = static_cast<int>(waves);
  out.fraction = static_cast<double>(waves) / static_cast<double>(max_waves);
  if (waves == max_waves) {
    out.limiter = "waves";
  } else if (waves == by_vgprs.waves) {
    out.limiter = "VGPRs";
  } else if (waves == by_sgprs.waves) {
    out.limiter = "SGPRs";
  } else {
    out.limiter = groups.by_lds < groups.by_slots ? "LDS" : "waves";
  }
  out.explanation = fmt::format(
      "{}: wave{}, workgroup {} ({} waves), {} VGPRs, {} B LDS: {} of {} waves per SIMD, {:.0f}%; "
      "waves per SIMD by VGPRs {} ({} -> {} of {}), {}, workgroups {} ({} workgroups per {} by "
      "wave slots and barriers, {} by LDS)",
      arch, wave, workgroup, groups.waves_per_group, vgprs, lds, waves, max_waves, *out.fraction * 100, by_vgprs.waves,
      vgprs, by_vgprs.alloc, by_vgprs.total, by_sgprs.text, groups.waves, groups.by_slots, unit,
      LimitText(groups.by_lds));
  return out;
}

Occupancy EstimateOccupancy(const Kernel& kernel, const ArchLimits& limits) {
  if (limits.vendor == GpuVendor::kNvidia) {
    NvidiaKernelResources resources;
    resources.registers_per_thread = kernel.registers;
    resources.static_shared_bytes = kernel.shared_bytes;
    resources.block_size = kernel.max_threads.value_or(kDefaultBlockSize);
    Occupancy out = EstimateNvidiaOccupancy(resources, limits);
    if (!kernel.max_threads) {
      out.explanation += fmt::format(" (block size {} assumed: no launch bounds recorded)", kDefaultBlockSize);
    }
    return out;
  }
  AmdKernelResources resources;
  resources.vgprs = kernel.vgpr_count;
  resources.agprs = kernel.agpr_count;
  resources.sgprs = kernel.sgpr_count;
  resources.lds_bytes = kernel.lds_bytes;
  resources.wavefront_size = kernel.wavefront_size;
  resources.workgroup_size = kernel.max_workgroup_size.value_or(kDefaultBlockSize);
  Occupancy out = EstimateAmdOccupancy(resources, limits);
  if (!kernel.max_workgroup_size) {
    out.explanation +=
        fmt::format(" (workgroup size {} assumed: no maximum workgroup size recorded)", kDefaultBlockSize);
  }
  return out;
}

}  // namespace gputriage::inspect
