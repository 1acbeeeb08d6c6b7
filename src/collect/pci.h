// GPUs on the PCI bus (vendors 0x10de and 0x1002), read from /sys/bus/pci/devices through the
// rooted view: ids, names (pci.ids through libpci), link speed and width, NUMA node, IOMMU group,
// bound driver, BAR sizes and AER counters.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::collect {

/// Scans the PCI devices. `data` is {"gpus": [...]} as in docs/snapshot-schema.md ("gpus"),
/// without names (see AddPciNames). Never fails: unreadable files become notes.
core::Section CollectPciGpus(const core::OsView& os);

/// Fills `pci_name` of each GPU from pci.ids (the tree's /usr/share/misc/pci.ids or
/// /usr/share/hwdata/pci.ids, else the host's), through libpci. Notes what it could not do.
void AddPciNames(const core::OsView& os, core::Json& gpus, core::Section& section);

/// "32.0 GT/s PCIe" / "8 GT/s" / "2.5 GT/s" -> GT/s; nullopt for "Unknown" or garbage.
std::optional<double> ParseLinkSpeed(std::string_view text);

/// The text of a sysfs `resource` file -> [{index, size_bytes, prefetchable, is_64bit}] for
/// the BARs (lines 0-5) that have a memory or I/O range.
core::Json ParseResourceFile(std::string_view text);

/// An aer_dev_* file ("RxErr 0\n...\nTOTAL_ERR_COR 2\n") -> its TOTAL_ERR_* count.
std::optional<uint64_t> ParseAerTotal(std::string_view text);

/// "0000:00:06.0" with a 4-digit lower-case domain from forms like "00000000:00:06.0",
/// "0000:00:06.0", "00:06.0" or "PCI:0000:00:06" (function 0 assumed when missing).
std::string NormalizePciAddress(std::string_view address);

}  // namespace gputriage::collect
