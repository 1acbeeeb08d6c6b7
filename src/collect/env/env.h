// Environment variables of GPU stacks, with secrets redacted.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace gputriage::env {

/// Collects the variables of GPU stacks (HIP_*, HSA_*, AMD_*, ROC*, MIOPEN_*, HIPBLASLT_*, CUDA_*,
/// NCCL_*, RCCL_*, NVIDIA_*, PYTORCH_*, TORCH_*, XLA_*, LD_LIBRARY_PATH, LD_PRELOAD, ...) from
/// `environment` ("NAME=value" entries, e.g. from environ or /proc/PID/environ), redacting
/// secrets. Layout of `data`: docs/snapshot-schema.md ("env").
core::Section Collect(const std::vector<std::string>& environment);

/// The process's own environment as "NAME=value" entries.
std::vector<std::string> CurrentEnvironment();

}  // namespace gputriage::env
