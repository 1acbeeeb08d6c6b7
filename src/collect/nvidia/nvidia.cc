#include "collect/nvidia/nvidia.h"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "collect/nvidia/nvml.h"
#include "collect/nvidia/procfs.h"

namespace gputriage::nvidia {

namespace {

using core::Json;
using core::Section;

constexpr std::string_view kProcDir = "/proc/driver/nvidia";
constexpr std::string_view kVersionPath = "/proc/driver/nvidia/version";
constexpr std::string_view kGpusDir = "/proc/driver/nvidia/gpus";
// The driver's files are a few hundred bytes; anything larger is not one of them.
constexpr size_t kMaxProcFileBytes = 64 * 1024;

struct ProcfsGpu {
  std::string pci_address;  // normalised, or the directory name when it is not an address
  GpuInformation info;
  Json raw = Json::object();
};

struct Procfs {
  std::optional<DriverVersionInfo> version;
  std::vector<ProcfsGpu> gpus;
};

std::string JoinProblems(const std::vector<std::string>& problems) {
  std::string joined;
  for (const std::string& problem : problems) joined += (joined.empty() ? "" : "; ") + problem;
  return joined;
}

// Reads a small /proc file; a failure or an oversize file becomes a note naming the real path.
std::optional<std::string> ReadProcFile(const core::OsView& os, std::string_view path, Section& section) {
  auto content = os.TryReadFile(path, kMaxProcFileBytes + 1);
  if (!content.ok()) {
    section.NoteMissing("nvidia.procfs", content.error().message);
    return std::nullopt;
  }
  if (content->size() > kMaxProcFileBytes) {
    section.NoteMissing("nvidia.procfs", fmt::format("{}: larger than {} bytes (not a driver file?); read the "
                                                     "first {} bytes",
                                                     os.Resolve(path), kMaxProcFileBytes, kMaxProcFileBytes));
    content->resize(kMaxProcFileBytes);
  }
  return std::move(content).value();
}

void NoteProblems(const core::OsView& os, std::string_view path, const std::vector<std::string>& problems,
                  Section& section) {
  if (problems.empty()) return;
  section.NoteMissing("nvidia.procfs", fmt::format("{}: {}", os.Resolve(path), JoinProblems(problems)));
}

std::optional<DriverVersionInfo> ReadVersion(const core::OsView& os, Section& section) {
  std::optional<std::string> text = ReadProcFile(os, kVersionPath, section);
  if (!text) return std::nullopt;
  DriverVersionInfo info = ParseVersionFile(*text);
  NoteProblems(os, kVersionPath, info.problems, section);
  return info;
}

std::vector<ProcfsGpu> ReadGpus(const core::OsView& os, Section& section) {
  std::vector<ProcfsGpu> gpus;
  auto names = os.TryListDir(kGpusDir);
  if (!names.ok()) {
    section.NoteMissing("nvidia.procfs", names.error().message);
    return gpus;
  }
  for (const std::string& name : *names) {
    std::string path = fmt::format("{}/{}/information", kGpusDir, name);
    std::optional<std::string> text = ReadProcFile(os, path, section);
    if (!text) continue;
    ProcfsGpu gpu;
    gpu.info = ParseInformationFile(*text);
    NoteProblems(os, path, gpu.info.problems, section);
    // The directory is named after the GPU's address (the 2xx-era drivers numbered them
    // 0..N instead; then the Bus Location line is the address).
    std::optional<std::string> address = NormalizePciBusId(name);
    if (!address && gpu.info.bus_location) address = NormalizePciBusId(*gpu.info.bus_location);
    gpu.pci_address = address.value_or(name);
    for (const auto& [key, value] : gpu.info.fields) {
      if (!gpu.raw.contains(key)) gpu.raw[key] = value;
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

Procfs ReadProcfs(const core::OsView& os, Section& section) {
  Procfs procfs;
  if (!os.IsDirectory(kProcDir)) {
    // One note instead of one per missing file.
    section.NoteMissing("nvidia.procfs", fmt::format("{}: no such directory (the nvidia kernel module is not "
                                                     "loaded, or this tree was captured without it)",
                                                     os.Resolve(kProcDir)));
    return procfs;
  }
  procfs.version = ReadVersion(os, section);
  procfs.gpus = ReadGpus(os, section);
  return procfs;
}

Json ProcfsJson(const Procfs& procfs) {
  Json json = Json::object();
  if (procfs.version) {
    const DriverVersionInfo& v = *procfs.version;
    if (!v.version_line.empty()) json["version_line"] = v.version_line;
    core::SetIf(json, "driver_version", v.driver_version);
    core::SetIf(json, "kernel_module", v.kernel_module);
    core::SetIf(json, "arch", v.arch);
    core::SetIf(json, "gcc_version", v.gcc_version);
  }
  Json gpus = Json::object();
  for (const ProcfsGpu& gpu : procfs.gpus) gpus[gpu.pci_address] = gpu.raw;
  json["gpus"] = std::move(gpus);
  return json;
}

// A GPU known only from its information file (under --root, or one NVML did not list).
Json GpuFromProcfs(const ProcfsGpu& gpu) {
  Json json = Json::object();
  json["pci_address"] = gpu.pci_address;
  json["source"] = "procfs";
  core::SetIf(json, "name", gpu.info.model);
  core::SetIf(json, "uuid", gpu.info.uuid);
  core::SetIf(json, "vbios_version", gpu.info.video_bios);
  core::SetIf(json, "device_minor", gpu.info.device_minor);
  core::SetIf(json, "excluded", gpu.info.excluded);
  json["procfs"] = gpu.raw;
  return json;
}

// Adds each information file to the NVML GPU at the same address, or a GPU of its own.
void AttachProcfs(const std::vector<ProcfsGpu>& procfs_gpus, Json& gpus) {
  for (const ProcfsGpu& procfs_gpu : procfs_gpus) {
    Json* match = nullptr;
    for (Json& gpu : gpus) {
      if (gpu.value("pci_address", "") == procfs_gpu.pci_address) match = &gpu;
    }
    if (match == nullptr) {
      gpus.push_back(GpuFromProcfs(procfs_gpu));
      continue;
    }
    (*match)["procfs"] = procfs_gpu.raw;
    core::SetIf(*match, "device_minor", procfs_gpu.info.device_minor);
    core::SetIf(*match, "excluded", procfs_gpu.info.excluded);
  }
}

void CollectNvml(const Procfs& procfs, Json& data, Json& gpus, Section& section) {
  auto library = NvmlLibrary::Load();
  if (!library.ok()) {
    section.NoteMissing("nvidia.nvml", library.error().message);
    return;
  }
  std::string version_line = procfs.version ? procfs.version->version_line : std::string();
  NvmlReport report = QueryNvml(*library, version_line);
  for (auto& [key, value] : report.system.items()) data[key] = value;
  if (!library->path().empty()) data["nvml_library"] = library->path();
  gpus = std::move(report.gpus);
  // The snapshot's top-level topology (MergeVendorSection moves it there).
  if (!report.peers.empty()) data["peers"] = std::move(report.peers);
  for (auto& note : report.notes) section.not_collected.push_back(std::move(note));
  for (auto& finding : report.findings) section.findings.push_back(std::move(finding));
}

}  // namespace

core::Section Collect(const core::OsView& os) {
  Section section;
  Procfs procfs = ReadProcfs(os, section);
  Json data = Json::object();
  if (procfs.version && procfs.version->driver_version) {
    data["driver_version"] = *procfs.version->driver_version;
  }
  Json gpus = Json::array();
  if (os.live()) {
    // NVML's answers (driver_version among them) take precedence over the procfs ones.
    CollectNvml(procfs, data, gpus, section);
  } else {
    section.NoteMissing("nvidia.nvml", fmt::format("not queried: --root {} is a captured tree, and NVML can "
                                                   "only ask the driver of the live machine",
                                                   os.root()));
  }
  AttachProcfs(procfs.gpus, gpus);
  data["procfs"] = ProcfsJson(procfs);
  data["gpus"] = std::move(gpus);
  section.data = std::move(data);
  return section;
}

}  // namespace gputriage::nvidia
