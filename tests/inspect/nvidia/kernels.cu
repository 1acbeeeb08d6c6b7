// Test input for `gputriage inspect` (src/inspect/nvidia_test.cc): kernels whose resources the
// test compares with what ptxas -v reports for the same build.

// Launch bounds: .nv.info MAX_THREADS = 256.
__global__ void __launch_bounds__(256) bounded_add(float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}

// A large static shared array: 40 KiB of shared memory.
__global__ void big_shared(float* out, const float* in) {
  __shared__ float tile[10240];
  for (int k = threadIdx.x; k < 10240; k += blockDim.x) tile[k] = in[k];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x * 37) % 10240];
}

// A dynamically indexed local array: a stack frame (local memory) and many registers.
__global__ void register_pressure(double* out, const double* in, int n) {
  double r[64];
  for (int k = 0; k < 64; ++k) r[k] = in[(threadIdx.x * 7 + k * 13) % n];
  double s = 0;
  for (int k = 0; k < 64; ++k) s += r[(k * 5 + threadIdx.x) % 64] * r[k];
  out[threadIdx.x] = s;
}

// Forced to 32 registers: ptxas spills.
__global__ void __launch_bounds__(1024, 2) spills(float* out, const float* in) {
  float v[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) v[k] = in[threadIdx.x * 48 + k] * (k + 1);
  float s = 0;
#pragma unroll
  for (int k = 0; k < 48; ++k) s += v[k] * v[47 - k] + v[(k + 7) % 48];
  out[threadIdx.x] = s;
}
