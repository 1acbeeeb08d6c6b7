#include "forensics/sanitizer_report.h"

#include <gtest/gtest.h>

#include "capture_tree.h"

namespace gputriage::forensics {
namespace {

SanitizerReport Parse(const std::string& fixture) {
  return ParseSanitizerReport(testing::ReadCapture("compute-sanitizer/" + fixture));
}

TEST(SanitizerReport, CurrentFormatWithNearestAllocationAndHostFrames) {
  SanitizerReport r = Parse("memcheck-cuda12.9-rtx-a6000-access-at-bytes-after-nearest-allocation-host-frame-in.txt");
  ASSERT_EQ(r.errors.size(), 1u);
  const core::SanitizerError& e = r.errors[0];
  EXPECT_EQ(e.kind, "Invalid __global__ read");
  EXPECT_EQ(e.access_bytes, 4);
  EXPECT_EQ(e.kernel, "compress(const unsigned int *, const unsigned int *, uint2 *, int)");
  EXPECT_EQ(e.pc_offset, "0xb0");
  EXPECT_EQ(e.thread, (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(e.block, (std::vector<int64_t>{5, 0, 0}));
  EXPECT_EQ(e.address, "0x7f698ba00144");
  EXPECT_EQ(e.problem, "is out of bounds");
  EXPECT_EQ(e.relation, "1 bytes after");
  EXPECT_EQ(e.nearest_allocation, "0x7f698ba00000");
  EXPECT_EQ(e.nearest_allocation_bytes, 324);
  ASSERT_EQ(e.host_frames.size(), 2u);
  EXPECT_EQ(e.host_frames[1], "main in main.cu:688 [0xab50] in main");
  EXPECT_FALSE(r.errors_reported.has_value());
}

TEST(SanitizerReport, OfficialSampleWithThreeErrorsAndTheSummary) {
  SanitizerReport r = Parse("memcheck-invalid-global-write-out-of-bounds-nvtx-3-errors.txt");
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors_reported, 3);
  EXPECT_EQ(r.errors[0].kernel, "Iota(unsigned char*)");
  EXPECT_EQ(r.errors[0].pc_offset, "0x60");
  EXPECT_EQ(r.errors[0].kind, "Invalid __global__ write");
  EXPECT_EQ(r.errors[0].access_bytes, 1);
  EXPECT_EQ(r.errors[0].thread, (std::vector<int64_t>{63, 0, 0}));
  EXPECT_EQ(r.errors[0].address, "0x7f004700004f");
  EXPECT_EQ(r.errors[2].address, "0x7f0047000010");
}

TEST(SanitizerReport, InsideTheNearestAllocationAmongTheJobsOwnOutput) {
  SanitizerReport r = Parse("memcheck-pytorch-expandable-segments-access-to-inside-nearest-allocation-excerpt.txt");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].access_bytes, 256);
  EXPECT_EQ(r.errors[0].kernel, "bulk_copy_range(unsigned char *, int)");
  EXPECT_EQ(r.errors[0].relation, "inside");
  EXPECT_EQ(r.errors[0].nearest_allocation_bytes, 20971520);
  EXPECT_EQ(r.errors[0].host_frames.size(), 3u);
}

TEST(SanitizerReport, OlderFormatsTemplatedKernelAndCudaMemcheck) {
  SanitizerReport t = Parse("memcheck-2023-at-0x-in-templated-kernel-trailing-space-separator-elided.txt");
  ASSERT_EQ(t.errors.size(), 2u);
  EXPECT_EQ(t.errors[0].pc_offset, "0x3b0");
  EXPECT_EQ(t.errors[0].kernel.rfind("void device_bootstrap_amortized<unsigned long,Degree<int=2048>", 0), 0u);
  EXPECT_EQ(t.errors[1].thread, (std::vector<int64_t>{252, 0, 0}));

  SanitizerReport m = Parse("cuda-memcheck-legacy-p100-device-frame-host-frame-libcuda-offset-format.txt");
  ASSERT_EQ(m.errors.size(), 1u);
  EXPECT_EQ(m.errors[0].kind, "Invalid __global__ read");
  EXPECT_EQ(m.errors[0].access_bytes, 8);
  EXPECT_EQ(m.errors[0].kernel, "CycleTrackingGuts(MonteCarlo*, int, ParticleVault*, ParticleVault*)");
  EXPECT_EQ(m.errors[0].block, (std::vector<int64_t>{194, 0, 0}));
  EXPECT_EQ(m.errors[0].host_frames.front(), "/lib64/libcuda.so.1 (cuLaunchKernel + 0x34e) [0x2d725e]");
}

TEST(SanitizerReport, NothingInTextWithoutTheToolsLines) {
  EXPECT_TRUE(ParseSanitizerReport("Invalid __global__ read of size 4 bytes\nok\n").errors.empty());
  EXPECT_TRUE(ParseSanitizerReport(std::string("\0\xff=========", 11)).errors.empty());
}

// Found by fuzzing: a number too large for 64 bits is left unknown, not thrown on.
TEST(SanitizerReport, NumbersTooLargeAreUnknown) {
  SanitizerReport r = ParseSanitizerReport(
      "========= Invalid __global__ write of size 99999999999999999999 bytes\n"
      "=========     at k(int*)+0x10 in k.cu:99999999999999999999\n"
      "=========     by thread (99999999999999999999,0,0) in block (0,0,0)\n"
      "========= ERROR SUMMARY: 99999999999999999999 errors\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_FALSE(r.errors[0].access_bytes.has_value());
  EXPECT_EQ(r.errors[0].file, "k.cu");
  EXPECT_FALSE(r.errors[0].line.has_value());
  EXPECT_FALSE(r.errors[0].thread.has_value());
  EXPECT_FALSE(r.errors_reported.has_value());
}

TEST(SanitizerReport, KernelBaseNames) {
  EXPECT_EQ(KernelBaseName("compress(const unsigned int *, const unsigned int *, uint2 *, int)"), "compress");
  EXPECT_EQ(KernelBaseName("void ns::scale<float>(float*, int)"), "scale");
  EXPECT_EQ(KernelBaseName(
                "void device_bootstrap_amortized<unsigned long,Degree<int=2048>,sharedMemDegree=1>(unsigned long*)"),
            "device_bootstrap_amortized");
  EXPECT_EQ(KernelBaseName("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
}

}  // namespace
}  // namespace gputriage::forensics
