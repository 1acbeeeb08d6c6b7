// The compute checks: GEMM (vendor BLAS), conv2d (vendor DNN library), layer norm, softmax and
// row reductions (gputriage's kernels), and the level-3 sustained GEMM.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "validate/checks.h"

namespace gputriage::validate {

namespace {

struct GemmShape {
  int m, n, k;
};

std::vector<GemmShape> GemmShapes(int level) {
  std::vector<GemmShape> shapes = {{128, 128, 128}, {257, 129, 67}, {1024, 1024, 1024}};
  if (level >= 2) {
    shapes.insert(shapes.end() - 1, {{1000, 1000, 1000}, {4097, 511, 1025}});
    shapes.push_back({4096, 4096, 4096});
  }
  return shapes;
}

uint64_t Seed(std::initializer_list<int> parts) {
  uint64_t seed = 1469598103934665603ull;
  for (int part : parts) seed = (seed ^ static_cast<uint64_t>(part)) * 1099511628211ull;
  return seed;
}

// Times `call` (which enqueues one operation): batches long enough to time (about 2 ms), the
// median over `repeat` batches, per call.
core::Result<double> MedianMs(Device& device, int repeat, const std::function<core::Result<void>()>& call) {
  GT_ASSIGN_OR_RETURN(double first, device.TimeMs(call));
  int per_batch = std::clamp(static_cast<int>(2.0 / std::max(first, 1e-4)), 1, 500);
  std::vector<double> samples;
  for (int r = 0; r < std::max(repeat, 3); ++r) {
    GT_ASSIGN_OR_RETURN(double ms, device.TimeMs([&]() -> core::Result<void> {
      for (int i = 0; i < per_batch; ++i) GT_RETURN_IF_ERROR(call());
      return {};
    }));
    samples.push_back(ms / per_batch);
  }
  return Median(samples);
}

// Runs `op` `repeat` times, each on a poisoned output (every byte 0xff: NaN in every float type),
// keeps the first result and compares the others with it bitwise. Returns the first result.
core::Result<std::vector<unsigned char>> RunRepeated(CheckContext& ctx, const DeviceBuffer& out, Dtype dtype,
                                                     const std::function<core::Result<void>()>& op,
                                                     std::string* nondeterminism) {
  std::vector<std::vector<unsigned char>> runs;
  for (int r = 0; r < ctx.repeat(); ++r) {
    GT_RETURN_IF_ERROR(ctx.device.Memset(out.get(), 0xff, out.bytes()));
    GT_RETURN_IF_ERROR(op());
    GT_ASSIGN_OR_RETURN(std::vector<unsigned char> bytes, Download(ctx.device, out));
    runs.push_back(std::move(bytes));
    if (runs.size() == 2) {
      std::string diff = CompareRuns(runs, dtype);
      if (!diff.empty() && nondeterminism->empty()) *nondeterminism = diff;
      runs.pop_back();
    }
  }
  return std::move(runs.front());
}

// Judges one result against its reference; appends to `notes`. False when it fails.
bool Judge(const ErrorSummary& error, double tolerance, const std::string& what, std::vector<std::string>* failures,
           double* worst) {
  *worst = std::max(*worst, error.max_rel_error);
  if (error.non_finite > 0) {
    failures->push_back(fmt::format("{}: {} element(s) NaN or infinite (never written, or overflow), first at index {}",
                                    what, error.non_finite, error.worst_index));
    return false;
  }
  if (error.max_rel_error > tolerance) {
    failures->push_back(
        fmt::format("{}: max relative error {:.3g} > tolerance {:.3g} at index {} (got {:.9g}, "
                    "reference {:.9g})",
                    what, error.max_rel_error, tolerance, error.worst_index, error.worst_value, error.worst_reference));
    return false;
  }
  return true;
}

void Corrupt(std::vector<double>& result, size_t index, double reference) {
  if (index < result.size()) result[index] = reference + 1000.0 * (std::fabs(reference) + 1.0);
}

void Finish(core::ValidationCheck& check, const std::vector<std::string>& failures, const std::string& nondeterminism,
            bool injected) {
  std::string detail = check.detail;
  if (!failures.empty()) {
    check.status = core::CheckStatus::kFail;
    detail = fmt::format("{}; {}", fmt::join(failures, "; "), detail);
  }
  if (!nondeterminism.empty()) {
    check.status = core::CheckStatus::kFail;
    detail = fmt::format("nondeterministic: {}; {}", nondeterminism, detail);
  }
  if (injected) detail += " (a fault was injected on purpose by --inject-fault)";
  check.detail = detail;
}

}  // namespace

core::ValidationCheck CheckGemm(CheckContext& ctx, Dtype dtype) {
  core::ValidationCheck check = NewCheck(ctx, "gemm", std::string(DtypeName(dtype)));
  Blas* blas = ctx.GetBlas();
  if (blas == nullptr) {
    check.status = core::CheckStatus::kSkip;
    check.detail = *ctx.blas_error;
    return check;
  }
  bool inject = ctx.InjectFault("gemm", check.dtype);
  std::vector<std::string> failures, shapes;
  std::string nondeterminism;
  double worst = 0, tolerance_shown = 0;
  const std::vector<GemmShape> all_shapes = GemmShapes(ctx.level());
  for (const GemmShape& s : all_shapes) {
    std::string what = fmt::format("{}x{}x{}", s.m, s.n, s.k);
    shapes.push_back(what);
    std::vector<double> a = RandomValues(static_cast<size_t>(s.m) * s.k, Seed({s.m, s.n, s.k, 1}), dtype);
    std::vector<double> b = RandomValues(static_cast<size_t>(s.k) * s.n, Seed({s.m, s.n, s.k, 2}), dtype);
    auto da = Upload(ctx.device, Encode(a, dtype));
    if (!da.ok()) return SetError(check, da.error());
    auto db = Upload(ctx.device, Encode(b, dtype));
    if (!db.ok()) return SetError(check, db.error());
    auto dc = AllocBuffer(ctx.device, static_cast<size_t>(s.m) * s.n * DtypeSize(dtype));
    if (!dc.ok()) return SetError(check, dc.error());
    auto op = [&]() { return blas->Gemm(dtype, s.m, s.n, s.k, da->get(), db->get(), dc->get()); };
    auto first = RunRepeated(ctx, *dc, dtype, op, &nondeterminism);
    if (!first.ok()) return SetError(check, first.error());
    std::vector<double> result = Decode(*first, dtype);
    std::vector<size_t> positions = SamplePositions(result.size(), 4096, Seed({s.m, s.n, 3}));
    std::vector<double> reference = GemmReferenceAt(a, b, s.m, s.n, s.k, positions);
    if (inject) Corrupt(result, positions[positions.size() / 2], reference[positions.size() / 2]);
    ErrorSummary error = CompareAt(result, positions, reference);
    // Every element must be written and finite, not only the sampled ones.
    if (error.non_finite == 0) {
      for (size_t i = 0; i < result.size(); ++i) {
        if (!std::isfinite(result[i])) {
          error.non_finite++;
          error.worst_index = i;
        }
      }
    }
    double tolerance = Tolerance(dtype, static_cast<size_t>(s.k));
    tolerance_shown = std::max(tolerance_shown, tolerance);
    std::string sampled =
        positions.size() < result.size() ? fmt::format(" ({} sampled elements)", positions.size()) : "";
    Judge(error, tolerance, what + sampled, &failures, &worst);
    if (&s == &all_shapes.back()) {
      auto ms = MedianMs(ctx.device, ctx.repeat(), op);
      if (!ms.ok()) return SetError(check, ms.error());
      check.median_ms = *ms;
      check.throughput = 2.0 * s.m * s.n * s.k / (*ms * 1e-3) / 1e12;
      check.throughput_unit = "TFLOP/s";
    }
  }
  check.status = core::CheckStatus::kPass;
  check.max_rel_error = worst;
  check.tolerance = tolerance_shown;
  check.runs = ctx.repeat();
  check.detail = fmt::format("{} shapes ({}), each run {} times and compared bitwise; timed on the largest; {}",
                             shapes.size(), fmt::join(shapes, ", "), ctx.repeat(), blas->describe());
  Finish(check, failures, nondeterminism, inject);
  // Only a large GEMM says anything about the peak: a 1024^3 one (level 1) is launch-bound.
  if (ctx.level() >= 2) SetPeakFraction(ctx, check, check.dtype);
  return check;
}

core::ValidationCheck CheckConv2d(CheckContext& ctx, Dtype dtype) {
  core::ValidationCheck check = NewCheck(ctx, "conv2d", std::string(DtypeName(dtype)));
  Dnn* dnn = ctx.GetDnn();
  if (dnn == nullptr) {
    check.status = core::CheckStatus::kSkip;
    check.detail = *ctx.dnn_error;
    return check;
  }
  bool inject = ctx.InjectFault("conv2d", check.dtype);
  ConvShape shape;  // 1x64x224x224 input, 64x64x3x3 filters, padding 1
  ConvGeometry g{shape.n, shape.c,   shape.h,      shape.w,       shape.k,      shape.r,
                 shape.s, shape.pad, shape.stride, shape.out_h(), shape.out_w()};
  std::vector<double> x = RandomValues(static_cast<size_t>(shape.n) * shape.c * shape.h * shape.w, 11, dtype);
  std::vector<double> w = RandomValues(static_cast<size_t>(shape.k) * shape.c * shape.r * shape.s, 12, dtype);
  auto dx = Upload(ctx.device, Encode(x, dtype));
  if (!dx.ok()) return SetError(check, dx.error());
  auto dw = Upload(ctx.device, Encode(w, dtype));
  if (!dw.ok()) return SetError(check, dw.error());
  size_t out_elements = static_cast<size_t>(shape.n) * shape.k * shape.out_h() * shape.out_w();
  auto dy = AllocBuffer(ctx.device, out_elements * DtypeSize(dtype));
  if (!dy.ok()) return SetError(check, dy.error());
  std::string nondeterminism;
  auto op = [&]() { return dnn->Conv2d(dtype, shape, dx->get(), dw->get(), dy->get()); };
  auto first = RunRepeated(ctx, *dy, dtype, op, &nondeterminism);
  if (!first.ok()) return SetError(check, first.error());
  std::vector<double> result = Decode(*first, dtype);
  std::vector<size_t> positions = SamplePositions(out_elements, 4096, 13);
  std::vector<double> reference = ConvReferenceAt(x, w, g, positions);
  if (inject) Corrupt(result, positions[positions.size() / 2], reference[positions.size() / 2]);
  ErrorSummary error = CompareAt(result, positions, reference);
  for (size_t i = 0; error.non_finite == 0 && i < result.size(); ++i) {
    if (!std::isfinite(result[i])) {
      error.non_finite++;
      error.worst_index = i;
    }
  }
  std::vector<std::string> failures;
  double worst = 0;
  double tolerance = Tolerance(dtype, static_cast<size_t>(shape.c) * shape.r * shape.s);
  Judge(error, tolerance, fmt::format("{} sampled elements", positions.size()), &failures, &worst);
  auto ms = MedianMs(ctx.device, ctx.repeat(), op);
  if (!ms.ok()) return SetError(check, ms.error());
  double flops = 2.0 * out_elements * shape.c * shape.r * shape.s;
  check.status = core::CheckStatus::kPass;
  check.max_rel_error = worst;
  check.tolerance = tolerance;
  check.runs = ctx.repeat();
  check.median_ms = *ms;
  check.throughput = flops / (*ms * 1e-3) / 1e12;
  check.throughput_unit = "TFLOP/s";
  check.detail =
      fmt::format("input {}x{}x{}x{}, filters {}x{}x{}x{}, padding {}; {} runs compared bitwise; {}", shape.n, shape.c,
                  shape.h, shape.w, shape.k, shape.c, shape.r, shape.s, shape.pad, ctx.repeat(), dnn->describe());
  Finish(check, failures, nondeterminism, inject);
  return check;
}

core::ValidationCheck CheckRowOp(CheckContext& ctx, const std::string& op, Dtype dtype) {
  core::ValidationCheck check = NewCheck(ctx, op, std::string(DtypeName(dtype)));
  if (dtype == Dtype::kF64) {
    check.status = core::CheckStatus::kSkip;
    check.detail = fmt::format("{} is checked in fp32, fp16 and bf16 (gputriage's kernels have no fp64 variant)", op);
    return check;
  }
  bool inject = ctx.InjectFault(op, check.dtype);
  std::string suffix = dtype == Dtype::kF32 ? "f32" : dtype == Dtype::kF16 ? "f16" : "bf16";
  std::vector<std::pair<int, int>> shapes = {{2048, 1024}, {33, 3001}};
  if (ctx.level() >= 2) shapes.emplace_back(8192, 4096);
  std::vector<std::string> failures, names;
  std::string nondeterminism, timed_shape;
  double worst = 0, tolerance_shown = 0;
  size_t largest = 0;
  for (auto [rows, cols] : shapes) {
    names.push_back(fmt::format("{}x{}", rows, cols));
    size_t elements = static_cast<size_t>(rows) * cols;
    std::vector<double> x = RandomValues(elements, Seed({rows, cols, 21}), dtype);
    for (double& v : x) v *= 4;  // [-4, 4): exact in every type (a power of two), softmax sees a spread
    auto dx = Upload(ctx.device, Encode(x, dtype));
    if (!dx.ok()) return SetError(check, dx.error());
    DevicePtr in = dx->get();
    std::vector<double> reference;
    std::vector<unsigned char> bytes;
    double tolerance = Tolerance(dtype, static_cast<size_t>(cols));
    Dtype out_type = dtype;
    size_t moved = elements * DtypeSize(dtype);
    std::function<core::Result<void>()> launch;
    std::optional<DeviceBuffer> out, out2, gamma_buffer, beta_buffer;
    std::vector<double> maxima_reference;
    int cols_arg = cols;
    float eps = 1e-5f;
    if (op == "layernorm") {
      std::vector<double> gamma = RandomValues(cols, Seed({cols, 22}), Dtype::kF32);
      std::vector<double> beta = RandomValues(cols, Seed({cols, 23}), Dtype::kF32);
      auto g = Upload(ctx.device, Encode(gamma, Dtype::kF32));
      auto b = Upload(ctx.device, Encode(beta, Dtype::kF32));
      auto o = AllocBuffer(ctx.device, elements * DtypeSize(dtype));
      if (!g.ok() || !b.ok() || !o.ok()) return SetError(check, !g.ok() ? g.error() : !b.ok() ? b.error() : o.error());
      gamma_buffer.emplace(std::move(*g));
      beta_buffer.emplace(std::move(*b));
      out.emplace(std::move(*o));
      reference = LayerNormReference(x, gamma, beta, rows, cols, eps);
      moved *= 2;
      launch = [&, rows]() {
        DevicePtr gp = gamma_buffer->get(), bp = beta_buffer->get(), op_ = out->get();
        return ctx.device.Launch("gt_layernorm_" + suffix, {static_cast<unsigned>(rows)}, {256}, 0,
                                 {&in, &gp, &bp, &op_, &cols_arg, &eps});
      };
    } else if (op == "softmax") {
      auto o = AllocBuffer(ctx.device, elements * DtypeSize(dtype));
      if (!o.ok()) return SetError(check, o.error());
      out.emplace(std::move(*o));
      reference = SoftmaxReference(x, rows, cols);
      moved *= 2;
      launch = [&, rows]() {
        DevicePtr op_ = out->get();
        return ctx.device.Launch("gt_softmax_" + suffix, {static_cast<unsigned>(rows)}, {256}, 0,
                                 {&in, &op_, &cols_arg});
      };
    } else {  // reduce: per-row sum and max, as fp32
      auto o = AllocBuffer(ctx.device, static_cast<size_t>(rows) * 4);
      auto o2 = AllocBuffer(ctx.device, static_cast<size_t>(rows) * 4);
      if (!o.ok() || !o2.ok()) return SetError(check, !o.ok() ? o.error() : o2.error());
      out.emplace(std::move(*o));
      out2.emplace(std::move(*o2));
      ReduceReference(x, rows, cols, &reference, &maxima_reference);
      out_type = Dtype::kF32;
      tolerance = Tolerance(Dtype::kF32, static_cast<size_t>(cols));
      moved += static_cast<size_t>(rows) * 8;
      launch = [&, rows]() {
        DevicePtr sp = out->get(), mp = out2->get();
        return ctx.device.Launch("gt_reduce_" + suffix, {static_cast<unsigned>(rows)}, {256}, 0,
                                 {&in, &sp, &mp, &cols_arg});
      };
    }
    tolerance_shown = std::max(tolerance_shown, tolerance);
    auto first = RunRepeated(ctx, *out, out_type, launch, &nondeterminism);
    if (!first.ok()) return SetError(check, first.error());
    std::vector<double> result = Decode(*first, out_type);
    if (inject) Corrupt(result, result.size() / 2, reference[result.size() / 2]);
    ErrorSummary error = CompareToReference(result, reference);
    Judge(error, tolerance, names.back(), &failures, &worst);
    if (out2) {  // the maxima are exact
      auto maxima = Download(ctx.device, *out2);
      if (!maxima.ok()) return SetError(check, maxima.error());
      std::vector<double> got = Decode(*maxima, Dtype::kF32);
      for (size_t r = 0; r < got.size(); ++r) {
        if (got[r] != maxima_reference[r]) {
          failures.push_back(fmt::format("{}: row {} maximum {} != {}", names.back(), r, got[r], maxima_reference[r]));
          break;
        }
      }
    }
    if (elements >= largest) {  // timed on the largest shape
      largest = elements;
      auto ms = MedianMs(ctx.device, ctx.repeat(), launch);
      if (!ms.ok()) return SetError(check, ms.error());
      check.median_ms = *ms;
      check.throughput = static_cast<double>(moved) / (*ms * 1e-3) / 1e9;
      check.throughput_unit = "GB/s";
      timed_shape = names.back();
    }
  }
  check.status = core::CheckStatus::kPass;
  check.max_rel_error = worst;
  check.tolerance = tolerance_shown;
  check.runs = ctx.repeat();
  check.detail = fmt::format(
      "gputriage's kernel gt_{}_{} on {} (rows x cols), every element against the float64 "
      "reference, {} runs compared bitwise; timed on {} (bytes read + written)",
      op, suffix, fmt::join(names, ", "), ctx.repeat(), timed_shape);
  Finish(check, failures, nondeterminism, inject);
  return check;
}

core::ValidationCheck CheckStressGemm(CheckContext& ctx) {
  core::ValidationCheck check = NewCheck(ctx, "stress_gemm", "bf16");
  Blas* blas = ctx.GetBlas();
  if (blas == nullptr) {
    check.status = core::CheckStatus::kSkip;
    check.detail = *ctx.blas_error;
    return check;
  }
  const int n = 8192;
  const Dtype dtype = Dtype::kBf16;
  double seconds = ctx.options.stress_seconds > 0 ? ctx.options.stress_seconds : 30;
  std::vector<double> a = RandomValues(static_cast<size_t>(n) * n, 31, dtype);
  std::vector<double> b = RandomValues(static_cast<size_t>(n) * n, 32, dtype);
  auto da = Upload(ctx.device, Encode(a, dtype));
  if (!da.ok()) return SetError(check, da.error());
  auto db = Upload(ctx.device, Encode(b, dtype));
  if (!db.ok()) return SetError(check, db.error());
  auto dc = AllocBuffer(ctx.device, static_cast<size_t>(n) * n * 2);
  if (!dc.ok()) return SetError(check, dc.error());
  auto op = [&]() { return blas->Gemm(dtype, n, n, n, da->get(), db->get(), dc->get()); };
  for (int i = 0; i < 3; ++i) {  // warm-up
    if (auto r = op(); !r.ok()) return SetError(check, r.error());
  }
  if (auto r = ctx.device.Synchronize(); !r.ok()) return SetError(check, r.error());
  TelemetrySampler sampler(ctx.device.info(), "gemm", ctx.telemetry);
  std::vector<double> tflops;
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    auto ms = ctx.device.TimeMs([&]() -> core::Result<void> {
      for (int i = 0; i < 10; ++i) GT_RETURN_IF_ERROR(op());
      return {};
    });
    if (!ms.ok()) return SetError(check, ms.error());
    tflops.push_back(10 * 2.0 * n * n * n / (*ms * 1e-3) / 1e12);
  }
  sampler.Stop();
  // The result after the sustained load must still be right (sampled against the reference).
  auto bytes = Download(ctx.device, *dc);
  if (!bytes.ok()) return SetError(check, bytes.error());
  std::vector<double> result = Decode(*bytes, dtype);
  std::vector<size_t> positions = SamplePositions(result.size(), 1024, 33);
  std::vector<double> reference = GemmReferenceAt(a, b, n, n, n, positions);
  bool inject = ctx.InjectFault("stress_gemm", "bf16");
  if (inject) Corrupt(result, positions[positions.size() / 2], reference[positions.size() / 2]);
  ErrorSummary error = CompareAt(result, positions, reference);
  std::vector<std::string> failures;
  double worst = 0;
  double tolerance = Tolerance(dtype, n);
  Judge(error, tolerance, "result after the run", &failures, &worst);
  size_t fifth = std::max<size_t>(1, tflops.size() / 5);
  double early = Median(std::vector<double>(tflops.begin(), tflops.begin() + static_cast<long>(fifth)));
  double late = Median(std::vector<double>(tflops.end() - static_cast<long>(fifth), tflops.end()));
  check.status = core::CheckStatus::kPass;
  check.max_rel_error = worst;
  check.tolerance = tolerance;
  check.runs = static_cast<int>(tflops.size() * 10);
  check.throughput = Median(tflops);
  check.best_throughput = *std::max_element(tflops.begin(), tflops.end());
  check.throughput_unit = "TFLOP/s";
  check.median_ms = 2.0 * n * n * n / (*check.throughput * 1e12) * 1e3;
  check.detail = fmt::format(
      "{}x{}x{} bf16 GEMMs for {:.0f} s ({} timed batches of 10): sustained median {:.1f} "
      "TFLOP/s, first batch {:.1f}, best batch {:.1f}, first fifth {:.1f}, last fifth {:.1f} "
      "({:+.1f}%); {}{}",
      n, n, n, seconds, tflops.size(), *check.throughput, tflops.front(), *check.best_throughput, early, late,
      (late / early - 1) * 100, blas->describe(),
      sampler.unavailable().empty() ? "" : "; telemetry: " + sampler.unavailable());
  Finish(check, failures, "", inject);
  SetPeakFraction(ctx, check, "bf16");
  return check;
}

}  // namespace gputriage::validate
