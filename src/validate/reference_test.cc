#include "validate/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace gputriage::validate {
namespace {

float Bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(HalfConversion, KnownValuesAndRoundingToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);                      // largest finite
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);                      // rounds past it: infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);         // half of it: tie to even (zero)
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -26)), 0x0001);         // above the tie
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie between 1 and 1+2^-10: even
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie between 0x3c01 and 0x3c02: even
  EXPECT_EQ(FloatToHalf(0.1f), 0x2e66);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  EXPECT_EQ(HalfToFloat(0x3555), Bits(0x3eaaa000));  // 0.333251953125
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x8000), -0.0f);
}

TEST(HalfConversion, EveryHalfSurvivesARoundTrip) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = HalfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), bits) << std::hex << bits;
  }
}

TEST(Bfloat16Conversion, KnownValuesAndRoundTrip) {
  EXPECT_EQ(FloatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie: even
  EXPECT_EQ(FloatToBfloat16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);
  EXPECT_EQ(FloatToBfloat16(-3.0f), 0xc040);
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(std::nanf("")))));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = Bfloat16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBfloat16(f), bits) << std::hex << bits;
  }
}

TEST(Dtypes, NamesSizesAndEncoding) {
  EXPECT_EQ(ParseDtype("bf16"), Dtype::kBf16);
  EXPECT_EQ(ParseDtype("float16"), Dtype::kF16);
  EXPECT_FALSE(ParseDtype("int8").has_value());
  EXPECT_EQ(DtypeName(Dtype::kF64), "fp64");
  EXPECT_EQ(DtypeSize(Dtype::kBf16), 2u);
  std::vector<double> values = {0.5, -1.25, 3.0};
  for (Dtype dtype : {Dtype::kF32, Dtype::kF16, Dtype::kBf16, Dtype::kF64}) {
    std::vector<unsigned char> bytes = Encode(values, dtype);
    EXPECT_EQ(bytes.size(), values.size() * DtypeSize(dtype));
    EXPECT_EQ(Decode(bytes, dtype), values) << DtypeName(dtype);
  }
}

TEST(RandomValues, DeterministicInRangeRoundedAndNeverAllZero) {
  for (Dtype dtype : {Dtype::kF32, Dtype::kF16, Dtype::kBf16, Dtype::kF64}) {
    std::vector<double> a = RandomValues(4096, 7, dtype);
    EXPECT_EQ(a, RandomValues(4096, 7, dtype));
    EXPECT_NE(a, RandomValues(4096, 8, dtype));
    size_t zeros = 0;
    double sum_abs = 0;
    for (double v : a) {
      EXPECT_GE(v, -1.0);
      EXPECT_LE(v, 1.0);
      zeros += v == 0;
      sum_abs += std::fabs(v);
    }
    EXPECT_LT(zeros, 10u);
    EXPECT_NEAR(sum_abs / a.size(), 0.5, 0.05);     // uniform on [-1, 1)
    EXPECT_EQ(Decode(Encode(a, dtype), dtype), a);  // already representable in the type
  }
}

TEST(CompareToReference, RelativeToRmsAndNonFinite) {
  std::vector<double> reference = {3, -4, 0, 5};  // rms = sqrt(50/4)
  EXPECT_EQ(CompareToReference(reference, reference).max_rel_error, 0);
  std::vector<double> off = reference;
  off[2] = 0.5;
  ErrorSummary e = CompareToReference(off, reference);
  EXPECT_NEAR(e.max_rel_error, 0.5 / std::sqrt(12.5), 1e-12);
  EXPECT_EQ(e.worst_index, 2u);
  off[1] = std::nan("");
  e = CompareToReference(off, reference);
  EXPECT_EQ(e.non_finite, 1u);
  EXPECT_TRUE(std::isinf(e.max_rel_error));
  EXPECT_EQ(CompareAt(off, {0, 3}, {3, 5}).max_rel_error, 0);  // only the sampled positions
}

