#include "validate/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "collect/nvidia/nvml.h"
#include "validate/checks.h"

namespace gputriage::validate {

namespace nvml = nvidia::nvml;

namespace {

const std::vector<std::string> kDtypes = {"fp32", "fp16", "bf16", "fp64"};

// The dtypes a check runs in at each level (before --dtypes narrows them).
std::vector<std::string> DtypesFor(const std::string& op, int level) {
  if (op == "gemm") return kDtypes;
  if (op == "conv2d") return level >= 2 ? kDtypes : std::vector<std::string>{"fp32", "fp16"};
  if (op == "layernorm" || op == "softmax" || op == "reduce") return {"fp32", "fp16", "bf16"};
  if (op == "atomics") return {"int32", "int64", "fp32", "fp64"};
  if (op == "stress_gemm") return {"bf16"};
  return {""};
}

core::ValidationCheck Skip(int device, const std::string& name, const std::string& dtype, const std::string& why) {
  core::ValidationCheck check;
  check.name = name;
  check.device = device;
  check.dtype = dtype;
  check.status = core::CheckStatus::kSkip;
  check.detail = why;
  return check;
}

core::ValidationCheck RunOne(CheckContext& ctx, const std::string& op, const std::string& dtype) {
  if (op == "gemm") return CheckGemm(ctx, *ParseDtype(dtype));
  if (op == "conv2d") return CheckConv2d(ctx, *ParseDtype(dtype));
  if (op == "layernorm" || op == "softmax" || op == "reduce") return CheckRowOp(ctx, op, *ParseDtype(dtype));
  if (op == "atomics") return CheckAtomics(ctx, dtype);
  if (op == "launch_limits") return CheckLaunchLimits(ctx);
  if (op == "memory_pattern") return CheckMemoryPattern(ctx);
  if (op == "bandwidth") return CheckBandwidth(ctx, false);
  if (op == "stress_bandwidth") return CheckBandwidth(ctx, true);
  if (op == "pinned_copy") return CheckPinnedCopy(ctx);
  if (op == "stress_gemm") return CheckStressGemm(ctx);
  return CheckPeerCopy(ctx);
}

std::string Seconds(double s) { return fmt::format("{:.1f} s", s); }

}  // namespace

const std::vector<std::string>& KnownOps() {
  static const std::vector<std::string> kOps = {
      "gemm",           "conv2d",    "layernorm",   "softmax",   "reduce",      "atomics",         "launch_limits",
      "memory_pattern", "bandwidth", "pinned_copy", "peer_copy", "stress_gemm", "stress_bandwidth"};
  return kOps;
}

std::vector<std::string> OpsForLevel(int level) {
  std::vector<std::string> ops;
  for (const std::string& op : KnownOps()) {
    if (op.rfind("stress_", 0) == 0 && level < 3) continue;
    ops.push_back(op);
  }
  return ops;
}

bool CheckContext::InjectFault(const std::string& name, const std::string& dtype) const {
  const std::string& spec = options.inject_fault;
  if (spec.empty()) return false;
  size_t colon = spec.find(':');
  if (colon == std::string::npos) return spec == name;
  return spec.substr(0, colon) == name && spec.substr(colon + 1) == dtype;
}

Blas* CheckContext::GetBlas() {
  if (blas == nullptr && !blas_error) {
    auto loaded = LoadBlas(device);
    if (loaded.ok()) {
      blas = std::move(*loaded);
    } else {
      blas_error = loaded.error().message;
    }
  }
  return blas.get();
}

Dnn* CheckContext::GetDnn() {
  if (dnn == nullptr && !dnn_error) {
    auto loaded = LoadDnn(device);
    if (loaded.ok()) {
      dnn = std::move(*loaded);
    } else {
      dnn_error = loaded.error().message;
    }
  }
  return dnn.get();
}

core::ValidationCheck NewCheck(const CheckContext& ctx, const std::string& name, const std::string& dtype) {
  core::ValidationCheck check;
  check.name = name;
  check.device = ctx.device.info().index;
  check.dtype = dtype;
  return check;
}

core::ValidationCheck& SetError(core::ValidationCheck& check, const core::Error& error) {
  check.status = core::CheckStatus::kError;
  check.detail = error.code == core::ErrorCode::kIo && error.message.find("OUT_OF_MEMORY") != std::string::npos
                     ? "out of memory: " + error.message
                     : error.message;
  return check;
}

void SetPeakFraction(const CheckContext& ctx, core::ValidationCheck& check, const std::string& peak_key) {
  if (ctx.peaks == nullptr || !check.throughput) return;
  if (peak_key == "bandwidth") {
    if (ctx.peaks->memory_bandwidth_gbs) check.fraction_of_peak = *check.throughput / *ctx.peaks->memory_bandwidth_gbs;
    return;
  }
  auto it = ctx.peaks->dense_tflops.find(peak_key);
  if (it != ctx.peaks->dense_tflops.end() && it->second > 0) check.fraction_of_peak = *check.throughput / it->second;
}

core::Result<DeviceBuffer> AllocBuffer(Device& device, size_t bytes) {
  GT_ASSIGN_OR_RETURN(DevicePtr ptr, device.Alloc(std::max<size_t>(bytes, 1)));
  return DeviceBuffer(device, ptr, bytes);
}

core::Result<DeviceBuffer> Upload(Device& device, const std::vector<unsigned char>& bytes) {
  GT_ASSIGN_OR_RETURN(DeviceBuffer buffer, AllocBuffer(device, bytes.size()));
  GT_RETURN_IF_ERROR(device.CopyToDevice(buffer.get(), bytes.data(), bytes.size()));
  return buffer;
}

core::Result<std::vector<unsigned char>> Download(Device& device, const DeviceBuffer& buffer) {
  std::vector<unsigned char> bytes(buffer.bytes());
  GT_RETURN_IF_ERROR(device.CopyToHost(bytes.data(), buffer.get(), bytes.size()));
  return bytes;
}

unsigned GridBlocks(const Device& device) {
  return static_cast<unsigned>(std::max(device.info().multiprocessors.value_or(16), 1) * 8);
}

std::string CompareRuns(const std::vector<std::vector<unsigned char>>& runs, Dtype dtype) {
  if (runs.size() < 2) return "";
  const std::vector<unsigned char>& first = runs.front();
  for (size_t r = 1; r < runs.size(); ++r) {
    if (runs[r] == first) continue;
    std::vector<double> a = Decode(first, dtype), b = Decode(runs[r], dtype);
    size_t differing = 0;
    double max_difference = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (std::memcmp(&first[i * DtypeSize(dtype)], &runs[r][i * DtypeSize(dtype)], DtypeSize(dtype)) != 0) {
        ++differing;
        double d = std::fabs(a[i] - b[i]);
        if (std::isnan(d)) d = INFINITY;
        max_difference = std::max(max_difference, d);
      }
    }
    return fmt::format("a repeat differs from the first run in {} of {} elements (max difference {:.3g})", differing,
                       a.size(), max_difference);
  }
  return "";
}

