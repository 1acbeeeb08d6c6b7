#include "core/gpu_calls.h"

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

// A kernel launch has a shape; a CUDA graph launch (cuGraphLaunch, as the recorder wrote it for
// tests/gpu/cuda_graph_oob.cu on the H200) has none: no "grid ?, block ?" for it.
TEST(LaunchShapeText, KernelLaunchesHaveOneGraphLaunchesNone) {
  GpuCall launch;
  launch.api = "cuLaunchKernel";
  launch.grid = std::vector<int64_t>{64, 1, 1};
  launch.block = std::vector<int64_t>{256, 1, 1};
  EXPECT_EQ(LaunchShapeText(launch), "grid (64,1,1), block (256,1,1)");
  GpuCall graph;
  graph.api = "cuGraphLaunch";
  graph.kernel = "CUDA graph of 2 kernels: fill(float*, unsigned long); scatter_far(float*, unsigned long)";
  EXPECT_EQ(LaunchShapeText(graph), "");
  launch.block.reset();
  EXPECT_EQ(LaunchShapeText(launch), "grid (64,1,1), block ?");
}

}  // namespace
}  // namespace gputriage::core
