// Layer 2's model: what `gputriage validate` found when it ran known operations on each GPU and
// checked every result against a float64 CPU reference — the devices, one result per check
// (operation x dtype x device), the telemetry sampled during stress, and the findings. Written by
// src/validate, rendered by the CLI (text, --json, --junit) and read by doctor --validate.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/telemetry.h"

namespace gputriage::core {

inline constexpr int kValidationSchemaVersion = 1;

/// pass: the result matched the reference (and repeated runs agreed bitwise); fail: it did not,
/// or the device misbehaved (nondeterminism, a launch past a limit accepted, bad memory); skip:
/// the check could not run here (no GPU, library absent) and `detail` says why; error: the check
/// itself could not complete (out of memory, a runtime call failed, unknown op).
enum class CheckStatus { kPass, kFail, kSkip, kError };
std::string_view EnumName(CheckStatus status);
bool ParseEnum(std::string_view name, CheckStatus& out);

/// One GPU as the runtime reports it.
struct ValidationDevice {
  int index = 0;           ///< the runtime's ordinal (CUDA / HIP device number)
  std::string vendor;      ///< "nvidia" | "amd"
  std::string name;        ///< "NVIDIA H200", "AMD Instinct MI300X"
  std::string arch;        ///< "sm_90", "gfx942"
  std::string pci_bus_id;  ///< "0000:19:00.0"
  std::string runtime;     ///< "CUDA driver 13.0", "HIP 6.2.41133"
  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> memory_free_bytes;
  std::optional<int> multiprocessors;  ///< SMs / CUs
  std::optional<int> warp_size;        ///< warp or wavefront size
  std::optional<int> max_threads_per_block;
  std::optional<int> max_shared_per_block_bytes;        ///< without opt-in
  std::optional<int> max_shared_per_block_optin_bytes;  ///< with opt-in (NVIDIA)
  std::optional<int> registers_per_block;
  std::optional<double> peak_bandwidth_gbs;  ///< datasheet (kb/tables/gpu-arch-limits.yaml products)
  std::optional<std::string> peak_source;    ///< the product entry the peaks come from
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("index", s.index);
    v("vendor", s.vendor);
    v("name", s.name);
    v("arch", s.arch);
    v("pci_bus_id", s.pci_bus_id);
    v("runtime", s.runtime);
    v("memory_total_bytes", s.memory_total_bytes);
    v("memory_free_bytes", s.memory_free_bytes);
    v("multiprocessors", s.multiprocessors);
    v("warp_size", s.warp_size);
    v("max_threads_per_block", s.max_threads_per_block);
    v("max_shared_per_block_bytes", s.max_shared_per_block_bytes);
    v("max_shared_per_block_optin_bytes", s.max_shared_per_block_optin_bytes);
    v("registers_per_block", s.registers_per_block);
    v("peak_bandwidth_gbs", s.peak_bandwidth_gbs);
    v("peak_source", s.peak_source);
  }
};

/// One check's result. `device` is the device index (-1: not tied to one device, e.g. "no GPU").
struct ValidationCheck {
  std::string name;  ///< "gemm", "conv2d", "layernorm", "memory_pattern", "atomics", ...
  int device = -1;
  std::string dtype;  ///< "fp32" | "fp16" | "bf16" | "fp64" | "int32" | "int64" | "" (not typed)
  CheckStatus status = CheckStatus::kSkip;
  std::string detail;                          ///< what was checked and what was seen, or why it did not run
  std::optional<double> max_rel_error;         ///< max |result - reference| / rms(reference)
  std::optional<double> tolerance;             ///< the bound max_rel_error was held to
  std::optional<double> median_ms;             ///< median of the timed repeats, device events
  std::optional<double> throughput;            ///< in throughput_unit
  std::optional<std::string> throughput_unit;  ///< "TFLOP/s" | "GB/s"
  std::optional<double> best_throughput;       ///< the best timed batch (stress: before power/thermal limits act)
  std::optional<double> fraction_of_peak;      ///< throughput / the product's datasheet peak
  std::optional<int> runs;                     ///< how many times it ran (determinism)
  std::optional<double> seconds;               ///< wall time of the check
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("name", s.name);
    v("device", s.device);
    v("dtype", s.dtype);
    v("status", s.status);
    v("detail", s.detail);
    v("max_rel_error", s.max_rel_error);
    v("tolerance", s.tolerance);
    v("median_ms", s.median_ms);
    v("throughput", s.throughput);
    v("throughput_unit", s.throughput_unit);
    v("best_throughput", s.best_throughput);
    v("fraction_of_peak", s.fraction_of_peak);
    v("runs", s.runs);
    v("seconds", s.seconds);
  }
};

struct ValidationReport {
  int schema_version = kValidationSchemaVersion;
  int level = 1;
  int devices_found = 0;  ///< GPUs the runtimes report (devices: those checked)
  std::vector<ValidationDevice> devices;
  std::vector<ValidationCheck> checks;
  std::vector<TelemetrySample> telemetry;
  std::vector<Finding> findings;
  std::vector<std::string> notes;  ///< what was not available (a backend, a library) and why
  double seconds = 0;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("schema_version", s.schema_version);
    v("level", s.level);
    v("devices_found", s.devices_found);
    v("devices", s.devices);
    v("checks", s.checks);
    v("telemetry", s.telemetry);
    v("findings", s.findings);
    v("notes", s.notes);
    v("seconds", s.seconds);
  }
};

/// Counts of each status.
struct CheckCounts {
  int pass = 0, fail = 0, skip = 0, error = 0;
};
CheckCounts CountChecks(const std::vector<ValidationCheck>& checks);

/// The contract's names are always present (null when unknown).
Json ToJson(const ValidationReport& report);
ValidationReport ValidationReportFromJson(const Json& json);

}  // namespace gputriage::core
