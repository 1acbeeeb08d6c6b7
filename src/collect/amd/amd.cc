#include "collect/amd/amd.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collect/amd/amdgpu_sysfs.h"
#include "collect/amd/attribute_reader.h"
#include "collect/amd/kfd_sysfs.h"
#include "collect/amd/kfd_topology.h"
#include "collect/amd/rocm_install.h"
#include "collect/amd/rocm_smi.h"

namespace gputriage::amd {

namespace {

// A KFD node with what its properties say when it is a GPU.
struct KfdGpuNode {
  const KfdNodeRecord* record = nullptr;
  KfdGpuSummary summary;
};

// One GPU of the snapshot: a PCI device bound to amdgpu and/or the KFD node(s) that name it.
struct GpuEntry {
  std::optional<std::string> pci_address;
  std::optional<AmdgpuDevice> device;
  std::vector<const KfdGpuNode*> nodes;

  std::string Item() const {
    if (pci_address) return "amd.gpus[" + *pci_address + "]";
    if (device && device->drm_card) return "amd.gpus[" + *device->drm_card + "]";
    return fmt::format("amd.gpus[kfd node {}]", nodes.empty() ? 0 : nodes.front()->record->node);
  }
};

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += "; ";
    out += part;
  }
  return out;
}

// Summarises the GPU nodes and notes, once per properties file, what is wrong with it.
std::vector<KfdGpuNode> SummarizeGpuNodes(AttributeReader& reader, const KfdTopology& kfd) {
  std::vector<KfdGpuNode> out;
  for (const KfdNodeRecord& record : kfd.nodes) {
    std::vector<std::string> problems = record.properties.problems;
    bool gpu = IsKfdGpuNode(record.properties);
    KfdGpuSummary summary;
    if (gpu) {
      summary = SummarizeKfdGpu(record.properties);
      problems.insert(problems.end(), summary.problems.begin(), summary.problems.end());
    }
    if (!problems.empty()) {
      reader.Note(fmt::format("amd.kfd.nodes[{}]", record.node), record.properties_path,
                  record.properties_path + ": " + Join(problems));
    }
    if (gpu) out.push_back({&record, std::move(summary)});
  }
  return out;
}

// "0000:02:00.3" -> "0000:02:00.0".
std::string FunctionZero(const std::string& address) { return address.substr(0, address.size() - 1) + "0"; }

// Pairs amdgpu devices with KFD GPU nodes by PCI address. On MI300-class GPUs in a compute
// partition mode KFD puts the partition index in the function bits of location_id
// (kfd_topology.c, GC 9.4.3), so a node at function N > 0 without a device of its own belongs
// to function 0's device. Not verified on hardware.
std::vector<GpuEntry> MatchGpus(const core::OsView& os, std::vector<AmdgpuDevice> devices,
                                const std::vector<KfdGpuNode>& nodes) {
  std::vector<GpuEntry> gpus;
  std::map<std::string, size_t> by_address;
  for (AmdgpuDevice& device : devices) {
    if (device.pci_address) by_address[*device.pci_address] = gpus.size();
    gpus.push_back({device.pci_address, std::move(device), {}});
  }
  for (const KfdGpuNode& node : nodes) {
    const std::optional<std::string>& address = node.summary.pci_address;
    if (!address) {
      gpus.push_back({std::nullopt, std::nullopt, {&node}});
      continue;
    }
    auto it = by_address.find(*address);
    if (it == by_address.end() && address->back() != '0') it = by_address.find(FunctionZero(*address));
    if (it != by_address.end()) {
      gpus[it->second].nodes.push_back(&node);
      continue;
    }
    GpuEntry entry{address, std::nullopt, {&node}};
    std::string dir = "/sys/bus/pci/devices/" + *address;
    if (os.IsDirectory(dir)) entry.device = AmdgpuDevice{address, dir, std::nullopt};
    by_address[*address] = gpus.size();
    gpus.push_back(std::move(entry));
  }
  std::stable_sort(gpus.begin(), gpus.end(), [](const GpuEntry& a, const GpuEntry& b) {
    if (a.pci_address.has_value() != b.pci_address.has_value()) return a.pci_address.has_value();
    return a.pci_address < b.pci_address;
  });
  return gpus;
}

