#include "collect/nvidia/telemetry.h"

#include <fmt/format.h>

#include "collect/nvidia/nvml.h"

namespace gputriage::nvidia {

struct NvmlSampler::State {
  NvmlLibrary lib;
  std::vector<nvml::Device> devices;
};

NvmlSampler::NvmlSampler(std::unique_ptr<State> state) : state_(std::move(state)) {}

NvmlSampler::~NvmlSampler() {
  if (state_) state_->lib.Shutdown();
}

size_t NvmlSampler::devices() const { return state_->devices.size(); }

core::Result<std::unique_ptr<NvmlSampler>> NvmlSampler::Open() {
  core::Result<NvmlLibrary> lib = NvmlLibrary::Load();
  if (!lib.ok()) return lib.error();
  auto state = std::unique_ptr<State>(new State{std::move(*lib), {}});
  if (nvml::Return code = state->lib.Init(); code != nvml::kSuccess) {
    return core::MakeErrorCode(core::ErrorCode::kIo, "nvmlInit failed: {}", state->lib.ErrorString(code));
  }
  unsigned count = 0;
  if (nvml::Return code = state->lib.DeviceGetCount(&count); code != nvml::kSuccess) {
    std::string why = state->lib.ErrorString(code);
    state->lib.Shutdown();
    return core::MakeErrorCode(core::ErrorCode::kIo, "nvmlDeviceGetCount failed: {}", why);
  }
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device device = nullptr;
    // A device NVML cannot open (lost, or in use by a reset) keeps its index with no values.
    if (state->lib.DeviceGetHandleByIndex(i, &device) != nvml::kSuccess) device = nullptr;
    state->devices.push_back(device);
  }
  if (state->devices.empty()) {
    state->lib.Shutdown();
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "NVML sees no GPU");
  }
  return std::unique_ptr<NvmlSampler>(new NvmlSampler(std::move(state)));
}

std::vector<core::TelemetrySample> NvmlSampler::Sample() {
  const NvmlLibrary& lib = state_->lib;
  std::vector<core::TelemetrySample> out;
  for (size_t i = 0; i < state_->devices.size(); ++i) {
    core::TelemetrySample s;
    s.device = static_cast<int>(i);
    nvml::Device d = state_->devices[i];
    if (d != nullptr) {
      unsigned value = 0;
      if (lib.DeviceGetTemperature != nullptr &&
          lib.DeviceGetTemperature(d, nvml::kTemperatureGpu, &value) == nvml::kSuccess) {
        s.temperature_c = static_cast<int>(value);
      }
      if (lib.DeviceGetPowerUsage != nullptr && lib.DeviceGetPowerUsage(d, &value) == nvml::kSuccess) {
        s.power_w = value / 1000.0;
      }
      if (lib.DeviceGetClockInfo != nullptr && lib.DeviceGetClockInfo(d, nvml::kClockSm, &value) == nvml::kSuccess) {
        s.sm_clock_mhz = static_cast<int>(value);
      }
      if (lib.DeviceGetClockInfo != nullptr && lib.DeviceGetClockInfo(d, nvml::kClockMem, &value) == nvml::kSuccess) {
        s.memory_clock_mhz = static_cast<int>(value);
      }
      if (lib.DeviceGetMemoryInfoV2 != nullptr) {
        nvml::MemoryV2 memory{};
        memory.version = nvml::kMemoryV2Version;
        if (lib.DeviceGetMemoryInfoV2(d, &memory) == nvml::kSuccess) {
          s.memory_used_mib = static_cast<double>(memory.used) / (1 << 20);
        }
      }
      if (!s.memory_used_mib && lib.DeviceGetMemoryInfo != nullptr) {
        nvml::Memory memory{};
        if (lib.DeviceGetMemoryInfo(d, &memory) == nvml::kSuccess) {
          s.memory_used_mib = static_cast<double>(memory.used) / (1 << 20);
        }
      }
      unsigned long long reasons = 0;
      if (lib.DeviceGetClocksEventReasons != nullptr &&
          lib.DeviceGetClocksEventReasons(d, &reasons) == nvml::kSuccess) {
        s.throttle_reasons = ClocksEventReasonNames(reasons);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gputriage::nvidia
