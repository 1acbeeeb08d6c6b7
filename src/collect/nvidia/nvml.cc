#include "collect/nvidia/nvml.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <utility>

#include "collect/nvidia/procfs.h"
#include "core/text.h"

namespace gputriage::nvidia {

namespace {

using core::Json;
using nvml::Device;
using nvml::Return;

struct NamedCode {
  Return code;
  std::string_view name;
};

// nvmlReturn_t of nvml.h (NVML API 12).
constexpr std::array<NamedCode, 29> kReturnNames = {{
    {0, "NVML_SUCCESS"},
    {1, "NVML_ERROR_UNINITIALIZED"},
    {2, "NVML_ERROR_INVALID_ARGUMENT"},
    {3, "NVML_ERROR_NOT_SUPPORTED"},
    {4, "NVML_ERROR_NO_PERMISSION"},
    {5, "NVML_ERROR_ALREADY_INITIALIZED"},
    {6, "NVML_ERROR_NOT_FOUND"},
    {7, "NVML_ERROR_INSUFFICIENT_SIZE"},
    {8, "NVML_ERROR_INSUFFICIENT_POWER"},
    {9, "NVML_ERROR_DRIVER_NOT_LOADED"},
    {10, "NVML_ERROR_TIMEOUT"},
    {11, "NVML_ERROR_IRQ_ISSUE"},
    {12, "NVML_ERROR_LIBRARY_NOT_FOUND"},
    {13, "NVML_ERROR_FUNCTION_NOT_FOUND"},
    {14, "NVML_ERROR_CORRUPTED_INFOROM"},
    {15, "NVML_ERROR_GPU_IS_LOST"},
    {16, "NVML_ERROR_RESET_REQUIRED"},
    {17, "NVML_ERROR_OPERATING_SYSTEM"},
    {18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"},
    {19, "NVML_ERROR_IN_USE"},
    {20, "NVML_ERROR_MEMORY"},
    {21, "NVML_ERROR_NO_DATA"},
    {22, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED"},
    {23, "NVML_ERROR_INSUFFICIENT_RESOURCES"},
    {24, "NVML_ERROR_FREQ_NOT_SUPPORTED"},
    {25, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"},
    {26, "NVML_ERROR_DEPRECATED"},
    {27, "NVML_ERROR_NOT_READY"},
    {999, "NVML_ERROR_UNKNOWN"},
}};

// nvmlClocksEventReasons / nvmlClocksThrottleReasons bits (same values under both names).
constexpr std::array<std::pair<uint64_t, std::string_view>, 9> kReasonBits = {{
    {0x001, "gpu_idle"},
    {0x002, "applications_clocks_setting"},
    {0x004, "sw_power_cap"},
    {0x008, "hw_slowdown"},
    {0x010, "sync_boost"},
    {0x020, "sw_thermal_slowdown"},
    {0x040, "hw_thermal_slowdown"},
    {0x080, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
}};

// Every string NVML hands back fits in this (the largest documented buffer is 96 bytes).
constexpr unsigned int kStringBuffer = 256;

// Collects failed calls while one session runs and turns them into de-duplicated notes.
class Failures {
 public:
  explicit Failures(const NvmlLibrary& library) : library_(library) {}

  /// True when `code` is success. NOT_SUPPORTED is an answer ("this GPU has no such thing"),
  /// not a failure; anything else is remembered against `function` and `gpu`.
  bool Ok(Return code, const char* function, const std::string& gpu) {
    if (code == nvml::kSuccess) return true;
    if (code == nvml::kErrorNotSupported) return false;
    for (Entry& entry : entries_) {
      if (entry.function == function && entry.code == code) {
        if (!gpu.empty()) entry.gpus.push_back(gpu);
        return false;
      }
    }
    Entry entry{function, code, {}};
    if (!gpu.empty()) entry.gpus.push_back(gpu);
    entries_.push_back(std::move(entry));
    return false;
  }

  void Flush(std::vector<core::NotCollected>& notes) const {
    for (const Entry& entry : entries_) {
      std::string where;
      for (const std::string& gpu : entry.gpus) where += (where.empty() ? "" : ", ") + gpu;
      notes.push_back({fmt::format("nvidia.nvml.{}", entry.function),
                       fmt::format("{} failed{}{}: {} ({})", entry.function, where.empty() ? "" : " for GPU ", where,
                                   library_.ErrorString(entry.code), ReturnName(entry.code))});
    }
  }

 private:
  struct Entry {
    std::string function;
    Return code;
    std::vector<std::string> gpus;
  };
  const NvmlLibrary& library_;
  std::vector<Entry> entries_;
};

std::optional<std::string> CleanString(const char* buffer, size_t size) {
  std::string value = core::SanitizeUtf8(core::Trim(std::string_view(buffer, ::strnlen(buffer, size))));
  if (value.empty()) return std::nullopt;
  return value;
}

// One device's queries; `label` names the GPU in notes (its PCI address once known).
class DeviceReader {
 public:
  DeviceReader(Device device, Failures& failures, std::string label)
      : device_(device), failures_(failures), label_(std::move(label)) {}

  void set_label(std::string label) { label_ = std::move(label); }

  std::optional<std::string> String(Return (*fn)(Device, char*, unsigned int), const char* name) {
    if (fn == nullptr) return std::nullopt;
    std::array<char, kStringBuffer> buffer{};
    if (!failures_.Ok(fn(device_, buffer.data(), kStringBuffer), name, label_)) {
      return std::nullopt;
    }
    return CleanString(buffer.data(), buffer.size());
  }

  std::optional<unsigned int> Uint(Return (*fn)(Device, unsigned int*), const char* name) {
    if (fn == nullptr) return std::nullopt;
    unsigned int value = 0;
    if (!failures_.Ok(fn(device_, &value), name, label_)) return std::nullopt;
    return value;
  }

  std::optional<unsigned int> Clock(Return (*fn)(Device, int, unsigned int*), int type, const char* name) {
    if (fn == nullptr) return std::nullopt;
    unsigned int mhz = 0;
    if (!failures_.Ok(fn(device_, type, &mhz), name, label_)) return std::nullopt;
    return mhz;
  }

  std::optional<bool> Enabled(Return (*fn)(Device, int*), const char* name) {
    if (fn == nullptr) return std::nullopt;
    int state = 0;
    if (!failures_.Ok(fn(device_, &state), name, label_)) return std::nullopt;
    return state == nvml::kFeatureEnabled;
  }

  bool Ok(Return code, const char* name) { return failures_.Ok(code, name, label_); }
  Device device() const { return device_; }

 private:
  Device device_;
  Failures& failures_;
  std::string label_;
};

void SetIfNotEmpty(Json& parent, const char* key, Json child) {
  if (!child.empty()) parent[key] = std::move(child);
}

// nvmlPciInfo_t's address as the PCI scan writes it: its bus id string, else built from its
// domain, bus and device numbers.
std::optional<std::string> PciInfoAddress(nvml::PciInfo& pci) {
  pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
  std::optional<std::string> address = NormalizePciBusId(pci.bus_id);
  if (!address) address = NormalizePciBusId(fmt::format("{:x}:{:x}:{:x}.0", pci.domain, pci.bus, pci.device));
  return address;
}

void ReadPci(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  if (lib.DeviceGetPciInfo == nullptr) return;
  nvml::PciInfo pci{};
  if (!reader.Ok(lib.DeviceGetPciInfo(reader.device(), &pci), "nvmlDeviceGetPciInfo_v3")) return;
  std::optional<std::string> address = PciInfoAddress(pci);
  if (address) {
    gpu["pci_address"] = *address;
    reader.set_label(*address);
  }
}

void ReadMemory(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  // v2 first: nvidia-smi reports v2's split (used excludes the driver's reserved memory).
  if (lib.DeviceGetMemoryInfoV2 != nullptr) {
    nvml::MemoryV2 memory{};
    memory.version = nvml::kMemoryV2Version;
    Return code = lib.DeviceGetMemoryInfoV2(reader.device(), &memory);
    if (code == nvml::kSuccess) {
      gpu["memory_total_bytes"] = memory.total;
      gpu["memory_used_bytes"] = memory.used;
      gpu["memory_free_bytes"] = memory.free;
      gpu["memory_reserved_bytes"] = memory.reserved;
      return;
    }
    if (lib.DeviceGetMemoryInfo == nullptr) {
      reader.Ok(code, "nvmlDeviceGetMemoryInfo_v2");
      return;
    }
  }
  if (lib.DeviceGetMemoryInfo == nullptr) return;
  nvml::Memory memory{};
  if (!reader.Ok(lib.DeviceGetMemoryInfo(reader.device(), &memory), "nvmlDeviceGetMemoryInfo")) {
    return;
  }
  gpu["memory_total_bytes"] = memory.total;
  gpu["memory_used_bytes"] = memory.used;
  gpu["memory_free_bytes"] = memory.free;
}

void ReadTemperature(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  if (lib.DeviceGetTemperature != nullptr) {
    unsigned int celsius = 0;
    if (reader.Ok(lib.DeviceGetTemperature(reader.device(), nvml::kTemperatureGpu, &celsius),
                  "nvmlDeviceGetTemperature")) {
      gpu["temperature_c"] = celsius;
    }
    return;
  }
  if (lib.DeviceGetTemperatureV == nullptr) return;
  nvml::TemperatureV1 temperature{};
  temperature.version = nvml::kTemperatureV1Version;
  temperature.sensor_type = nvml::kTemperatureGpu;
  if (reader.Ok(lib.DeviceGetTemperatureV(reader.device(), &temperature), "nvmlDeviceGetTemperatureV")) {
    gpu["temperature_c"] = temperature.temperature;
  }
}

void ReadClocks(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  struct Domain {
    int type;
    const char* current_key;
    const char* max_key;
  };
  static constexpr std::array<Domain, 3> kDomains = {{
      {nvml::kClockGraphics, "graphics_mhz", "max_graphics_mhz"},
      {nvml::kClockSm, "sm_mhz", "max_sm_mhz"},
      {nvml::kClockMem, "memory_mhz", "max_memory_mhz"},
  }};
  Json clocks = Json::object();
  for (const Domain& domain : kDomains) {
    core::SetIf(clocks, domain.current_key,
                reader.Clock(lib.DeviceGetClockInfo, domain.type, "nvmlDeviceGetClockInfo"));
    core::SetIf(clocks, domain.max_key,
                reader.Clock(lib.DeviceGetMaxClockInfo, domain.type, "nvmlDeviceGetMaxClockInfo"));
  }
  SetIfNotEmpty(gpu, "clocks", std::move(clocks));
}

void ReadUtilization(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  if (lib.DeviceGetUtilizationRates == nullptr) return;
  nvml::Utilization rates{};
  if (reader.Ok(lib.DeviceGetUtilizationRates(reader.device(), &rates), "nvmlDeviceGetUtilizationRates")) {
    gpu["utilization"] = Json{{"gpu_percent", rates.gpu}, {"memory_percent", rates.memory}};
  }
}

void ReadEcc(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  Json ecc = Json::object();
  if (lib.DeviceGetEccMode != nullptr) {
    int current = 0;
    int pending = 0;
    if (reader.Ok(lib.DeviceGetEccMode(reader.device(), &current, &pending), "nvmlDeviceGetEccMode")) {
      ecc["mode_current"] = current == nvml::kFeatureEnabled;
      ecc["mode_pending"] = pending == nvml::kFeatureEnabled;
    }
  }
  if (lib.DeviceGetTotalEccErrors != nullptr) {
    struct Counter {
      int error_type;
      int counter_type;
      const char* key;
    };
    static constexpr std::array<Counter, 4> kCounters = {{
        {nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, "volatile_corrected"},
        {nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, "volatile_uncorrected"},
        {nvml::kMemoryErrorCorrected, nvml::kAggregateEcc, "aggregate_corrected"},
        {nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc, "aggregate_uncorrected"},
    }};
    for (const Counter& counter : kCounters) {
      unsigned long long count = 0;
      if (reader.Ok(lib.DeviceGetTotalEccErrors(reader.device(), counter.error_type, counter.counter_type, &count),
                    "nvmlDeviceGetTotalEccErrors")) {
        ecc[counter.key] = count;
      }
    }
  }
  SetIfNotEmpty(gpu, "ecc", std::move(ecc));
}

void ReadRetiredPages(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  Json retired = Json::object();
  if (lib.DeviceGetRetiredPages != nullptr) {
    static constexpr std::array<std::pair<int, const char*>, 2> kCauses = {{
        {nvml::kRetiredMultipleSingleBit, "single_bit_ecc"},
        {nvml::kRetiredDoubleBit, "double_bit_ecc"},
    }};
    for (const auto& [cause, key] : kCauses) {
      // A count of 0 asks only for the number: NVML answers SUCCESS when there are none and
      // INSUFFICIENT_SIZE (with the count filled in) when there are some. The buffer is never
      // written with a count of 0; it is passed because some releases reject NULL.
      unsigned int count = 0;
      std::array<unsigned long long, 1> unused{};
      Return code = lib.DeviceGetRetiredPages(reader.device(), cause, &count, unused.data());
      if (code == nvml::kErrorInsufficientSize || reader.Ok(code, "nvmlDeviceGetRetiredPages")) {
        retired[key] = count;
      }
    }
  }
  core::SetIf(retired, "pending",
              reader.Enabled(lib.DeviceGetRetiredPagesPendingStatus, "nvmlDeviceGetRetiredPagesPendingStatus"));
  SetIfNotEmpty(gpu, "retired_pages", std::move(retired));
}

void ReadRemappedRows(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  if (lib.DeviceGetRemappedRows == nullptr) return;
  unsigned int correctable = 0;
  unsigned int uncorrectable = 0;
  unsigned int pending = 0;
  unsigned int failure = 0;
  if (reader.Ok(lib.DeviceGetRemappedRows(reader.device(), &correctable, &uncorrectable, &pending, &failure),
                "nvmlDeviceGetRemappedRows")) {
    gpu["remapped_rows"] = Json{{"correctable", correctable},
                                {"uncorrectable", uncorrectable},
                                {"pending", pending != 0},
                                {"failure", failure != 0}};
  }
}

void ReadThrottleReasons(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  if (lib.DeviceGetClocksEventReasons == nullptr) return;
  unsigned long long mask = 0;
  if (reader.Ok(lib.DeviceGetClocksEventReasons(reader.device(), &mask), "nvmlDeviceGetCurrentClocksEventReasons")) {
    gpu["throttle_reasons"] = Json{{"mask", mask}, {"active", ClocksEventReasonNames(mask)}};
  }
}

void ReadModes(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  core::SetIf(gpu, "persistence_mode", reader.Enabled(lib.DeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode"));
  if (lib.DeviceGetComputeMode != nullptr) {
    int mode = 0;
    if (reader.Ok(lib.DeviceGetComputeMode(reader.device(), &mode), "nvmlDeviceGetComputeMode")) {
      gpu["compute_mode"] = ComputeModeName(mode);
    }
  }
  if (lib.DeviceGetMigMode != nullptr) {
    unsigned int current = 0;
    unsigned int pending = 0;
    if (reader.Ok(lib.DeviceGetMigMode(reader.device(), &current, &pending), "nvmlDeviceGetMigMode")) {
      gpu["mig_mode"] = Json{{"current", current == nvml::kMigEnable}, {"pending", pending == nvml::kMigEnable}};
    }
  }
}

// Where an active link goes: the far end's PCI address and what it is (a GPU, an NVSwitch).
void ReadNvLinkRemote(const NvmlLibrary& lib, DeviceReader& reader, unsigned int link, Json& entry) {
  if (lib.DeviceGetNvLinkRemotePciInfo != nullptr) {
    nvml::PciInfo pci{};
    if (reader.Ok(lib.DeviceGetNvLinkRemotePciInfo(reader.device(), link, &pci),
                  "nvmlDeviceGetNvLinkRemotePciInfo_v2")) {
      core::SetIf(entry, "remote_pci_address", PciInfoAddress(pci));
    }
  }
  if (lib.DeviceGetNvLinkRemoteDeviceType != nullptr) {
    int type = 0;
    if (reader.Ok(lib.DeviceGetNvLinkRemoteDeviceType(reader.device(), link, &type),
                  "nvmlDeviceGetNvLinkRemoteDeviceType")) {
      entry["remote_device_type"] = NvLinkDeviceTypeName(type);
    }
  }
}

void ReadNvLinks(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  if (lib.DeviceGetNvLinkState == nullptr) return;
  Json links = Json::array();
  for (unsigned int link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
    int active = 0;
    Return code = lib.DeviceGetNvLinkState(reader.device(), link, &active);
    // Links are numbered from 0; the first one past the GPU's last answers INVALID_ARGUMENT,
    // and a GPU without NVLink answers NOT_SUPPORTED for link 0.
    if (code == nvml::kErrorInvalidArgument || code == nvml::kErrorNotSupported) break;
    if (!reader.Ok(code, "nvmlDeviceGetNvLinkState")) continue;
    Json entry{{"link", link}, {"active", active == nvml::kFeatureEnabled}};
    if (active == nvml::kFeatureEnabled) ReadNvLinkRemote(lib, reader, link, entry);
    links.push_back(std::move(entry));
  }
  SetIfNotEmpty(gpu, "nvlink", std::move(links));
}

void ReadPcie(const NvmlLibrary& lib, DeviceReader& reader, Json& gpu) {
  core::SetIf(gpu, "pcie_replay_counter",
              reader.Uint(lib.DeviceGetPcieReplayCounter, "nvmlDeviceGetPcieReplayCounter"));
  Json pcie = Json::object();
  core::SetIf(pcie, "current_gen",
              reader.Uint(lib.DeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration"));
  core::SetIf(pcie, "max_gen", reader.Uint(lib.DeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration"));
  core::SetIf(pcie, "current_width", reader.Uint(lib.DeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth"));
  core::SetIf(pcie, "max_width", reader.Uint(lib.DeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth"));
  SetIfNotEmpty(gpu, "pcie", std::move(pcie));
}

Json QueryDevice(const NvmlLibrary& lib, Device device, unsigned int index, Failures& failures) {
  Json gpu = Json::object();
  gpu["index"] = index;
  DeviceReader reader(device, failures, fmt::format("#{}", index));
  ReadPci(lib, reader, gpu);  // first, so later failures name the PCI address
  core::SetIf(gpu, "name", reader.String(lib.DeviceGetName, "nvmlDeviceGetName"));
  core::SetIf(gpu, "uuid", reader.String(lib.DeviceGetUuid, "nvmlDeviceGetUUID"));
  core::SetIf(gpu, "serial", reader.String(lib.DeviceGetSerial, "nvmlDeviceGetSerial"));
  core::SetIf(gpu, "vbios_version", reader.String(lib.DeviceGetVbiosVersion, "nvmlDeviceGetVbiosVersion"));
  if (lib.DeviceGetCudaComputeCapability != nullptr) {
    int major = 0, minor = 0;
    if (reader.Ok(lib.DeviceGetCudaComputeCapability(device, &major, &minor), "nvmlDeviceGetCudaComputeCapability")) {
      gpu["compute_capability"] = fmt::format("{}.{}", major, minor);  // "9.0": sm_90
    }
  }
  ReadMemory(lib, reader, gpu);
  ReadTemperature(lib, reader, gpu);
  core::SetIf(gpu, "power_draw_mw", reader.Uint(lib.DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage"));
  core::SetIf(gpu, "power_limit_mw", reader.Uint(lib.DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit"));
  ReadClocks(lib, reader, gpu);
  ReadUtilization(lib, reader, gpu);
  ReadEcc(lib, reader, gpu);
  ReadRetiredPages(lib, reader, gpu);
  ReadRemappedRows(lib, reader, gpu);
  ReadThrottleReasons(lib, reader, gpu);
  ReadModes(lib, reader, gpu);
  ReadNvLinks(lib, reader, gpu);
  ReadPcie(lib, reader, gpu);
  return gpu;
}

// Every pair of GPUs that have PCI addresses: the PCIe common ancestor, peer-to-peer support
// per capability, and the NVLinks between them.
Json QueryPeers(const NvmlLibrary& lib, const std::vector<Device>& handles, const Json& gpus, Failures& failures) {
  Json peers = Json::array();
  static constexpr std::array<std::pair<int, const char*>, 4> kCaps = {{{nvml::kP2pCapsRead, "read"},
                                                                        {nvml::kP2pCapsWrite, "write"},
                                                                        {nvml::kP2pCapsNvLink, "nvlink"},
                                                                        {nvml::kP2pCapsAtomics, "atomics"}}};
  for (size_t i = 0; i < handles.size(); ++i) {
    if (!gpus[i].contains("pci_address")) continue;
    for (size_t j = i + 1; j < handles.size(); ++j) {
      if (!gpus[j].contains("pci_address")) continue;
      std::string pair = fmt::format("{} and {}", gpus[i]["pci_address"].get<std::string>(),
                                     gpus[j]["pci_address"].get<std::string>());
      std::optional<int> level;
      if (lib.DeviceGetTopologyCommonAncestor != nullptr) {
        int answer = 0;
        if (failures.Ok(lib.DeviceGetTopologyCommonAncestor(handles[i], handles[j], &answer),
                        "nvmlDeviceGetTopologyCommonAncestor", pair)) {
          level = answer;
        }
      }
      Json p2p = Json::object();
      if (lib.DeviceGetP2PStatus != nullptr) {
        for (const auto& [index, name] : kCaps) {
          int status = 0;
          if (failures.Ok(lib.DeviceGetP2PStatus(handles[i], handles[j], index, &status), "nvmlDeviceGetP2PStatus",
                          pair)) {
            p2p[name] = P2pStatusName(status);
          }
        }
      }
      peers.push_back(PeerJson(gpus[i], gpus[j], level, p2p));
    }
  }
  return peers;
}

void ReadSystem(const NvmlLibrary& lib, Failures& failures, Json& system) {
  std::array<char, kStringBuffer> buffer{};
  if (lib.SystemGetDriverVersion != nullptr &&
      failures.Ok(lib.SystemGetDriverVersion(buffer.data(), kStringBuffer), "nvmlSystemGetDriverVersion", "")) {
    core::SetIf(system, "driver_version", CleanString(buffer.data(), buffer.size()));
  }
  buffer.fill('\0');
  if (lib.SystemGetNvmlVersion != nullptr &&
      failures.Ok(lib.SystemGetNvmlVersion(buffer.data(), kStringBuffer), "nvmlSystemGetNVMLVersion", "")) {
    core::SetIf(system, "nvml_version", CleanString(buffer.data(), buffer.size()));
  }
  int cuda = 0;
  if (lib.SystemGetCudaDriverVersion != nullptr &&
      failures.Ok(lib.SystemGetCudaDriverVersion(&cuda), "nvmlSystemGetCudaDriverVersion_v2", "")) {
    core::SetIf(system, "cuda_driver_version", FormatCudaDriverVersion(cuda));
  }
}

core::Finding VersionMismatchFinding(const NvmlLibrary& lib, const std::string& error_text,
                                     std::string_view kernel_version_line) {
  std::optional<std::string> library_version = LibraryFileVersion(lib.path());
  std::optional<std::string> kernel_version;
  if (!kernel_version_line.empty()) {
    kernel_version = ParseVersionFile(kernel_version_line).driver_version;
  }
  std::string versions;
  if (library_version && kernel_version) {
    versions = fmt::format(" (library {}, kernel module {})", *library_version, *kernel_version);
  } else if (library_version) {
    versions = fmt::format(" (library {})", *library_version);
  } else if (kernel_version) {
    versions = fmt::format(" (kernel module {})", *kernel_version);
  }
  core::Finding finding;
  finding.id = "nvidia.nvml_version_mismatch";
  finding.layer = 3;
  finding.severity = core::Severity::kError;
  finding.title = "The NVIDIA user-space driver and the loaded kernel module differ" + versions;
  finding.detail = fmt::format(
      "nvmlInit_v2 in {} answered \"{}\" (NVML_ERROR_LIB_RM_VERSION_MISMATCH): the user-space "
      "driver libraries are from another release than the nvidia kernel module that is loaded. "
      "NVML, nvidia-smi and every CUDA program fail to initialise until they match. This "
      "usually follows a driver upgrade without a reboot.",
      lib.path().empty() ? std::string("libnvidia-ml") : lib.path(), error_text);
  finding.evidence.push_back(
      {fmt::format("nvmlInit_v2 ({})", lib.path()), fmt::format("NVML_ERROR_LIB_RM_VERSION_MISMATCH: {}", error_text)});
  if (!kernel_version_line.empty()) {
    finding.evidence.push_back({"/proc/driver/nvidia/version", std::string(kernel_version_line)});
  }
  finding.fix =
      "Reboot, or stop every process that uses the GPUs and reload the NVIDIA kernel modules "
      "(nvidia_uvm, nvidia_drm, nvidia_modeset, nvidia) so the loaded module is the installed "
      "release; if the versions still differ, install one driver release for both.";
  finding.references = {"https://docs.nvidia.com/deploy/nvml-api/group__nvmlInitializationAndCleanup.html"};
  return finding;
}

bool IsVersionNumber(std::string_view text) {
  if (text.empty() || text.find('.') == std::string_view::npos) return false;
  if (!std::isdigit(static_cast<unsigned char>(text.front())) ||
      !std::isdigit(static_cast<unsigned char>(text.back()))) {
    return false;
  }
  for (char c : text) {
    if (c != '.' && !std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

core::Result<NvmlLibrary> NvmlLibrary::Load() {
  auto opened = core::DynamicLibrary::Open({"libnvidia-ml.so.1", "libnvidia-ml.so"});
  if (!opened.ok()) return opened.error();
  NvmlLibrary lib;
  lib.library_ = std::move(opened).value();
  const core::DynamicLibrary& dl = lib.library_;

  for (auto bound :
       {dl.Bind("nvmlInit_v2", lib.Init), dl.Bind("nvmlShutdown", lib.Shutdown),
        dl.Bind("nvmlErrorString", lib.ErrorStringFn), dl.Bind("nvmlDeviceGetCount_v2", lib.DeviceGetCount),
        dl.Bind("nvmlDeviceGetHandleByIndex_v2", lib.DeviceGetHandleByIndex)}) {
    if (!bound.ok()) return bound.error();
  }

  dl.BindOptional("nvmlSystemGetDriverVersion", lib.SystemGetDriverVersion);
  dl.BindOptional("nvmlSystemGetNVMLVersion", lib.SystemGetNvmlVersion);
  dl.BindOptional("nvmlSystemGetCudaDriverVersion_v2", lib.SystemGetCudaDriverVersion);
  if (lib.SystemGetCudaDriverVersion == nullptr) {
    dl.BindOptional("nvmlSystemGetCudaDriverVersion", lib.SystemGetCudaDriverVersion);
    if (lib.SystemGetCudaDriverVersion != nullptr) {
      lib.bound_fallbacks.emplace_back("nvmlSystemGetCudaDriverVersion");
    }
  }
  dl.BindOptional("nvmlDeviceGetName", lib.DeviceGetName);
  dl.BindOptional("nvmlDeviceGetUUID", lib.DeviceGetUuid);
  dl.BindOptional("nvmlDeviceGetSerial", lib.DeviceGetSerial);
  dl.BindOptional("nvmlDeviceGetVbiosVersion", lib.DeviceGetVbiosVersion);
  dl.BindOptional("nvmlDeviceGetCudaComputeCapability", lib.DeviceGetCudaComputeCapability);
  dl.BindOptional("nvmlDeviceGetPciInfo_v3", lib.DeviceGetPciInfo);
  dl.BindOptional("nvmlDeviceGetMemoryInfo", lib.DeviceGetMemoryInfo);
  dl.BindOptional("nvmlDeviceGetMemoryInfo_v2", lib.DeviceGetMemoryInfoV2);
  dl.BindOptional("nvmlDeviceGetTemperature", lib.DeviceGetTemperature);
  dl.BindOptional("nvmlDeviceGetTemperatureV", lib.DeviceGetTemperatureV);
  dl.BindOptional("nvmlDeviceGetPowerUsage", lib.DeviceGetPowerUsage);
  dl.BindOptional("nvmlDeviceGetEnforcedPowerLimit", lib.DeviceGetEnforcedPowerLimit);
  dl.BindOptional("nvmlDeviceGetClockInfo", lib.DeviceGetClockInfo);
  dl.BindOptional("nvmlDeviceGetMaxClockInfo", lib.DeviceGetMaxClockInfo);
  dl.BindOptional("nvmlDeviceGetUtilizationRates", lib.DeviceGetUtilizationRates);
  dl.BindOptional("nvmlDeviceGetEccMode", lib.DeviceGetEccMode);
  dl.BindOptional("nvmlDeviceGetTotalEccErrors", lib.DeviceGetTotalEccErrors);
  dl.BindOptional("nvmlDeviceGetRetiredPages", lib.DeviceGetRetiredPages);
  dl.BindOptional("nvmlDeviceGetRetiredPagesPendingStatus", lib.DeviceGetRetiredPagesPendingStatus);
  dl.BindOptional("nvmlDeviceGetRemappedRows", lib.DeviceGetRemappedRows);
  // Renamed in NVML 12.2 (R535); the older name is still exported by newer libraries.
  dl.BindOptional("nvmlDeviceGetCurrentClocksEventReasons", lib.DeviceGetClocksEventReasons);
  if (lib.DeviceGetClocksEventReasons == nullptr) {
    dl.BindOptional("nvmlDeviceGetCurrentClocksThrottleReasons", lib.DeviceGetClocksEventReasons);
    if (lib.DeviceGetClocksEventReasons != nullptr) {
      lib.bound_fallbacks.emplace_back("nvmlDeviceGetCurrentClocksThrottleReasons");
    }
  }
  dl.BindOptional("nvmlDeviceGetPersistenceMode", lib.DeviceGetPersistenceMode);
  dl.BindOptional("nvmlDeviceGetComputeMode", lib.DeviceGetComputeMode);
  dl.BindOptional("nvmlDeviceGetMigMode", lib.DeviceGetMigMode);
  dl.BindOptional("nvmlDeviceGetNvLinkState", lib.DeviceGetNvLinkState);
  dl.BindOptional("nvmlDeviceGetNvLinkRemotePciInfo_v2", lib.DeviceGetNvLinkRemotePciInfo);
  dl.BindOptional("nvmlDeviceGetNvLinkRemoteDeviceType", lib.DeviceGetNvLinkRemoteDeviceType);
  dl.BindOptional("nvmlDeviceGetP2PStatus", lib.DeviceGetP2PStatus);
  dl.BindOptional("nvmlDeviceGetTopologyCommonAncestor", lib.DeviceGetTopologyCommonAncestor);
  dl.BindOptional("nvmlDeviceGetPcieReplayCounter", lib.DeviceGetPcieReplayCounter);
  dl.BindOptional("nvmlDeviceGetCurrPcieLinkGeneration", lib.DeviceGetCurrPcieLinkGeneration);
  dl.BindOptional("nvmlDeviceGetCurrPcieLinkWidth", lib.DeviceGetCurrPcieLinkWidth);
  dl.BindOptional("nvmlDeviceGetMaxPcieLinkGeneration", lib.DeviceGetMaxPcieLinkGeneration);
  dl.BindOptional("nvmlDeviceGetMaxPcieLinkWidth", lib.DeviceGetMaxPcieLinkWidth);
  return lib;
}

std::string NvmlLibrary::ErrorString(nvml::Return code) const {
  const char* text = ErrorStringFn != nullptr ? ErrorStringFn(code) : nullptr;
  if (text == nullptr) return ReturnName(code);
  return core::SanitizeUtf8(text);
}

NvmlReport QueryNvml(const NvmlLibrary& library, std::string_view kernel_version_line) {
  NvmlReport report;
  Return code = library.Init();
  if (code != nvml::kSuccess) {
    std::string text = library.ErrorString(code);
    report.init_error = code;
    report.notes.push_back({"nvidia.nvml", fmt::format("nvmlInit_v2 failed: {} ({})", text, ReturnName(code))});
    if (code == nvml::kErrorLibRmVersionMismatch) {
      report.findings.push_back(VersionMismatchFinding(library, text, kernel_version_line));
    }
    return report;
  }
  report.initialized = true;
  Failures failures(library);
  ReadSystem(library, failures, report.system);

  unsigned int count = 0;
  std::vector<Device> handles;  // parallel to report.gpus
  if (failures.Ok(library.DeviceGetCount(&count), "nvmlDeviceGetCount_v2", "")) {
    // doctor compares it with the GPUs bound to the driver on the PCI bus.
    report.system["device_count"] = count;
    for (unsigned int index = 0; index < count; ++index) {
      Device device = nullptr;
      if (!failures.Ok(library.DeviceGetHandleByIndex(index, &device), "nvmlDeviceGetHandleByIndex_v2",
                       fmt::format("#{}", index))) {
        continue;
      }
      report.gpus.push_back(QueryDevice(library, device, index, failures));
      handles.push_back(device);
    }
    report.peers = QueryPeers(library, handles, report.gpus, failures);
  }
  library.Shutdown();
  failures.Flush(report.notes);
  return report;
}

std::string ReturnName(nvml::Return code) {
  for (const NamedCode& named : kReturnNames) {
    if (named.code == code) return std::string(named.name);
  }
  return fmt::format("NVML_ERROR_{}", code);
}

std::optional<std::string> FormatCudaDriverVersion(int version) {
  if (version <= 0) return std::nullopt;
  // NVML_CUDA_DRIVER_VERSION_MAJOR(v) = v / 1000, ..._MINOR(v) = (v % 1000) / 10.
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::vector<std::string> ClocksEventReasonNames(uint64_t mask) {
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const auto& [bit, name] : kReasonBits) {
    known |= bit;
    if ((mask & bit) != 0) names.emplace_back(name);
  }
  for (int bit = 0; bit < 64; ++bit) {
    uint64_t value = uint64_t{1} << bit;
    if ((mask & value) != 0 && (known & value) == 0) names.push_back(fmt::format("{:#x}", value));
  }
  return names;
}

std::string TopologyLevelName(int level) {
  switch (level) {
    case 0:
      return "internal";
    case 10:
      return "PIX";
    case 20:
      return "PXB";
    case 30:
      return "PHB";
    case 40:
      return "NODE";
    case 50:
      return "SYS";
    default:
      return fmt::format("level_{}", level);
  }
}

std::string P2pStatusName(int status) {
  static constexpr std::array<std::string_view, 7> kNames = {"ok",
                                                             "chipset_not_supported",
                                                             "gpu_not_supported",
                                                             "ioh_topology_not_supported",
                                                             "disabled_by_regkey",
                                                             "not_supported",
                                                             "unknown"};
  if (status >= 0 && static_cast<size_t>(status) < kNames.size()) return std::string(kNames[status]);
  return fmt::format("status_{}", status);
}

std::string NvLinkDeviceTypeName(int type) {
  switch (type) {
    case 0:
      return "gpu";
    case 1:
      return "ibmnpu";
    case 2:
      return "switch";
    default:
      return "unknown";
  }
}

namespace {

struct LinkCounts {
  uint64_t to_peer = 0;
  uint64_t to_switch = 0;
};

LinkCounts CountActiveLinks(const Json& gpu, const std::string& peer_address) {
  LinkCounts counts;
  auto links = gpu.find("nvlink");
  if (links == gpu.end() || !links->is_array()) return counts;
  for (const Json& link : *links) {
    if (!link.is_object() || link.value("active", false) != true) continue;
    std::string remote = link.value("remote_pci_address", "");
    std::string type = link.value("remote_device_type", "");
    if (!remote.empty() && remote == peer_address) {
      ++counts.to_peer;
    } else if (type == "switch") {
      ++counts.to_switch;
    }
  }
  return counts;
}

}  // namespace

NvLinkBond CountNvLinks(const Json& a, const Json& b) {
  NvLinkBond bond;
  std::string address_a = a.value("pci_address", "");
  std::string address_b = b.value("pci_address", "");
  if (address_a.empty() || address_b.empty()) return bond;
  LinkCounts from_a = CountActiveLinks(a, address_b);
  LinkCounts from_b = CountActiveLinks(b, address_a);
  // Both ends of a direct link answer with each other's address: count one side, the larger
  // (a GPU whose remote query failed for a link still has the other side's word for it).
  bond.links = std::max(from_a.to_peer, from_b.to_peer);
  if (bond.links == 0 && from_a.to_switch > 0 && from_b.to_switch > 0) {
    bond.links = std::min(from_a.to_switch, from_b.to_switch);
    bond.via_switch = true;
  }
  return bond;
}

Json PeerJson(const Json& a, const Json& b, std::optional<int> pcie_level, const Json& p2p) {
  Json peer = Json::object();
  peer["a"] = a.value("pci_address", "");
  peer["b"] = b.value("pci_address", "");
  if (pcie_level) peer["pcie_path"] = TopologyLevelName(*pcie_level);
  NvLinkBond bond = CountNvLinks(a, b);
  // Through NVSwitches the pair shares a fabric only when the driver does not refuse NVLink P2P.
  bool switch_refused = bond.via_switch && p2p.is_object() && p2p.contains("nvlink") && p2p["nvlink"] != "ok";
  if (bond.links > 0 && !switch_refused) {
    peer["path"] = fmt::format("NV{}", bond.links);
    peer["nvlinks"] = bond.links;
    if (bond.via_switch) peer["via_switch"] = true;
  } else if (pcie_level) {
    peer["path"] = TopologyLevelName(*pcie_level);
  }
  if (p2p.is_object() && !p2p.empty()) peer["p2p"] = p2p;
  peer["source"] = "nvml";
  return peer;
}

std::string ComputeModeName(int mode) {
  switch (mode) {
    case 0:
      return "default";
    case 1:
      return "exclusive_thread";
    case 2:
      return "prohibited";
    case 3:
      return "exclusive_process";
    default:
      return fmt::format("unknown_{}", mode);
  }
}

std::optional<std::string> LibraryFileVersion(std::string_view path) {
  if (path.empty()) return std::nullopt;
  // The path dlinfo reported for the library loaded into this process: live machine only, so
  // it is resolved directly rather than through an OsView.
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(std::filesystem::path(path), ec);
  std::string name = (ec ? std::filesystem::path(path) : real).filename().string();
  static constexpr std::string_view kPrefix = "libnvidia-ml.so.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  std::string version = name.substr(kPrefix.size());
  if (!IsVersionNumber(version)) return std::nullopt;
  return version;
}

}  // namespace gputriage::nvidia
