// The host side of every `validate` check: element types and their conversions (IEEE binary16
// and bfloat16 rounded to nearest even, as the GPUs store them), random inputs, the float64 CPU
// references each GPU result is compared with, and the error measure and tolerances. Pure
// functions, tested against known values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputriage::validate {

enum class Dtype { kF32, kF16, kBf16, kF64 };

std::string_view DtypeName(Dtype dtype);  ///< "fp32" | "fp16" | "bf16" | "fp64"
std::optional<Dtype> ParseDtype(std::string_view name);
size_t DtypeSize(Dtype dtype);

uint16_t FloatToHalf(float value);  ///< round to nearest even; overflow to infinity
float HalfToFloat(uint16_t bits);
uint16_t FloatToBfloat16(float value);  ///< round to nearest even
float Bfloat16ToFloat(uint16_t bits);

/// Host values converted to `dtype`'s storage (bytes) and back: the inputs a GPU sees are the
/// rounded ones, and the reference uses the same rounded values.
std::vector<unsigned char> Encode(const std::vector<double>& values, Dtype dtype);
std::vector<double> Decode(const std::vector<unsigned char>& bytes, Dtype dtype);

/// Uniform values in [-1, 1), never all zero: a fixed-seed SplitMix64 stream, rounded to `dtype`.
std::vector<double> RandomValues(size_t count, uint64_t seed, Dtype dtype);

/// The error of `result` against `reference`: max |result - reference| / rms(reference), and
/// how many elements are NaN or infinite (those alone fail a check).
struct ErrorSummary {
  double max_rel_error = 0;
  size_t non_finite = 0;
  size_t worst_index = 0;
  double worst_value = 0;
  double worst_reference = 0;
};
ErrorSummary CompareToReference(const std::vector<double>& result, const std::vector<double>& reference);
/// As CompareToReference, only at `indices` of `result` (for samples of a large output).
ErrorSummary CompareAt(const std::vector<double>& result, const std::vector<size_t>& indices,
                       const std::vector<double>& reference_at_indices);

/// The bound max_rel_error is held to for an operation whose elements sum `terms` products in
/// `dtype` (accumulating in fp32, or fp64 for fp64): the output rounding of the type plus the
/// accumulation error, with margin. Documented in docs/commands/validate.md ("Correctness").
double Tolerance(Dtype dtype, size_t terms);

/// Row-major C = A[m x k] * B[k x n] in float64 at the given output positions (row * n + col).
std::vector<double> GemmReferenceAt(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k,
                                    const std::vector<size_t>& positions);
/// NCHW cross-correlation in float64 at the given output positions.
struct ConvGeometry {
  int n, c, h, w, k, r, s, pad, stride, out_h, out_w;
};
std::vector<double> ConvReferenceAt(const std::vector<double>& x, const std::vector<double>& w, const ConvGeometry& g,
                                    const std::vector<size_t>& positions);
/// Every position when the output is at most `limit` elements, else `limit` positions spread over
/// it (a fixed-seed sample that always includes the first and last element).
std::vector<size_t> SamplePositions(size_t elements, size_t limit, uint64_t seed);

/// Row-wise references (rows x cols, row-major).
std::vector<double> LayerNormReference(const std::vector<double>& x, const std::vector<double>& gamma,
                                       const std::vector<double>& beta, int rows, int cols, double eps);
std::vector<double> SoftmaxReference(const std::vector<double>& x, int rows, int cols);
void ReduceReference(const std::vector<double>& x, int rows, int cols, std::vector<double>* sums,
                     std::vector<double>* maxima);

/// The median of `values` (which it sorts); 0 for none.
double Median(std::vector<double> values);

}  // namespace gputriage::validate
