#include "collect/env/env.h"

#include <unistd.h>  // environ (declared under _GNU_SOURCE, which g++ defines)

#include <algorithm>
#include <array>
#include <string_view>

#include "core/redact.h"
#include "core/text.h"

namespace gputriage::env {
namespace {

// Stems without a trailing '_' cover whole library families: HIP (HIP_, HIPCC_, HIPBLASLT_),
// ROC (ROC_, ROCR_, ROCM_, ROCBLAS_, ROCP_), CUBLAS (CUBLAS_, CUBLASLT_), TORCH (TORCH_,
// TORCHINDUCTOR_, TORCHDYNAMO_, TORCHELASTIC_).
constexpr std::array<std::string_view, 22> kGpuPrefixes = {
    "HIP",   "HSA_",  "AMD_",    "AMDGPU_", "HCC_",     "ROC",   "MIOPEN_", "MIGRAPHX_", "CUDA_", "CUDNN_",  "CUBLAS",
    "NCCL_", "RCCL_", "NVIDIA_", "__NV_",   "PYTORCH_", "TORCH", "XLA_",    "TF_",       "JAX_",  "TRITON_", "GPU_"};

constexpr std::array<std::string_view, 2> kGpuNames = {"LD_LIBRARY_PATH", "LD_PRELOAD"};

// TF_ is TensorFlow's (TF_CPP_MIN_LOG_LEVEL, TF_FORCE_GPU_ALLOW_GROWTH) but also Terraform's:
// its input variables and registry tokens say nothing about GPUs.
constexpr std::array<std::string_view, 2> kExcludedPrefixes = {"TF_VAR_", "TF_TOKEN_"};

template <size_t N>
bool StartsWithAny(std::string_view name, const std::array<std::string_view, N>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view prefix) { return core::StartsWith(name, prefix); });
}

}  // namespace

bool IsGpuVariable(std::string_view name) {
  if (std::find(kGpuNames.begin(), kGpuNames.end(), name) != kGpuNames.end()) return true;
  return StartsWithAny(name, kGpuPrefixes) && !StartsWithAny(name, kExcludedPrefixes);
}

core::Section Collect(const std::vector<std::string>& environment) {
  core::Section section;
  core::Json variables = core::Json::object();
  std::vector<std::string> redacted;
  for (const std::string& entry : environment) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string_view name = std::string_view(entry).substr(0, eq);
    std::string_view value = std::string_view(entry).substr(eq + 1);
    if (!IsGpuVariable(name)) continue;
    std::string key = core::SanitizeUtf8(name);
    if (variables.contains(key)) continue;
    bool changed = false;
    // Redact the raw bytes first, so the rules see the value as the program did (sanitising
    // turns control bytes such as '\r' into U+FFFD, which could split a token).
    variables[key] = core::SanitizeUtf8(core::RedactValue(name, value, &changed));
    if (changed) redacted.push_back(key);
  }
  std::sort(redacted.begin(), redacted.end());
  section.data["variables"] = std::move(variables);
  section.data["redacted"] = std::move(redacted);
  section.data["count_total"] = environment.size();
  return section;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    out.emplace_back(*entry);
  }
  return out;
}

}  // namespace gputriage::env