// Sums `field` over the partitions; nullopt when any partition lacks it.
template <typename Field>
std::optional<uint64_t> Sum(const std::vector<const KfdGpuNode*>& nodes, Field field) {
  uint64_t total = 0;
  for (const KfdGpuNode* node : nodes) {
    const std::optional<uint64_t>& value = node->summary.*field;
    if (!value) return std::nullopt;
    total += *value;
  }
  return total;
}

void AddKfdFacts(const GpuEntry& gpu, core::Json& out) {
  const KfdGpuNode& first = *gpu.nodes.front();
  const KfdGpuSummary& s = first.summary;
  out["kfd_node"] = first.record->node;
  if (gpu.nodes.size() > 1) {
    core::Json all = core::Json::array();
    for (const KfdGpuNode* node : gpu.nodes) all.push_back(node->record->node);
    out["kfd_nodes"] = std::move(all);
  }
  core::SetIf(out, "gpu_id", first.record->gpu_id);
  core::SetIf(out, "kfd_name", first.record->name);
  core::SetIf(out, "gfx_arch", s.gfx_arch);
  core::SetIf(out, "gfx_target_version", s.gfx_target_version);
  // A partitioned GPU's compute resources are the sum of its partitions'.
  core::SetIf(out, "compute_units", Sum(gpu.nodes, &KfdGpuSummary::compute_units));
  core::SetIf(out, "simd_count", Sum(gpu.nodes, &KfdGpuSummary::simd_count));
  core::SetIf(out, "num_xcc", Sum(gpu.nodes, &KfdGpuSummary::num_xcc));
  core::SetIf(out, "simd_per_cu", s.simd_per_cu);
  core::SetIf(out, "wavefront_size", s.wavefront_size);
  core::SetIf(out, "max_waves_per_simd", s.max_waves_per_simd);
  core::SetIf(out, "lds_size_kb", s.lds_size_kb);
  SetHex(out, "vendor_id", s.vendor_id, 4);
  SetHex(out, "device_id", s.device_id, 4);
  SetHex(out, "xgmi_hive_id", s.hive_id, 16);
  // amdgpu's sysfs unique_id prints the same adev->unique_id as "%016llx"; KFD prints decimal.
  if (s.unique_id) out["unique_id"] = fmt::format("{:016x}", *s.unique_id);
  core::SetIf(out, "drm_render_minor", s.drm_render_minor);
  if (s.max_engine_clk_mhz) out["clocks"]["max_sclk_mhz"] = *s.max_engine_clk_mhz;
}

void MergeAttributes(core::Json attributes, core::Json& out) {
  for (auto& [key, value] : attributes.items()) {
    if (key == "clocks" && out.contains("clocks")) {
      out["clocks"].update(value);
    } else {
      out[key] = std::move(value);
    }
  }
  if (out.contains("product_name")) out["marketing_name"] = out["product_name"];
}

core::Json GpuToJson(AttributeReader& reader, const GpuEntry& gpu, bool kfd_present) {
  core::Json out = core::Json::object();
  std::string item = gpu.Item();
  core::SetIf(out, "pci_address", gpu.pci_address);
  if (!gpu.nodes.empty()) {
    AddKfdFacts(gpu, out);
  } else if (kfd_present) {
    reader.NoteOnce(item + ".kfd_node",
                    "no KFD node has this GPU's PCI address: ROCm cannot use it (KFD does not "
                    "support it or failed to add it; see the kernel log)");
  }
  if (gpu.device) {
    out["sysfs_path"] = gpu.device->sysfs_dir;
    core::SetIf(out, "drm_card", gpu.device->drm_card);
    MergeAttributes(ReadAmdgpuAttributes(reader, gpu.device->sysfs_dir, item), out);
  } else if (gpu.pci_address) {
    reader.NoteOnce(item,
                    fmt::format("no amdgpu attributes: /sys/bus/pci/devices/{} does not exist", *gpu.pci_address));
  }
  return out;
}

