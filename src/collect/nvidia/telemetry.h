// Telemetry of every NVIDIA GPU through NVML (temperature, power, SM and memory clocks, memory
// used, clock-event reasons), for `run`'s sampler process (gputriage-probe --telemetry). May block
// in the driver like every NVML call: run it in a helper process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/telemetry.h"

namespace gputriage::nvidia {

class NvmlSampler {
 public:
  /// Loads NVML, initialises it and takes every device's handle. Fails saying why (library not
  /// found, nvmlInit's error, no device).
  static core::Result<std::unique_ptr<NvmlSampler>> Open();
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  /// One sample per device; t_s is left 0 (the caller stamps it), phase empty.
  std::vector<core::TelemetrySample> Sample();
  size_t devices() const;

 private:
  struct State;
  explicit NvmlSampler(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gputriage::nvidia
