// gputriage validate's own kernels, written once for both vendors: nvcc compiles this file into
// the CUDA fatbin, hipcc compiles kernels.hip (which includes it) into the HIP code-object bundle.
// Only what CUDA and HIP share is used: __global__, __shared__, blockIdx/threadIdx, __syncthreads,
// atomicAdd/Min/Max/Exch/CAS on the types both define. fp16 and bf16 are handled as their 16-bit
// storage with conversions written here (IEEE binary16 and bfloat16 bit layouts), so neither
// vendor's half-precision header is needed (half_bits.h, shared with the host's reference). Every entry point is extern "C" so the host finds it
// by name (cuModuleGetFunction / hipModuleGetFunction).
#include <stdint.h>

#include "half_bits.h"

#define GT_EXTERN extern "C" __global__

namespace {

__device__ inline float F16ToF32(uint16_t h) { return __uint_as_float(gputriage::half_bits::F16ToF32(h)); }
__device__ inline uint16_t F32ToF16(float f) { return gputriage::half_bits::F32ToF16(__float_as_uint(f)); }
__device__ inline float Bf16ToF32(uint16_t b) { return __uint_as_float(gputriage::half_bits::Bf16ToF32(b)); }
__device__ inline uint16_t F32ToBf16(float f) { return gputriage::half_bits::F32ToBf16(__float_as_uint(f)); }

// Element access by storage type: float, binary16 (tag F16) and bfloat16 (tag Bf16).
struct F16 {
  uint16_t bits;
};
struct Bf16 {
  uint16_t bits;
};
__device__ inline float Load(const float* p, long i) { return p[i]; }
__device__ inline float Load(const F16* p, long i) { return F16ToF32(p[i].bits); }
__device__ inline float Load(const Bf16* p, long i) { return Bf16ToF32(p[i].bits); }
__device__ inline void Store(float* p, long i, float v) { p[i] = v; }
__device__ inline void Store(F16* p, long i, float v) { p[i].bits = F32ToF16(v); }
__device__ inline void Store(Bf16* p, long i, float v) { p[i].bits = F32ToBf16(v); }

constexpr int kRowThreads = 256;

// Block-wide sum and max of one value per thread, in a fixed order (deterministic).
__device__ inline float BlockSum(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kRowThreads / 2; stride > 0; stride /= 2) {
    if ((int)threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    __syncthreads();
  }
  float total = scratch[0];
  __syncthreads();
  return total;
}

__device__ inline float BlockMax(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kRowThreads / 2; stride > 0; stride /= 2) {
    if ((int)threadIdx.x < stride) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + stride]);
    __syncthreads();
  }
  float total = scratch[0];
  __syncthreads();
  return total;
}

// One block of kRowThreads per row; float accumulation, two passes (mean, then variance).
template <typename T>
__device__ void LayerNorm(const T* x, const float* gamma, const float* beta, T* y, int cols, float eps) {
  __shared__ float scratch[kRowThreads];
  long row = blockIdx.x;
  const T* in = x + row * cols;
  T* out = y + row * cols;
  float sum = 0;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) sum += Load(in, c);
  float mean = BlockSum(sum, scratch) / cols;
  float squares = 0;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) {
    float d = Load(in, c) - mean;
    squares += d * d;
  }
  float inv = rsqrtf(BlockSum(squares, scratch) / cols + eps);
  for (int c = threadIdx.x; c < cols; c += kRowThreads) {
    Store(out, c, (Load(in, c) - mean) * inv * gamma[c] + beta[c]);
  }
}

template <typename T>
__device__ void Softmax(const T* x, T* y, int cols) {
  __shared__ float scratch[kRowThreads];
  long row = blockIdx.x;
  const T* in = x + row * cols;
  T* out = y + row * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) m = fmaxf(m, Load(in, c));
  m = BlockMax(m, scratch);
  float sum = 0;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) sum += expf(Load(in, c) - m);
  float inv = 1.0f / BlockSum(sum, scratch);
  for (int c = threadIdx.x; c < cols; c += kRowThreads) Store(out, c, expf(Load(in, c) - m) * inv);
}

