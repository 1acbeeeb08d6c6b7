// A kernel that spins until a flag no one sets: the job hangs in cudaDeviceSynchronize. For
// `run --timeout N --record`: the kernel still running is the last launch before the
// synchronisation that never returned.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void spin_until_set(volatile int* flag) {
  while (*flag == 0) {
  }
}

int main() {
  int* flag = nullptr;
  cudaMalloc(&flag, sizeof(int));
  cudaMemset(flag, 0, sizeof(int));
  std::printf("cuda_spin: launching a kernel that never ends\n");
  std::fflush(stdout);
  spin_until_set<<<1, 1>>>(flag);
  cudaError_t err = cudaDeviceSynchronize();
  std::printf("cuda_spin: synchronize returned %s\n", cudaGetErrorString(err));
  return 0;
}
