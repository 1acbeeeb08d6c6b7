#include "checks/doctor.h"

#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "checks/topology_checks.h"
#include "core/text.h"

namespace gputriage::checks {

namespace {

using core::Evidence;
using core::Finding;
using core::Severity;

constexpr size_t kMaxEvidence = 8;

Finding Make(std::string id, Severity severity, std::string title, std::string detail, std::vector<Evidence> evidence,
             std::string fix, std::vector<std::string> references = {}) {
  return Finding{
      std::move(id),        1, severity, std::move(title), std::move(detail), std::move(evidence), std::move(fix),
      std::move(references)};
}

// ---- kernel log -------------------------------------------------------------------------

struct RecordGroup {
  std::string id;
  Severity severity = Severity::kWarning;
  std::string title;
  std::string detail;
  std::string fix;
  std::vector<std::string> references;
  std::vector<Evidence> evidence;
  size_t count = 0;
  std::string last_time;
};

std::string RecordText(const core::KernelLogRecord& record) {
  std::string time = record.time.value_or("");
  if (time.empty() && record.monotonic_s) time = fmt::format("{:.6f}", *record.monotonic_s);
  return (time.empty() ? "" : "[" + time + "] ") + record.message.value_or("");
}

void AddToGroup(std::map<std::string, RecordGroup>& groups, RecordGroup proto, const core::KernelLogRecord& record,
                std::string_view source) {
  auto [it, inserted] = groups.try_emplace(proto.id, std::move(proto));
  RecordGroup& group = it->second;
  ++group.count;
  group.last_time = record.time.value_or("");
  // Keep the newest records: the latest event is the one a user is chasing.
  group.evidence.push_back({std::string(source), RecordText(record)});
  if (group.evidence.size() > kMaxEvidence) group.evidence.erase(group.evidence.begin());
}

// A compiled pattern of the catalog, compiled once per pattern text.
const RE2& CompiledPattern(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<RE2>>* compiled = new std::map<std::string, std::unique_ptr<RE2>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<RE2>& re = (*compiled)[pattern];
  if (!re) re = std::make_unique<RE2>(pattern, RE2::Quiet);
  return *re;
}

RecordGroup XidGroup(const core::XidRecord& xid, const catalog::XidTable& table) {
  int64_t code = xid.code ? static_cast<int64_t>(*xid.code) : -1;
  RecordGroup g;
  g.id = fmt::format("kmsg.nvidia_xid_{}", code);
  auto entry = table.find(static_cast<int>(code));
  if (entry != table.end()) {
    g.severity = entry->second.severity;
    g.title = fmt::format("NVIDIA Xid {}: {}", code, entry->second.name);
    g.detail = entry->second.meaning;
    g.detail += fmt::format(" Usual cause: {}.", core::VerdictName(entry->second.verdict));
    g.fix = entry->second.action;
    g.references = entry->second.references;
  } else {
    g.severity = Severity::kError;
    g.title = fmt::format("NVIDIA Xid {} (not in gputriage's Xid table)", code);
    g.detail = "The driver reported an Xid error this version of gputriage has no description for.";
    g.fix = "Look the code up in NVIDIA's Xid catalog.";
    g.references = {"https://docs.nvidia.com/deploy/xid-errors/index.html"};
  }
  return g;
}

// The first rule of kb/tables/kernel-log-rules.yaml that takes the record: its class is one of
// the rule's and its message matches the rule's pattern.
std::optional<RecordGroup> RuleGroup(const core::KernelLogRecord& record,
                                     const std::vector<catalog::KernelLogRule>& rules) {
  const catalog::KernelLogRule* rule =
      catalog::FirstKernelLogRule(rules, record.log_class.value_or(""), record.message.value_or(""));
  if (rule == nullptr) return std::nullopt;
  RecordGroup g;
  g.id = rule->id;
  g.severity = rule->severity;
  g.title = rule->title;
  g.detail = rule->detail;
  g.fix = rule->fix;
  return g;
}

}  // namespace

void CheckGpusPresent(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  const std::vector<core::Gpu>& gpus = snapshot.GpuList();
  if (gpus.empty()) {
    std::string where = snapshot.root ? "in the tree " + *snapshot.root : "on this machine";
    out.push_back(Make("gpu.none_found", Severity::kError, "No GPU found " + where,
                       "No NVIDIA (0x10de) or AMD (0x1002) display or accelerator device is on "
                       "the PCI bus, and no GPU driver lists one.",
                       {{"/sys/bus/pci/devices",
                         "no device of vendor 0x10de or 0x1002 with a "
                         "display/accelerator class"}},
                       "Check that the GPU is installed, powered and passed through to this "
                       "VM or container (lspci should list it)."));
    return;
  }
  for (const core::Gpu& gpu : gpus) {
    if (gpu.source == "driver") continue;  // known only from the driver's files
    std::string driver = gpu.driver.value_or("");
    if (driver.empty()) {
      out.push_back(Make("gpu.no_driver", Severity::kError, "GPU " + gpu.Label() + " has no kernel driver bound",
                         "The device is on the PCI bus but no driver claimed it, so no program "
                         "can use it.",
                         {{"/sys/bus/pci/devices/" + gpu.pci_address.value_or("") + "/driver", "absent"}},
                         gpu.vendor == "nvidia" ? "Load the NVIDIA driver (modprobe nvidia) and check the kernel log "
                                                  "for why it did not bind."
                                                : "Load amdgpu (modprobe amdgpu) and check the kernel log for why it "
                                                  "did not bind."));
    } else if (driver == "vfio-pci" || driver == "pci-stub") {
      out.push_back(Make("gpu.passthrough_driver", Severity::kInfo, "GPU " + gpu.Label() + " is bound to " + driver,
                         "The device is reserved for passthrough to a VM; this host cannot use it.",
                         {{"driver", driver}}, ""));
    }
  }
  // NVIDIA GPUs bound to the nvidia driver that NVML does not list.
  const core::Software* software = snapshot.software ? &*snapshot.software : nullptr;
  if (!software || !software->nvidia || !software->nvidia->device_count) return;
  uint64_t nvml_count = *software->nvidia->device_count;
  for (const core::Gpu& gpu : gpus) {
    if (gpu.vendor != "nvidia" || gpu.driver != "nvidia") continue;
    if (gpu.nvidia && gpu.nvidia->uuid) continue;
    out.push_back(Make("nvidia.gpu_not_in_nvml", Severity::kError,
                       "GPU " + gpu.Label() + " is on the bus but NVML does not list it",
                       "The driver is bound but NVML reports no device at this address; the GPU "
                       "may have failed initialisation or fallen off the bus.",
                       {{"NVML", fmt::format("nvmlDeviceGetCount: {}", nvml_count)}},
                       "Check the kernel log for NVRM errors for this address."));
  }
}

void CheckPciLinks(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  for (const core::Gpu& gpu : snapshot.GpuList()) {
    if (!gpu.link) continue;
    const core::PciLink& link = *gpu.link;
    std::string path = "/sys/bus/pci/devices/" + gpu.pci_address.value_or("");
    if (link.current_width && link.max_width && *link.current_width < *link.max_width) {
      out.push_back(
          Make("pci.link_width_downtrained", Severity::kWarning,
               fmt::format("PCIe link of {} runs at x{} of x{}", gpu.Label(), *link.current_width, *link.max_width),
               "The link trained to fewer lanes than the device supports; host-device bandwidth is cut "
               "accordingly. Lanes, unlike speed, are not lowered for power saving.",
               {{path + "/current_link_width", fmt::format("{}", *link.current_width)},
                {path + "/max_link_width", fmt::format("{}", *link.max_width)}},
               "Reseat the GPU, check the riser/cable and the slot's wiring (some slots are x8)."));
    }
    if (link.current_speed_gts && link.max_speed_gts && *link.current_speed_gts < *link.max_speed_gts) {
      out.push_back(Make("pci.link_speed_below_max", Severity::kInfo,
                         fmt::format("PCIe link of {} runs at {:g} GT/s of {:g} GT/s", gpu.Label(),
                                     *link.current_speed_gts, *link.max_speed_gts),
                         "GPUs lower the link speed when idle to save power, so this is normal at idle; if it "
                         "stays low under load, the link is downtrained.",
                         {{path + "/current_link_speed", fmt::format("{:g} GT/s", *link.current_speed_gts)},
                          {path + "/max_link_speed", fmt::format("{:g} GT/s", *link.max_speed_gts)}},
                         "Check again while the GPU is busy; if still low, reseat the GPU or check the slot."));
    }
  }
}

void CheckBars(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  for (const core::Gpu& gpu : snapshot.GpuList()) {
    std::optional<uint64_t> memory = gpu.MemoryBytes();
    if (!memory || !gpu.bars || gpu.bars->empty()) continue;
    uint64_t largest = 0;
    for (const core::PciBar& bar : *gpu.bars) largest = std::max(largest, bar.size_bytes.value_or(0));
    if (largest == 0 || largest >= *memory) continue;
    out.push_back(Make("pci.small_bar", Severity::kInfo,
                       fmt::format("{} exposes {:.0f} MiB of {:.0f} MiB device memory through its largest BAR",
                                   gpu.Label(), largest / 1048576.0, *memory / 1048576.0),
                       "Without a large (resizable) BAR the CPU and peers cannot map all device memory; "
                       "peer-to-peer transfers and some runtime features are slower or disabled, and mmap of "
                       "device memory past the window fails (SIGBUS).",
                       {{"/sys/bus/pci/devices/" + gpu.pci_address.value_or("") + "/resource",
                         fmt::format("largest BAR {} bytes", largest)}},
                       "Enable 'Above 4G decoding' and 'Resizable BAR' in the firmware setup if the platform "
                       "supports it."));
  }
}

namespace {

/// The records grouped by finding: an Xid by its code (rated from the Xid table), the others
/// by the first kernel-log rule that takes them.
std::map<std::string, RecordGroup> GroupRecords(const std::vector<core::KernelLogRecord>& records,
                                                const catalog::Catalog& catalog, std::string_view source) {
  std::map<std::string, RecordGroup> groups;
  for (const core::KernelLogRecord& record : records) {
    if (record.xid) {
      AddToGroup(groups, XidGroup(*record.xid, catalog.xid), record, source);
      continue;
    }
    if (auto group = RuleGroup(record, catalog.kernel_log_rules)) AddToGroup(groups, std::move(*group), record, source);
  }
  return groups;
}

std::string CountText(const RecordGroup& g) { return g.count > 1 ? fmt::format(" ({} records)", g.count) : ""; }

/// The previous boot's records (kept by the journal through the reboot) rate as this boot's
/// would, under their own ids ("kmsg.nvidia_xid_79.previous_boot"), saying which boot.
void AddPreviousBootFindings(const core::PreviousBootKernelLog& boot, const catalog::Catalog& catalog,
                             std::vector<Finding>& out) {
  if (!boot.records) return;
  std::string ended = boot.last_entry_time ? " (ended " + *boot.last_entry_time + ")" : "";
  for (auto& [id, g] : GroupRecords(*boot.records, catalog, "journal, previous boot")) {
    std::string title = g.title + CountText(g) + " in the previous boot" + ended;
    if (!g.last_time.empty()) title += ", last at " + g.last_time;
    std::string detail = fmt::format(
        "Logged in the previous boot (boot {}{}) and kept by the systemd journal; the reboot cleared it from the "
        "kernel log. {}",
        boot.boot_id.value_or("unknown"),
        boot.last_entry_time ? ", last journal entry at " + *boot.last_entry_time : "", g.detail);
    out.push_back(Make(id + ".previous_boot", g.severity, std::move(title), std::move(detail), std::move(g.evidence),
                       g.fix, g.references));
  }
}

}  // namespace

void CheckKernelLog(const core::Snapshot& snapshot, const catalog::Catalog& catalog, std::vector<Finding>& out) {
  if (!snapshot.kernel_log) return;
  if (snapshot.kernel_log->records) {
    for (auto& [id, g] : GroupRecords(*snapshot.kernel_log->records, catalog, "kernel log")) {
      std::string title = g.title + CountText(g);
      if (!g.last_time.empty()) title += ", last at " + g.last_time;
      out.push_back(Make(g.id, g.severity, title, g.detail, std::move(g.evidence), g.fix, g.references));
    }
  }
  if (snapshot.kernel_log->previous_boot) AddPreviousBootFindings(*snapshot.kernel_log->previous_boot, catalog, out);
}

namespace {

std::string RemappedRowsText(const core::NvidiaRemappedRows& rows) {
  return fmt::format("correctable {}, uncorrectable {}, pending {}, failure {}",
                     rows.correctable ? fmt::format("{}", *rows.correctable) : "?",
                     rows.uncorrectable ? fmt::format("{}", *rows.uncorrectable) : "?",
                     rows.pending ? (*rows.pending ? "yes" : "no") : "?",
                     rows.failure ? (*rows.failure ? "yes" : "no") : "?");
}

void CheckNvidiaGpu(const core::Gpu& gpu, const core::NvidiaGpu& nv, std::vector<Finding>& out) {
  std::string label = gpu.Label();
  if (nv.ecc && nv.ecc->volatile_uncorrected.value_or(0) > 0) {
    uint64_t n = *nv.ecc->volatile_uncorrected;
    out.push_back(Make("nvidia.ecc_uncorrected", Severity::kError,
                       fmt::format("{} had {} uncorrected ECC errors since the driver loaded", label, n),
                       "Uncorrectable memory errors kill the contexts that touch the memory.",
                       {{"NVML nvmlDeviceGetTotalEccErrors(volatile, uncorrected)", fmt::format("{}", n)}},
                       "Drain the GPU; if remapping is pending, reset it; replace if errors "
                       "recur."));
  }
  if (nv.remapped_rows && nv.remapped_rows->failure.value_or(false)) {
    out.push_back(Make("nvidia.row_remap_failure", Severity::kCritical, label + ": row remapping failed",
                       "The GPU ran out of spare rows to remap failing memory.",
                       {{"NVML nvmlDeviceGetRemappedRows", RemappedRowsText(*nv.remapped_rows)}},
                       "Replace the GPU (RMA)."));
  } else if (nv.remapped_rows && nv.remapped_rows->pending.value_or(false)) {
    out.push_back(Make("nvidia.row_remap_pending", Severity::kError, label + ": a memory row remap is pending",
                       "Failing memory rows will be remapped at the next GPU reset; until then "
                       "the bad memory can still be hit.",
                       {{"NVML nvmlDeviceGetRemappedRows", RemappedRowsText(*nv.remapped_rows)}},
                       "Reset the GPU (or reboot) when it is idle."));
  }
  if (nv.retired_pages && nv.retired_pages->pending.value_or(false)) {
    out.push_back(Make("nvidia.page_retirement_pending", Severity::kError, label + ": page retirement is pending",
                       "Pages with ECC errors will be retired at the next driver reload.",
                       {{"NVML nvmlDeviceGetRetiredPagesPendingStatus", "pending"}},
                       "Reset the GPU or reload the driver when it is idle."));
  }
  static const std::set<std::string> kBadThrottle = {"hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown",
                                                     "hw_power_brake_slowdown"};
  std::string active;
  if (nv.throttle_reasons && nv.throttle_reasons->active) {
    for (const std::string& reason : *nv.throttle_reasons->active) {
      if (kBadThrottle.count(reason)) active += (active.empty() ? "" : ", ") + reason;
    }
  }
  if (!active.empty()) {
    out.push_back(Make("nvidia.throttling", Severity::kWarning, label + " is throttled: " + active,
                       "The GPU is slowing its clocks for thermal or power reasons.",
                       {{"NVML nvmlDeviceGetCurrentClocksEventReasons", active}},
                       "Check cooling, fans, inlet temperature and power delivery."));
  }
  if (nv.mig_mode && nv.mig_mode->current.value_or(false)) {
    std::string pending = nv.mig_mode->pending ? (*nv.mig_mode->pending ? "enabled" : "disabled") : "unknown";
    out.push_back(Make("nvidia.mig_enabled", Severity::kInfo, label + " has MIG enabled",
                       "Jobs see MIG instances, not the whole GPU.",
                       {{"NVML nvmlDeviceGetMigMode", "current enabled, pending " + pending}}, ""));
  }
}

}  // namespace

void CheckNvidiaHealth(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  for (const core::Gpu& gpu : snapshot.GpuList()) {
    if (gpu.nvidia) CheckNvidiaGpu(gpu, *gpu.nvidia, out);
  }
}

void CheckAmdHealth(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  for (const core::Gpu& gpu : snapshot.GpuList()) {
    if (!gpu.amd || !gpu.amd->ras) continue;
    uint64_t ue = 0, ce = 0;
    std::vector<Evidence> evidence;
    for (const auto& [block, counts] : *gpu.amd->ras) {
      uint64_t u = counts.ue.value_or(0), c = counts.ce.value_or(0);
      if (u > 0 || c > 0) {
        evidence.push_back({"ras/" + block + "_err_count", fmt::format("ue: {} ce: {}", u, c)});
      }
      ue += u;
      ce += c;
    }
    if (ue > 0) {
      out.push_back(Make("amd.ras_uncorrectable", Severity::kCritical,
                         fmt::format("{}: {} uncorrectable RAS errors", gpu.Label(), ue),
                         "The GPU's RAS counters show uncorrectable errors.", evidence,
                         "Drain the GPU and have it checked; keep the kernel log."));
    } else if (ce > 0) {
      out.push_back(Make("amd.ras_correctable", Severity::kWarning,
                         fmt::format("{}: {} correctable RAS errors", gpu.Label(), ce),
                         "Corrected errors; a rising count can precede uncorrectable ones.", evidence,
                         "Watch the counters over time (snapshot diff)."));
    }
  }
}

void CheckDriverMismatch(const core::Snapshot& snapshot, std::vector<Finding>& out) {
  if (!snapshot.software) return;
  const core::Software& software = *snapshot.software;
  std::string kernel;
  if (software.kernel_modules) {
    if (auto it = software.kernel_modules->find("nvidia"); it != software.kernel_modules->end()) {
      kernel = it->second.version.value_or("");
    }
  }
  if (kernel.empty() && software.nvidia && software.nvidia->procfs) {
    kernel = software.nvidia->procfs->driver_version.value_or("");
  }
  if (kernel.empty() || !software.libraries) return;
  std::vector<Evidence> mismatched;
  for (const core::GpuLibrary& lib : *software.libraries) {
    std::string name = lib.name.value_or(""), version = lib.version.value_or(""), path = lib.path.value_or("");
    // User-space driver libraries carry the driver version in their file name. The CUDA
    // forward-compatibility package (.../compat/) legitimately carries another one.
    if (name != "libcuda" && name != "libnvidia-ml" && name != "libnvidia-ptxjitcompiler") continue;
    if (path.find("/compat/") != std::string::npos) continue;
    if (version.find('.') == std::string::npos) continue;  // libcuda.so.1 is a link name
    if (version != kernel) mismatched.push_back({path, "version " + version});
  }
  if (mismatched.empty()) return;
  mismatched.insert(mismatched.begin(), {"/sys/module/nvidia/version", kernel});
  out.push_back(Make("nvidia.driver_userspace_mismatch", Severity::kError,
                     "NVIDIA user-space driver libraries do not match the kernel module " + kernel,
                     "The loaded kernel module and the user-space libraries come from different driver "
                     "releases; NVML fails with 'Driver/library version mismatch' and CUDA cannot initialise.",
                     mismatched,
                     "Reboot after a driver upgrade (the old module is still loaded), or reinstall one driver "
                     "release so module and libraries match."));
}

void CheckEnvironment(const core::Snapshot& snapshot, const catalog::Catalog& catalog, std::vector<Finding>& out) {
  if (!snapshot.env || !snapshot.env->variables) return;
  const std::map<std::string, std::string>& variables = *snapshot.env->variables;
  std::set<std::string> archs;
  for (const core::Gpu& gpu : snapshot.GpuList()) {
    if (gpu.gfx_arch) archs.insert(*gpu.gfx_arch);
  }
  for (const catalog::EnvVarRule& rule : catalog.env_vars) {
    auto it = variables.find(rule.name);
    if (it == variables.end()) continue;
    const std::string& value = it->second;
    if (rule.match != "any" && !RE2::PartialMatch(value, CompiledPattern(rule.match))) continue;
    std::string detail = rule.effect;
    if (!rule.risk.empty()) detail += " " + rule.risk;
    if (rule.name == "HSA_OVERRIDE_GFX_VERSION" && !archs.empty()) {
      std::string list;
      for (const std::string& a : archs) list += (list.empty() ? "" : ", ") + a;
      detail += " The GPUs here report " + list + ".";
    }
    out.push_back(Make("env." + core::ToLower(rule.name), rule.severity,
                       rule.title + " (" + rule.name + "=" + value + ")", detail,
                       {{"environment", rule.name + "=" + value}}, rule.fix, rule.references));
  }
}

std::vector<Finding> RunDoctorChecks(const core::Snapshot& snapshot, const catalog::Catalog& catalog) {
  std::vector<Finding> out = snapshot.findings;
  CheckGpusPresent(snapshot, out);
  CheckPciLinks(snapshot, out);
  CheckBars(snapshot, out);
  CheckKernelLog(snapshot, catalog, out);
  CheckNvidiaHealth(snapshot, out);
  CheckTopology(snapshot, out);
  CheckAmdHealth(snapshot, out);
  CheckDriverMismatch(snapshot, out);
  CheckEnvironment(snapshot, catalog, out);
  core::SortBySeverity(out);
  return out;
}

}  // namespace gputriage::checks
