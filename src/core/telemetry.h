// GPU telemetry sampled while something runs: `validate`'s stress phases and `run`'s jobs
// (temperature, power, clocks, memory used, throttle reasons), the bundle's telemetry.csv that
// holds a run's samples, and the session interface through which `run` samples without knowing
// the vendor (the collector implements it in a helper process, since a driver call can hang).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::core {

/// One sample of one GPU.
struct TelemetrySample {
  int device = 0;     ///< the sampler's GPU index (NVML's index, or amdgpu's order by PCI address)
  double t_s = 0;     ///< seconds since the phase (validate) or the job (run) began
  std::string phase;  ///< validate: "gemm" | "bandwidth"; run: "run"
  std::optional<int> temperature_c;
  std::optional<double> power_w;
  std::optional<int> sm_clock_mhz;      ///< NVIDIA SM clock; amdgpu's sclk
  std::optional<int> memory_clock_mhz;  ///< NVIDIA memory clock; amdgpu's mclk
  std::optional<double> memory_used_mib;
  /// NVML clock-event reasons active at the sample ("sw_thermal_slowdown", "hw_power_brake", ...).
  std::vector<std::string> throttle_reasons;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("device", s.device);
    v("t_s", s.t_s);
    v("phase", s.phase);
    v("temperature_c", s.temperature_c);
    v("power_w", s.power_w);
    v("sm_clock_mhz", s.sm_clock_mhz);
    v("memory_clock_mhz", s.memory_clock_mhz);
    v("memory_used_mib", s.memory_used_mib);
    v("throttle_reasons", s.throttle_reasons);
  }
};

/// The header line of telemetry.csv (and of the sampler's output, whose first column is the
/// monotonic clock instead of the time since the job started).
inline constexpr std::string_view kTelemetryCsvColumns =
    "t_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,throttle_reasons";

/// One sample as a CSV line without the newline: empty fields for values not read, throttle
/// reasons joined by ';', times with millisecond precision.
std::string TelemetryCsvLine(const TelemetrySample& sample);

/// `samples` as telemetry.csv: the header line, then one line per sample.
std::string TelemetryCsv(const std::vector<TelemetrySample>& samples);

/// What reading telemetry text gave.
struct TelemetryCsvContents {
  std::vector<TelemetrySample> samples;
  std::vector<std::string> problems;  ///< "line 7: power_w 'x' is not a number"; the line is skipped
};

/// Reads telemetry.csv (untrusted: a bundle from elsewhere). The header must be
/// kTelemetryCsvColumns; a line that does not parse is skipped and named in `problems`; at most
/// `max_samples` are kept (the rest counted in a problem). Fails when there is no header or it is
/// another one. `phase` is set on every sample.
Result<TelemetryCsvContents> ParseTelemetryCsv(std::string_view text, std::string_view phase = "run",
                                               size_t max_samples = 1'000'000);

/// What a sampling session gave.
struct TelemetryRecording {
  std::vector<TelemetrySample> samples;  ///< t_s relative to the origin given to Stop
  /// Why there are no samples, or what went wrong ("NVML not found; no amdgpu device", "the
  /// sampler did not stop within 2 s and was abandoned"); empty when all went well.
  std::string note;
  double period_s = 0;
  std::string source;  ///< "nvml", "amdgpu sysfs", "nvml+amdgpu sysfs", or "" when none
};

/// A sampler running in the background. Stop() ends it (bounded in time even if the sampler is
/// stuck in a driver) and returns its samples, times made relative to `origin_monotonic_s`
/// (CLOCK_MONOTONIC seconds, e.g. when the job started).
class TelemetrySession {
 public:
  virtual ~TelemetrySession() = default;
  virtual TelemetryRecording Stop(double origin_monotonic_s) = 0;
};

/// The throttle reasons that slow a GPU down against the workload's will (thermal, power brake,
/// power cap, hardware slowdown); idle, application-clock settings and sync boost are not among them.
bool IsSlowdownReason(std::string_view reason);

}  // namespace gputriage::core
