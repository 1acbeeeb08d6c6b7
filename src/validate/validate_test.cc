// The parts of `validate` that run without a GPU: the real HIP runtime's no-device path (Debian's
// libamdhip64 on a machine with no AMD GPU), the CUDA backend without a driver, the whole run
// turning into skips with the reason, bad options as error checks, the findings, and the
// determinism comparison.
#include "validate/validate.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "capture_tree.h"
#include "validate/checks.h"
#include "validate/device.h"
#include "validate/vendor_libs.h"

namespace gputriage::validate {
namespace {

bool Loadable(const char* soname) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) dlclose(handle);
  return handle != nullptr;
}

TEST(Backends, HipRuntimeWithoutAnAmdGpuSaysSo) {
  if (!Loadable("libamdhip64.so") && !Loadable("libamdhip64.so.5") && !Loadable("libamdhip64.so.6")) {
    GTEST_SKIP() << "libamdhip64 is not installed (scripts/install-deps installs Debian's)";
  }
  auto backend = LoadHipBackend();
  if (backend.ok()) GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_EQ(backend.error().code, core::ErrorCode::kNotFound) << backend.error().message;
  // The real runtime's own answer, named: hipInit's error from the library it loaded.
  EXPECT_NE(backend.error().message.find("hipInit"), std::string::npos) << backend.error().message;
  EXPECT_NE(backend.error().message.find("libamdhip64"), std::string::npos) << backend.error().message;
}

TEST(Backends, CudaWithoutADriverSaysWhichLibraryIsMissing) {
  if (Loadable("libcuda.so.1")) GTEST_SKIP() << "this machine has the CUDA driver";
  auto backend = LoadCudaBackend();
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.error().message.find("libcuda.so.1"), std::string::npos) << backend.error().message;
}

TEST(RunValidate, NoGpuMakesEveryCheckASkipWithTheReason) {
  ValidateOptions options;
  options.ops = {"gemm", "atomics", "memory_pattern"};
  core::ValidationReport report = RunValidate(options, {});
  if (report.devices_found > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_TRUE(report.devices.empty());
  ASSERT_EQ(report.checks.size(), 4u + 4u + 1u);  // gemm x 4 dtypes, atomics x 4, memory_pattern
  for (const core::ValidationCheck& check : report.checks) {
    EXPECT_EQ(check.status, core::CheckStatus::kSkip) << check.name;
    EXPECT_EQ(check.detail.rfind("no usable GPU: ", 0), 0u) << check.detail;
    EXPECT_EQ(check.device, -1);
  }
  EXPECT_EQ(report.notes.size(), 2u);  // why neither CUDA nor HIP has a device
  EXPECT_TRUE(report.findings.empty());
}

TEST(RunValidate, UnknownOpsAndDtypesAreErrorsAndTheOthersStillRun) {
  ValidateOptions options;
  options.ops = {"gemm", "matmul"};
  options.dtypes = {"fp16", "fp8"};
  core::ValidationReport report = RunValidate(options, {});
  ASSERT_GE(report.checks.size(), 3u);
  EXPECT_EQ(report.checks[0].name, "matmul");
  EXPECT_EQ(report.checks[0].status, core::CheckStatus::kError);
  EXPECT_NE(report.checks[0].detail.find("known: gemm, conv2d"), std::string::npos) << report.checks[0].detail;
  EXPECT_EQ(report.checks[1].dtype, "fp8");
  EXPECT_EQ(report.checks[1].status, core::CheckStatus::kError);
  bool gemm = false;
  for (const core::ValidationCheck& check : report.checks) gemm = gemm || check.name == "gemm";
  EXPECT_TRUE(gemm);
}

TEST(Ops, StressOnlyAtLevelThree) {
  auto has = [](const std::vector<std::string>& ops, const std::string& op) {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  };
  EXPECT_FALSE(has(OpsForLevel(1), "stress_gemm"));
  EXPECT_FALSE(has(OpsForLevel(2), "stress_bandwidth"));
  EXPECT_TRUE(has(OpsForLevel(3), "stress_gemm"));
  EXPECT_TRUE(has(OpsForLevel(1), "conv2d"));
  EXPECT_EQ(KnownOps().size(), OpsForLevel(3).size());
}

core::ValidationCheck Passed(const std::string& name, int device, double throughput) {
  core::ValidationCheck check;
  check.name = name;
  check.device = device;
  check.dtype = "bf16";
  check.status = core::CheckStatus::kPass;
  check.throughput = throughput;
  check.throughput_unit = "TFLOP/s";
  return check;
}

TEST(Findings, FailuresSlowGpusAndThrottling) {
  core::ValidationReport report;
  report.level = 3;
  report.devices.resize(4);
  core::ValidationCheck failed = Passed("gemm", 0, 700);
  failed.status = core::CheckStatus::kFail;
  failed.detail = "1000x1000x1000: max relative error 3 > tolerance 0.06";
  report.checks = {failed, Passed("stress_gemm", 0, 700), Passed("stress_gemm", 1, 690), Passed("stress_gemm", 2, 705),
                   Passed("stress_gemm", 3, 450)};
  report.checks[4].fraction_of_peak = 0.45;
  core::TelemetrySample hot;
  hot.device = 2;
  hot.throttle_reasons = {"sw_power_cap", "hw_thermal_slowdown"};
  core::TelemetrySample capped;
  capped.device = 1;
  capped.throttle_reasons = {"sw_power_cap"};
  report.telemetry = {hot, capped};
  std::vector<core::Finding> findings = ValidationFindings(report);
  auto find = [&](const std::string& id, int device) -> const core::Finding* {
    for (const core::Finding& f : findings) {
      if (f.id == id && f.title.find("GPU " + std::to_string(device)) != std::string::npos) return &f;
    }
    return nullptr;
  };
  const core::Finding* gemm = find("validate-gemm-failed", 0);
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->severity, core::Severity::kError);
  EXPECT_EQ(gemm->detail, failed.detail);
  const core::Finding* slow = find("validate-slower-than-siblings", 3);
  ASSERT_NE(slow, nullptr);
  EXPECT_NE(slow->title.find("36% slower"), std::string::npos) << slow->title;  // 450 against a median of 700
  EXPECT_EQ(find("validate-slower-than-siblings", 1), nullptr);
  EXPECT_NE(find("validate-slow-stress_gemm", 3), nullptr);  // 45% of the datasheet peak
  const core::Finding* thermal = find("validate-throttling", 2);
  ASSERT_NE(thermal, nullptr);
  EXPECT_EQ(thermal->severity, core::Severity::kWarning);
  const core::Finding* power = find("validate-throttling", 1);
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(power->severity, core::Severity::kInfo);  // holding the power limit under full load is normal
}