// ROCm SMI's answer; true when it loaded (its failed rsmi_init is an answer too).
bool AddRocmSmi(core::Section& section, const std::vector<std::string>& libraries) {
  core::Result<RocmSmiReport> report = ProbeRocmSmi(libraries);
  if (!report.ok()) {
    section.NoteMissing("amd.smi", "ROCm SMI: " + report.error().message);
    return false;
  }
  section.data["smi"] = RocmSmiReportToJson(*report);
  if (!report->initialized()) {
    section.NoteMissing("amd.smi", fmt::format("ROCm SMI: rsmi_init failed: status {} ({})", report->init_status,
                                               report->init_status_text));
  }
  for (const std::string& problem : report->problems) section.NoteMissing("amd.smi", "ROCm SMI: " + problem);
  return true;
}

std::string AmdSmiName(const AmdSmiReport& report) {
  if (!report.library_version) return "AMD SMI (" + report.library_path + ")";
  return fmt::format("AMD SMI {} ({})", report.library_version->text, report.library_path);
}

}  // namespace

core::Section Collect(const core::OsView& os) {
  core::Section section;
  AttributeReader reader(os, section);
  core::Json& data = section.data;

  data["rocm"] = {{"installations", RocmInstallationsToJson(FindRocmInstallations(reader))}};

  KfdTopology kfd = ReadKfdTopology(reader);
  std::vector<KfdGpuNode> gpu_nodes = SummarizeGpuNodes(reader, kfd);
  if (kfd.present) data["kfd"] = KfdTopologyToJson(kfd);

  std::vector<AmdgpuDevice> devices = FindAmdgpuDevices(reader);
  if (!devices.empty() && !os.Exists("/sys/class/kfd")) {
    reader.NoteOnce("amd.kfd", fmt::format("/sys/class/kfd does not exist although amdgpu drives {} GPU{}: "
                                           "without amdkfd, ROCm and HIP see no GPU",
                                           devices.size(), devices.size() == 1 ? "" : "s"));
  }
  // ROCm SMI only where there is something AMD to ask about: loading and initialising it costs
  // tens of milliseconds, and it must never run against a captured tree.
  bool any_amd = !devices.empty() || kfd.present;

  core::Json gpus = core::Json::array();
  for (const GpuEntry& gpu : MatchGpus(os, std::move(devices), gpu_nodes)) {
    gpus.push_back(GpuToJson(reader, gpu, kfd.present));
  }
  data["gpus"] = std::move(gpus);

  if (os.live() && any_amd) CollectSmi(section);
  return section;
}

void CollectSmi(core::Section& section, const SmiLibraries& libraries) {
  core::Result<AmdSmiReport> amd_smi = ProbeAmdSmi(libraries.amd_smi);
  if (amd_smi.ok()) section.data["amd_smi"] = AmdSmiReportToJson(*amd_smi);
  if (amd_smi.ok() && amd_smi->initialized()) {
    section.data["smi_library"] = "amd_smi";
    section.NoteMissing("amd.smi", "ROCm SMI not asked: " + AmdSmiName(*amd_smi) + " answered");
    if (amd_smi->layout == AmdSmiLayout::kUnverified) {
      section.NoteMissing("amd.amd_smi",
                          fmt::format("{}: power, ECC, driver, VBIOS and firmware not read: this gputriage knows "
                                      "the struct layouts of AMD SMI 23.4 to 24.7 (ROCm 6.0 to 6.3) only",
                                      AmdSmiName(*amd_smi)));
    }
    for (const std::string& problem : amd_smi->problems) section.NoteMissing("amd.amd_smi", "AMD SMI: " + problem);
    return;
  }
  std::string why = amd_smi.ok() ? fmt::format("{}: amdsmi_init failed: status {} ({})", AmdSmiName(*amd_smi),
                                               amd_smi->init_status, amd_smi->init_status_text)
                                 : "AMD SMI: " + amd_smi.error().message;
  bool rocm_smi = AddRocmSmi(section, libraries.rocm_smi);
  if (rocm_smi) section.data["smi_library"] = "rocm_smi";
  section.NoteMissing("amd.amd_smi",
                      why + (rocm_smi ? "; ROCm SMI was asked instead" : "; ROCm SMI did not load either"));
}

}  // namespace gputriage::amd
