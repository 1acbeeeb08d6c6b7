// A program built only for sm_80 (no PTX): on a newer GPU (the H200 is sm_90) every launch fails
// with "no kernel image is available for execution on the device". The program never checks,
// prints what cudaGetLastError says *after* a synchronisation (by then "no error") and exits 0 —
// the case `run --record` must name from the recorded return codes.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void fill(float* data, int n, float value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

int main() {
  const int n = 1 << 20;
  float* data = nullptr;
  cudaMalloc(&data, n * sizeof(float));
  for (int step = 0; step < 3; ++step) fill<<<n / 256, 256>>>(data, n, 1.0f + step);
  cudaDeviceSynchronize();
  cudaError_t err = cudaGetLastError();
  std::printf("CUDA error: %s\n", cudaGetErrorString(err));
  cudaFree(data);
  return 0;
}
