// AMD SMI (libamd_smi.so, ROCm 6.0 and later; AMD's successor of ROCm SMI) through dlopen: no
// ROCm header or library is needed to build, and only the entry points below are declared.
//
// Every declaration, enum value and struct layout used here was read from AMD's own header,
// include/amd_smi/amdsmi.h of github.com/ROCm/amdsmi, at the tags rocm-6.0.0 (library 23.4.0.0),
// rocm-6.1.0 (24.5.0.0), rocm-6.1.2 (24.5.2.0), rocm-6.2.0 (24.6.2.0), rocm-6.2.2 (24.6.3.0) and
// commit 0ceca28 (24.7.0.0, ROCm 6.3 development), and from projects/amdsmi of
// github.com/ROCm/rocm-systems (26.5.0) for what the newest library changed.
//
// The structs' ABI changed between releases: amdsmi_driver_info_t's fields were reordered in
// 24.5 (ROCm 6.1), amdsmi_error_count_t gained deferred_count in 24.5, and after 24.7
// amdsmi_power_info_t gained a leading uint64_t socket_power and AMDSMI_MAX_STRING_LENGTH grew
// from 64 to 256 (26.x). So the library version picks the layout (AmdSmiLayoutFor), a struct is
// read only for a version whose layout was read from the header, and every struct is passed as
// an oversized zeroed buffer, so a newer library that writes a larger struct cannot overrun it.
//
// Not verified on hardware: no AMD GPU and no AMD SMI package (Debian 12 has none) were
// available when this was written.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::amd {

/// amdsmi_status_t values this code names (amdsmi.h).
inline constexpr uint32_t kAmdSmiStatusSuccess = 0;
inline constexpr uint32_t kAmdSmiStatusNotSupported = 2;
inline constexpr uint32_t kAmdSmiStatusInitError = 18;

/// The name and the header's description of an amdsmi_status_t value, for a status the library
/// cannot describe (or for the library's own text's company): "AMDSMI_STATUS_NOT_INIT
/// (Processor not initialized)"; "unknown status N" for a value no header release names.
std::string AmdSmiStatusName(uint32_t status);

/// The library's version as amdsmi_get_lib_version reports it. Until 24.x the version was
/// Year.Major.Minor.Release ("24.6.2.0", amdsmi_version_t {year, major, minor, release,
/// build}); from 25.x (ROCm 6.4) it is Major.Minor.Release ("26.5.0"; 26.x drops `year`).
struct AmdSmiVersion {
  std::string text;    ///< "24.6.2.0", "26.5.0"
  uint32_t major = 0;  ///< 24 for "24.6.2.0" (its year), 26 for "26.5.0"
  uint32_t minor = 0;  ///< 6 for "24.6.2.0", 5 for "26.5.0"
  uint32_t patch = 0;  ///< 2 for "24.6.2.0", 0 for "26.5.0"
};

/// The version from amdsmi_version_t: its `build` string (at byte 16 in every release's
/// layout) when it parses, else the first four 32-bit words as {year, major, minor, release}
/// when the year is 23 or 24. nullopt when neither makes sense.
std::optional<AmdSmiVersion> ParseAmdSmiVersion(std::optional<std::string_view> build, const uint32_t words[4]);

/// Which struct layouts a library version has.
enum class AmdSmiLayout {
  kRocm60,     ///< 23.4.x (ROCm 6.0): driver_info {name, version, date}; error counts without deferred
  kRocm61,     ///< 24.5.x to 24.7.x (ROCm 6.1 to 6.3): driver_info {version, date, name}; deferred count
  kUnverified  ///< anything else: structs are not read, only the scalar calls
};
AmdSmiLayout AmdSmiLayoutFor(const AmdSmiVersion& version);
/// "rocm-6.0", "rocm-6.1", "unverified".
std::string_view AmdSmiLayoutName(AmdSmiLayout layout);

struct AmdSmiFirmware {
  std::string block;  ///< amdsmi_fw_block_t without its prefix: "SMU", "PSP_SOSDRV", or "id N"
  uint64_t version = 0;
};

/// One AMD GPU as AMD SMI describes it; a value it could not give is nullopt.
struct AmdSmiGpu {
  std::optional<std::string> pci_address;  ///< amdsmi_get_gpu_device_bdf
  /// amdsmi_get_temp_metric(CURRENT), degrees C, by amdgpu's hwmon label: edge, junction, mem.
  std::map<std::string, int64_t> temperatures_c;
  std::optional<uint64_t> current_socket_power_w;  ///< amdsmi_power_info_t (gpu_metrics), watts
  std::optional<uint64_t> average_socket_power_w;
  std::optional<uint64_t> power_limit_mw;    ///< hwmon power1_cap (microwatts) / 1000
  std::optional<uint64_t> vram_total_bytes;  ///< amdsmi_get_gpu_memory_total(VRAM)
  std::optional<uint64_t> vram_used_bytes;   ///< amdsmi_get_gpu_memory_usage(VRAM)
  std::optional<uint64_t> ecc_correctable;   ///< amdsmi_get_gpu_total_ecc_count
  std::optional<uint64_t> ecc_uncorrectable;
  std::optional<uint64_t> ecc_deferred;  ///< 24.5 and later
  std::optional<std::string> driver_name, driver_version, driver_date;
  std::optional<std::string> vbios_name, vbios_version, vbios_part_number, vbios_build_date;
  std::vector<AmdSmiFirmware> firmware;
};

struct AmdSmiReport {
  std::string library_path;
  uint32_t init_status = 0;  ///< amdsmi_init(AMDSMI_INIT_AMD_GPUS)
  std::string init_status_text;
  std::optional<AmdSmiVersion> library_version;  ///< asked after a successful init (it needs one)
  AmdSmiLayout layout = AmdSmiLayout::kUnverified;
  std::optional<uint32_t> socket_count;
  std::vector<AmdSmiGpu> gpus;
  /// Calls that failed other than with NOT_SUPPORTED: "amdsmi_get_power_info(0000:03:00.0):
  /// status 8 (AMDSMI_STATUS_TIMEOUT (Timeout in API call))"; at most a few, then a count.
  std::vector<std::string> problems;

  bool initialized() const { return init_status == kAmdSmiStatusSuccess; }
};

/// libamd_smi.so, its versioned sonames (26 for ROCm 7, 25 for 6.4, 24 for 6.1 to 6.3, 23 for
/// 6.0), then ROCm's lib directory, which is not on the default loader path.
std::vector<std::string> DefaultAmdSmiLibraries();

/// Loads AMD SMI from `libraries`, initialises it for AMD GPUs, describes every GPU of every
/// socket and shuts it down. Fails (with dlerror's text) only when no library loads or a
/// required entry point is missing; a failed amdsmi_init is a report with `init_status` != 0.
/// Calls into the library: only for the live machine.
core::Result<AmdSmiReport> ProbeAmdSmi(const std::vector<std::string>& libraries = DefaultAmdSmiLibraries());

/// {library_path, library_version, layouts, init_status, init_status_text, socket_count,
/// device_count, devices: [...]}; unknown values are absent (docs/snapshot-schema.md).
core::Json AmdSmiReportToJson(const AmdSmiReport& report);

}  // namespace gputriage::amd
