#include "inspect/occupancy.h"

#include "catalog/catalog.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// The independent NVIDIA oracle: the CUDA Occupancy Calculator header that ships with the CUDA
// toolkit (host-only C++, no GPU needed). Where the toolkit is not installed the oracle test is
// skipped with the reason.
#if defined(GT_CUDA_OCCUPANCY_HEADER)
#define GT_HAVE_CUDA_OCCUPANCY 1
#include GT_CUDA_OCCUPANCY_HEADER
#elif __has_include("/usr/local/cuda/include/cuda_occupancy.h")
#define GT_HAVE_CUDA_OCCUPANCY 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "/usr/local/cuda/include/cuda_occupancy.h"
#pragma GCC diagnostic pop
#else
#define GT_HAVE_CUDA_OCCUPANCY 0
#endif

namespace gputriage::inspect {
namespace {

const ArchLimits& Limits(std::string_view arch) {
  const ArchLimits* limits = FindArchLimits(arch);
  if (limits == nullptr) {
    ADD_FAILURE() << arch << " is not in the table";
    static const ArchLimits kEmpty;
    return kEmpty;
  }
  return *limits;
}

const std::vector<ArchLimits>& AllArchLimits() {
  static const std::vector<ArchLimits> kEmpty;
  auto catalog = catalog::BuiltinCatalog();
  return catalog.ok() ? (*catalog)->arch_limits : kEmpty;
}

// ----------------------------------------------------------------------------------- NVIDIA

// Worked by hand with the calculator's method (cuda_occupancy.h): 64 registers x 32 threads =
// 2048 registers per warp (a multiple of the 256-register unit); a 16384-register sub-partition
// holds 8 such warps, 4 sub-partitions 32 warps, i.e. 4 blocks of 8 warps: 32 of 64 warps.
TEST(NvidiaOccupancy, RegisterLimitedExampleByHand) {
  Occupancy occ = EstimateNvidiaOccupancy({64, 0, 256}, Limits("sm_80"));
  ASSERT_TRUE(occ.fraction.has_value());
  EXPECT_DOUBLE_EQ(*occ.fraction, 0.5);
  EXPECT_EQ(occ.active_blocks_or_waves, 4);
  EXPECT_EQ(occ.limiter, "registers");
  EXPECT_EQ(occ.explanation,
            "sm_80: 256 threads/block, 64 registers/thread, 0 B static shared: 4 blocks (32 of 64 "
            "warps) per SM, 50%; blocks per SM by registers 4 (2048 per warp), shared memory 164 "
            "(1024 B per block of 167936 B), threads 8, block limit 32");
}

TEST(NvidiaOccupancy, SharedMemoryAndBlockLimits) {
  // 40000 B + 1 KiB reserved = 41024 B, rounded to 128 B = 41088 B: 233472 / 41088 = 5 blocks.
  Occupancy shared = EstimateNvidiaOccupancy({32, 40000, 128}, Limits("sm_90"));
  EXPECT_EQ(shared.active_blocks_or_waves, 5);
  EXPECT_EQ(shared.limiter, "shared memory");
  // 32-thread blocks: 16 resident blocks on Turing hold 16 of 32 warps.
  Occupancy blocks = EstimateNvidiaOccupancy({16, 0, 32}, Limits("sm_75"));
  EXPECT_EQ(blocks.active_blocks_or_waves, 16);
  EXPECT_EQ(blocks.limiter, "blocks");
  EXPECT_DOUBLE_EQ(*blocks.fraction, 0.5);
}

TEST(NvidiaOccupancy, ResourcesBeyondTheLimitsCannotRun) {
  Occupancy threads = EstimateNvidiaOccupancy({32, 0, 2048}, Limits("sm_90"));
  EXPECT_EQ(threads.fraction, 0.0);
  EXPECT_EQ(threads.limiter, "threads");
  EXPECT_EQ(threads.explanation, "sm_90: a block of 2048 threads exceeds the 1024 threads per block allowed");
  Occupancy regs = EstimateNvidiaOccupancy({128, 0, 1024}, Limits("sm_90"));
  EXPECT_EQ(regs.fraction, 0.0);
  EXPECT_EQ(regs.limiter, "registers");
  EXPECT_EQ(regs.explanation,
            "sm_90: a block of 1024 threads at 128 registers per thread needs 131072 registers, "
            "more than the 65536 per block");
  Occupancy shared = EstimateNvidiaOccupancy({32, 49153, 128}, Limits("sm_90"));
  EXPECT_EQ(shared.fraction, 0.0);
  EXPECT_EQ(shared.limiter, "shared memory");
}

TEST(NvidiaOccupancy, MissingLimitOrInputGivesNoFraction) {
  ArchLimits limits = Limits("sm_90");
  limits.register_allocation_unit.reset();
  Occupancy occ = EstimateNvidiaOccupancy({32, 0, 256}, limits);
  EXPECT_FALSE(occ.fraction.has_value());
  EXPECT_EQ(occ.limiter, "");
  EXPECT_EQ(occ.explanation, "sm_90: occupancy unknown: the table has no register allocation unit for sm_90");
  Occupancy input = EstimateNvidiaOccupancy({std::nullopt, 0, 256}, Limits("sm_90"));
  EXPECT_FALSE(input.fraction.has_value());
  EXPECT_EQ(input.explanation, "sm_90: occupancy unknown: registers per thread not recorded");
}

TEST(NvidiaOccupancy, KernelWithoutLaunchBoundsAssumesTheDefaultBlock) {
  Kernel kernel;
  kernel.registers = 32;
  kernel.shared_bytes = 0;
  Occupancy occ = EstimateOccupancy(kernel, Limits("sm_90"));
  ASSERT_TRUE(occ.fraction.has_value());
  EXPECT_DOUBLE_EQ(*occ.fraction, 1.0);
  EXPECT_EQ(occ.limiter, "threads");
  EXPECT_NE(occ.explanation.find("256 threads/block"), std::string::npos) << occ.explanation;
  EXPECT_TRUE(occ.explanation.ends_with(" (block size 256 assumed: no launch bounds recorded)")) << occ.explanation;
  kernel.max_threads = 1024;
  EXPECT_EQ(EstimateOccupancy(kernel, Limits("sm_90")).explanation.find("assumed"), std::string::npos);
}

#if GT_HAVE_CUDA_OCCUPANCY
std::pair<int, int> ComputeCapability(const std::string& arch) {
  const int number = std::stoi(arch.substr(3));
  return {number / 10, number % 10};
}

// Compares every NVIDIA entry against NVIDIA's own calculator over a grid of kernels. The
// calculator gets the table's device-level numbers (as cudaDeviceProp would give them) but uses
// its own per-architecture constants for the block limit, register and shared-memory
// granularities and sub-partitions, so this checks those table values as well as the method.
TEST(NvidiaOccupancy, AgreesWithCudaOccupancyCalculator) {
  const std::vector<int> registers = {0, 1, 16, 24, 32, 33, 40, 48, 56, 64, 72, 80, 96, 128, 168, 200, 255};
  const std::vector<int> shared = {0, 1, 100, 1024, 3000, 8192, 12289, 16384, 24000, 32768, 40000, 48128, 49152};
  const std::vector<int> blocks = {1, 32, 33, 64, 96, 128, 160, 192, 256, 288, 384, 512, 640, 768, 1000, 1024};
  size_t compared = 0;
  for (const ArchLimits& limits : AllArchLimits()) {
    if (limits.vendor != GpuVendor::kNvidia) continue;
    cudaOccDeviceProp prop;
    std::tie(prop.computeMajor, prop.computeMinor) = ComputeCapability(limits.arch);
    prop.maxThreadsPerBlock = static_cast<int>(*limits.max_threads_per_block);
    prop.maxThreadsPerMultiprocessor = static_cast<int>(*limits.max_threads_per_sm);
    prop.regsPerBlock = static_cast<int>(*limits.max_registers_per_block);
    prop.regsPerMultiprocessor = static_cast<int>(*limits.registers_per_sm);
    prop.warpSize = static_cast<int>(*limits.warp_size);
    prop.sharedMemPerBlock = *limits.shared_memory_per_block_default_bytes;
    prop.sharedMemPerMultiprocessor = *limits.shared_memory_per_sm_bytes;
    prop.numSms = 1;
    prop.sharedMemPerBlockOptin = *limits.shared_memory_per_block_optin_bytes;
    prop.reservedSharedMemPerBlock = *limits.shared_memory_reserved_per_block_bytes;
    for (int regs : registers) {
      for (int smem : shared) {
        for (int block : blocks) {
          cudaOccFuncAttributes attr;
          attr.maxThreadsPerBlock = 1024;
          attr.numRegs = regs;
          attr.sharedSizeBytes = static_cast<size_t>(smem);
          attr.numBlockBarriers = 1;
          cudaOccDeviceState state;
          cudaOccResult want{};
          ASSERT_EQ(cudaOccMaxActiveBlocksPerMultiprocessor(&want, &prop, &attr, &state, block, 0), CUDA_OCC_SUCCESS)
              << limits.arch;
          const Occupancy got = EstimateNvidiaOccupancy(
              {static_cast<uint32_t>(regs), static_cast<uint32_t>(smem), static_cast<uint32_t>(block)}, limits);
          const std::string where = limits.arch + " regs " + std::to_string(regs) + " smem " + std::to_string(smem) +
                                    " block " + std::to_string(block);
          ASSERT_TRUE(got.fraction.has_value()) << where << ": " << got.explanation;
          ASSERT_EQ(got.active_blocks_or_waves, want.activeBlocksPerMultiprocessor) << where << ": " << got.explanation;
          unsigned bit = got.limiter == "registers"       ? OCC_LIMIT_REGISTERS
                         : got.limiter == "shared memory" ? OCC_LIMIT_SHARED_MEMORY
                         : got.limiter == "blocks"        ? OCC_LIMIT_BLOCKS
                                                          : OCC_LIMIT_WARPS;
          ASSERT_NE(want.limitingFactors & bit, 0u)
              << where << ": we say " << got.limiter << ", the calculator's factors are " << want.limitingFactors;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 12u * 17 * 13 * 16);
}
#else
TEST(NvidiaOccupancy, AgreesWithCudaOccupancyCalculator) {
  GTEST_SKIP() << "cuda_occupancy.h not found (/usr/local/cuda/include); define "
                  "GT_CUDA_OCCUPANCY_HEADER to point at it";
}
#endif

// -------------------------------------------------------------------------------------- AMD

// Expected occupancies from LLVM's own test, llvm/test/CodeGen/AMDGPU/occupancy-levels.ll
// (llvm-project 010bcc5c132f0236f61fb19a604da11d9337baca), the "; Occupancy: N" llc reports:
// https://github.com/llvm/llvm-project/blob/main/llvm/test/CodeGen/AMDGPU/occupancy-levels.ll
// The used_N_vgprs kernels have "amdgpu-flat-work-group-size"="1,32", no LDS and few SGPRs; the
// triple there is plain amdgcn, so no trap-handler SGPRs.
TEST(AmdOccupancy, VgprLimitsMatchLlvmOccupancyLevelsTest) {
  const std::vector<uint32_t> vgprs = {24, 28, 32, 36,  40,  44,  48,  56,  64,  72, 80,
                                       84, 88, 96, 100, 112, 128, 144, 168, 200, 256};
  struct Case {
    const char* arch;
    uint32_t wave;
    std::vector<int> waves;  // per entry of `vgprs`; the check prefix of the .ll file in the comment
  };
  // clang-format off
  const std::vector<Case> cases = {
      {"gfx900", 64, {10, 9, 8, 7, 6, 5, 5, 4, 4, 3, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1}},         // GFX9
      {"gfx950", 64, {8, 8, 8, 8, 8, 8, 8, 8, 8, 7, 6, 5, 5, 5, 4, 4, 4, 3, 3, 2, 2}},          // GFX950
      {"gfx1030", 64, {16, 16, 16, 12, 12, 10, 10, 9, 8, 7, 6, 5, 5, 5, 4, 4, 4, 3, 3, 2, 2}},  // GFX1030W64
      {"gfx1030", 32, {16, 16, 16, 16, 16, 16, 16, 16, 16, 12, 12, 10, 10, 10, 9, 9, 8, 7, 5, 4, 4}},  // GFX1030W32
      {"gfx1100", 64, {16, 16, 16, 16, 16, 16, 16, 12, 10, 10, 9, 9, 8, 8, 7, 6, 5, 5, 4, 3, 2}},      // GFX1100W64
      {"gfx1100", 32, {16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 12, 12, 10, 10, 9, 7, 5}},  // GFX1100W32
      {"gfx1101", 32, {16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 12, 12, 10, 10, 9, 7, 5}},  // GFX1100W32
      {"gfx1200", 64, {16, 16, 16, 16, 16, 16, 16, 12, 10, 10, 9, 9, 8, 8, 7, 6, 5, 5, 4, 3, 2}},      // GFX1100W64
  };
  // clang-format on
  for (const Case& c : cases) {
    const std::vector<int>& want = c.waves;
    ASSERT_EQ(want.size(), vgprs.size());
    for (size_t i = 0; i < vgprs.size(); ++i) {
      AmdKernelResources k;
      k.vgprs = vgprs[i];
      k.sgprs = 16;
      k.lds_bytes = 0;
      k.workgroup_size = 32;
      k.wavefront_size = c.wave;
      k.trap_handler = false;
      const Occupancy got = EstimateAmdOccupancy(k, Limits(c.arch));
      EXPECT_EQ(got.active_blocks_or_waves, want[i])
          << c.arch << " wave" << c.wave << " " << vgprs[i] << " VGPRs: " << got.explanation;
    }
  }
}

TEST(AmdOccupancy, SgprLimitsMatchLlvmOccupancyLevelsTest) {
  // used_80/88/100/101_sgprs on gfx900: GFX9 (plain amdgcn) and GFX9TRAP (amdhsa, the trap
  // handler reserves 16 SGPRs per wave). gfx1030 (GFX1030): SGPRs never limit.
  const std::vector<std::tuple<uint32_t, int, int>> cases = {{80, 10, 8}, {88, 8, 7}, {100, 7, 6}, {101, 7, 6}};
  for (const auto& [sgprs, plain, trap] : cases) {
    AmdKernelResources k;
    k.vgprs = 8;
    k.sgprs = sgprs;
    k.lds_bytes = 0;
    k.workgroup_size = 32;
    k.wavefront_size = 64;
    k.trap_handler = false;
    EXPECT_EQ(EstimateAmdOccupancy(k, Limits("gfx900")).active_blocks_or_waves, plain) << sgprs;
    k.trap_handler = true;
    Occupancy with_trap = EstimateAmdOccupancy(k, Limits("gfx900"));
    EXPECT_EQ(with_trap.active_blocks_or_waves, trap) << sgprs;
    EXPECT_EQ(with_trap.limiter, "SGPRs");
    k.wavefront_size = 32;
    EXPECT_EQ(EstimateAmdOccupancy(k, Limits("gfx1030")).active_blocks_or_waves, 16) << sgprs;
  }
}

TEST(AmdOccupancy, WorkgroupAndLdsLimitsMatchLlvmOccupancyLevelsTest) {
  // used_lds_8252_max_group_size_<N>: 8252 B of LDS, "amdgpu-flat-work-group-size"="1,<N>".
  struct Row {
    uint32_t workgroup;
    int gfx900, gfx950, gfx1030_w64, gfx1030_w32, gfx1100_w64, gfx1100_w32;
  };
  // clang-format off
  const std::vector<Row> rows = {
      {64, 2, 5, 4, 8, 4, 8},       {96, 4, 8, 8, 12, 8, 12},     {128, 4, 8, 8, 15, 8, 15},
      {192, 6, 8, 12, 15, 12, 15},  {256, 7, 8, 15, 16, 15, 16},  {512, 10, 8, 16, 16, 16, 16},
      {1024, 8, 8, 16, 16, 16, 16}, {32, 2, 5, 4, 4, 4, 4},
  };
  // clang-format on
  auto waves = [](const char* arch, uint32_t wave, uint32_t workgroup) {
    AmdKernelResources k;
    k.vgprs = 8;
    k.sgprs = 16;
    k.lds_bytes = 8252;
    k.workgroup_size = workgroup;
    k.wavefront_size = wave;
    k.trap_handler = false;
    return EstimateAmdOccupancy(k, Limits(arch)).active_blocks_or_waves;
  };
  for (const Row& r : rows) {
    EXPECT_EQ(waves("gfx900", 64, r.workgroup), r.gfx900) << r.workgroup;
    EXPECT_EQ(waves("gfx950", 64, r.workgroup), r.gfx950) << r.workgroup;
    EXPECT_EQ(waves("gfx1030", 64, r.workgroup), r.gfx1030_w64) << r.workgroup;
    EXPECT_EQ(waves("gfx1030", 32, r.workgroup), r.gfx1030_w32) << r.workgroup;
    EXPECT_EQ(waves("gfx1100", 64, r.workgroup), r.gfx1100_w64) << r.workgroup;
    EXPECT_EQ(waves("gfx1100", 32, r.workgroup), r.gfx1100_w32) << r.workgroup;
    EXPECT_EQ(waves("gfx1200", 32, r.workgroup), r.gfx1100_w32) << r.workgroup;
  }
  // used_lds_6552 with the default 1024-wide workgroup: 8 on GFX9 (two 16-wave workgroups fit
  // the 40 wave slots), 16 on gfx1030 wave32.
  AmdKernelResources k;
  k.vgprs = 8;
  k.sgprs = 16;
  k.lds_bytes = 6552;
  k.workgroup_size = 1024;
  k.wavefront_size = 64;
  k.trap_handler = false;
  EXPECT_EQ(EstimateAmdOccupancy(k, Limits("gfx900")).active_blocks_or_waves, 8);
  k.wavefront_size = 32;
  EXPECT_EQ(EstimateAmdOccupancy(k, Limits("gfx1030")).active_blocks_or_waves, 16);
}

// AMD's worked example on an MI250 (gfx90a), with measured occupancy: rocprofiler-compute
// (Omniperf) "Occupancy limiters example",
// https://github.com/ROCm/omniperf/blob/main/docs/tutorial/includes/occupancy-limiters-example.rst
// (rocm.docs.amd.com/projects/omniperf, tutorial). HIP code objects are amdhsa: trap handler on.
TEST(AmdOccupancy, MatchesAmdMi250OccupancyLimitersExample) {
  // vgprbound: "NumSgprs: 68, NumVgprs: 122, NumAgprs: 0", __launch_bounds__(256); measured
  // wavefront occupancy 1661.24 of 3328 = 49.92%, limited by "Insufficient SIMD VGPRs".
  AmdKernelResources vgpr_bound{122, 0, 68, 0, 256, 64, true};
  Occupancy vgpr = EstimateAmdOccupancy(vgpr_bound, Limits("gfx90a"));
  ASSERT_TRUE(vgpr.fraction.has_value());
  EXPECT_DOUBLE_EQ(*vgpr.fraction, 0.5);
  EXPECT_EQ(vgpr.active_blocks_or_waves, 4);
  EXPECT_EQ(vgpr.limiter, "VGPRs");
  EXPECT_EQ(vgpr.explanation,
            "gfx90a: wave64, workgroup 256 (4 waves), 122 VGPRs, 0 B LDS: 4 of 8 waves per SIMD, "
            "50%; waves per SIMD by VGPRs 4 (122 -> 128 of 512), SGPRs 8 (68 -> 80 + 16 trap "
            "handler of 800), workgroups 8 (8 workgroups per CU by wave slots and barriers, no "
            "limit by LDS)");
  // ldsbound: 64 KiB LDS per 256-wide workgroup, 96 VGPRs and 80 SGPRs allocated; measured
  // 415.52 of 3328 = 12.49%, limited by "Insufficient CU LDS".
  AmdKernelResources lds_bound{96, 0, 80, 65536, 256, 64, true};
  Occupancy lds = EstimateAmdOccupancy(lds_bound, Limits("gfx90a"));
  EXPECT_DOUBLE_EQ(*lds.fraction, 0.125);
  EXPECT_EQ(lds.limiter, "LDS");
  // sgprbound: __launch_bounds__(1024, 8), "NumSgprs: 76, NumVgprs: 64", compiler "Occupancy: 8";
  // measured 3291.76 of 3328 = 98.91%.
  AmdKernelResources sgpr_bound{64, 0, 76, 0, 1024, 64, true};
  Occupancy full = EstimateAmdOccupancy(sgpr_bound, Limits("gfx90a"));
  EXPECT_DOUBLE_EQ(*full.fraction, 1.0);
  EXPECT_EQ(full.active_blocks_or_waves, 8);
  EXPECT_EQ(full.limiter, "waves");
}

TEST(AmdOccupancy, AgprsAndLimitsBeyondTheArchitecture) {
  // gfx908: AGPRs are a separate 256-register file; max(VGPRs, AGPRs) counts (LLVM).
  AmdKernelResources k{40, 100, 32, 0, 64, 64, true};
  EXPECT_EQ(EstimateAmdOccupancy(k, Limits("gfx908")).active_blocks_or_waves, 2);  // 256 / 100
  Occupancy big = EstimateAmdOccupancy({40, 0, 32, 0, 2048, 64, true}, Limits("gfx90a"));
  EXPECT_EQ(big.fraction, 0.0);
  EXPECT_EQ(big.limiter, "threads");
  EXPECT_EQ(big.explanation, "gfx90a: a workgroup of 2048 work-items exceeds the 1024 allowed");
  Occupancy lds = EstimateAmdOccupancy({40, 0, 32, 70000, 256, 64, true}, Limits("gfx90a"));
  EXPECT_EQ(lds.fraction, 0.0);
  EXPECT_EQ(lds.limiter, "LDS");
}

TEST(AmdOccupancy, MissingLimitOrInputGivesNoFraction) {
  ArchLimits limits = Limits("gfx1100");
  limits.vgpr_alloc_granule.erase(32);
  Occupancy occ = EstimateAmdOccupancy({64, 0, 32, 0, 256, 32, true}, limits);
  EXPECT_FALSE(occ.fraction.has_value());
  EXPECT_EQ(occ.limiter, "");
  EXPECT_EQ(occ.explanation,
            "gfx1100: occupancy unknown: the table has no VGPR allocation granule for wave32 for "
            "gfx1100");
  // wave64 still has its granule.
  EXPECT_TRUE(EstimateAmdOccupancy({64, 0, 32, 0, 256, 64, true}, limits).fraction.has_value());
  // gfx1100 runs wave32 and wave64: without the code object's wavefront size it is unknown.
  Occupancy wave = EstimateAmdOccupancy({64, 0, 32, 0, 256, std::nullopt, true}, Limits("gfx1100"));
  EXPECT_EQ(wave.explanation, "gfx1100: occupancy unknown: wavefront size not recorded");
  Occupancy wrong = EstimateAmdOccupancy({64, 0, 32, 0, 256, 32, true}, Limits("gfx90a"));
  EXPECT_EQ(wrong.explanation, "gfx90a: occupancy unknown: wavefront size 32 is not one the table lists for gfx90a");
}

TEST(AmdOccupancy, InspectedKernelUsesItsMetadata) {
  Kernel kernel;
  kernel.vgpr_count = 122;
  kernel.agpr_count = 0;
  kernel.sgpr_count = 68;
  kernel.lds_bytes = 0;
  kernel.wavefront_size = 64;
  kernel.max_workgroup_size = 256;
  Occupancy occ = EstimateOccupancy(kernel, Limits("gfx90a"));
  ASSERT_TRUE(occ.fraction.has_value());
  EXPECT_DOUBLE_EQ(*occ.fraction, 0.5);
  kernel.max_workgroup_size.reset();
  EXPECT_TRUE(EstimateOccupancy(kernel, Limits("gfx90a"))
                  .explanation.ends_with(" (workgroup size 256 assumed: no maximum workgroup size recorded)"));
}

}  // namespace
}  // namespace gputriage::inspect
