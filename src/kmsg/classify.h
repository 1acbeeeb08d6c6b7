// Which kernel-log records matter for GPU triage, and what an NVIDIA Xid line says. The
// patterns are compiled once (one RE2::Set, one pass per message); only events are matched,
// not boot-time chatter (AER "enabled with IRQ", "mce: CPU supports N MCE banks", ...), because
// every record of a class is read downstream as evidence of that event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputriage::kmsg {

/// The classes of docs/snapshot-schema.md ("kernel_log"). When a message matches several,
/// the first in this order wins (a reset printed by amdgpu is `gpu_reset`, an ACA
/// "[Hardware Error]" line printed by amdgpu is `ras`, "kfd kfd: amdgpu: ..." is `kfd`).
enum class LogClass : uint8_t {
  kNvidiaXid,   ///< "NVRM: Xid (PCI:...): N, ..."
  kGpuReset,    ///< amdgpu "GPU reset begin!/succeeded/failed", MODE1/MODE2/BACO/ASIC reset
  kMce,         ///< machine checks ("mce: [Hardware Error]", "Machine check events logged")
  kRas,         ///< "[Hardware Error]" (APEI/ACA), (un)correctable hardware errors, ECC, EDAC
  kOom,         ///< the OOM killer ("invoked oom-killer", "Out of memory: Killed process")
  kAer,         ///< PCIe AER / DPC error reports ("PCIe Bus Error", "AER: Corrected error")
  kIommu,       ///< IOMMU faults (AMD-Vi events, IO_PAGE_FAULT, DMAR faults, SMMU faults)
  kKfd,         ///< the amdkfd compute driver ("kfd kfd: ...", "... KFD", kfd_* functions)
  kNvidiaNvrm,  ///< other NVRM lines (fallen off the bus, GSP timeouts, ...) and nvidia-* modules
  kAmdgpu,      ///< other amdgpu lines (VM page faults, ring timeouts, MES, init)
  kNone,        ///< not GPU-related
};

inline constexpr size_t kLogClassCount = static_cast<size_t>(LogClass::kNone);

/// The class's name in JSON ("nvidia.xid", "gpu_reset", ...); "" for kNone.
std::string_view LogClassName(LogClass log_class);

/// Classifies one message (the text after the kmsg/syslog prefix). Thread-safe; the patterns
/// are compiled on the first call.
LogClass ClassifyMessage(std::string_view message);

/// Patterns that failed to compile, "pattern: error" each; empty in a correct build (tested).
const std::vector<std::string>& ClassifierPatternErrors();

/// What an NVRM Xid line says. Unknown fields are absent (old drivers print no pid/name; newer
/// ones print pid='<unknown>', name=<unknown> for faults without a process).
struct XidInfo {
  uint32_t code = 0;
  std::string pci;  ///< normalized "0000:00:06.0" (lower case; function 0 when not printed)
  std::optional<uint64_t> pid;
  std::optional<std::string> process;  ///< raw bytes of the name; may be invalid UTF-8
};

/// Parses "Xid (PCI:0000:00:06): 43, pid=719, name=python3, channel 0x0000000a" and the older
/// forms ("Xid (PCI:0000:01:00): 13, Graphics SM ..."); nullopt when `message` has no Xid.
std::optional<XidInfo> ParseXid(std::string_view message);

}  // namespace gputriage::kmsg
