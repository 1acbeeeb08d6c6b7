// Private to src/validate: the individual checks and what they share.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/validation.h"
#include "validate/device.h"
#include "validate/reference.h"
#include "validate/validate.h"
#include "validate/vendor_libs.h"

namespace gputriage::validate {

/// What one device's checks share: the device, the options, the vendor libraries (loaded on
/// first use, the reason kept when they cannot be), and the product's datasheet peaks.
struct CheckContext {
  Device& device;
  const ValidateOptions& options;
  const catalog::ProductPeaks* peaks = nullptr;
  std::unique_ptr<Blas> blas;
  std::unique_ptr<Dnn> dnn;
  std::optional<std::string> blas_error, dnn_error;
  std::vector<core::TelemetrySample>* telemetry = nullptr;
  std::vector<std::pair<Device*, int>> peers;  ///< the other open devices of the same runtime, with their numbers
  int devices_found = 0;

  int repeat() const { return options.repeat < 1 ? 1 : options.repeat; }
  int level() const { return options.level; }
  /// Whether --inject-fault names this check (and this dtype, when it gives one).
  bool InjectFault(const std::string& name, const std::string& dtype) const;
  Blas* GetBlas();
  Dnn* GetDnn();
};

/// A check result with its identity filled in.
core::ValidationCheck NewCheck(const CheckContext& ctx, const std::string& name, const std::string& dtype);
/// Sets status error and the detail from `error`.
core::ValidationCheck& SetError(core::ValidationCheck& check, const core::Error& error);
/// Sets fraction_of_peak from the product's dense TFLOP/s for `dtype` or its bandwidth.
void SetPeakFraction(const CheckContext& ctx, core::ValidationCheck& check, const std::string& peak_key);

/// A device buffer freed when it goes out of scope.
class DeviceBuffer {
 public:
  DeviceBuffer(Device& device, DevicePtr ptr, size_t bytes) : device_(&device), ptr_(ptr), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept : device_(other.device_), ptr_(other.ptr_), bytes_(other.bytes_) {
    other.ptr_ = 0;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != 0) device_->Free(ptr_);
  }
  DevicePtr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  Device* device_;
  DevicePtr ptr_;
  size_t bytes_;
};
core::Result<DeviceBuffer> AllocBuffer(Device& device, size_t bytes);
/// Uploads host bytes to a new buffer.
core::Result<DeviceBuffer> Upload(Device& device, const std::vector<unsigned char>& bytes);
core::Result<std::vector<unsigned char>> Download(Device& device, const DeviceBuffer& buffer);

/// Grid size for the grid-stride kernels: a few blocks per multiprocessor.
unsigned GridBlocks(const Device& device);

/// The determinism comparison: empty when every run equals the first bitwise, else a sentence.
std::string CompareRuns(const std::vector<std::vector<unsigned char>>& runs, Dtype dtype);

// The checks (checks_compute.cc).
core::ValidationCheck CheckGemm(CheckContext& ctx, Dtype dtype);
core::ValidationCheck CheckConv2d(CheckContext& ctx, Dtype dtype);
core::ValidationCheck CheckRowOp(CheckContext& ctx, const std::string& op, Dtype dtype);
core::ValidationCheck CheckStressGemm(CheckContext& ctx);

// The checks (checks_device.cc).
core::ValidationCheck CheckAtomics(CheckContext& ctx, const std::string& dtype);
core::ValidationCheck CheckLaunchLimits(CheckContext& ctx);
core::ValidationCheck CheckMemoryPattern(CheckContext& ctx);
core::ValidationCheck CheckBandwidth(CheckContext& ctx, bool stress);
core::ValidationCheck CheckPinnedCopy(CheckContext& ctx);
/// Copies from every peer into this device, timed and verified (skip with one GPU).
core::ValidationCheck CheckPeerCopy(CheckContext& ctx);

/// Samples NVML telemetry of the device with this PCI bus id every `period_s` on a thread until
/// stopped (NVIDIA only; AMD: not sampled, said in the check's detail).
class TelemetrySampler {
 public:
  TelemetrySampler(const core::ValidationDevice& device, const std::string& phase,
                   std::vector<core::TelemetrySample>* out);
  ~TelemetrySampler();
  void Stop();
  /// Why nothing was sampled ("NVML not available: ..."), empty when sampling ran.
  const std::string& unavailable() const { return unavailable_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string unavailable_;
};

}  // namespace gputriage::validate
