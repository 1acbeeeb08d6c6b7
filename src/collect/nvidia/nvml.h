// NVML, loaded with dlopen: the few types, constants and entry points gputriage uses, declared
// here so the build needs no CUDA SDK (practice 5; nvtop's extract_gpuinfo_nvidia.c does the
// same). Every layout and value below was checked against NVIDIA's nvml.h (NVML API 12, as
// vendored in NVIDIA/go-nvml gen/nvml/nvml.h 12.2.140) and the NVML 13 prototypes in
// cuda-python's cynvml; the static_asserts pin the struct sizes of that header.
//
// The library is loaded only on the live machine (never under --root).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dynlib.h"
#include "core/model.h"
#include "core/result.h"

namespace gputriage::nvidia {

namespace nvml {

// C enums of nvml.h are 4-byte ints on every ABI gputriage targets; the entry points are
// declared with int / unsigned int in their place.
using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorLibRmVersionMismatch = 18;
inline constexpr Return kErrorUnknown = 999;

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t

// nvmlPciInfo_t, filled by nvmlDeviceGetPciInfo_v3.
struct PciInfo {
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;     // device id << 16 | vendor id
  unsigned int pci_subsystem_id;  // added in NVML 2.285
  char bus_id[32];                // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:00:06.0"
};
static_assert(sizeof(PciInfo) == 68, "nvmlPciInfo_t layout");

// nvmlMemory_t (v1): used includes the memory the driver reserves.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(Memory) == 24, "nvmlMemory_t layout");

// nvmlMemory_v2_t: `version` must be kMemoryV2Version; used excludes `reserved`.
struct MemoryV2 {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(MemoryV2) == 40, "nvmlMemory_v2_t layout");
// NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | 2 << 24.
inline constexpr unsigned int kMemoryV2Version = sizeof(MemoryV2) | (2u << 24);

// nvmlTemperature_v1_t for nvmlDeviceGetTemperatureV (NVML 12.6+; nvmlDeviceGetTemperature is
// deprecated from NVML 13 but still exported).
struct TemperatureV1 {
  unsigned int version;
  int sensor_type;  // nvmlTemperatureSensors_t
  int temperature;
};
static_assert(sizeof(TemperatureV1) == 12, "nvmlTemperature_v1_t layout");
inline constexpr unsigned int kTemperatureV1Version = sizeof(TemperatureV1) | (1u << 24);

// nvmlUtilization_t.
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(Utilization) == 8, "nvmlUtilization_t layout");

inline constexpr int kTemperatureGpu = 0;            // NVML_TEMPERATURE_GPU
inline constexpr int kClockGraphics = 0;             // NVML_CLOCK_GRAPHICS
inline constexpr int kClockSm = 1;                   // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;                  // NVML_CLOCK_MEM
inline constexpr int kFeatureEnabled = 1;            // NVML_FEATURE_ENABLED
inline constexpr int kMemoryErrorCorrected = 0;      // NVML_MEMORY_ERROR_TYPE_CORRECTED
inline constexpr int kMemoryErrorUncorrected = 1;    // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
inline constexpr int kVolatileEcc = 0;               // NVML_VOLATILE_ECC
inline constexpr int kAggregateEcc = 1;              // NVML_AGGREGATE_ECC
inline constexpr int kRetiredMultipleSingleBit = 0;  // ..._MULTIPLE_SINGLE_BIT_ECC_ERRORS
inline constexpr int kRetiredDoubleBit = 1;          // ..._DOUBLE_BIT_ECC_ERROR
inline constexpr unsigned int kMigEnable = 1;        // NVML_DEVICE_MIG_ENABLE
inline constexpr unsigned int kNvLinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
// nvmlGpuP2PCapsIndex_t: NVML_P2P_CAPS_INDEX_READ, _WRITE, _NVLINK, _ATOMICS.
inline constexpr int kP2pCapsRead = 0;
inline constexpr int kP2pCapsWrite = 1;
inline constexpr int kP2pCapsNvLink = 2;
inline constexpr int kP2pCapsAtomics = 3;

}  // namespace nvml

/// The bound entry points of a loaded libnvidia-ml. Required ones are never null after Load();
/// optional ones are null when this driver's library does not export them.
class NvmlLibrary {
 public:
  /// dlopens libnvidia-ml.so.1 (then libnvidia-ml.so) and binds the entry points. Fails with
  /// DynamicLibrary's message ("cannot load libnvidia-ml.so.1: <dlerror>; ...") or the missing
  /// required symbol. Does not call nvmlInit.
  static core::Result<NvmlLibrary> Load();