struct TelemetrySampler::State {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
};

TelemetrySampler::TelemetrySampler(const core::ValidationDevice& device, const std::string& phase,
                                   std::vector<core::TelemetrySample>* out) {
  if (device.vendor != "nvidia" || out == nullptr) {
    unavailable_ = "temperature, power and clocks are sampled through NVML only (not on AMD GPUs in this version)";
    return;
  }
  auto library = nvidia::NvmlLibrary::Load();
  if (!library.ok()) {
    unavailable_ = "NVML not available: " + library.error().message;
    return;
  }
  state_ = std::make_unique<State>();
  auto lib = std::make_shared<nvidia::NvmlLibrary>(std::move(*library));
  std::string bus = device.pci_bus_id;
  std::transform(bus.begin(), bus.end(), bus.begin(), [](unsigned char c) { return std::tolower(c); });
  int index = device.index;
  State* state = state_.get();
  state_->thread = std::thread([lib, bus, index, phase, out, state]() {
    if (lib->Init() != nvml::kSuccess) return;
    unsigned count = 0;
    nvml::Device handle = nullptr;
    lib->DeviceGetCount(&count);
    for (unsigned i = 0; i < count && handle == nullptr; ++i) {
      nvml::Device candidate = nullptr;
      nvml::PciInfo pci{};
      if (lib->DeviceGetHandleByIndex(i, &candidate) != nvml::kSuccess || lib->DeviceGetPciInfo == nullptr ||
          lib->DeviceGetPciInfo(candidate, &pci) != nvml::kSuccess) {
        continue;
      }
      std::string id = pci.bus_id;
      std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
      // NVML writes an 8-digit domain ("00000000:19:00.0"), CUDA a 4-digit one.
      if (!bus.empty() && id.size() >= 7 && bus.size() >= 7 && id.substr(id.size() - 7) == bus.substr(bus.size() - 7)) {
        handle = candidate;
      }
    }
    if (handle != nullptr) {
      auto start = std::chrono::steady_clock::now();
      std::unique_lock lock(state->mutex);
      while (!state->stop) {
        core::TelemetrySample sample;
        sample.device = index;
        sample.phase = phase;
        sample.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        unsigned value = 0;
        if (lib->DeviceGetTemperature != nullptr &&
            lib->DeviceGetTemperature(handle, nvml::kTemperatureGpu, &value) == nvml::kSuccess) {
          sample.temperature_c = static_cast<int>(value);
        }
        if (lib->DeviceGetPowerUsage != nullptr && lib->DeviceGetPowerUsage(handle, &value) == nvml::kSuccess) {
          sample.power_w = value / 1000.0;
        }
        if (lib->DeviceGetClockInfo != nullptr &&
            lib->DeviceGetClockInfo(handle, nvml::kClockSm, &value) == nvml::kSuccess) {
          sample.sm_clock_mhz = static_cast<int>(value);
        }
        if (lib->DeviceGetClockInfo != nullptr &&
            lib->DeviceGetClockInfo(handle, nvml::kClockMem, &value) == nvml::kSuccess) {
          sample.memory_clock_mhz = static_cast<int>(value);
        }
        unsigned long long reasons = 0;
        if (lib->DeviceGetClocksEventReasons != nullptr &&
            lib->DeviceGetClocksEventReasons(handle, &reasons) == nvml::kSuccess) {
          sample.throttle_reasons = nvidia::ClocksEventReasonNames(reasons);
        }
        out->push_back(std::move(sample));
        state->wake.wait_for(lock, std::chrono::seconds(1), [state]() { return state->stop; });
      }
    }
    lib->Shutdown();
  });
}

