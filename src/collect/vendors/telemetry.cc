#include "collect/vendors/telemetry.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "collect/amd/telemetry.h"
#include "collect/nvidia/telemetry.h"

namespace gputriage::collect {

struct GpuTelemetry::State {
  std::unique_ptr<nvidia::NvmlSampler> nvml;
  std::unique_ptr<amd::AmdgpuSampler> amdgpu;
};

GpuTelemetry::GpuTelemetry(std::unique_ptr<State> state) : state_(std::move(state)) {}
GpuTelemetry::~GpuTelemetry() = default;

core::Result<std::unique_ptr<GpuTelemetry>> GpuTelemetry::Open(const core::OsView& os) {
  auto state = std::make_unique<State>();
  std::string nvml_why = "not used on a captured tree (--root)";
  if (os.live()) {
    core::Result<std::unique_ptr<nvidia::NvmlSampler>> nvml = nvidia::NvmlSampler::Open();
    if (nvml.ok()) {
      state->nvml = std::move(*nvml);
    } else {
      nvml_why = nvml.error().message;
    }
  }
  state->amdgpu = std::make_unique<amd::AmdgpuSampler>(os);
  if (state->amdgpu->devices() == 0) state->amdgpu.reset();
  if (!state->nvml && !state->amdgpu) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "no GPU to sample: NVML: {}; amdgpu: no device bound to it",
                               nvml_why);
  }
  return std::unique_ptr<GpuTelemetry>(new GpuTelemetry(std::move(state)));
}

std::vector<core::TelemetrySample> GpuTelemetry::Sample() {
  std::vector<core::TelemetrySample> out;
  if (state_->nvml) out = state_->nvml->Sample();
  if (state_->amdgpu) {
    std::vector<core::TelemetrySample> amd = state_->amdgpu->Sample(static_cast<int>(out.size()));
    out.insert(out.end(), std::make_move_iterator(amd.begin()), std::make_move_iterator(amd.end()));
  }
  return out;
}

std::string GpuTelemetry::source() const {
  if (state_->nvml && state_->amdgpu) return "nvml+amdgpu sysfs";
  return state_->nvml ? "nvml" : "amdgpu sysfs";
}

namespace {

double Monotonic() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

bool Write(std::FILE* out, const std::string& text) {
  return std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
}

}  // namespace

int RunTelemetryLoop(const core::OsView& os, double period_s, std::FILE* out) {
  period_s = std::clamp(period_s, 0.1, 10.0);
  core::Result<std::unique_ptr<GpuTelemetry>> telemetry = GpuTelemetry::Open(os);
  if (!telemetry.ok()) {
    Write(out, fmt::format("# none: {}\n", telemetry.error().message));
    return 3;
  }
  if (!Write(out, fmt::format("# source={} period_s={:g}\n{}\n", (*telemetry)->source(), period_s,
                              core::kTelemetryCsvColumns))) {
    return 0;
  }
  double next = Monotonic();
  for (;;) {
    double now = Monotonic();
    std::string batch;
    for (core::TelemetrySample& s : (*telemetry)->Sample()) {
      s.t_s = now;
      batch += core::TelemetryCsvLine(s);
      batch += '\n';
    }
    if (!Write(out, batch)) return 0;
    next += period_s;
    double wait = next - Monotonic();
    if (wait < 0) {  // a slow driver call: start again from now rather than bursting
      next = Monotonic();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

}  // namespace gputriage::collect