TEST(Tolerance, TighterForWiderTypesAndGrowsWithTheSum) {
  EXPECT_LT(Tolerance(Dtype::kF64, 1024), Tolerance(Dtype::kF32, 1024));
  EXPECT_LT(Tolerance(Dtype::kF32, 1024), Tolerance(Dtype::kF16, 1024));
  EXPECT_LT(Tolerance(Dtype::kF16, 1024), Tolerance(Dtype::kBf16, 1024));
  EXPECT_LT(Tolerance(Dtype::kF32, 64), Tolerance(Dtype::kF32, 8192));
  // fp32 stays tight enough that TF32 (10-bit mantissa, unit roundoff 2^-11) would fail it.
  EXPECT_LT(Tolerance(Dtype::kF32, 8192), std::ldexp(1.0, -11));
}

TEST(GemmReference, RowMajorProduct) {
  // [1 2 3; 4 5 6] x [7 8; 9 10; 11 12] = [58 64; 139 154]
  std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  EXPECT_EQ(GemmReferenceAt(a, b, 2, 2, 3, {0, 1, 2, 3}), (std::vector<double>{58, 64, 139, 154}));
  EXPECT_EQ(GemmReferenceAt(a, b, 2, 2, 3, {3}), (std::vector<double>{154}));
}

TEST(ConvReference, IdentityFilterPaddingAndStride) {
  // One 3x3 channel, a 3x3 filter with 1 in the centre, padding 1: the output is the input.
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> w = {0, 0, 0, 0, 1, 0, 0, 0, 0};
  ConvGeometry g{1, 1, 3, 3, 1, 3, 3, 1, 1, 3, 3};
  EXPECT_EQ(ConvReferenceAt(x, w, g, {0, 1, 2, 3, 4, 5, 6, 7, 8}), x);
  // An all-ones filter: the corner sums its 2x2 neighbourhood (the rest is padding).
  std::vector<double> ones(9, 1);
  EXPECT_EQ(ConvReferenceAt(x, ones, g, {0, 4}), (std::vector<double>{1 + 2 + 4 + 5, 45}));
  ConvGeometry strided{1, 1, 3, 3, 1, 3, 3, 1, 2, 2, 2};
  EXPECT_EQ(ConvReferenceAt(x, w, strided, {0, 1, 2, 3}), (std::vector<double>{1, 3, 7, 9}));
}

TEST(SamplePositions, AllWhenSmallElseSortedWithTheEnds) {
  EXPECT_EQ(SamplePositions(5, 10, 1), (std::vector<size_t>{0, 1, 2, 3, 4}));
  std::vector<size_t> p = SamplePositions(1000000, 100, 1);
  EXPECT_GT(p.size(), 90u);
  EXPECT_LE(p.size(), 100u);
  EXPECT_EQ(p.front(), 0u);
  EXPECT_EQ(p.back(), 999999u);
  EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
  EXPECT_EQ(std::adjacent_find(p.begin(), p.end()), p.end());
}

TEST(RowReferences, LayerNormSoftmaxReduce) {
  std::vector<double> x = {1, 2, 3, 4, -1, -1, -1, 5};
  std::vector<double> y = LayerNormReference(x, {1, 1, 1, 1}, {0, 0, 0, 0}, 2, 4, 0);
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 4; ++c) mean += y[r * 4 + c] / 4;
    for (int c = 0; c < 4; ++c) var += (y[r * 4 + c] - mean) * (y[r * 4 + c] - mean) / 4;
    EXPECT_NEAR(mean, 0, 1e-12);
    EXPECT_NEAR(var, 1, 1e-12);
  }
  std::vector<double> s = SoftmaxReference(x, 2, 4);
  EXPECT_NEAR(s[0] + s[1] + s[2] + s[3], 1, 1e-15);
  EXPECT_NEAR(s[1] / s[0], std::exp(1.0), 1e-12);
  std::vector<double> sums, maxima;
  ReduceReference(x, 2, 4, &sums, &maxima);
  EXPECT_EQ(sums, (std::vector<double>{10, 2}));
  EXPECT_EQ(maxima, (std::vector<double>{4, 5}));
}

TEST(Median, OddEvenAndEmpty) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({}), 0);
}

}  // namespace
}  // namespace gputriage::validate
