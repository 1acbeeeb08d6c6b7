#include "inspect/findings.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace gputriage::inspect {
namespace {

CodeObject Object(std::string vendor, std::string arch, std::string format, std::string target_id = "") {
  CodeObject co;
  co.vendor = std::move(vendor);
  co.arch = arch;
  co.format = std::move(format);
  co.target_id = target_id.empty() ? arch : target_id;
  Kernel k;  // one kernel: an object without kernels decides nothing about coverage
  k.symbol = "kernel_" + arch;
  co.kernels.push_back(k);
  return co;
}

std::vector<std::string> Ids(const std::vector<core::Finding>& findings) {
  std::vector<std::string> out;
  for (const core::Finding& f : findings) out.push_back(f.id);
  return out;
}

TEST(InspectFindings, HsaOverrideValues) {
  EXPECT_EQ(GfxFromOverride("10.3.0"), "gfx1030");
  EXPECT_EQ(GfxFromOverride("11.0.0"), "gfx1100");
  EXPECT_EQ(GfxFromOverride("9.0.10"), "gfx90a");
  EXPECT_EQ(GfxFromOverride("9.0.6"), "gfx906");
  EXPECT_FALSE(GfxFromOverride("10.3"));
  EXPECT_FALSE(GfxFromOverride("gfx1030"));
  EXPECT_FALSE(GfxFromOverride("10.3.0.1"));
  EXPECT_FALSE(GfxFromOverride(""));
}

// CUDA compatibility: SASS of the same major version at or below the device runs; PTX at or
// below it is JIT-compiled; anything else has no kernel image.
TEST(InspectFindings, CudaCoverage) {
  FileFindings f("libx.so");
  f.Add(Object("nvidia", "sm_80", "cubin"));
  f.Add(Object("nvidia", "compute_80", "ptx"));
  EXPECT_TRUE(Ids(f.Finish({{"sm_80", "sm_80", ""}}, std::nullopt)).empty());
  EXPECT_TRUE(Ids(f.Finish({{"sm_86", "sm_86", ""}}, std::nullopt)).empty()) << "sm_80 SASS runs on 8.6";
  EXPECT_EQ(Ids(f.Finish({{"sm_90", "sm_90", "0000:00:06.0"}}, std::nullopt)),
            std::vector<std::string>{"inspect.ptx_only"});
  EXPECT_EQ(Ids(f.Finish({{"sm_75", "sm_75", ""}}, std::nullopt)), std::vector<std::string>{"inspect.missing_arch"});
  FileFindings sass_only("liby.so");
  sass_only.Add(Object("nvidia", "sm_80", "cubin"));
  std::vector<core::Finding> none = sass_only.Finish({{"sm_90", "sm_90", "0000:00:06.0"}}, std::nullopt);
  ASSERT_EQ(Ids(none), std::vector<std::string>{"inspect.missing_arch"});
  EXPECT_EQ(none[0].severity, core::Severity::kError);
  EXPECT_NE(none[0].title.find("no code for the sm_90 (0000:00:06.0) GPU"), std::string::npos) << none[0].title;
  // An AMD GPU says nothing about a CUDA library.
  EXPECT_TRUE(Ids(sass_only.Finish({{"gfx90a", "gfx90a", ""}}, std::nullopt)).empty());
}

// libcufft.so.12 of CUDA 13 (seen on the H100 under PyTorch 2.11): one sm_75 cubin with no kernel.
// It cannot fail with "no kernel image", so it is no error for an sm_90 GPU, and a kernel-less
// object does not count towards coverage either.
TEST(InspectFindings, KernelLessObjectsDecideNoCoverage) {
  CodeObject empty = Object("nvidia", "sm_75", "cubin");
  empty.kernels.clear();
  FileFindings cufft("libcufft.so.12");
  cufft.Add(empty);
  std::vector<core::Finding> got = cufft.Finish({{"sm_90", "sm_90", "0000:00:06.0"}}, std::nullopt);
  ASSERT_EQ(Ids(got), std::vector<std::string>{"inspect.no_kernels"});
  EXPECT_EQ(got[0].severity, core::Severity::kInfo);
  EXPECT_NE(got[0].title.find("1 CUDA code object(s) (sm_75) hold no kernels"), std::string::npos) << got[0].title;
  CodeObject empty90 = Object("nvidia", "sm_90", "cubin");
  empty90.kernels.clear();
  FileFindings mixed("libz.so");
  mixed.Add(empty90);
  mixed.Add(Object("nvidia", "sm_80", "cubin"));
  EXPECT_EQ(Ids(mixed.Finish({{"sm_90", "sm_90", ""}}, std::nullopt)), std::vector<std::string>{"inspect.missing_arch"})
      << "the sm_90 object holds no kernel, so only sm_80 SASS is there for the kernels";
}

// Target ids: the processor must match, and xnack/sramecc where both sides fix them.
TEST(InspectFindings, HipCoverageTargetFeaturesAndOverride) {
  FileFindings f("libhip.so");
  f.Add(Object("amd", "gfx90a", "hsaco-v4", "gfx90a:xnack-"));
  f.Add(Object("amd", "gfx1030", "hsaco-v4", "gfx1030"));
  EXPECT_TRUE(Ids(f.Finish({{"gfx90a", "gfx90a:sramecc+:xnack-", ""}}, std::nullopt)).empty());
  EXPECT_EQ(Ids(f.Finish({{"gfx90a", "gfx90a:sramecc+:xnack+", ""}}, std::nullopt)),
            std::vector<std::string>{"inspect.target_feature_mismatch"});
  EXPECT_EQ(Ids(f.Finish({{"gfx1100", "gfx1100", ""}}, std::nullopt)),
            std::vector<std::string>{"inspect.missing_arch"});
  // gfx1031 has no code here; HSA_OVERRIDE_GFX_VERSION=10.3.0 makes the runtime load gfx1030's.
  EXPECT_EQ(Ids(f.Finish({{"gfx1031", "gfx1031", ""}}, std::string("10.3.0"))),
            std::vector<std::string>{"inspect.hsa_override"});
  // Overriding a gfx9 GPU to wave32 RDNA code.
  FileFindings wave("libw.so");
  CodeObject rdna = Object("amd", "gfx1030", "hsaco-v4", "gfx1030");
  Kernel k;
  k.symbol = "k";
  k.wavefront_size = 32;
  rdna.kernels.push_back(k);
  wave.Add(rdna);
  std::vector<core::Finding> w = wave.Finish({{"gfx906", "gfx906", ""}}, std::string("10.3.0"));
  ASSERT_EQ(Ids(w), std::vector<std::string>{"inspect.hsa_override"});
  EXPECT_NE(w[0].detail.find("wave32"), std::string::npos) << w[0].detail;
}

// A kernel that only an sm_100 cubin carries cannot run on sm_90, even though the file covers
// sm_90 for its other kernels.
TEST(InspectFindings, KernelsWithoutCodeForTheGpu) {
  FileFindings f("libk.so");
  CodeObject sm90 = Object("nvidia", "sm_90", "cubin");
  CodeObject sm100 = Object("nvidia", "sm_100", "cubin");
  Kernel common, blackwell_only;
  common.symbol = "common";
  blackwell_only.symbol = "blackwell_only";
  sm90.kernels = {common};
  sm100.kernels = {common, blackwell_only};
  f.Add(sm90);
  f.Add(sm100);
  std::vector<core::Finding> h200 = f.Finish({{"sm_90", "sm_90", ""}}, std::nullopt);
  ASSERT_EQ(Ids(h200), std::vector<std::string>{"inspect.kernels_missing_for_gpu"});
  EXPECT_NE(h200[0].title.find("1 kernel(s) have code for other architectures"), std::string::npos) << h200[0].title;
  EXPECT_NE(h200[0].detail.find("First: blackwell_only."), std::string::npos) << h200[0].detail;
  EXPECT_TRUE(Ids(f.Finish({{"sm_100", "sm_100", ""}}, std::nullopt)).empty());
}

TEST(InspectFindings, KernelResourceFindings) {
  FileFindings f("libk.so");
  CodeObject amd = Object("amd", "gfx90a", "hsaco-v4", "gfx90a");
  Kernel spill;
  spill.symbol = "spilly";
  spill.vgpr_spill_count = 12;
  Kernel lds;
  lds.symbol = "lds";
  lds.lds_bytes = 65536;
  amd.kernels = {spill, lds};
  CodeObject nv = Object("nvidia", "sm_90", "cubin");
  Kernel bounds;
  bounds.symbol = "wide";
  bounds.max_threads = 2048;
  Kernel ok;
  ok.symbol = "fine";
  ok.registers = 32;
  ok.shared_bytes = 1024;
  ok.local_bytes = 0;
  nv.kernels = {bounds, ok};
  f.Add(amd);
  f.Add(nv);
  CodeObject broken = Object("nvidia", "sm_80", "cubin");
  broken.error = "cannot decompress: LZ4: corrupt block";
  f.Add(broken);
  std::vector<std::string> ids = Ids(f.Finish({}, std::nullopt));
  EXPECT_EQ(ids, (std::vector<std::string>{"inspect.unreadable_objects", "inspect.register_spills",
                                           "inspect.lds_near_limit", "inspect.launch_bounds_over_limit"}));
}

}  // namespace
}  // namespace gputriage::inspect

