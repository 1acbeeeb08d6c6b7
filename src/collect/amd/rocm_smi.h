// ROCm SMI (librocm_smi64) through dlopen: no ROCm header or library is needed to build, and
// only the few entry points below are declared. The library reads the same sysfs files as
// amdgpu_sysfs.cc; it is asked here for what it concludes from them (its device list and
// its version), and its real failure on a machine without AMD GPUs is reported as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::amd {

/// rsmi_status_t values this code names (rocm_smi.h); others are reported by number and text.
inline constexpr uint32_t kRsmiStatusSuccess = 0;
inline constexpr uint32_t kRsmiStatusInitError = 8;

/// One device as ROCm SMI enumerates it (index = ROCm SMI's device index).
/// Not verified on hardware: no AMD GPU was available when this was written.
struct RocmSmiDevice {
  uint32_t index = 0;
  /// From rsmi_dev_pci_id_get's BDFID (domain << 32 | bus << 8 | device << 3 | function).
  std::optional<std::string> pci_address;
  /// Bits 28..31 of the BDFID: the compute partition on MI300-class GPUs (ROCm 6+).
  std::optional<uint32_t> partition;
  std::optional<std::string> name;
  /// rsmi_dev_unique_id_get as 16 hex digits, matching amdgpu's sysfs unique_id.
  std::optional<std::string> unique_id;
};

/// What one probe found.
struct RocmSmiReport {
  /// The file the dynamic loader opened ("/usr/lib/librocm_smi64.so.1").
  std::string library_path;
  /// rsmi_version_get's "major.minor.patch" (the library's own version, not ROCm's).
  std::optional<std::string> library_version;
  /// rsmi_init(0)'s status and rsmi_status_string's text for it.
  uint32_t init_status = 0;
  std::string init_status_text;
  /// rsmi_num_monitor_devices after a successful init; nullopt when init failed.
  std::optional<uint32_t> device_count;
  std::vector<RocmSmiDevice> devices;
  /// What went wrong after a successful init ("rsmi_num_monitor_devices: status 2 (...)").
  std::vector<std::string> problems;

  bool initialized() const { return init_status == kRsmiStatusSuccess; }
};

/// The sonames tried, in order: the versioned one first, then the development link, then
/// ROCm's own lib directory (not on the default loader path).
std::vector<std::string> DefaultRocmSmiLibraries();

/// Loads ROCm SMI from `libraries`, initialises it, counts and describes its devices, and
/// shuts it down. Fails (with dlerror's text) only when no library loads or a required entry
/// point is missing; a failed rsmi_init is a report with `init_status` != 0, because that is
/// an answer about the machine. Calls into the library: only for the live machine. The
/// library prints its own complaints (e.g. "Failed to open drm root directory") to stderr.
core::Result<RocmSmiReport> ProbeRocmSmi(const std::vector<std::string>& libraries = DefaultRocmSmiLibraries());

/// {library_path, library_version, init_status, init_status_text, device_count, devices:
/// [{index, pci_address, partition, name, unique_id}]}; unknown values are absent.
core::Json RocmSmiReportToJson(const RocmSmiReport& report);

/// "0000:03:00.0" from a ROCm SMI BDFID (partition bits 28..31 ignored).
std::string PciAddressFromBdfid(uint64_t bdfid);

}  // namespace gputriage::amd
