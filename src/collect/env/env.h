// Environment variables of GPU stacks, with secrets redacted.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model.h"

namespace gputriage::env {

/// Collects the variables of GPU stacks (HIP_*, HSA_*, AMD_*, ROC*, MIOPEN_*, HIPBLASLT_*, CUDA_*,
/// NCCL_*, RCCL_*, NVIDIA_*, PYTORCH_*, TORCH_*, XLA_*, LD_LIBRARY_PATH, LD_PRELOAD, ...) from
/// `environment` ("NAME=value" entries, e.g. from environ or /proc/PID/environ), redacting
/// secrets (redact.h: RedactValue). Layout of `data`: docs/snapshot-schema.md ("env"):
/// {variables: {NAME: value}, redacted: [NAME, ...], count_total: N}, where `redacted` lists the
/// names whose value was changed, `count_total` counts every entry of `environment`, names and
/// values are valid UTF-8 (core::SanitizeUtf8) and, for a name given twice, the first wins (as
/// getenv does). Entries without '=' or with an empty name are counted and skipped. Never fails.
core::Section Collect(const std::vector<std::string>& environment);

/// True when the variable `name` belongs to a GPU stack and is collected: names starting with
/// HIP, HSA_, AMD_, AMDGPU_, HCC_, ROC, MIOPEN_, MIGRAPHX_, CUDA_, CUDNN_, CUBLAS, NCCL_, RCCL_,
/// NVIDIA_, __NV_, PYTORCH_, TORCH, XLA_, TF_, JAX_, TRITON_, GPU_, and exactly LD_LIBRARY_PATH
/// and LD_PRELOAD; not Terraform's TF_VAR_* and TF_TOKEN_*. Case-sensitive, like the stacks.
bool IsGpuVariable(std::string_view name);

/// The process's own environment as "NAME=value" entries.
std::vector<std::string> CurrentEnvironment();

}  // namespace gputriage::env
