// `gputriage validate` (layer 2): is the GPU stack itself sound? Runs known operations on each
// GPU — GEMM through the vendor BLAS, conv2d through the vendor DNN library, layer norm, softmax
// and reductions with gputriage's own kernels, memory patterns, bandwidth, pinned copies, atomics
// under contention, launch limits and (level 3) sustained load with telemetry — and checks every
// result against a float64 CPU reference, every repeat bitwise against the first.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "catalog/arch_limits.h"
#include "core/validation.h"

namespace gputriage::validate {

struct ValidateOptions {
  int level = 1;                    ///< 1 quick, 2 thorough, 3 stress
  std::vector<int> devices;         ///< runtime ordinals; empty: every device
  std::vector<std::string> ops;     ///< check names (KnownOps); empty: the level's set
  std::vector<std::string> dtypes;  ///< fp32 fp16 bf16 fp64; empty: each check's own set
  int repeat = 5;                   ///< runs per check, compared bitwise (determinism)
  std::string inject_fault;         ///< "NAME" or "NAME:DTYPE": corrupt that check's result on purpose
  double stress_seconds = 0;        ///< level 3: seconds per stress phase (0: 30)
  double memory_fraction = 0;       ///< of free memory for the pattern test (0: the level's default)
  bool allow_cuda = true;
  bool allow_hip = true;
  std::function<void(const std::string&)> progress;  ///< one line per check as it starts (may be empty)
};

/// The check names, in the order they run: gemm conv2d layernorm softmax reduce atomics
/// launch_limits memory_pattern bandwidth pinned_copy peer_copy stress_gemm stress_bandwidth.
const std::vector<std::string>& KnownOps();
/// The checks a level runs when --ops is not given.
std::vector<std::string> OpsForLevel(int level);

/// Runs the checks. Never fails as a whole: what could not run is a check with status skip or
/// error and a detail that says why (no GPU, library absent, out of memory, unknown op).
/// `products` gives the datasheet peaks (kb/tables/gpu-arch-limits.yaml) for fraction_of_peak.
core::ValidationReport RunValidate(const ValidateOptions& options, const std::vector<catalog::ProductPeaks>& products);

/// Findings of a report: failed checks, errors, results well below the datasheet peak or below
/// the sibling GPUs, throttling seen under stress. Called by RunValidate; public for doctor.
std::vector<core::Finding> ValidationFindings(const core::ValidationReport& report);

}  // namespace gputriage::validate
