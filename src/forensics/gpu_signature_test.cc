#include "forensics/gpu_signature.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "catalog/catalog.h"
#include "core/text.h"

namespace gputriage::forensics {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GT_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const catalog::ErrorCodes& CatalogErrors() { return catalog::BuiltinCatalog().value()->errors; }

SignatureScanner Scan(const std::string& text) {
  SignatureScanner s(CatalogErrors());
  for (std::string_view line : core::Split(text, '\n')) s.Line(line);
  return s;
}

TEST(ErrorTables, LoadCleanAndResolveNamesMessagesAndDriverNames) {
  const ErrorCode* c = CatalogErrors().FindByName("cudaErrorIllegalAddress");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->value, 700);
  EXPECT_EQ(c->category, core::Category::kIllegalAddress);
  EXPECT_EQ(CatalogErrors().FindByName("CUDA_ERROR_ILLEGAL_ADDRESS"), c);
  EXPECT_EQ(CatalogErrors().FindByMessage("cuda", " An illegal memory access was encountered "), c);
  const ErrorCode* hip = CatalogErrors().FindByName("hipErrorNoBinaryForGpu");
  ASSERT_NE(hip, nullptr);
  EXPECT_EQ(hip->vendor, "hip");
  EXPECT_EQ(hip->category, core::Category::kArchMismatch);
  EXPECT_EQ(CatalogErrors().FindByName("cudaErrorMadeUp"), nullptr);
  EXPECT_EQ(CatalogErrors().FindByMessage("cuda", "no such message"), nullptr);
}

TEST(KernelName, DropsReturnTypeArgumentsAndOffset) {
  EXPECT_EQ(KernelName("col_kernel(const unsigned int *, unsigned int *, unsigned int, float)+0x490"), "col_kernel");
  EXPECT_EQ(KernelName("0x3b0 in void device_bootstrap<unsigned long,Degree<int=2048>>(unsigned long*)"),
            "device_bootstrap<unsigned long,Degree<int=2048>>");
  EXPECT_EQ(KernelName("void at::native::vectorized_elementwise_kernel<4, "
                       "at::native::f(at::TensorIteratorBase&)::{lambda(c10::Half)#1}, "
                       "std::array<char*, 2ul> >(int, float)"),
            "at::native::vectorized_elementwise_kernel<4, "
            "at::native::f(at::TensorIteratorBase&)::{lambda(c10::Half)#1}, std::array<char*, 2ul> >");
  EXPECT_EQ(KernelName("indexFuncSmallIndex"), "indexFuncSmallIndex");
}

// Real stderr of tests/gpu/torch_index_add_assert.py on the H200: the device assert names the
// kernel, PyTorch's message names the error.
TEST(SignatureScanner, TorchDeviceAssertOnTheH200) {
  SignatureScanner s = Scan(Fixture("run/h200-torch-index-add-assert.stderr.txt"));
  GpuSignature g = s.Finish({"sm_90"}, {{"torch", "2.11.0"}, {"cuda", "13.0"}});
  EXPECT_EQ(g.error, "cudaErrorAssert");
  EXPECT_EQ(g.error_category, core::Category::kDeviceAssert);
  EXPECT_EQ(g.kernel, "indexFuncSmallIndex");
  EXPECT_EQ(g.Key(), "cudaErrorAssert in indexFuncSmallIndex on sm_90 (torch 2.11.0, cuda 13.0)");
  EXPECT_TRUE(s.WantedPattern().empty()) << "it has an error and a kernel";
}

TEST(SignatureScanner, ComputeSanitizerNamesTheKernel) {
  SignatureScanner s = Scan(Fixture("compute-sanitizer/memcheck-cuda12.9-rtx-a6000-col-kernel-access-at-excerpt.txt"));
  GpuSignature g = s.Finish({}, {});
  EXPECT_EQ(g.kernel, "col_kernel");
}

TEST(SignatureScanner, HipRuntimeLogNamesTheErrorAndTheShader) {
  SignatureScanner s =
      Scan(Fixture("hip-runtime/amd-log-level3-rocm5.x-pid-colon-tid-format-hipErrorNoBinaryForGpu-gfx1030.txt"));
  EXPECT_EQ(s.Finish({}, {}).error, "hipErrorNoBinaryForGpu");
  SignatureScanner shader = Scan(Fixture(
      "hip-runtime/"
      "amd-log-level5-rocm7.x-therock-pid-tid-space-format-memcpy-sdma-launchkernel-args-shadername-excerpt.txt"));
  EXPECT_EQ(shader.Finish({}, {}).kernel.rfind("at::native::vectorized_elementwise_kernel<4,", 0), 0u);
}

TEST(SignatureScanner, FirstErrorWinsAndKernelLogEventsAreTheFallback) {
  SignatureScanner s = Scan(
      "[  123.4] NVRM: Xid (PCI:0000:00:06): 31, pid=719, name=python3, channel 0x0000000a\n"
      "RuntimeError: CUDA error: an illegal memory access was encountered\n"
      "RuntimeError: CUDA error: unspecified launch failure\n");
  EXPECT_EQ(s.Finish({}, {}).error, "cudaErrorIllegalAddress");
  SignatureScanner xid =
      Scan("[  123.4] NVRM: Xid (PCI:0000:00:06): 79, pid=719, name=python3, GPU has fallen off the bus.\n");
  GpuSignature g = xid.Finish({}, {});
  EXPECT_EQ(g.error, "Xid 79");
  EXPECT_EQ(g.Key(), "Xid 79");
  SignatureScanner nothing = Scan("all fine\n");
  EXPECT_TRUE(nothing.Finish({}, {}).empty());
  EXPECT_EQ(nothing.Finish({}, {}).Key(), "");
  EXPECT_FALSE(nothing.WantedPattern().empty());
}

TEST(NormalizeLine, BlanksWhatVariesBetweenRunsOfTheSameFailure) {
  EXPECT_EQ(
      NormalizeLine(
          "[  199.015019] amdgpu 0000:07:00.0: amdgpu: [gfxhub0] page fault (src_id:0 ring:173 vmid:8 pasid:32772)"),
      "amdgpu N:N:N.N: amdgpu: [gfxhubN] page fault (src_id:N ring:N vmid:N pasid:N)");
  EXPECT_EQ(NormalizeLine("\x1b[31mRuntimeError\x1b[0m: shape (3, 4) vs (4, 3) at 0x7f12abcd0000, 2.00 GiB"),
            "RuntimeError: shape SHAPE vs SHAPE at X, SIZE");
  EXPECT_EQ(NormalizeLine("Dec  2 10:00:01 host kernel: NVRM: Xid (PCI:0000:00:06): 43, pid=719, name=python3"),
            "NVRM: Xid (PCI:N:N:N): N, pid=N, name=pythonN");
  // dmesg -T (ctime) timestamps.
  EXPECT_EQ(NormalizeLine("[Fri Mar  3 04:27:08 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=1346198, name=nvidia-smi"),
            "NVRM: Xid (PCI:N:N:N): N, pid=N, name=nvidia-smi");
}

}  // namespace
}  // namespace gputriage::forensics