// Per row: the sum and the maximum, as float.
template <typename T>
__device__ void ReduceRows(const T* x, float* sums, float* maxima, int cols) {
  __shared__ float scratch[kRowThreads];
  long row = blockIdx.x;
  const T* in = x + row * cols;
  float sum = 0, m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) {
    float v = Load(in, c);
    sum += v;
    m = fmaxf(m, v);
  }
  sum = BlockSum(sum, scratch);
  m = BlockMax(m, scratch);
  if (threadIdx.x == 0) {
    sums[row] = sum;
    maxima[row] = m;
  }
}

__device__ inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The memory test's patterns: 0 walking ones (bit (i + pass) % 64), 1 address in address, 2
// random (SplitMix64 of seed and index), 3 the complement of random.
__device__ inline uint64_t PatternValue(const uint64_t* base, uint64_t i, int mode, uint64_t seed) {
  switch (mode) {
    case 0:
      return 1ull << ((i + seed) % 64);
    case 1:
      return (uint64_t)(uintptr_t)(base + i);
    case 2:
      return SplitMix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
    default:
      return ~SplitMix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
  }
}

}  // namespace

GT_EXTERN void gt_layernorm_f32(const float* x, const float* g, const float* b, float* y, int cols, float eps) {
  LayerNorm(x, g, b, y, cols, eps);
}
GT_EXTERN void gt_layernorm_f16(const F16* x, const float* g, const float* b, F16* y, int cols, float eps) {
  LayerNorm(x, g, b, y, cols, eps);
}
GT_EXTERN void gt_layernorm_bf16(const Bf16* x, const float* g, const float* b, Bf16* y, int cols, float eps) {
  LayerNorm(x, g, b, y, cols, eps);
}
GT_EXTERN void gt_softmax_f32(const float* x, float* y, int cols) { Softmax(x, y, cols); }
GT_EXTERN void gt_softmax_f16(const F16* x, F16* y, int cols) { Softmax(x, y, cols); }
GT_EXTERN void gt_softmax_bf16(const Bf16* x, Bf16* y, int cols) { Softmax(x, y, cols); }
GT_EXTERN void gt_reduce_f32(const float* x, float* s, float* m, int cols) { ReduceRows(x, s, m, cols); }
GT_EXTERN void gt_reduce_f16(const F16* x, float* s, float* m, int cols) { ReduceRows(x, s, m, cols); }
GT_EXTERN void gt_reduce_bf16(const Bf16* x, float* s, float* m, int cols) { ReduceRows(x, s, m, cols); }

// Bandwidth: 16-byte loads and stores, grid-stride, four independent loads in flight per thread.
struct alignas(16) U4 {
  uint32_t x, y, z, w;
};
GT_EXTERN void gt_copy_u4(const U4* __restrict__ src, U4* __restrict__ dst, uint64_t n) {
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    U4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

GT_EXTERN void gt_pattern_write(uint64_t* p, uint64_t n, int mode, uint64_t seed) {
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = PatternValue(p, i, mode, seed);
}

// counters[0]: mismatching words; bad[0..max_bad): the first indices found (in no set order).
GT_EXTERN void gt_pattern_check(const uint64_t* p, uint64_t n, int mode, uint64_t seed, unsigned long long* counters,
                                unsigned long long* bad, unsigned long long* bad_values, int max_bad) {
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint64_t v = p[i];
    if (v != PatternValue(p, i, mode, seed)) {
      unsigned long long k = atomicAdd(counters, 1ull);
      if (k < (unsigned long long)max_bad) {
        bad[k] = i;
        bad_values[k] = v;
      }
    }
  }
}

// Atomics under contention: every thread of the grid on the same words. Slots: 0 add, 1 sub,
// 2 min, 3 max, 4 exchange (each thread's old value goes to olds[t]), 5 a counter advanced by
// compare-and-swap loops. Values: add/sub (t % 7) + 1; min/max a permutation key of t.
__device__ inline long long Key(unsigned t, unsigned n) { return (long long)((t * 2654435761ull) % n) - (long long)(n / 2); }

GT_EXTERN void gt_atomics_i32(int* s, int* olds, unsigned n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int v = (int)(t % 7) + 1;
  atomicAdd(&s[0], v);
  atomicSub(&s[1], v);
  atomicMin(&s[2], (int)Key(t, n));
  atomicMax(&s[3], (int)Key(t, n));
  olds[t] = atomicExch(&s[4], (int)t + 1);
  int old = s[5], assumed;
  do {
    assumed = old;
    old = atomicCAS(&s[5], assumed, assumed + 1);
  } while (old != assumed);
}

