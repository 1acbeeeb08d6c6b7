#include "validate/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/half_bits.h"

namespace gputriage::validate {

namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

double Round(double value, Dtype dtype) {
  switch (dtype) {
    case Dtype::kF64:
      return value;
    case Dtype::kF32:
      return static_cast<float>(value);
    case Dtype::kF16:
      return HalfToFloat(FloatToHalf(static_cast<float>(value)));
    case Dtype::kBf16:
      return Bfloat16ToFloat(FloatToBfloat16(static_cast<float>(value)));
  }
  return value;
}

}  // namespace

std::string_view DtypeName(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return "fp32";
    case Dtype::kF16:
      return "fp16";
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kF64:
      return "fp64";
  }
  return "fp32";
}

std::optional<Dtype> ParseDtype(std::string_view name) {
  for (Dtype dtype : {Dtype::kF32, Dtype::kF16, Dtype::kBf16, Dtype::kF64}) {
    if (DtypeName(dtype) == name) return dtype;
  }
  if (name == "float32" || name == "float") return Dtype::kF32;
  if (name == "float16" || name == "half") return Dtype::kF16;
  if (name == "bfloat16") return Dtype::kBf16;
  if (name == "float64" || name == "double") return Dtype::kF64;
  return std::nullopt;
}

size_t DtypeSize(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF16:
    case Dtype::kBf16:
      return 2;
    case Dtype::kF32:
      return 4;
    case Dtype::kF64:
      return 8;
  }
  return 4;
}

uint16_t FloatToHalf(float value) { return half_bits::F32ToF16(FloatBits(value)); }

float HalfToFloat(uint16_t bits) { return BitsFloat(half_bits::F16ToF32(bits)); }

uint16_t FloatToBfloat16(float value) { return half_bits::F32ToBf16(FloatBits(value)); }

float Bfloat16ToFloat(uint16_t bits) { return BitsFloat(half_bits::Bf16ToF32(bits)); }

std::vector<unsigned char> Encode(const std::vector<double>& values, Dtype dtype) {
  std::vector<unsigned char> bytes(values.size() * DtypeSize(dtype));
  unsigned char* out = bytes.data();
  for (double v : values) {
    switch (dtype) {
      case Dtype::kF64:
        std::memcpy(out, &v, 8);
        break;
      case Dtype::kF32: {
        float f = static_cast<float>(v);
        std::memcpy(out, &f, 4);
        break;
      }
      case Dtype::kF16: {
        uint16_t h = FloatToHalf(static_cast<float>(v));
        std::memcpy(out, &h, 2);
        break;
      }
      case Dtype::kBf16: {
        uint16_t b = FloatToBfloat16(static_cast<float>(v));
        std::memcpy(out, &b, 2);
        break;
      }
    }
    out += DtypeSize(dtype);
  }
  return bytes;
}

std::vector<double> Decode(const std::vector<unsigned char>& bytes, Dtype dtype) {
  size_t size = DtypeSize(dtype);
  std::vector<double> values(bytes.size() / size);
  const unsigned char* in = bytes.data();
  for (double& v : values) {
    switch (dtype) {
      case Dtype::kF64:
        std::memcpy(&v, in, 8);
        break;
      case Dtype::kF32: {
        float f;
        std::memcpy(&f, in, 4);
        v = f;
        break;
      }
      case Dtype::kF16: {
        uint16_t h;
        std::memcpy(&h, in, 2);
        v = HalfToFloat(h);
        break;
      }
      case Dtype::kBf16: {
        uint16_t b;
        std::memcpy(&b, in, 2);
        v = Bfloat16ToFloat(b);
        break;
      }
    }
    in += size;
  }
  return values;
}

std::vector<double> RandomValues(size_t count, uint64_t seed, Dtype dtype) {
  std::vector<double> values(count);
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 1;
  for (double& v : values) {
    // 53 random bits -> [0, 1) -> [-1, 1)
    double unit = static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53;
    v = Round(unit * 2.0 - 1.0, dtype);
  }
  return values;
}

ErrorSummary CompareAt(const std::vector<double>& result, const std::vector<size_t>& indices,
                       const std::vector<double>& reference_at_indices) {
  ErrorSummary summary;
  double squares = 0;
  for (double r : reference_at_indices) squares += r * r;
  double rms = reference_at_indices.empty() ? 0 : std::sqrt(squares / static_cast<double>(reference_at_indices.size()));
  if (rms == 0) rms = 1;  // an all-zero reference: compare absolutely
  for (size_t i = 0; i < indices.size() && i < reference_at_indices.size(); ++i) {
    double value = result[indices[i]];
    if (!std::isfinite(value)) {
      if (summary.non_finite++ == 0 && summary.max_rel_error != std::numeric_limits<double>::infinity()) {
        summary.worst_index = indices[i];
        summary.worst_value = value;
        summary.worst_reference = reference_at_indices[i];
      }
      summary.max_rel_error = std::numeric_limits<double>::infinity();
      continue;
    }
    double error = std::fabs(value - reference_at_indices[i]) / rms;
    if (error > summary.max_rel_error) {
      summary.max_rel_error = error;
      summary.worst_index = indices[i];
      summary.worst_value = value;
      summary.worst_reference = reference_at_indices[i];
    }
  }
  return summary;
}

