#include "checks/topology_checks.h"

#include <fmt/format.h>

#include <map>
#include <string>

namespace gputriage::checks {

namespace {

using core::Finding;
using core::Severity;

constexpr std::string_view kNcclAcs =
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs";

std::string JoinNumbers(const std::vector<uint64_t>& numbers) {
  std::string text;
  for (uint64_t n : numbers) text += (text.empty() ? "" : ", ") + std::to_string(n);
  return text;
}

void CheckNvLinks(const core::Gpu& gpu, std::vector<Finding>& out) {
  if (!gpu.nvidia || !gpu.nvidia->nvlink) return;
  std::vector<uint64_t> up, down;
  for (const core::NvLink& link : *gpu.nvidia->nvlink) {
    if (!link.link || !link.active) continue;
    (*link.active ? up : down).push_back(*link.link);
  }
  // All links down is a GPU whose links are not cabled or bridged (a PCIe card without its
  // NVLink bridge): NVML answers "all links are inActive" and nvidia-smi topo -m shows PCIe paths.
  if (up.empty() || down.empty()) return;
  Finding f;
  f.id = "nvidia.nvlink_down";
  f.layer = 1;
  f.severity = Severity::kWarning;
  f.title = fmt::format("{} of {} NVLinks of GPU {} are down (link{} {})", down.size(), up.size() + down.size(),
                        gpu.Label(), down.size() > 1 ? "s" : "", JoinNumbers(down));
  f.detail = fmt::format(
      "NVML reports links {} inactive while links {} are active. Traffic between GPUs runs over the links that are "
      "up, so collectives between this GPU and its peers lose bandwidth; a link that went down during a job is "
      "also a common companion of NVLink Xid errors in the kernel log.",
      JoinNumbers(down), JoinNumbers(up));
  f.evidence.push_back({"nvmlDeviceGetNvLinkState " + gpu.pci_address.value_or(""),
                        fmt::format("inactive: {}; active: {}", JoinNumbers(down), JoinNumbers(up))});
  f.fix =
      "Look at `nvidia-smi nvlink -s` (state per link) and `nvidia-smi nvlink -e` (error counters); check the "
      "kernel log for NVLink Xids. A link that stays down after a reboot needs its bridge reseated or the board "
      "serviced.";
  f.references = {"https://docs.nvidia.com/deploy/nvml-api/group__NvLink.html"};
  out.push_back(std::move(f));
}

bool ShouldHaveP2p(const std::string& path) { return path.starts_with("NV") || path == "PIX" || path == "PXB"; }

// The first of read and write that NVML refused, with its status.
std::string CauseText(const std::string& status, const std::string& path) {
  if (status == "disabled_by_regkey") {
    return "The driver reports peer-to-peer as disabled by a registry key (an NVreg_RegistryDwords setting of the "
           "nvidia module).";
  }
  if (status == "chipset_not_supported" || status == "ioh_topology_not_supported") {
    return "The driver refuses it because of the platform between them (the chipset or the PCIe topology).";
  }
  if (path.starts_with("NV")) return "They are joined by NVLink, where peer-to-peer normally works.";
  return "They sit below one PCIe switch, where peer-to-peer normally works.";
}

void CheckPeers(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  if (!snapshot.topology || !snapshot.topology->peers) return;
  std::map<std::string, const core::Gpu*> by_address;
  for (const core::Gpu& gpu : snapshot.GpuList()) {
    if (gpu.pci_address) by_address[*gpu.pci_address] = &gpu;
  }
  auto label = [&](const std::optional<std::string>& address) {
    auto it = by_address.find(address.value_or(""));
    return it != by_address.end() ? it->second->Label() : address.value_or("?");
  };
  for (const core::GpuPeer& peer : *snapshot.topology->peers) {
    if (!peer.path || !peer.p2p || !ShouldHaveP2p(*peer.path)) continue;
    auto refused = peer.p2p->Refused();
    if (!refused) continue;
    const auto& [access, status] = *refused;
    Finding f;
    f.id = "topology.p2p_unavailable";
    f.layer = 1;
    f.severity = Severity::kWarning;
    f.title = fmt::format("GPUs {} and {} cannot reach each other peer to peer (path {}): {} {}", label(peer.a),
                          label(peer.b), *peer.path, access, status);
    f.detail = CauseText(status, *peer.path) +
               " Without peer-to-peer, CUDA copies between the two and NCCL's collectives go through host memory: "
               "slower, and where the platform redirects peer traffic through the CPU (PCIe Access Control "
               "Services, the IOMMU) NCCL documents severe slowdowns and hangs.";
    std::string statuses;
    for (const auto& [name, value] : {std::pair{"read", peer.p2p->read}, std::pair{"write", peer.p2p->write},
                                      std::pair{"nvlink", peer.p2p->nvlink}, std::pair{"atomics", peer.p2p->atomics}}) {
      if (value) statuses += fmt::format("{}{}: {}", statuses.empty() ? "" : ", ", name, *value);
    }
    f.evidence.push_back(
        {fmt::format("nvmlDeviceGetP2PStatus {} {}", peer.a.value_or("?"), peer.b.value_or("?")), statuses});
    f.evidence.push_back({"path", *peer.path + (peer.pcie_path ? " (PCIe: " + *peer.pcie_path + ")" : "")});
    f.fix =
        "Check `nvidia-smi topo -p2p r`. On PCIe, look for ACS on the bridges between them (`sudo lspci -vvv | grep "
        "ACSCtl`: SrcValid+ means enabled) and follow NCCL's troubleshooting guide on ACS and the IOMMU; inside a VM "
        "or container, peer-to-peer depends on the hypervisor. NCCL_P2P_DISABLE=1 makes NCCL stop trying.";
    f.references = {std::string(kNcclAcs), "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"};
    out.push_back(std::move(f));
  }
}

}  // namespace

void CheckTopology(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  for (const core::Gpu& gpu : snapshot.GpuList()) CheckNvLinks(gpu, out);
  CheckPeers(snapshot, out);
}

}  // namespace gputriage::checks
