#include <fmt/format.h>

#include "core/snapshot.h"
#include "kb/analysis.h"

namespace gputriage::kb {
namespace {

// Hardware health a snapshot shows for one GPU, one line each.
void AddHardwareAlerts(const core::Gpu& gpu, std::vector<std::string>& alerts) {
  std::string pci = gpu.pci_address.value_or("");
  if (const std::optional<core::NvidiaGpu>& nv = gpu.nvidia) {
    uint64_t volatile_ue = nv->ecc ? nv->ecc->volatile_uncorrected.value_or(0) : 0;
    uint64_t lifetime_ue = nv->ecc ? nv->ecc->aggregate_uncorrected.value_or(0) : 0;
    if (volatile_ue > 0) {
      alerts.push_back(fmt::format("GPU {}: {} uncorrectable ECC errors since the driver loaded", pci, volatile_ue));
    } else if (lifetime_ue > 0) {
      alerts.push_back(fmt::format("GPU {}: {} uncorrectable ECC errors over its lifetime", pci, lifetime_ue));
    }
    const std::optional<core::NvidiaRemappedRows>& rows = nv->remapped_rows;
    if (rows && rows->uncorrectable.value_or(0) > 0) {
      alerts.push_back(fmt::format("GPU {}: {} rows remapped for uncorrectable errors", pci, *rows->uncorrectable));
    }
    if (rows && rows->failure.value_or(false)) {
      alerts.push_back(fmt::format("GPU {}: row remapping failed (the GPU is out of spare rows)", pci));
    }
    if ((rows && rows->pending.value_or(false)) || (nv->retired_pages && nv->retired_pages->pending.value_or(false))) {
      alerts.push_back(fmt::format("GPU {}: a row remap or page retirement is pending a GPU reset", pci));
    }
  }
  if (gpu.amd && gpu.amd->ras) {
    for (const auto& [block, counts] : *gpu.amd->ras) {
      if (counts.ue.value_or(0) > 0) {
        alerts.push_back(fmt::format("GPU {}: {} uncorrectable RAS errors in block {}", pci, *counts.ue, block));
      }
    }
  }
}

}  // namespace

Facts FactsFromSnapshot(const core::Snapshot& snapshot) {
  Facts facts;
  if (snapshot.gpus) {
    facts.gpu_count = snapshot.gpus->size();
    for (const core::Gpu& gpu : *snapshot.gpus) AddHardwareAlerts(gpu, facts.hardware_alerts);
  }
  for (const core::GpuArch& g : core::GpuArchitectures(snapshot)) facts.gpu_archs.push_back(g.arch);
  if (const core::TorchInstall* torch = snapshot.Torch()) {
    if (torch->version && !torch->version->empty()) facts.versions.push_back({"torch", *torch->version});
    if (torch->cuda && !torch->cuda->empty()) facts.versions.push_back({"cuda", *torch->cuda});
    if (torch->hip && !torch->hip->empty()) facts.versions.push_back({"rocm", *torch->hip});
  }
  if (snapshot.software && snapshot.software->nvidia && snapshot.software->nvidia->driver_version &&
      !snapshot.software->nvidia->driver_version->empty()) {
    facts.versions.push_back({"nvidia-driver", *snapshot.software->nvidia->driver_version});
  }
  if (snapshot.host && snapshot.host->kernel && snapshot.host->kernel->release &&
      !snapshot.host->kernel->release->empty()) {
    facts.versions.push_back({"kernel", *snapshot.host->kernel->release});
  }
  if (snapshot.env && snapshot.env->variables) {
    for (const auto& [name, value] : *snapshot.env->variables) facts.env.push_back({name, value});
  }
  return facts;
}

}  // namespace gputriage::kb