ErrorSummary CompareToReference(const std::vector<double>& result, const std::vector<double>& reference) {
  std::vector<size_t> all(std::min(result.size(), reference.size()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  ErrorSummary summary = CompareAt(result, all, reference);
  // Elements past the reference's end are not compared but still must be finite.
  for (size_t i = all.size(); i < result.size(); ++i) {
    if (!std::isfinite(result[i])) ++summary.non_finite;
  }
  return summary;
}

double Tolerance(Dtype dtype, size_t terms) {
  // Unit roundoff of the output type, and of the accumulation (fp32, or fp64 for fp64).
  double output = 0, accumulate = 0;
  switch (dtype) {
    case Dtype::kF64:
      output = accumulate = 0x1.0p-53;
      break;
    case Dtype::kF32:
      output = accumulate = 0x1.0p-24;
      break;
    case Dtype::kF16:
      output = 0x1.0p-11;
      accumulate = 0x1.0p-24;
      break;
    case Dtype::kBf16:
      output = 0x1.0p-8;
      accumulate = 0x1.0p-24;
      break;
  }
  // Error relative to rms(reference): an element can be several rms large (x 16 covers the tails
  // of sums of uniform products), rounded once at the output; the accumulation's error grows like
  // sqrt(terms) * u for random signs (the worst case, terms * u, is not what correct libraries
  // show, and a bound that loose would let fp32 run silently as TF32).
  double n = static_cast<double>(std::max<size_t>(terms, 1));
  return 16.0 * output + 16.0 * std::sqrt(n) * accumulate;
}

std::vector<double> GemmReferenceAt(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k,
                                    const std::vector<size_t>& positions) {
  (void)m;
  std::vector<double> out;
  out.reserve(positions.size());
  for (size_t position : positions) {
    size_t row = position / static_cast<size_t>(n), col = position % static_cast<size_t>(n);
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += a[row * k + i] * b[static_cast<size_t>(i) * n + col];
    out.push_back(sum);
  }
  return out;
}

std::vector<double> ConvReferenceAt(const std::vector<double>& x, const std::vector<double>& w, const ConvGeometry& g,
                                    const std::vector<size_t>& positions) {
  std::vector<double> out;
  out.reserve(positions.size());
  for (size_t position : positions) {
    size_t rest = position;
    int ox = static_cast<int>(rest % g.out_w);
    rest /= g.out_w;
    int oy = static_cast<int>(rest % g.out_h);
    rest /= g.out_h;
    int kk = static_cast<int>(rest % g.k);
    int nn = static_cast<int>(rest / g.k);
    double sum = 0;
    for (int c = 0; c < g.c; ++c) {
      for (int r = 0; r < g.r; ++r) {
        int iy = oy * g.stride - g.pad + r;
        if (iy < 0 || iy >= g.h) continue;
        for (int s = 0; s < g.s; ++s) {
          int ix = ox * g.stride - g.pad + s;
          if (ix < 0 || ix >= g.w) continue;
          size_t xi = ((static_cast<size_t>(nn) * g.c + c) * g.h + iy) * g.w + ix;
          size_t wi = ((static_cast<size_t>(kk) * g.c + c) * g.r + r) * g.s + s;
          sum += x[xi] * w[wi];
        }
      }
    }
    out.push_back(sum);
  }
  return out;
}

std::vector<size_t> SamplePositions(size_t elements, size_t limit, uint64_t seed) {
  std::vector<size_t> positions;
  if (elements <= limit) {
    positions.resize(elements);
    for (size_t i = 0; i < elements; ++i) positions[i] = i;
    return positions;
  }
  uint64_t state = seed;
  positions.push_back(0);
  positions.push_back(elements - 1);
  while (positions.size() < limit) positions.push_back(SplitMix64(state) % elements);
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  return positions;
}

std::vector<double> LayerNormReference(const std::vector<double>& x, const std::vector<double>& gamma,
                                       const std::vector<double>& beta, int rows, int cols, double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const double* in = &x[static_cast<size_t>(r) * cols];
    double mean = 0;
    for (int c = 0; c < cols; ++c) mean += in[c];
    mean /= cols;
    double var = 0;
    for (int c = 0; c < cols; ++c) var += (in[c] - mean) * (in[c] - mean);
    var /= cols;
    double inv = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < cols; ++c) y[static_cast<size_t>(r) * cols + c] = (in[c] - mean) * inv * gamma[c] + beta[c];
  }
  return y;
}

std::vector<double> SoftmaxReference(const std::vector<double>& x, int rows, int cols) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const double* in = &x[static_cast<size_t>(r) * cols];
    double m = -std::numeric_limits<double>::infinity();
    for (int c = 0; c < cols; ++c) m = std::max(m, in[c]);
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += std::exp(in[c] - m);
    for (int c = 0; c < cols; ++c) y[static_cast<size_t>(r) * cols + c] = std::exp(in[c] - m) / sum;
  }
  return y;
}

void ReduceReference(const std::vector<double>& x, int rows, int cols, std::vector<double>* sums,
                     std::vector<double>* maxima) {
  sums->assign(rows, 0);
  maxima->assign(rows, -std::numeric_limits<double>::infinity());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      double v = x[static_cast<size_t>(r) * cols + c];
      (*sums)[r] += v;
      (*maxima)[r] = std::max((*maxima)[r], v);
    }
  }
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace gputriage::validate
