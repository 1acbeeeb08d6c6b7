// Finds the PCI devices bound to amdgpu and reads their driver attributes (memory, clocks,
// busy percent, hwmon sensors, RAS counters, identity strings) through an AttributeReader.
// Link speed/width, ids and AER are the PCI collector's; they are not read here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collect/amd/attribute_reader.h"
#include "core/model.h"

namespace gputriage::amd {

/// A GPU driven by amdgpu, as sysfs shows it.
struct AmdgpuDevice {
  /// "0000:03:00.0"; nullopt when a captured DRM card does not say which device it is.
  std::optional<std::string> pci_address;
  /// The device directory the attributes are read from: /sys/bus/pci/devices/<address>, or
  /// /sys/class/drm/cardN/device when the address is unknown.
  std::string sysfs_dir;
  /// "card1" when a /sys/class/drm/cardN/device entry leads to it.
  std::optional<std::string> drm_card;
};

/// True for "dddd:bb:dd.f" (4 to 8 lower-case hex digits of domain).
bool IsPciAddress(std::string_view text);

/// The devices bound to amdgpu: /sys/bus/pci/drivers/amdgpu/<address> on a live machine,
/// else the /sys/bus/pci/devices/*/driver links (captured trees), plus every
/// /sys/class/drm/cardN whose device is driven by amdgpu. Sorted by address; devices without
/// one last. Never fails.
std::vector<AmdgpuDevice> FindAmdgpuDevices(AttributeReader& reader);

/// Reads one device's amdgpu attributes under `dir` into the per-GPU keys of the "amd" probe
/// (vram_total_bytes, clocks, temperatures_c, power_mw, ras, ...). `item` prefixes the notes
/// ("amd.gpus[0000:03:00.0]"). A runtime-suspended GPU is not woken: its sensors, clocks and
/// busy percent are skipped with a note. Never fails.
core::Json ReadAmdgpuAttributes(AttributeReader& reader, const std::string& dir, const std::string& item);

}  // namespace gputriage::amd
