// GPU telemetry of every vendor behind one sampler, and the loop `gputriage-probe telemetry` runs:
// NVML's GPUs and amdgpu's, sampled every period into CSV lines on a stream.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/os_view.h"
#include "core/result.h"
#include "core/telemetry.h"

namespace gputriage::collect {

class GpuTelemetry {
 public:
  /// Opens NVML (live machine only) and finds the amdgpu devices. Fails, saying why for each
  /// vendor, when neither has a GPU to sample.
  static core::Result<std::unique_ptr<GpuTelemetry>> Open(const core::OsView& os);
  ~GpuTelemetry();
  /// One sample per GPU (NVIDIA's first); t_s left 0.
  std::vector<core::TelemetrySample> Sample();
  /// "nvml", "amdgpu sysfs" or "nvml+amdgpu sysfs".
  std::string source() const;

 private:
  struct State;
  explicit GpuTelemetry(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// What `gputriage-probe telemetry --period S` does: prints "# source=<source> period_s=<S>",
/// the CSV header (core::kTelemetryCsvColumns) and then, every `period_s`, one line per GPU whose
/// t_s is CLOCK_MONOTONIC seconds, flushing each batch; returns 0 when writing fails (the reader
/// is gone) and, when no GPU can be sampled, 3 after "# none: <why>". `period_s` is clamped to
/// [0.1, 10].
int RunTelemetryLoop(const core::OsView& os, double period_s, std::FILE* out);

}  // namespace gputriage::collect
