#include "cli/render.h"

#include <fmt/format.h>

#include "cli/common.h"
#include "core/snapshot.h"
#include "core/text.h"

namespace gputriage::cli {

namespace {

std::string LinkText(const core::Gpu& gpu) {
  if (!gpu.link) return "";
  const core::PciLink& link = *gpu.link;
  auto part = [](const std::optional<double>& speed, const std::optional<uint64_t>& width) {
    std::string s;
    if (speed) s += fmt::format("{:g} GT/s", *speed);
    if (width) s += fmt::format(" x{}", *width);
    return s;
  };
  std::string current = part(link.current_speed_gts, link.current_width);
  std::string max = part(link.max_speed_gts, link.max_width);
  if (current.empty()) return "";
  return "PCIe " + current + (max.empty() ? "" : " (max " + max + ")");
}

void RenderHost(const core::Host& host, std::string& out) {
  std::string os = host.os ? host.os->pretty_name.value_or("") : "";
  std::string kernel = host.kernel ? host.kernel->release.value_or("") : "";
  std::string line = "host      " + host.hostname.value_or("?");
  if (!os.empty() || !kernel.empty()) line += " (" + os + (kernel.empty() ? "" : ", kernel " + kernel) + ")";
  if (host.cpu && host.cpu->logical_cpus) line += fmt::format(", {} CPUs", *host.cpu->logical_cpus);
  if (host.memory && host.memory->total_bytes) line += ", " + FormatBytes(static_cast<double>(*host.memory->total_bytes));
  if (host.virtualization) {
    if (host.virtualization->container) line += ", container: " + *host.virtualization->container;
    if (host.virtualization->is_vm.value_or(false)) line += ", VM";
  }
  out += line + "\n";
}

void RenderGpus(const std::vector<core::Gpu>& gpus, std::string& out) {
  if (gpus.empty()) {
    out += "gpus      none found\n";
    return;
  }
  for (const core::Gpu& gpu : gpus) {
    std::string name = gpu.name ? *gpu.name : gpu.pci_name.value_or("unknown GPU");
    std::string line = fmt::format("gpu       {}  {}", gpu.pci_address.value_or("?"), name);
    if (gpu.gfx_arch) line += " (" + *gpu.gfx_arch + ")";
    line += "  driver " + gpu.driver.value_or("none");
    std::string link = LinkText(gpu);
    if (!link.empty()) line += "  " + link;
    out += line + "\n";
  }
}

void AddInstallations(const std::optional<core::Installations>& installs, const char* label,
                      std::vector<std::string>& parts) {
  if (!installs || !installs->installations) return;
  for (const core::Installation& install : *installs->installations) {
    if (install.version && !install.link_target) parts.push_back(label + *install.version);
  }
}

void RenderSoftware(const core::Software& software, std::string& out) {
  std::vector<std::string> parts;
  if (software.nvidia && software.nvidia->driver_version) {
    parts.push_back("NVIDIA driver " + *software.nvidia->driver_version);
  }
  if (software.nvidia && software.nvidia->cuda_driver_version) {
    parts.push_back("CUDA driver API " + *software.nvidia->cuda_driver_version);
  }
  AddInstallations(software.cuda, "CUDA toolkit ", parts);
  if (software.amd) AddInstallations(software.amd->rocm, "ROCm ", parts);
  if (software.python && software.python->torch) {
    const core::TorchInstall& torch = *software.python->torch;
    std::string t = "torch " + torch.version.value_or("?");
    if (torch.cuda) t += " (CUDA " + *torch.cuda + ")";
    if (torch.hip) t += " (HIP " + *torch.hip + ")";
    parts.push_back(t);
  }
  if (software.libraries) parts.push_back(fmt::format("{} GPU libraries", software.libraries->size()));
  if (software.packages) parts.push_back(fmt::format("{} GPU packages", software.packages->size()));
  std::string line = "software  ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + parts[i];
  out += line + "\n";
}

void RenderKernelLog(const std::optional<core::KernelLog>& log, std::string& out) {
  if (!log || !log->source) {
    out += "kernel    log not collected\n";
    return;
  }
  std::string line = fmt::format("kernel    {} log records, {} GPU-related", log->records_total.value_or(0),
                                 log->gpu_records_total.value_or(0));
  if (log->counts && !log->counts->empty()) {
    std::string counts;
    for (const auto& [cls, n] : *log->counts) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", cls, n);
    line += " (" + counts + ")";
  }
  out += line + "\n";
}

}  // namespace

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

std::string RenderSnapshotSummary(const core::Snapshot& snapshot) {
  std::string out;
  RenderHost(snapshot.host.value_or(core::Host{}), out);
  RenderGpus(snapshot.GpuList(), out);
  RenderSoftware(snapshot.software.value_or(core::Software{}), out);
  RenderKernelLog(snapshot.kernel_log, out);
  if (snapshot.env && snapshot.env->variables) {
    out += fmt::format("env       {} GPU-stack variables ({} redacted)\n", snapshot.env->variables->size(),
                       snapshot.env->redacted ? snapshot.env->redacted->size() : 0);
  }
  for (const core::NotCollected& note : snapshot.not_collected) {
    out += fmt::format("not collected: {}: {}\n", note.item, note.reason);
  }
  if (!snapshot.read_problems.empty()) {
    out += fmt::format("ignored: {} member{} of an unexpected type (a damaged or hand-edited snapshot):\n",
                       snapshot.read_problems.size(), snapshot.read_problems.size() == 1 ? "" : "s");
    for (const std::string& problem : snapshot.read_problems) out += "  " + problem + "\n";
  }
  return out;
}

std::string RenderFindings(const std::vector<core::Finding>& findings, size_t max_evidence) {
  std::string out;
  for (const core::Finding& f : findings) {
    std::string tag = fmt::format("[{}]", core::SeverityName(f.severity));
    out += Colored(f.severity, tag) + " " + f.title + "\n";
    if (!f.detail.empty()) out += "    " + f.detail + "\n";
    // The newest evidence is last; show the last few.
    size_t first = f.evidence.size() > max_evidence ? f.evidence.size() - max_evidence : 0;
    if (first > 0) {
      out += fmt::format("    ... {} earlier evidence lines (--json shows all kept)\n", first);
    }
    for (size_t i = first; i < f.evidence.size(); ++i) {
      out += "    evidence (" + f.evidence[i].source + "): " + f.evidence[i].text + "\n";
    }
    if (!f.fix.empty()) out += "    fix: " + f.fix + "\n";
    for (const std::string& ref : f.references) out += "    see: " + ref + "\n";
  }
  return out;
}

}  // namespace gputriage::cli
