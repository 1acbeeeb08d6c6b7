// A CUDA graph (captured from a stream: a fill kernel, then a kernel writing far out of bounds)
// launched once: the fault happens inside a graph launch, where no cuLaunchKernel is seen. For
// `run --record` / `--escalate`: the graph's kernels are listed (from its instantiation) and the
// graph launch is the candidate; memcheck then checks all its kernels (no name filter).
#include <cuda_runtime.h>

#include <cstdio>

__global__ void fill(float* data, size_t n) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) data[i] = 1.0f;
}

__global__ void scatter_far(float* data, size_t n) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  data[n + i * 1048576] = 2.0f;  // far past the end: faults
}

static bool Report(const char* what, cudaError_t err) {
  std::printf("cuda_graph_oob: %s: %s\n", what, cudaGetErrorString(err));
  return err != cudaSuccess;
}

int main() {
  const size_t n = size_t{1} << 20;
  float* data = nullptr;
  if (Report("cudaMalloc", cudaMalloc(&data, n * sizeof(float)))) return 1;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaGraph_t graph;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  fill<<<n / 256, 256, 0, stream>>>(data, n);
  scatter_far<<<64, 256, 0, stream>>>(data, n);
  if (Report("capture", cudaStreamEndCapture(stream, &graph))) return 1;
  cudaGraphExec_t exec;
  if (Report("instantiate", cudaGraphInstantiate(&exec, graph, 0))) return 1;
  if (Report("graph launch", cudaGraphLaunch(exec, stream))) return 1;
  return Report("cudaStreamSynchronize", cudaStreamSynchronize(stream)) ? 1 : 0;
}
