#include "collect/host.h"

#include <array>

#include "core/clock.h"
#include "core/text.h"

namespace gputriage::collect {

namespace {

using core::Json;

// CPU features GPU stacks (and SIGILL triage) care about; the full list is only counted.
constexpr std::array<std::string_view, 17> kCpuFlagsOfInterest = {
    "sse4_2",   "avx",      "avx2",        "fma",         "f16c",        "avx512f",
    "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile",
    "amx_bf16", "amx_int8", "sha_ni",      "hypervisor",  "svm"};

bool IsInterestingCmdlineKey(std::string_view key) {
  static constexpr std::array<std::string_view, 14> kExact = {"iommu",
                                                              "amd_iommu",
                                                              "intel_iommu",
                                                              "pci",
                                                              "hugepages",
                                                              "hugepagesz",
                                                              "default_hugepagesz",
                                                              "pcie_aspm",
                                                              "pcie_ports",
                                                              "swiotlb",
                                                              "mem_encrypt",
                                                              "numa_balancing",
                                                              "modprobe.blacklist",
                                                              "rd.driver.blacklist"};
  for (std::string_view k : kExact) {
    if (key == k) return true;
  }
  return key.starts_with("amdgpu.") || key.starts_with("nvidia.") || key.starts_with("nvidia-drm.") ||
         key.starts_with("nouveau.") || key.starts_with("amdkfd.") || key.starts_with("iommu.") ||
         key.starts_with("vfio");
}

std::string Unquote(std::string_view v) {
  v = core::Trim(v);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return std::string(v);
}

void CollectMemory(const core::OsView& os, Json& host, core::Section& section) {
  auto meminfo = os.TryReadFile("/proc/meminfo");
  if (!meminfo.ok()) {
    section.NoteMissing("host.memory", meminfo.error().message);
    return;
  }
  Json memory = Json::object();
  for (const auto& [key, value] : core::ParseKeyValueLines(*meminfo, ':')) {
    auto fields = core::SplitWhitespace(value);
    if (fields.empty()) continue;
    auto number = core::ParseU64(fields[0], 10);
    if (!number) continue;
    uint64_t scale = (fields.size() > 1 && fields[1] == "kB") ? 1024 : 1;
    if (key == "MemTotal") memory["total_bytes"] = *number * scale;
    if (key == "MemAvailable") memory["available_bytes"] = *number * scale;
    if (key == "HugePages_Total") memory["hugepages_total"] = *number;
    if (key == "Hugepagesize") memory["hugepage_size_bytes"] = *number * scale;
  }
  host["memory"] = memory;
}

void CollectUptime(const core::OsView& os, Json& host, core::Section& section) {
  if (auto uptime = os.ReadTrimmed("/proc/uptime")) {
    auto fields = core::SplitWhitespace(*uptime);
    if (!fields.empty()) {
      if (auto seconds = core::ParseDouble(fields[0])) host["uptime_s"] = *seconds;
    }
  } else {
    section.NoteMissing("host.uptime_s", os.Resolve("/proc/uptime") + ": cannot read");
  }
  auto stat = os.TryReadFile("/proc/stat");
  if (!stat.ok()) return;
  for (std::string_view line : core::SplitLines(*stat)) {
    if (!line.starts_with("btime ")) continue;
    if (auto btime = core::ParseU64(line.substr(6), 10)) {
      host["boot_time"] = core::FormatUtcIso(static_cast<double>(*btime));
    }
  }
}

void CollectIommu(const core::OsView& os, Json& host) {
  Json iommu = Json::object();
  if (auto groups = os.TryListDir("/sys/kernel/iommu_groups"); groups.ok()) {
    iommu["groups"] = groups->size();
    iommu["enabled"] = !groups->empty();
  }
  if (auto units = os.TryListDir("/sys/class/iommu"); units.ok() && !units->empty()) {
    const std::string& first = units->front();
    if (first.starts_with("dmar")) iommu["type"] = "intel-vt-d";
    if (first.starts_with("ivhd")) iommu["type"] = "amd-vi";
    iommu["units"] = units->size();
  }
  host["iommu"] = iommu;
}

void CollectVirtualization(const core::OsView& os, const Json& cpu, Json& host) {
  Json virt = Json::object();
  bool hypervisor_flag = cpu.contains("flags") && cpu["flags"].value("hypervisor", false);
  std::optional<std::string> vendor = os.ReadTrimmed("/sys/class/dmi/id/sys_vendor");
  std::optional<std::string> product = os.ReadTrimmed("/sys/class/dmi/id/product_name");
  if (auto xen = os.ReadTrimmed("/sys/hypervisor/type")) virt["hypervisor"] = *xen;
  if (hypervisor_flag) {
    std::string name = product.value_or(vendor.value_or("unknown"));
    if (!virt.contains("hypervisor")) virt["hypervisor"] = name.empty() ? "unknown" : name;
  }
  virt["is_vm"] = hypervisor_flag || virt.contains("hypervisor");
  if (os.Exists("/.dockerenv")) {
    virt["container"] = "docker";
  } else if (os.Exists("/run/.containerenv")) {
    virt["container"] = "podman";
  } else if (auto cgroup = os.TryReadFile("/proc/1/cgroup"); cgroup.ok()) {
    if (cgroup->find("kubepods") != std::string::npos)
      virt["container"] = "kubernetes";
    else if (cgroup->find("docker") != std::string::npos)
      virt["container"] = "docker";
    else if (cgroup->find("lxc") != std::string::npos)
      virt["container"] = "lxc";
  }
  host["virtualization"] = virt;
}

}  // namespace

Json ParseCpuInfo(std::string_view cpuinfo) {
  Json cpu = Json::object();
  size_t logical = 0;
  bool flags_seen = false;
  for (std::string_view line : core::SplitLines(cpuinfo)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = core::Trim(line.substr(0, colon));
    std::string_view value = core::Trim(line.substr(colon + 1));
    if (key == "processor") ++logical;
    if (key == "model name" && !cpu.contains("model")) cpu["model"] = core::SanitizeUtf8(value);
    if (key == "vendor_id" && !cpu.contains("vendor")) cpu["vendor"] = core::SanitizeUtf8(value);
    if (key == "flags" && !flags_seen) {
      flags_seen = true;
      auto flags = core::SplitWhitespace(value);
      cpu["flags_count"] = flags.size();
      Json selected = Json::object();
      for (std::string_view wanted : kCpuFlagsOfInterest) {
        bool present = false;
        for (std::string_view f : flags) present = present || f == wanted;
        selected[std::string(wanted)] = present;
      }
      cpu["flags"] = selected;
    }
  }
  if (logical > 0) cpu["logical_cpus"] = logical;
  return cpu;
}

Json ParseCmdlineFlags(std::string_view cmdline) {
  Json flags = Json::object();
  for (std::string_view token : core::SplitWhitespace(cmdline)) {
    if (token == "--") break;  // what follows is for init, not the kernel
    size_t eq = token.find('=');
    std::string_view key = token.substr(0, eq);
    if (!IsInterestingCmdlineKey(key)) continue;
    if (eq == std::string_view::npos) {
      flags[std::string(key)] = true;
    } else {
      flags[std::string(key)] = core::SanitizeUtf8(token.substr(eq + 1));
    }
  }
  return flags;
}

Json ParseOsRelease(std::string_view text) {
  Json os = Json::object();
  for (const auto& [key, value] : core::ParseKeyValueLines(text, '=')) {
    if (key == "PRETTY_NAME") os["pretty_name"] = core::SanitizeUtf8(Unquote(value));
    if (key == "ID") os["id"] = core::SanitizeUtf8(Unquote(value));
    if (key == "VERSION_ID") os["version_id"] = core::SanitizeUtf8(Unquote(value));
  }
  return os;
}

core::Section CollectHost(const core::OsView& os) {
  core::Section section;
  Json& host = section.data;
  if (auto name = os.ReadTrimmed("/proc/sys/kernel/hostname")) {
    host["hostname"] = core::SanitizeUtf8(*name);
  } else {
    section.NoteMissing("host.hostname", os.Resolve("/proc/sys/kernel/hostname") + ": cannot read");
  }
  Json kernel = Json::object();
  if (auto release = os.ReadTrimmed("/proc/sys/kernel/osrelease")) kernel["release"] = *release;
  if (auto version = os.ReadTrimmed("/proc/sys/kernel/version")) kernel["version"] = *version;
  if (kernel.empty()) {
    section.NoteMissing("host.kernel", os.Resolve("/proc/sys/kernel/osrelease") + ": cannot read");
  }
  host["kernel"] = kernel;

  auto os_release = os.TryReadFile("/etc/os-release");
  if (!os_release.ok()) os_release = os.TryReadFile("/usr/lib/os-release");
  if (os_release.ok()) {
    host["os"] = ParseOsRelease(*os_release);
  } else {
    section.NoteMissing("host.os", os_release.error().message);
  }

  Json cpu = Json::object();
  if (auto cpuinfo = os.TryReadFile("/proc/cpuinfo"); cpuinfo.ok()) {
    cpu = ParseCpuInfo(*cpuinfo);
  } else {
    section.NoteMissing("host.cpu", cpuinfo.error().message);
  }
  host["cpu"] = cpu;
  CollectMemory(os, host, section);
  CollectUptime(os, host, section);
  if (auto cmdline = os.TryReadFile("/proc/cmdline"); cmdline.ok()) {
    host["cmdline"] = Json{{"flags", ParseCmdlineFlags(*cmdline)}};
  } else {
    section.NoteMissing("host.cmdline", cmdline.error().message);
  }
  CollectIommu(os, host);
  CollectVirtualization(os, cpu, host);
  return section;
}

}  // namespace gputriage::collect