  /// The file the library was loaded from ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1").
  const std::string& path() const { return library_.path(); }

  /// nvmlErrorString's text for `code` ("Driver/library version mismatch").
  std::string ErrorString(nvml::Return code) const;

  using Device = nvml::Device;
  using Return = nvml::Return;

  // Required.
  Return (*Init)() = nullptr;      // nvmlInit_v2
  Return (*Shutdown)() = nullptr;  // nvmlShutdown
  const char* (*ErrorStringFn)(Return) = nullptr;
  Return (*DeviceGetCount)(unsigned int*) = nullptr;                  // _v2
  Return (*DeviceGetHandleByIndex)(unsigned int, Device*) = nullptr;  // _v2

  // Optional (null when absent).
  Return (*SystemGetDriverVersion)(char*, unsigned int) = nullptr;
  Return (*SystemGetNvmlVersion)(char*, unsigned int) = nullptr;
  Return (*SystemGetCudaDriverVersion)(int*) = nullptr;  // _v2, else the v1 entry point
  Return (*DeviceGetName)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetUuid)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetSerial)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetVbiosVersion)(Device, char*, unsigned int) = nullptr;
  Return (*DeviceGetCudaComputeCapability)(Device, int*, int*) = nullptr;
  Return (*DeviceGetPciInfo)(Device, nvml::PciInfo*) = nullptr;  // _v3
  Return (*DeviceGetMemoryInfo)(Device, nvml::Memory*) = nullptr;
  Return (*DeviceGetMemoryInfoV2)(Device, nvml::MemoryV2*) = nullptr;
  Return (*DeviceGetTemperature)(Device, int, unsigned int*) = nullptr;
  Return (*DeviceGetTemperatureV)(Device, nvml::TemperatureV1*) = nullptr;
  Return (*DeviceGetPowerUsage)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetEnforcedPowerLimit)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetClockInfo)(Device, int, unsigned int*) = nullptr;
  Return (*DeviceGetMaxClockInfo)(Device, int, unsigned int*) = nullptr;
  Return (*DeviceGetUtilizationRates)(Device, nvml::Utilization*) = nullptr;
  Return (*DeviceGetEccMode)(Device, int*, int*) = nullptr;
  Return (*DeviceGetTotalEccErrors)(Device, int, int, unsigned long long*) = nullptr;
  Return (*DeviceGetRetiredPages)(Device, int, unsigned int*, unsigned long long*) = nullptr;
  Return (*DeviceGetRetiredPagesPendingStatus)(Device, int*) = nullptr;
  Return (*DeviceGetRemappedRows)(Device, unsigned int*, unsigned int*, unsigned int*, unsigned int*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, else the older ...ClocksThrottleReasons.
  Return (*DeviceGetClocksEventReasons)(Device, unsigned long long*) = nullptr;
  Return (*DeviceGetPersistenceMode)(Device, int*) = nullptr;
  Return (*DeviceGetComputeMode)(Device, int*) = nullptr;
  Return (*DeviceGetMigMode)(Device, unsigned int*, unsigned int*) = nullptr;
  Return (*DeviceGetNvLinkState)(Device, unsigned int, int*) = nullptr;
  Return (*DeviceGetNvLinkRemotePciInfo)(Device, unsigned int, nvml::PciInfo*) = nullptr;  // _v2
  Return (*DeviceGetNvLinkRemoteDeviceType)(Device, unsigned int, int*) = nullptr;
  Return (*DeviceGetP2PStatus)(Device, Device, int, int*) = nullptr;
  Return (*DeviceGetTopologyCommonAncestor)(Device, Device, int*) = nullptr;
  Return (*DeviceGetPcieReplayCounter)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetCurrPcieLinkGeneration)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetCurrPcieLinkWidth)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetMaxPcieLinkGeneration)(Device, unsigned int*) = nullptr;
  Return (*DeviceGetMaxPcieLinkWidth)(Device, unsigned int*) = nullptr;

  /// Names of the entry points actually bound for the optional fallbacks, for evidence
  /// ("nvmlDeviceGetCurrentClocksEventReasons").
  std::vector<std::string> bound_fallbacks;

 private:
  core::DynamicLibrary library_;
};

