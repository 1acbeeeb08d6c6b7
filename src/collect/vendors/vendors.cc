#include "collect/vendors/vendors.h"

#include <array>

#include "collect/amd/amd.h"
#include "collect/nvidia/nvidia.h"

namespace gputriage::collect {

namespace {

bool AnyGpuOfVendor(const core::Json& pci_gpus, std::string_view vendor) {
  for (const core::Json& gpu : pci_gpus) {
    if (gpu.value("vendor", "") == vendor) return true;
  }
  return false;
}

bool NvidiaPresent(const core::OsView& os, const core::Json& pci_gpus) {
  return AnyGpuOfVendor(pci_gpus, "nvidia") || os.Exists("/proc/driver/nvidia");
}

bool AmdPresent(const core::OsView& os, const core::Json& pci_gpus) {
  return AnyGpuOfVendor(pci_gpus, "amd") || os.Exists("/sys/class/kfd/kfd/topology/nodes");
}

const std::array<VendorProbe, 2> kProbes = {{
    {"nvidia", "NVML and /proc/driver/nvidia", NvidiaPresent, nvidia::Collect},
    {"amd", "amdgpu sysfs, the KFD topology and ROCm SMI", AmdPresent, amd::Collect},
}};

}  // namespace

std::span<const VendorProbe> VendorProbes() { return kProbes; }

const VendorProbe* FindVendorProbe(std::string_view name) {
  for (const VendorProbe& probe : kProbes) {
    if (probe.name == name) return &probe;
  }
  return nullptr;
}

}  // namespace gputriage::collect
