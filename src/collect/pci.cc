#include "collect/pci.h"

#include <cstdarg>
#include <cstdio>

extern "C" {
#include <pci/pci.h>
}

#include "core/text.h"

namespace gputriage::collect {

namespace {

using core::Json;

constexpr uint64_t kVendorNvidia = 0x10de;
constexpr uint64_t kVendorAmd = 0x1002;
// struct resource flags, include/linux/ioport.h
constexpr uint64_t kIoResourceIo = 0x100;
constexpr uint64_t kIoResourceMem = 0x200;
constexpr uint64_t kIoResourcePrefetch = 0x2000;
constexpr uint64_t kIoResourceMem64 = 0x100000;

// Display controllers (class 0x03xxxx) and processing accelerators (0x12xxxx, used by some
// compute-only boards); audio functions of the same boards are not GPUs.
bool IsGpuClass(uint64_t pci_class) {
  uint64_t base = pci_class >> 16;
  return base == 0x03 || base == 0x12;
}

std::optional<uint64_t> ReadHex(const core::OsView& os, const std::string& path) {
  auto text = os.ReadTrimmed(path);
  if (!text) return std::nullopt;
  return core::ParseU64(*text, 16);
}

std::string Hex4(uint64_t v) { return fmt::format("0x{:04x}", v); }

void AddLink(const core::OsView& os, const std::string& dir, Json& gpu) {
  Json link = Json::object();
  if (auto s = os.ReadTrimmed(dir + "/current_link_speed")) {
    core::SetIf(link, "current_speed_gts", ParseLinkSpeed(*s));
  }
  if (auto s = os.ReadTrimmed(dir + "/max_link_speed")) {
    core::SetIf(link, "max_speed_gts", ParseLinkSpeed(*s));
  }
  if (auto s = os.ReadTrimmed(dir + "/current_link_width")) {
    auto w = core::ParseU64(*s, 10);
    if (w && *w > 0 && *w <= 32) link["current_width"] = *w;
  }
  if (auto s = os.ReadTrimmed(dir + "/max_link_width")) {
    auto w = core::ParseU64(*s, 10);
    if (w && *w > 0 && *w <= 32) link["max_width"] = *w;
  }
  if (!link.empty()) gpu["link"] = link;
}

void AddTopology(const core::OsView& os, const std::string& dir, Json& gpu) {
  if (auto numa = os.ReadTrimmed(dir + "/numa_node")) {
    if (auto n = core::ParseI64(*numa); n && *n >= 0) gpu["numa_node"] = *n;
  }
  // The kernel's list of the CPUs nearest the device ("0-31,64-95"): what nvidia-smi topo -m
  // prints as CPU Affinity. Kept only when it looks like a CPU list.
  if (auto cpus = os.ReadTrimmed(dir + "/local_cpulist")) {
    if (!cpus->empty() && cpus->size() <= 4096 && cpus->find_first_not_of("0123456789,-") == std::string::npos) {
      gpu["local_cpus"] = *cpus;
    }
  }
  if (auto group = os.TryReadLink(dir + "/iommu_group"); group.ok()) {
    std::string_view target = *group;
    if (auto n = core::ParseU64(target.substr(target.rfind('/') + 1), 10)) gpu["iommu_group"] = *n;
  }
  if (auto driver = os.TryReadLink(dir + "/driver"); driver.ok()) {
    std::string_view target = *driver;
    gpu["driver"] = std::string(target.substr(target.rfind('/') + 1));
  }
  if (auto resource = os.TryReadFile(dir + "/resource"); resource.ok()) {
    Json bars = ParseResourceFile(*resource);
    if (!bars.empty()) gpu["bars"] = bars;
  }
  Json aer = Json::object();
  static constexpr std::pair<const char*, const char*> kAerFiles[] = {{"aer_dev_correctable", "correctable_total"},
                                                                      {"aer_dev_nonfatal", "nonfatal_total"},
                                                                      {"aer_dev_fatal", "fatal_total"}};
  for (const auto& [file, key] : kAerFiles) {
    if (auto text = os.TryReadFile(dir + "/" + file); text.ok()) {
      core::SetIf(aer, key, ParseAerTotal(*text));
    }
  }
  if (!aer.empty()) gpu["aer"] = aer;
}

std::optional<Json> ReadGpu(const core::OsView& os, const std::string& address, core::Section& section) {
  std::string dir = "/sys/bus/pci/devices/" + address;
  auto vendor = ReadHex(os, dir + "/vendor");
  if (!vendor) {
    section.NoteMissing("gpus[" + address + "]", os.Resolve(dir + "/vendor") + ": missing or not a hex id");
    return std::nullopt;
  }
  if (*vendor != kVendorNvidia && *vendor != kVendorAmd) return std::nullopt;
  auto pci_class = ReadHex(os, dir + "/class");
  if (!pci_class || !IsGpuClass(*pci_class)) return std::nullopt;

  Json gpu = Json::object();
  gpu["vendor"] = *vendor == kVendorNvidia ? "nvidia" : "amd";
  gpu["pci_address"] = NormalizePciAddress(address);
  gpu["vendor_id"] = Hex4(*vendor);
  gpu["class"] = fmt::format("0x{:06x}", *pci_class);
  static constexpr std::pair<const char*, const char*> kIds[] = {{"device", "device_id"},
                                                                 {"subsystem_vendor", "subsystem_vendor_id"},
                                                                 {"subsystem_device", "subsystem_device_id"}};
  for (const auto& [file, key] : kIds) {
    if (auto v = ReadHex(os, dir + "/" + file)) gpu[key] = Hex4(*v);
  }
  if (auto rev = ReadHex(os, dir + "/revision")) gpu["revision"] = fmt::format("0x{:02x}", *rev);
  AddLink(os, dir, gpu);
  AddTopology(os, dir, gpu);
  return gpu;
}

// libpci reports problems through callbacks; the defaults print and exit(). We only use the
// name database, whose loader reports through `warning`, which we keep for the note.
thread_local std::string g_pci_warning;
void PciWarning(char* msg, ...) {
  char buf[512];
  va_list args;
  va_start(args, msg);
  std::vsnprintf(buf, sizeof(buf), msg, args);
  va_end(args);
  g_pci_warning = buf;
}
void PciDebug(char*, ...) {}

}  // namespace

std::optional<double> ParseLinkSpeed(std::string_view text) {
  auto fields = core::SplitWhitespace(text);
  if (fields.empty()) return std::nullopt;
  auto value = core::ParseDouble(fields[0]);
  if (!value || *value <= 0 || *value > 1000) return std::nullopt;
  if (fields.size() > 1 && fields[1] != "GT/s") return std::nullopt;
  return *value;
}

Json ParseResourceFile(std::string_view text) {
  Json bars = Json::array();
  auto lines = core::SplitLines(text);
  for (size_t i = 0; i < lines.size() && i < 6; ++i) {
    auto fields = core::SplitWhitespace(lines[i]);
    if (fields.size() < 3) continue;
    auto start = core::ParseU64(fields[0], 16);
    auto end = core::ParseU64(fields[1], 16);
    auto flags = core::ParseU64(fields[2], 16);
    if (!start || !end || !flags || *end <= *start) continue;
    if ((*flags & (kIoResourceMem | kIoResourceIo)) == 0) continue;
    Json bar = {{"index", i},
                {"size_bytes", *end - *start + 1},
                {"io", (*flags & kIoResourceIo) != 0},
                {"prefetchable", (*flags & kIoResourcePrefetch) != 0},
                {"is_64bit", (*flags & kIoResourceMem64) != 0}};
    bars.push_back(bar);
  }
  return bars;
}

std::optional<uint64_t> ParseAerTotal(std::string_view text) {
  for (std::string_view line : core::SplitLines(text)) {
    auto fields = core::SplitWhitespace(line);
    if (fields.size() == 2 && fields[0].starts_with("TOTAL_ERR_")) {
      return core::ParseU64(fields[1], 10);
    }
  }
  return std::nullopt;
}

std::string NormalizePciAddress(std::string_view address) {
  std::string_view a = core::Trim(address);
  if (a.starts_with("PCI:")) a.remove_prefix(4);
  auto parts = core::Split(a, ':');
  std::string_view domain = "0";
  std::string_view bus;
  std::string_view devfn;
  if (parts.size() == 3) {
    domain = parts[0];
    bus = parts[1];
    devfn = parts[2];
  } else if (parts.size() == 2) {
    bus = parts[0];
    devfn = parts[1];
  } else {
    return core::ToLower(a);
  }
  std::string_view dev = devfn;
  std::string_view fn = "0";
  if (size_t dot = devfn.find('.'); dot != std::string_view::npos) {
    dev = devfn.substr(0, dot);
    fn = devfn.substr(dot + 1);
  }
  auto d = core::ParseU64(domain, 16);
  auto b = core::ParseU64(bus, 16);
  auto v = core::ParseU64(dev, 16);
  auto f = core::ParseU64(fn, 16);
  if (!d || !b || !v || !f || *d > 0xffff || *b > 0xff || *v > 0x1f || *f > 7) {
    return core::ToLower(a);
  }
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", *d, *b, *v, *f);
}

core::Section CollectPciGpus(const core::OsView& os) {
  core::Section section;
  Json gpus = Json::array();
  auto devices = os.TryListDir("/sys/bus/pci/devices");
  if (!devices.ok()) {
    section.NoteMissing("gpus", devices.error().message + " (no PCI information)");
  } else {
    for (const std::string& address : *devices) {
      if (auto gpu = ReadGpu(os, address, section)) gpus.push_back(std::move(*gpu));
    }
  }
  section.data["gpus"] = gpus;
  return section;
}

void AddPciNames(const core::OsView& os, Json& gpus, core::Section& section) {
  if (gpus.empty()) return;
  std::string ids_path;
  for (const char* candidate : {"/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"}) {
    if (os.Exists(candidate)) {
      ids_path = os.Resolve(candidate);
      break;
    }
    if (!os.live() && core::OsView::Live().Exists(candidate)) ids_path = candidate;
  }
  if (ids_path.empty()) {
    section.NoteMissing("gpus[].pci_name", "no pci.ids database (install Debian's pci.ids)");
    return;
  }
  pci_access* access = pci_alloc();
  access->warning = PciWarning;
  access->debug = PciDebug;
  pci_set_name_list_path(access, ids_path.data(), 0);
  g_pci_warning.clear();
  for (Json& gpu : gpus) {
    auto vendor = core::ParseU64(gpu.value("vendor_id", ""), 16);
    auto device = core::ParseU64(gpu.value("device_id", ""), 16);
    if (!vendor || !device) continue;
    char buf[256];
    const char* name =
        pci_lookup_name(access, buf, sizeof(buf), PCI_LOOKUP_DEVICE | PCI_LOOKUP_NO_NUMBERS | PCI_LOOKUP_NO_HWDB,
                        static_cast<int>(*vendor), static_cast<int>(*device));
    if (name != nullptr) gpu["pci_name"] = core::SanitizeUtf8(name);
  }
  if (!g_pci_warning.empty()) {
    section.NoteMissing("gpus[].pci_name", ids_path + ": " + g_pci_warning);
  }
  pci_cleanup(access);
}

}  // namespace gputriage::collect