namespace gputriage::inspect {
namespace {

#ifdef GT_CUDA_INPUTS_DIR
// doctor's check: the snapshot points at PyTorch's library directory; its libtorch_cuda.so (here
// an nvcc-built object with sm_80 + sm_90 SASS and compute_90 PTX, under that name) is checked
// against the snapshot's GPUs from the fatbin headers alone.
TEST(InspectFindings, LibraryCoverageForDoctor) {
  std::string dir = ::testing::TempDir() + "/gputriage-coverage-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(GT_CUDA_INPUTS_DIR) + "/fatbin-size.o", dir + "/libtorch_cuda.so",
                             std::filesystem::copy_options::overwrite_existing);
  auto snapshot = [&](const std::string& cc) {
    core::Snapshot s;
    core::Gpu gpu;
    gpu.pci_address = "0000:00:06.0";
    gpu.nvidia = core::NvidiaGpu{};
    gpu.nvidia->compute_capability = cc;
    s.gpus = {gpu};
    s.software = core::Software{};
    s.software->python = core::PythonSoftware{};
    s.software->python->torch = core::TorchInstall{};
    s.software->python->torch->lib_dir = dir;
    return s;
  };
  std::vector<core::Finding> h200 = LibraryCoverageFindings(snapshot("9.0"));
  ASSERT_EQ(h200.size(), 1u);
  EXPECT_EQ(h200[0].id, "inspect.coverage_ok");
  EXPECT_EQ(h200[0].severity, core::Severity::kInfo);
  std::vector<core::Finding> turing = LibraryCoverageFindings(snapshot("7.5"));
  ASSERT_EQ(turing.size(), 1u);
  EXPECT_EQ(turing[0].id, "inspect.missing_arch");
  EXPECT_NE(turing[0].title.find(dir + "/libtorch_cuda.so: no code for the sm_75"), std::string::npos)
      << turing[0].title;
  std::vector<core::Finding> blackwell = LibraryCoverageFindings(snapshot("12.0"));
  ASSERT_EQ(blackwell.size(), 1u);
  EXPECT_EQ(blackwell[0].id, "inspect.ptx_only");
  core::Snapshot no_lib = snapshot("7.5");
  no_lib.software->python->torch->lib_dir = dir + "/absent";
  EXPECT_TRUE(LibraryCoverageFindings(no_lib).empty());
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace gputriage::inspect
