// The explicit registry of vendor probes. The snapshot loops over it, asks each whether its
// hardware or driver is present, and runs the present ones (in a helper process on the live
// machine, since they can block in the driver). Nothing else in the orchestration names a vendor.
#pragma once

#include <span>
#include <string_view>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::collect {

struct VendorProbe {
  /// Probe name, used on the command line of the helper process ("nvidia", "amd").
  std::string_view name;
  /// What the probe reads, for messages ("NVML and /proc/driver/nvidia").
  std::string_view what;
  /// True when this vendor's GPUs or driver are visible: `pci_gpus` is the PCI scan's list.
  bool (*present)(const core::OsView& os, const core::Json& pci_gpus);
  /// Collects the vendor's data; may block in the driver on the live machine.
  core::Section (*collect)(const core::OsView& os);
};

/// All known vendor probes, in a fixed order.
std::span<const VendorProbe> VendorProbes();

/// The probe called `name`, or nullptr.
const VendorProbe* FindVendorProbe(std::string_view name);

}  // namespace gputriage::collect