/// What one NVML session produced.
struct NvmlReport {
  /// True when nvmlInit_v2 succeeded (and nvmlShutdown was called).
  bool initialized = false;
  /// nvmlInit_v2's failure code, when it failed.
  std::optional<nvml::Return> init_error;
  /// driver_version, cuda_driver_version, nvml_version (as present).
  core::Json system = core::Json::object();
  /// One object per NVML device, layout of docs/snapshot-schema.md (nvidia probe, per GPU).
  core::Json gpus = core::Json::array();
  /// One object per pair of GPUs with PCI addresses (core::GpuPeer's layout): their PCIe
  /// common ancestor, NVLinks and peer-to-peer support.
  core::Json peers = core::Json::array();
  /// Failed calls, de-duplicated by entry point and error ("nvidia.nvml.<function>").
  std::vector<core::NotCollected> notes;
  /// Raised directly: a driver/library version mismatch.
  std::vector<core::Finding> findings;
};

/// Initialises NVML from `library`, reads the system and every device, and shuts NVML down.
/// Never fails: a failed nvmlInit becomes a note (and, for a version mismatch, the finding
/// "nvidia.nvml_version_mismatch"); a call that answers NOT_SUPPORTED leaves its field absent
/// without a note; any other failure leaves the field absent and adds one note per entry point
/// and error. `kernel_version_line` (from /proc/driver/nvidia/version, may be empty) is
/// evidence for the mismatch finding. May block inside the driver.
NvmlReport QueryNvml(const NvmlLibrary& library, std::string_view kernel_version_line);

/// NVML's name for a return code ("NVML_ERROR_NOT_SUPPORTED"); "NVML_ERROR_<n>" if unknown.
std::string ReturnName(nvml::Return code);

/// nvmlSystemGetCudaDriverVersion's integer as "major.minor" (13000 -> "13.0", 12020 -> "12.2");
/// nullopt for values that are not positive.
std::optional<std::string> FormatCudaDriverVersion(int version);

/// Names of the set bits of a clocks-event (throttle) reason mask, lowest bit first:
/// "gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
/// "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
/// "display_clock_setting"; other bits as "0x200".
std::vector<std::string> ClocksEventReasonNames(uint64_t mask);

/// nvmlGpuTopologyLevel_t in `nvidia-smi topo -m`'s words: 10 "PIX", 20 "PXB", 30 "PHB",
/// 40 "NODE", 50 "SYS", 0 "internal" (two GPUs of one board); other values "level_<n>".
std::string TopologyLevelName(int level);

/// nvmlGpuP2PStatus_t: "ok", "chipset_not_supported", "gpu_not_supported",
/// "ioh_topology_not_supported", "disabled_by_regkey", "not_supported", "unknown"; other values
/// "status_<n>".
std::string P2pStatusName(int status);

/// nvmlIntNvLinkDeviceType_t: "gpu", "ibmnpu", "switch", "unknown" (0xFF and other values).
std::string NvLinkDeviceTypeName(int type);

/// The active NVLinks between two GPUs of the probe's output (objects with `pci_address` and
/// `nvlink`: [{link, active, remote_pci_address, remote_device_type}]): the links of `a` whose far
/// end is `b` and those of `b` whose far end is `a` (each link counted once, from the side that
/// names the other); when there are none and both GPUs have active links into NVSwitches,
/// the fewer of the two counts, with `via_switch` (what `nvidia-smi topo -m` shows as NV18 on an
/// 8-GPU H100 board, where every link goes to a switch).
struct NvLinkBond {
  uint64_t links = 0;
  bool via_switch = false;
};
NvLinkBond CountNvLinks(const core::Json& a, const core::Json& b);

/// The peer object of two probe GPUs (see NvmlReport::peers) from the NVML answers for the pair:
/// `pcie_level` from nvmlDeviceGetTopologyCommonAncestor, `p2p` from nvmlDeviceGetP2PStatus
/// (read, write, nvlink, atomics, each absent when not answered). `path` is "NV<n>" when NVLinks
/// join them (through switches only when the NVLink P2P status is not refused), else the PCIe
/// path.
core::Json PeerJson(const core::Json& a, const core::Json& b, std::optional<int> pcie_level, const core::Json& p2p);

/// nvmlComputeMode_t as "default", "exclusive_thread", "prohibited", "exclusive_process";
/// other values as "unknown_<n>".
std::string ComputeModeName(int mode);

/// The version in a library file name ("/usr/lib/libnvidia-ml.so.535.183.01" ->
/// "535.183.01"), nullopt when the name carries none ("libnvidia-ml.so.1").
std::optional<std::string> LibraryFileVersion(std::string_view path);

}  // namespace gputriage::nvidia
