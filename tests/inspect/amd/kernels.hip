// Kernels for the AMD `inspect` tests (src/inspect/amd_test.cc), compiled by hipcc during the
// build (cmake/hip_inputs.cmake) for several targets. Each one makes one metadata field say
// something definite; the tests compare every number with llvm-readelf's reading of the same
// code object.
#include <hip/hip_runtime.h>

// __launch_bounds__(128): .max_flat_workgroup_size is 128 (1024 for the others).
__global__ void __launch_bounds__(128) bounded_saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// 4096 floats of LDS: .group_segment_fixed_size is 16384.
__global__ void lds_reverse(const float* in, float* out) {
  __shared__ float tile[4096];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) tile[i] = in[blockIdx.x * 4096 + i];
  __syncthreads();
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) out[blockIdx.x * 4096 + i] = tile[4095 - i];
}

// A local array indexed by data cannot live in registers: it goes to scratch
// (.private_segment_fixed_size >= 1024), without register spills.
__global__ void scratch_histogram(const int* keys, int* out, int n) {
  int counts[256];
  for (int i = 0; i < 256; ++i) counts[i] = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) counts[keys[i] & 255]++;
  int sum = 0;
  for (int i = 0; i < 256; ++i) sum += counts[i] * (i + 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// N values live at once, under __launch_bounds__(1024), which caps the registers per thread
// (128 VGPRs on gfx90a and gfx1030, 64 on gfx906): the register allocator spills
// (.vgpr_spill_count > 0, and scratch for the spill slots).
template <int N>
__global__ void __launch_bounds__(1024) pressure(const float* in, float* out) {
  float v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = in[threadIdx.x * N + i];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = v[i] * v[(i * 7 + r) % N] + v[(i * 13 + 1) % N];
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) s += v[i] * (i + 1);
  out[threadIdx.x] = s;
}
template __global__ void pressure<160>(const float*, float*);
