#include "collect/amd/rocm_smi.h"

#include <fmt/format.h>

#include <cstddef>

#include "core/dynlib.h"
#include "core/text.h"

namespace gputriage::amd {

namespace {

// The few ROCm SMI declarations used (rocm_smi/rocm_smi.h, stable since ROCm 3.x).
// rsmi_status_t is a C enum whose largest value is 0xFFFFFFFF, so it is passed as uint32_t.
using RsmiStatus = uint32_t;
struct RsmiVersion {
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
  const char* build;
};
using RsmiInit = RsmiStatus(uint64_t init_flags);
using RsmiShutDown = RsmiStatus();
using RsmiNumMonitorDevices = RsmiStatus(uint32_t* num_devices);
using RsmiStatusString = RsmiStatus(RsmiStatus status, const char** text);
using RsmiVersionGet = RsmiStatus(RsmiVersion* version);
using RsmiDevPciIdGet = RsmiStatus(uint32_t index, uint64_t* bdfid);
using RsmiDevNameGet = RsmiStatus(uint32_t index, char* name, size_t length);
using RsmiDevUniqueIdGet = RsmiStatus(uint32_t index, uint64_t* id);

// More devices than this is a corrupt answer, not a machine (the largest nodes have 8 GPUs
// in 8 partitions each).
constexpr uint32_t kMaxDevices = 1024;

struct Api {
  RsmiInit* init = nullptr;
  RsmiShutDown* shut_down = nullptr;
  RsmiNumMonitorDevices* num_monitor_devices = nullptr;
  RsmiStatusString* status_string = nullptr;
  RsmiVersionGet* version_get = nullptr;
  RsmiDevPciIdGet* dev_pci_id_get = nullptr;
  RsmiDevNameGet* dev_name_get = nullptr;
  RsmiDevUniqueIdGet* dev_unique_id_get = nullptr;
};

core::Result<Api> Bind(const core::DynamicLibrary& lib) {
  Api api;
  for (auto result : {lib.Bind("rsmi_init", api.init), lib.Bind("rsmi_shut_down", api.shut_down),
                      lib.Bind("rsmi_num_monitor_devices", api.num_monitor_devices),
                      lib.Bind("rsmi_status_string", api.status_string)}) {
    if (!result.ok()) return result.error();
  }
  lib.BindOptional("rsmi_version_get", api.version_get);
  lib.BindOptional("rsmi_dev_pci_id_get", api.dev_pci_id_get);
  lib.BindOptional("rsmi_dev_name_get", api.dev_name_get);
  lib.BindOptional("rsmi_dev_unique_id_get", api.dev_unique_id_get);
  return api;
}

std::string StatusText(const Api& api, RsmiStatus status) {
  const char* text = nullptr;
  if (api.status_string(status, &text) != kRsmiStatusSuccess || text == nullptr) {
    return fmt::format("unknown status {}", status);
  }
  return core::SanitizeUtf8(core::Trim(text));
}

// Not verified on hardware: needs an AMD GPU for rsmi_init to succeed.
RocmSmiDevice DescribeDevice(const Api& api, uint32_t index) {
  RocmSmiDevice device;
  device.index = index;
  uint64_t bdfid = 0;
  if (api.dev_pci_id_get != nullptr && api.dev_pci_id_get(index, &bdfid) == kRsmiStatusSuccess) {
    device.pci_address = PciAddressFromBdfid(bdfid);
    device.partition = static_cast<uint32_t>((bdfid >> 28) & 0xf);
  }
  char name[256] = {};
  if (api.dev_name_get != nullptr && api.dev_name_get(index, name, sizeof(name)) == kRsmiStatusSuccess) {
    name[sizeof(name) - 1] = '\0';
    std::string_view trimmed = core::Trim(name);
    if (!trimmed.empty()) device.name = core::SanitizeUtf8(trimmed);
  }
  uint64_t unique_id = 0;
  if (api.dev_unique_id_get != nullptr && api.dev_unique_id_get(index, &unique_id) == kRsmiStatusSuccess &&
      unique_id != 0) {
    device.unique_id = fmt::format("{:016x}", unique_id);
  }
  return device;
}

}  // namespace

std::vector<std::string> DefaultRocmSmiLibraries() {
  return {"librocm_smi64.so.1", "librocm_smi64.so", "/opt/rocm/lib/librocm_smi64.so.1"};
}

core::Json RocmSmiReportToJson(const RocmSmiReport& report) {
  core::Json out = {{"library_path", report.library_path},
                    {"init_status", report.init_status},
                    {"init_status_text", report.init_status_text}};
  core::SetIf(out, "library_version", report.library_version);
  core::SetIf(out, "device_count", report.device_count);
  if (report.initialized()) {
    core::Json devices = core::Json::array();
    for (const RocmSmiDevice& device : report.devices) {
      core::Json entry = {{"index", device.index}};
      core::SetIf(entry, "pci_address", device.pci_address);
      core::SetIf(entry, "partition", device.partition);
      core::SetIf(entry, "name", device.name);
      core::SetIf(entry, "unique_id", device.unique_id);
      devices.push_back(std::move(entry));
    }
    out["devices"] = std::move(devices);
  }
  return out;
}

std::string PciAddressFromBdfid(uint64_t bdfid) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", bdfid >> 32, (bdfid >> 8) & 0xff, (bdfid >> 3) & 0x1f, bdfid & 0x7);
}

core::Result<RocmSmiReport> ProbeRocmSmi(const std::vector<std::string>& libraries) {
  GT_ASSIGN_OR_RETURN(core::DynamicLibrary lib, core::DynamicLibrary::Open(libraries));
  GT_ASSIGN_OR_RETURN(Api api, Bind(lib));
  RocmSmiReport report;
  report.library_path = lib.path().empty() ? lib.name() : lib.path();
  RsmiVersion version{};
  if (api.version_get != nullptr && api.version_get(&version) == kRsmiStatusSuccess) {
    report.library_version = fmt::format("{}.{}.{}", version.major, version.minor, version.patch);
  }
  report.init_status = api.init(0);
  report.init_status_text = StatusText(api, report.init_status);
  if (!report.initialized()) return report;  // rsmi_shut_down after a failed init errs too.

  uint32_t count = 0;
  RsmiStatus status = api.num_monitor_devices(&count);
  if (status != kRsmiStatusSuccess) {
    report.problems.push_back(fmt::format("rsmi_num_monitor_devices: status {} ({})", status, StatusText(api, status)));
  } else if (count > kMaxDevices) {
    report.problems.push_back(fmt::format("rsmi_num_monitor_devices: {} devices is implausible", count));
  } else {
    report.device_count = count;
    for (uint32_t i = 0; i < count; ++i) report.devices.push_back(DescribeDevice(api, i));
  }
  api.shut_down();
  return report;
}

}  // namespace gputriage::amd