TelemetrySampler::~TelemetrySampler() { Stop(); }

void TelemetrySampler::Stop() {
  if (state_ == nullptr) return;
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  state_.reset();
}

core::ValidationReport RunValidate(const ValidateOptions& options, const std::vector<catalog::ProductPeaks>& products) {
  auto started = std::chrono::steady_clock::now();
  core::ValidationReport report;
  report.level = options.level;
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };

  // What to run: --ops, else the level's set; unknown names are checks with status error.
  std::vector<std::string> ops = options.ops.empty() ? OpsForLevel(options.level) : options.ops;
  std::vector<std::string> unknown;
  std::erase_if(ops, [&](const std::string& op) {
    bool known = std::find(KnownOps().begin(), KnownOps().end(), op) != KnownOps().end();
    if (!known) unknown.push_back(op);
    return !known;
  });
  for (const std::string& op : unknown) {
    report.checks.push_back(
        Skip(-1, op, "", fmt::format("unknown check '{}' (known: {})", op, fmt::join(KnownOps(), ", "))));
    report.checks.back().status = core::CheckStatus::kError;
  }
  for (const std::string& dtype : options.dtypes) {
    if (!ParseDtype(dtype) && dtype != "int32" && dtype != "int64") {
      report.checks.push_back(Skip(-1, "dtype", dtype,
                                   fmt::format("unknown dtype '{}' (known: fp32, fp16, bf16, fp64; int32 and int64 "
                                               "for atomics)",
                                               dtype)));
      report.checks.back().status = core::CheckStatus::kError;
    }
  }

  // The backends: CUDA, then HIP; each says why it has no device when it has none.
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::string> reasons;
  if (options.allow_cuda) {
    auto cuda = LoadCudaBackend();
    if (cuda.ok()) {
      backends.push_back(std::move(*cuda));
    } else {
      reasons.push_back("CUDA: " + cuda.error().message);
    }
  }
  if (options.allow_hip) {
    auto hip = LoadHipBackend();
    if (hip.ok()) {
      backends.push_back(std::move(*hip));
    } else {
      reasons.push_back("HIP: " + hip.error().message);
    }
  }
  report.notes = reasons;
  int total_devices = 0;
  for (const auto& backend : backends) total_devices += backend->device_count();
  report.devices_found = total_devices;

  if (total_devices == 0) {
    std::string why = fmt::format("no usable GPU: {}", fmt::join(reasons, "; "));
    for (const std::string& op : ops) {
      for (const std::string& dtype : DtypesFor(op, options.level)) report.checks.push_back(Skip(-1, op, dtype, why));
    }
    report.findings = ValidationFindings(report);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return report;
  }

  // Devices are numbered across backends in load order (CUDA's first); --device picks among them.
  // All are opened first, so that peer copies can use two at once.
  struct Opened {
    std::unique_ptr<Device> device;
    Backend* backend;
    int index;
  };
  std::vector<Opened> opened;
  int global = 0;
  for (auto& backend : backends) {
    int count = backend->device_count();
    for (int i = 0; i < count; ++i, ++global) {
      if (!options.devices.empty() &&
          std::find(options.devices.begin(), options.devices.end(), global) == options.devices.end()) {
        continue;
      }
      progress(fmt::format("opening {} device {}", backend->vendor(), i));
      auto device = backend->Open(i);
      if (!device.ok()) {
        core::ValidationCheck check = Skip(global, "device", "", device.error().message);
        check.status = core::CheckStatus::kError;
        report.checks.push_back(check);
        continue;
      }
      opened.push_back({std::move(*device), backend.get(), global});
    }
  }
  for (Opened& o : opened) {
    core::ValidationDevice info = o.device->info();
    info.index = o.index;
    const catalog::ProductPeaks* peaks = catalog::FindProductPeaks(products, info.name);
    if (peaks != nullptr) {
      info.peak_bandwidth_gbs = peaks->memory_bandwidth_gbs;
      info.peak_source = peaks->name;
    }
    report.devices.push_back(info);
    CheckContext ctx{*o.device,    options,           peaks, nullptr,      nullptr, std::nullopt,
                     std::nullopt, &report.telemetry, {},    total_devices};
    for (Opened& other : opened) {
      if (&other != &o && other.backend == o.backend) ctx.peers.emplace_back(other.device.get(), other.index);
    }
    for (const std::string& op : ops) {
      for (const std::string& dtype : DtypesFor(op, options.level)) {
        if (!options.dtypes.empty() && !dtype.empty() &&
            std::find(options.dtypes.begin(), options.dtypes.end(), dtype) == options.dtypes.end()) {
          continue;
        }
        progress(fmt::format("device {} ({}): {}{}", o.index, info.name, op, dtype.empty() ? "" : " " + dtype));
        auto check_started = std::chrono::steady_clock::now();
        core::ValidationCheck check = RunOne(ctx, op, dtype);
        check.device = o.index;
        if (!check.seconds) {
          check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - check_started).count();
        }
        progress(fmt::format("  {} ({})", core::EnumName(check.status), Seconds(*check.seconds)));
        report.checks.push_back(std::move(check));
      }
    }
  }
  for (int index : options.devices) {
    if (index < 0 || index >= total_devices) {
      core::ValidationCheck check =
          Skip(index, "device", "",
               fmt::format("device {} does not exist: this machine has {} GPU{} (0-{})", index, total_devices,
                           total_devices == 1 ? "" : "s", total_devices - 1));
      check.status = core::CheckStatus::kError;
      report.checks.push_back(check);
    }
  }
  report.findings = ValidationFindings(report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

std::vector<core::Finding> ValidationFindings(const core::ValidationReport& report) {
  std::vector<core::Finding> findings;
  bool any_device = !report.devices.empty();
  for (const core::ValidationCheck& check : report.checks) {
    std::string label = fmt::format("{}{}{}", check.name, check.dtype.empty() ? "" : " " + check.dtype,
                                    check.device >= 0 ? fmt::format(" on GPU {}", check.device) : "");
    if (check.status == core::CheckStatus::kFail) {
      core::Finding f;
      f.id = "validate-" + check.name + "-failed";
      f.layer = 2;
      f.severity = core::Severity::kError;
      f.title = fmt::format("validate: {} failed", label);
      f.detail = check.detail;
      f.fix = check.name == "memory_pattern"
                  ? "Bad device memory: check the GPU's ECC counters and retired/remapped pages (gputriage doctor), "
                    "drain the GPU and have it serviced."
                  : "The platform gives wrong results for a known operation: no model debugging helps until this is "
                    "fixed. Rerun on another GPU of the same model; if it passes there, drain this one; if it fails "
                    "everywhere, suspect the driver or the library version (gputriage libs, doctor).";
      findings.push_back(std::move(f));
    } else if (check.status == core::CheckStatus::kError && any_device) {
      core::Finding f;
      f.id = "validate-" + check.name + "-error";
      f.layer = 2;
      f.severity = core::Severity::kWarning;
      f.title = fmt::format("validate: {} could not complete", label);
      f.detail = check.detail;
      findings.push_back(std::move(f));
    }
    if (check.fraction_of_peak && check.status == core::CheckStatus::kPass &&
        (check.name == "stress_gemm" || check.name == "bandwidth" || check.name == "stress_bandwidth" ||
         (check.name == "gemm" && report.level >= 2)) &&
        *check.fraction_of_peak < 0.5) {
      core::Finding f;
      f.id = "validate-slow-" + check.name;
      f.layer = 2;
      f.severity = core::Severity::kWarning;
      f.title = fmt::format("validate: {} reached {:.0f}% of the datasheet peak", label, *check.fraction_of_peak * 100);
      f.detail = fmt::format("{:.1f} {}; well-configured GPUs reach well over half of it", *check.throughput,
                             check.throughput_unit.value_or(""));
      f.fix =
          "Look for power or thermal capping (nvidia-smi -q -d PERFORMANCE), clocks held low, a PCIe/NVLink "
          "downgrade, or another job on the GPU.";
      findings.push_back(std::move(f));
    }
  }
  // Several GPUs of one model: one well below the others is a slow node.
  for (const core::ValidationCheck& check : report.checks) {
    if (!check.throughput || check.status != core::CheckStatus::kPass || check.device < 0) continue;
    std::vector<double> others;
    for (const core::ValidationCheck& other : report.checks) {
      if (other.name == check.name && other.dtype == check.dtype && other.device != check.device && other.throughput &&
          other.status == core::CheckStatus::kPass) {
        others.push_back(*other.throughput);
      }
    }
    if (others.empty()) continue;
    double median = Median(others);
    if (*check.throughput < 0.85 * median) {
      core::Finding f;
      f.id = "validate-slower-than-siblings";
      f.layer = 2;
      f.severity = core::Severity::kWarning;
      f.title =
          fmt::format("validate: GPU {} is {:.0f}% slower than the others at {}{}", check.device,
                      (1 - *check.throughput / median) * 100, check.name, check.dtype.empty() ? "" : " " + check.dtype);
      f.detail = fmt::format("{:.1f} {} against a median of {:.1f} on the other GPUs", *check.throughput,
                             check.throughput_unit.value_or(""), median);
      f.fix =
          "A GPU well below its siblings is a common fleet problem: check its clocks, power limit, temperature and "
          "links; drain it if it stays slow.";
      findings.push_back(std::move(f));
    }
  }
  // Throttling seen while under stress.
  std::map<int, std::set<std::string>> throttled;
  for (const core::TelemetrySample& sample : report.telemetry) {
    for (const std::string& reason : sample.throttle_reasons) {
      if (reason.find("thermal") != std::string::npos || reason == "hw_slowdown" ||
          reason == "hw_power_brake_slowdown" || reason == "sw_power_cap") {
        throttled[sample.device].insert(reason);
      }
    }
  }
  for (const auto& [device, reasons] : throttled) {
    core::Finding f;
    f.id = "validate-throttling";
    f.layer = 2;
    f.severity = reasons.count("sw_power_cap") == reasons.size() ? core::Severity::kInfo : core::Severity::kWarning;
    f.title = fmt::format("validate: GPU {} throttled under stress ({})", device, fmt::join(reasons, ", "));
    f.detail =
        "NVML's clock-event reasons during the level-3 stress phases. sw_power_cap alone is the GPU holding its "
        "power limit under full load, which is normal; thermal or hardware slowdown is not.";
    f.fix = "For thermal or hardware slowdown: check cooling, airflow and the power supply of the node.";
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace gputriage::validate
