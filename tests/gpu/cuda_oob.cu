// A CUDA program whose kernel writes far out of bounds: on a GPU it dies with
// cudaErrorIllegalAddress (and the driver logs Xid 31); without a GPU the runtime's own
// "no device" answer comes back. Either way it prints what the runtime said and exits 1.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void write_past_end(float* data, size_t stride) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  data[i * stride] = 1.0f;  // thread 1 already writes 4 MiB past a 4 MiB buffer; the last, 64 GiB
}

static int Report(const char* step, cudaError_t err) {
  std::fprintf(stderr, "cuda_oob: %s: %s (%s)\n", step, cudaGetErrorName(err), cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}

int main() {
  float* data = nullptr;
  const size_t n = size_t{1} << 20;
  if (Report("cudaMalloc", cudaMalloc(&data, n * sizeof(float)))) return 1;
  write_past_end<<<64, 256>>>(data, n);
  if (Report("launch", cudaGetLastError())) return 1;
  if (Report("cudaDeviceSynchronize", cudaDeviceSynchronize())) return 1;
  std::printf("cuda_oob: the kernel finished without a fault\n");
  return 0;
}
