#include "collect/amd/amdgpu_sysfs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "collect/amd/amdgpu_text.h"
#include "collect/amd/problem_list.h"
#include "core/text.h"

namespace gputriage::amd {

namespace {

// Plausibility bounds; beyond them an attribute is damaged, not a measurement.
constexpr uint64_t kMaxMemoryBytes = uint64_t{1} << 50;                 // 1 PiB
constexpr int64_t kMinMilliCelsius = -100000;                           // -100 C
constexpr int64_t kMaxMilliCelsius = 250000;                            // 250 C
constexpr uint64_t kMaxMicroWatts = uint64_t{10} * 1000 * 1000 * 1000;  // 10 kW
constexpr uint64_t kMaxFanRpm = 100000;

std::string_view Basename(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsHexRun(std::string_view s, size_t min, size_t max) {
  if (s.size() < min || s.size() > max) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool IsCardName(std::string_view name) {
  if (!name.starts_with("card") || name.size() == 4) return false;
  return std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// KEY=value lines of a uevent file, the fallback for captured trees that keep no links.
std::map<std::string, std::string> ReadUevent(const core::OsView& os, const std::string& dir) {
  std::map<std::string, std::string> out;
  core::Result<std::string> text = os.TryReadFile(dir + "/uevent", 16u << 10);
  if (!text.ok()) return out;
  for (auto& [key, value] : core::ParseKeyValueLines(*text, '=')) out[key] = value;
  return out;
}

// The driver bound to the device in `dir`: the `driver` link's last component, else the
// uevent's DRIVER=.
std::optional<std::string> DriverOf(const core::OsView& os, const std::string& dir) {
  core::Result<std::string> link = os.TryReadLink(dir + "/driver");
  if (link.ok()) return std::string(Basename(*link));
  std::map<std::string, std::string> uevent = ReadUevent(os, dir);
  if (auto it = uevent.find("DRIVER"); it != uevent.end()) return it->second;
  return std::nullopt;
}

// The PCI address of a DRM card's `device`: the link's last component on a live machine, else
// the uevent's PCI_SLOT_NAME=.
std::optional<std::string> AddressOf(const core::OsView& os, const std::string& device_dir) {
  core::Result<std::string> link = os.TryReadLink(device_dir);
  if (link.ok() && IsPciAddress(Basename(*link))) return std::string(Basename(*link));
  std::map<std::string, std::string> uevent = ReadUevent(os, device_dir);
  if (auto it = uevent.find("PCI_SLOT_NAME"); it != uevent.end() && IsPciAddress(it->second)) {
    return it->second;
  }
  return std::nullopt;
}

std::vector<std::string> BoundAddresses(const core::OsView& os) {
  std::vector<std::string> out;
  core::Result<std::vector<std::string>> bound = os.TryListDir("/sys/bus/pci/drivers/amdgpu");
  if (bound.ok()) {
    for (const std::string& name : *bound) {
      if (IsPciAddress(name)) out.push_back(name);
    }
    return out;
  }
  // Captured trees (scripts/device/capture-root.sh) keep each device's `driver` link instead.
  core::Result<std::vector<std::string>> all = os.TryListDir("/sys/bus/pci/devices");
  if (!all.ok()) return out;
  for (const std::string& name : *all) {
    if (IsPciAddress(name) && DriverOf(os, "/sys/bus/pci/devices/" + name) == "amdgpu") {
      out.push_back(name);
    }
  }
  return out;
}

// A hwmon label as a JSON key: "edge", "junction", "mem"; other bytes become '_'.
std::string LabelKey(std::string_view label) {
  std::string key = core::ToLower(label);
  for (char& c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = '_';
  }
  return key;
}

// "temp12_input" -> 12.
std::optional<uint64_t> TempIndex(std::string_view name) {
  if (!name.starts_with("temp") || !name.ends_with("_input")) return std::nullopt;
  std::string_view digits = name.substr(4, name.size() - 4 - 6);
  if (digits.empty() || digits.size() > 3) return std::nullopt;
  return core::ParseU64(digits, 10);
}

// Reads a pp_dpm_* file: the current level, all level clocks, one note for what is wrong.
std::optional<DpmTable> ReadDpm(AttributeReader& reader, const std::string& path, const std::string& item,
                                Presence presence) {
  std::optional<std::string> text = reader.ReadText(path, item, presence, 16u << 10);
  if (!text) return std::nullopt;
  DpmTable table = ParseDpmLevels(*text);
  std::vector<std::string> problems = table.problems;
  if (!table.levels.empty() && table.Current() == nullptr) {
    problems.push_back("no level is marked current ('*')");
  }
  if (!problems.empty()) reader.Note(item, path, path + ": " + JoinProblems(problems));
  return table;
}

void AddClock(AttributeReader& reader, const std::string& dir, const std::string& item, const char* file,
              const char* name, core::Json& clocks) {
  std::string key = std::string(name) + "_mhz";
  std::optional<DpmTable> table = ReadDpm(reader, dir + "/" + file, item + ".clocks." + key, Presence::kExpected);
  if (!table) return;
  if (const DpmLevel* current = table->Current(); current != nullptr && current->mhz) {
    clocks[key] = *current->mhz;
  }
  core::Json levels = core::Json::array();
  for (const DpmLevel& level : table->levels) {
    if (level.mhz) levels.push_back(*level.mhz);
  }
  if (!levels.empty()) clocks[std::string(name) + "_levels_mhz"] = std::move(levels);
}

void AddPcieDpm(AttributeReader& reader, const std::string& dir, const std::string& item, core::Json& out) {
  // APUs have no pp_dpm_pcie.
  std::optional<DpmTable> table = ReadDpm(reader, dir + "/pp_dpm_pcie", item + ".pcie_dpm", Presence::kOptional);
  if (!table) return;
  const DpmLevel* current = table->Current();
  if (current == nullptr) return;
  core::Json pcie = core::Json::object();
  core::SetIf(pcie, "current_speed_gts", current->pcie_gts);
  core::SetIf(pcie, "current_width", current->pcie_width);
  if (!pcie.empty()) out["pcie_dpm"] = std::move(pcie);
}

void AddPower(AttributeReader& reader, const std::string& hwmon, const std::string& item,
              const std::set<std::string>& files, core::Json& out) {
  // power1_average on most ASICs; some newer SMUs expose only power1_input (both in
  // microwatts, Documentation/gpu/amdgpu/thermal.rst).
  const char* sensor = files.contains("power1_average") ? "power1_average"
                       : files.contains("power1_input") ? "power1_input"
                                                        : nullptr;
  if (sensor == nullptr) {
    reader.Note(item + ".power_mw", hwmon + "/power1_average",
                fmt::format("{}: neither power1_average nor power1_input exists", hwmon));
  } else if (std::optional<uint64_t> uw =
                 reader.ReadU64(hwmon + "/" + sensor, item + ".power_mw", Presence::kExpected, kMaxMicroWatts)) {
    out["power_mw"] = *uw / 1000;
  }
  if (files.contains("power1_cap")) {
    if (std::optional<uint64_t> uw =
            reader.ReadU64(hwmon + "/power1_cap", item + ".power_cap_mw", Presence::kExpected, kMaxMicroWatts)) {
      out["power_cap_mw"] = *uw / 1000;
    }
  }
}

void AddTemperatures(AttributeReader& reader, const std::string& hwmon, const std::string& item,
                     const std::set<std::string>& files, core::Json& out) {
  core::Json temps = core::Json::object();
  std::vector<uint64_t> indexes;
  for (const std::string& name : files) {
    if (std::optional<uint64_t> index = TempIndex(name)) indexes.push_back(*index);
  }
  std::sort(indexes.begin(), indexes.end());
  for (uint64_t index : indexes) {
    std::string label_file = fmt::format("temp{}_label", index);
    std::optional<std::string> label;
    if (files.contains(label_file)) {
      label = reader.ReadString(hwmon + "/" + label_file, item + ".temperatures_c", Presence::kExpected);
    }
    // Unlabelled sensors (older kernels label none) keep their hwmon name.
    std::string key = label ? LabelKey(*label) : fmt::format("temp{}", index);
    if (temps.contains(key)) continue;
    std::optional<int64_t> milli =
        reader.ReadI64(fmt::format("{}/temp{}_input", hwmon, index), item + ".temperatures_c." + key,
                       Presence::kExpected, kMinMilliCelsius, kMaxMilliCelsius);
    if (milli) temps[key] = static_cast<double>(*milli) / 1000.0;
  }
  if (!temps.empty()) out["temperatures_c"] = std::move(temps);
}

void AddHwmon(AttributeReader& reader, const std::string& dir, const std::string& item, core::Json& out) {
  std::string hwmon_root = dir + "/hwmon";
  std::optional<std::vector<std::string>> entries = reader.ListDir(hwmon_root, item + ".hwmon", Presence::kExpected);
  if (!entries) return;
  auto it =
      std::find_if(entries->begin(), entries->end(), [](const std::string& name) { return name.starts_with("hwmon"); });
  if (it == entries->end()) {
    reader.Note(item + ".hwmon", hwmon_root, hwmon_root + ": no hwmonN directory");
    return;
  }
  std::string hwmon = hwmon_root + "/" + *it;
  std::optional<std::vector<std::string>> names = reader.ListDir(hwmon, item + ".hwmon", Presence::kExpected);
  if (!names) return;
  std::set<std::string> files(names->begin(), names->end());
  AddTemperatures(reader, hwmon, item, files, out);
  AddPower(reader, hwmon, item, files, out);
  if (files.contains("fan1_input")) {
    core::SetIf(out, "fan_rpm",
                reader.ReadU64(hwmon + "/fan1_input", item + ".fan_rpm", Presence::kExpected, kMaxFanRpm));
  }
}

void AddRas(AttributeReader& reader, const std::string& dir, const std::string& item, core::Json& out) {
  // Only boards with RAS support (Instinct, some workstation parts) have ras/.
  std::string ras_dir = dir + "/ras";
  std::optional<std::vector<std::string>> names = reader.ListDir(ras_dir, item + ".ras", Presence::kOptional);
  if (!names) return;
  core::Json ras = core::Json::object();
  static constexpr std::string_view kSuffix = "_err_count";
  for (const std::string& name : *names) {
    if (!name.ends_with(kSuffix) || name.size() == kSuffix.size()) continue;
    std::string block = name.substr(0, name.size() - kSuffix.size());
    std::string path = ras_dir + "/" + name;
    std::string block_item = item + ".ras." + block;
    std::optional<std::string> text = reader.ReadText(path, block_item, Presence::kExpected, 4096);
    if (!text) continue;
    RasErrorCount count = ParseRasErrorCount(*text);
    if (!count.problems.empty()) reader.Note(block_item, path, path + ": " + JoinProblems(count.problems));
    core::Json entry = core::Json::object();
    core::SetIf(entry, "ue", count.ue);
    core::SetIf(entry, "ce", count.ce);
    core::SetIf(entry, "de", count.de);
    if (!entry.empty()) ras[block] = std::move(entry);
  }
  if (!ras.empty()) out["ras"] = std::move(ras);
}

void AddMemory(AttributeReader& reader, const std::string& dir, const std::string& item, core::Json& out) {
  static constexpr std::pair<const char*, const char*> kFiles[] = {
      {"mem_info_vram_total", "vram_total_bytes"},
      {"mem_info_vram_used", "vram_used_bytes"},
      {"mem_info_gtt_total", "gtt_total_bytes"},
      {"mem_info_gtt_used", "gtt_used_bytes"},
  };
  for (const auto& [file, key] : kFiles) {
    core::SetIf(out, key, reader.ReadU64(dir + "/" + file, item + "." + key, Presence::kExpected, kMaxMemoryBytes));
  }
}

void AddIdentity(AttributeReader& reader, const std::string& dir, const std::string& item, core::Json& out) {
  // Board strings come from the FRU EEPROM or VBIOS: server boards have them, many consumer
  // boards and older kernels do not.
  for (const char* file : {"unique_id", "vbios_version", "product_name", "serial_number"}) {
    core::SetIf(out, file, reader.ReadString(dir + "/" + file, item + "." + file, Presence::kOptional));
  }
}

}  // namespace

bool IsPciAddress(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || !IsHexRun(text.substr(0, colon), 4, 8)) return false;
  std::string_view rest = text.substr(colon + 1);
  return rest.size() == 7 && IsHexRun(rest.substr(0, 2), 2, 2) && rest[2] == ':' && IsHexRun(rest.substr(3, 2), 2, 2) &&
         rest[5] == '.' && rest[6] >= '0' && rest[6] <= '7';
}

std::vector<AmdgpuDevice> FindAmdgpuDevices(AttributeReader& reader) {
  const core::OsView& os = reader.os();
  std::vector<AmdgpuDevice> devices;
  std::map<std::string, size_t> by_address;
  for (std::string& address : BoundAddresses(os)) {
    by_address[address] = devices.size();
    devices.push_back({address, "/sys/bus/pci/devices/" + address, std::nullopt});
  }
  core::Result<std::vector<std::string>> drm = os.TryListDir("/sys/class/drm");
  for (const std::string& card : drm.ok() ? *drm : std::vector<std::string>{}) {
    if (!IsCardName(card)) continue;
    std::string device_dir = "/sys/class/drm/" + card + "/device";
    std::optional<std::string> address = AddressOf(os, device_dir);
    if (address) {
      if (auto it = by_address.find(*address); it != by_address.end()) {
        devices[it->second].drm_card = card;
        continue;
      }
    }
    if (DriverOf(os, device_dir) != "amdgpu") continue;
    std::string dir = device_dir;
    if (address && os.IsDirectory("/sys/bus/pci/devices/" + *address)) {
      dir = "/sys/bus/pci/devices/" + *address;
    }
    if (address) by_address[*address] = devices.size();
    devices.push_back({address, dir, card});
  }
  std::stable_sort(devices.begin(), devices.end(), [](const AmdgpuDevice& a, const AmdgpuDevice& b) {
    if (a.pci_address.has_value() != b.pci_address.has_value()) return a.pci_address.has_value();
    if (a.pci_address) return *a.pci_address < *b.pci_address;
    return a.drm_card < b.drm_card;
  });
  return devices;
}

core::Json ReadAmdgpuAttributes(AttributeReader& reader, const std::string& dir, const std::string& item) {
  core::Json out = core::Json::object();
  std::optional<std::string> runtime =
      reader.ReadString(dir + "/power/runtime_status", item + ".runtime_status", Presence::kOptional);
  core::SetIf(out, "runtime_status", runtime);
  AddMemory(reader, dir, item, out);
  AddIdentity(reader, dir, item, out);
  if (runtime == "suspended") {
    // Reading sensors, DPM tables or RAS counters resumes a runtime-suspended GPU (or fails
    // with EPERM on newer kernels); a diagnosis must not change the state it looks at.
    std::string path = dir + "/power/runtime_status";
    reader.Note(item + ".sensors", path,
                fmt::format("{} is \"suspended\": busy percent, clocks, sensors and RAS counters "
                            "were not read, so as not to wake the GPU",
                            path));
    return out;
  }
  core::SetIf(out, "busy_percent",
              reader.ReadU64(dir + "/gpu_busy_percent", item + ".busy_percent", Presence::kExpected, 100));
  core::Json clocks = core::Json::object();
  AddClock(reader, dir, item, "pp_dpm_sclk", "sclk", clocks);
  AddClock(reader, dir, item, "pp_dpm_mclk", "mclk", clocks);
  if (!clocks.empty()) out["clocks"] = std::move(clocks);
  AddPcieDpm(reader, dir, item, out);
  AddHwmon(reader, dir, item, out);
  AddRas(reader, dir, item, out);
  return out;
}

}  // namespace gputriage::amd
