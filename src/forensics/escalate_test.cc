#include "forensics/escalate.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace gputriage::forensics {
namespace {

// The message PyTorch's index_add_ assert printed on the H200 (tests/gpu/torch_index_add_assert.py,
// `run` summary of 2026-12-04), HIP's (the same __assert_fail format as glibc's), and a message
// without a source location.
TEST(AssertLocation, FromTheDeviceAssertsOwnMessage) {
  EXPECT_EQ(AssertLocation("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1021: indexFuncSmallIndex: block: [0,0,0], "
                           "thread: [0,0,0] Assertion `dstIndex < dstAddDimSize` failed."),
            "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1021");
  EXPECT_EQ(AssertLocation("kernel.hip:42: void check(int*): Device-side assertion `i < n' failed."), "kernel.hip:42");
  EXPECT_EQ(AssertLocation("torch.AcceleratorError: CUDA error: device-side assert triggered"), std::nullopt);
  EXPECT_EQ(AssertLocation("at 12:30: something"), std::nullopt);
}

}  // namespace
}  // namespace gputriage::forensics

namespace gputriage::forensics {
namespace {

// HSA_TOOLS_LIB naming the agent wins (the user's own choice of build); another tools library
// there is not taken for it.
TEST(FindDebugAgent, TheUsersHsaToolsLibFirst) {
  const char* saved = std::getenv("HSA_TOOLS_LIB");
  std::string keep = saved ? saved : "";
  setenv("HSA_TOOLS_LIB", "/opt/rocm-6.2.0/lib/librocm-debug-agent.so.2", 1);
  EXPECT_EQ(FindDebugAgent(), "/opt/rocm-6.2.0/lib/librocm-debug-agent.so.2");
  setenv("HSA_TOOLS_LIB", "/opt/tools/libmy-profiler.so", 1);
  std::optional<std::string> found = FindDebugAgent();
  EXPECT_NE(found, "/opt/tools/libmy-profiler.so");
  if (saved) {
    setenv("HSA_TOOLS_LIB", keep.c_str(), 1);
  } else {
    unsetenv("HSA_TOOLS_LIB");
  }
}

}  // namespace
}  // namespace gputriage::forensics