GT_EXTERN void gt_atomics_i64(long long* s, long long* olds, unsigned n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  unsigned long long* u = (unsigned long long*)s;
  long long v = (long long)(t % 7) + 1;
  atomicAdd(&u[0], (unsigned long long)v);
  atomicAdd(&u[1], (unsigned long long)-v);  // 64-bit subtraction: add of the two's complement
  // min and max: compare-and-swap loops (HIP has no 64-bit signed atomicMin/Max)
  long long key = Key(t, n) * 4294967296ll;
  unsigned long long old = u[2], assumed;
  while ((long long)old > key) {
    assumed = old;
    old = atomicCAS(&u[2], assumed, (unsigned long long)key);
    if (old == assumed) break;
  }
  old = u[3];
  while ((long long)old < key) {
    assumed = old;
    old = atomicCAS(&u[3], assumed, (unsigned long long)key);
    if (old == assumed) break;
  }
  olds[t] = (long long)atomicExch(&u[4], (unsigned long long)t + 1);
  old = u[5];
  do {
    assumed = old;
    old = atomicCAS(&u[5], assumed, assumed + 1);
  } while (old != assumed);
}

// Floating point: add/sub of small integers stay exact in any order; min and max are
// compare-and-swap loops on the bits (CUDA has no float atomicMin/Max).
GT_EXTERN void gt_atomics_f32(float* s, float* olds, unsigned n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float v = (float)(t % 7) + 1.0f;
  atomicAdd(&s[0], v);
  atomicAdd(&s[1], -v);
  float key = (float)Key(t, n) * 0.5f;
  unsigned int* bits = (unsigned int*)s;
  unsigned int old = bits[2], assumed;
  while (__uint_as_float(old) > key) {
    assumed = old;
    old = atomicCAS(&bits[2], assumed, __float_as_uint(key));
    if (old == assumed) break;
  }
  old = bits[3];
  while (__uint_as_float(old) < key) {
    assumed = old;
    old = atomicCAS(&bits[3], assumed, __float_as_uint(key));
    if (old == assumed) break;
  }
  olds[t] = atomicExch(&s[4], (float)(t + 1));
  old = bits[5];
  do {
    assumed = old;
    old = atomicCAS(&bits[5], assumed, __float_as_uint(__uint_as_float(assumed) + 1.0f));
  } while (old != assumed);
}

GT_EXTERN void gt_atomics_f64(double* s, double* olds, unsigned n) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  double v = (double)(t % 7) + 1.0;
  atomicAdd(&s[0], v);
  atomicAdd(&s[1], -v);
  double key = (double)Key(t, n) * 0.25;
  unsigned long long* bits = (unsigned long long*)s;
  unsigned long long old = bits[2], assumed;
  while (__longlong_as_double((long long)old) > key) {
    assumed = old;
    old = atomicCAS(&bits[2], assumed, (unsigned long long)__double_as_longlong(key));
    if (old == assumed) break;
  }
  old = bits[3];
  while (__longlong_as_double((long long)old) < key) {
    assumed = old;
    old = atomicCAS(&bits[3], assumed, (unsigned long long)__double_as_longlong(key));
    if (old == assumed) break;
  }
  olds[t] = __longlong_as_double((long long)atomicExch(&bits[4], (unsigned long long)__double_as_longlong((double)(t + 1))));
  old = bits[5];
  do {
    assumed = old;
    old = atomicCAS(&bits[5], assumed,
                    (unsigned long long)__double_as_longlong(__longlong_as_double((long long)assumed) + 1.0));
  } while (old != assumed);
}

// Launch limits: each thread writes its global index; the host checks every element.
GT_EXTERN void gt_fill_index(unsigned* out) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = t + 1;
}

// Uses `bytes` of dynamic shared memory: writes every word, reads it back in another thread's
// order, and stores how many words disagreed.
GT_EXTERN void gt_touch_shared(unsigned* mismatches, unsigned bytes) {
  extern __shared__ unsigned shared_words[];
  unsigned words = bytes / 4;
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) shared_words[i] = i * 2654435761u;
  __syncthreads();
  unsigned bad = 0;
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) {
    unsigned j = words - 1 - i;
    if (shared_words[j] != j * 2654435761u) ++bad;
  }
  if (bad) atomicAdd(mismatches, bad);
}
