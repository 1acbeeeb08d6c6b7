// IEEE binary16 and bfloat16 conversions on bit patterns, integer operations only, shared by the
// host (src/validate/reference.cc) and gputriage's kernels (kernels.cu, for nvcc and hipcc) so
// both round the same way: to nearest, ties to even; overflow to infinity; NaN stays NaN.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define GT_HOST_DEVICE __host__ __device__
#else
#define GT_HOST_DEVICE
#endif

namespace gputriage::half_bits {

/// The float32 bit pattern of a binary16 value (subnormals normalised).
GT_HOST_DEVICE inline uint32_t F16ToF32(uint16_t h) {
  uint32_t sign = (h >> 15) & 1u, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0) return sign << 31;
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    return (sign << 31) | (uint32_t)(127 - 15 - e) << 23 | (mantissa & 0x3ffu) << 13;
  }
  if (exponent == 31) return (sign << 31) | 0x7f800000u | (mantissa << 13);
  return (sign << 31) | (exponent + 112u) << 23 | (mantissa << 13);
}

/// The binary16 bit pattern nearest to the float32 bit pattern `x`.
GT_HOST_DEVICE inline uint16_t F32ToF16(uint32_t x) {
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds past 65504: infinity
  if (abs < 0x38800000u) {                                    // subnormal or zero in binary16
    if (abs < 0x33000000u) return (uint16_t)sign;
    uint32_t shift = 113u - (abs >> 23);
    uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    uint32_t result = mantissa >> (shift + 13);
    uint32_t rest = mantissa & ((1u << (shift + 13)) - 1u);
    uint32_t half = 1u << (shift + 12);
    if (rest > half || (rest == half && (result & 1u))) ++result;
    return (uint16_t)(sign | result);
  }
  uint32_t result = (abs >> 13) - (112u << 10);
  uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
  return (uint16_t)(sign | result);
}

/// The float32 bit pattern of a bfloat16 value.
GT_HOST_DEVICE inline uint32_t Bf16ToF32(uint16_t b) { return (uint32_t)b << 16; }

/// The bfloat16 bit pattern nearest to the float32 bit pattern `x`.
GT_HOST_DEVICE inline uint16_t F32ToBf16(uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)((x + rounding) >> 16);
}

}  // namespace gputriage::half_bits
