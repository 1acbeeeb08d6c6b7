// A HIP program that never checks a return code: it allocates, copies, launches a kernel,
// synchronises and frees, prints "done" and exits 0 whatever the runtime answered. On a machine
// without an AMD GPU every call fails (hipErrorInvalidDevice or hipErrorNoDevice) and the job
// still exits 0 — the case `gputriage run --record` must catch from the return codes alone.
#include <hip/hip_runtime.h>

#include <cstdio>

__global__ void scale(float* data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

int main() {
  constexpr int kN = 1 << 16;
  static float host[kN];
  float* device = nullptr;
  (void)hipMalloc(reinterpret_cast<void**>(&device), kN * sizeof(float));
  (void)hipMemcpy(device, host, kN * sizeof(float), hipMemcpyHostToDevice);
  scale<<<dim3(kN / 256), dim3(256), 0, 0>>>(device, kN, 2.0f);
  (void)hipDeviceSynchronize();
  (void)hipMemcpy(host, device, kN * sizeof(float), hipMemcpyDeviceToHost);
  (void)hipFree(device);
  std::puts("done");
  return 0;
}
