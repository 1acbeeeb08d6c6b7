// Telemetry of every amdgpu GPU from sysfs (hwmon temperature and power, the current sclk/mclk DPM
// levels, VRAM used), for `run`'s sampler process. Throttle reasons are not read for amdgpu in
// this version (the binary gpu_metrics table differs per ASIC). Not verified on AMD hardware: the
// files are the ones amdgpu documents and the snapshot already reads (tested on captured trees).
#pragma once

#include <string>
#include <vector>

#include "collect/amd/amdgpu_sysfs.h"
#include "core/os_view.h"
#include "core/telemetry.h"

namespace gputriage::amd {

class AmdgpuSampler {
 public:
  /// The amdgpu devices of `os` (live or a captured tree); empty when there are none.
  explicit AmdgpuSampler(const core::OsView& os);
  size_t devices() const { return devices_.size(); }
  /// One sample per device, indexes continuing from `first_index`; t_s left 0.
  std::vector<core::TelemetrySample> Sample(int first_index = 0);

 private:
  const core::OsView& os_;
  std::vector<AmdgpuDevice> devices_;
};

}  // namespace gputriage::amd
