// The optional, time-boxed Python probe: asks an interpreter which frameworks are installed and
// the CUDA/HIP versions they were built for, without importing anything on the default path.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/model.h"

namespace gputriage::collect {

/// Runs `python` with a small script under a watchdog (`timeout`). Section data: {interpreter,
/// version, executable, sys_path, torch: {version, cuda, hip, cudnn, nccl, cuda_available,
/// device_count, devices: [{name, capability, arch}], arch_list}, jax: {...}, tensorflow:
/// {...}}. A failed import is recorded as the error text of that framework.
core::Section RunPythonProbe(const std::string& python, std::chrono::milliseconds timeout);

/// torch/lib of the `python` interpreter's torch, from importlib's spec (no import: tens of
/// milliseconds), under a watchdog; nullopt when there is no such interpreter or no torch.
std::optional<std::string> FindTorchLibDir(const std::string& python, std::chrono::milliseconds timeout);

}  // namespace gputriage::collect