TEST(CompareRuns, BitwiseWithTheCountAndTheLargestDifference) {
  std::vector<unsigned char> a = Encode({1, 2, 3, 4}, Dtype::kF32);
  EXPECT_EQ(CompareRuns({a, a, a}, Dtype::kF32), "");
  std::vector<unsigned char> b = Encode({1, 2.5, 3, 4.25}, Dtype::kF32);
  std::string diff = CompareRuns({a, a, b}, Dtype::kF32);
  EXPECT_NE(diff.find("2 of 4 elements"), std::string::npos) << diff;
  EXPECT_NE(diff.find("max difference 0.5"), std::string::npos) << diff;
  // -0.0 and +0.0 compare equal as numbers but not bitwise: still a difference.
  std::string zeros = CompareRuns({Encode({0.0}, Dtype::kF32), Encode({-0.0}, Dtype::kF32)}, Dtype::kF32);
  EXPECT_NE(zeros.find("1 of 1"), std::string::npos) << zeros;
}

TEST(VendorLibraryDirs, ToolkitAndPipWheelDirectories) {
  gputriage::testing::TempDir tmp;
  std::filesystem::create_directories(tmp / "cuda/lib64");
  std::filesystem::create_directories(tmp / "venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
  setenv("CUDA_HOME", (tmp / "cuda").c_str(), 1);
  setenv("VIRTUAL_ENV", (tmp / "venv").c_str(), 1);
  std::vector<std::string> dirs = VendorLibraryDirs("nvidia");
  unsetenv("CUDA_HOME");
  unsetenv("VIRTUAL_ENV");
  ASSERT_GE(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], tmp / "cuda/lib64");
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), tmp / "venv/lib/python3.11/site-packages/nvidia/cudnn/lib"),
            dirs.end());
  for (const std::string& dir : VendorLibraryDirs("amd")) EXPECT_TRUE(std::filesystem::is_directory(dir)) << dir;
}

TEST(OpenVendorLibrary, FoundInAToolkitDirectoryElseEveryPlaceNamed) {
  auto missing = OpenVendorLibrary({"libgputriage-no-such-blas.so.99"}, "nvidia");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, core::ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("libgputriage-no-such-blas.so.99 not found"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("LD_LIBRARY_PATH"), std::string::npos);
  // A real library under a name the loader does not know, in $CUDA_HOME/lib64: found there.
  void* zlib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (zlib == nullptr) GTEST_SKIP() << "no libz.so.1 to copy";
  Dl_info info{};
  ASSERT_NE(dladdr(dlsym(zlib, "zlibVersion"), &info), 0);
  gputriage::testing::TempDir tmp;
  std::filesystem::create_directories(tmp / "cuda/lib64");
  std::filesystem::copy_file(info.dli_fname, tmp / "cuda/lib64/libgputriage-test-blas.so.1");
  setenv("CUDA_HOME", (tmp / "cuda").c_str(), 1);
  auto found = OpenVendorLibrary({"libgputriage-test-blas.so.1"}, "nvidia");
  unsetenv("CUDA_HOME");
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->path(), tmp / "cuda/lib64/libgputriage-test-blas.so.1");
  dlclose(zlib);
}

}  // namespace
}  // namespace gputriage::validate
