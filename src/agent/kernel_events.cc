#include "agent/kernel_events.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <unistd.h>

#include "catalog/kernel_log_rules.h"
#include "catalog/xid.h"
#include "core/clock.h"
#include "core/file.h"
#include "core/redact.h"
#include "forensics/kmsg_watch.h"
#include "kmsg/classify.h"

namespace gputriage::agent {
namespace {

// The PCI function the record is about: the Xid's, the record's DEVICE=+pci:..., or the first
// full PCI address in the message ("amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault").
std::optional<std::string> PciOf(const kmsg::Record& record, const std::optional<kmsg::XidInfo>& xid) {
  if (xid && !xid->pci.empty()) return xid->pci;
  if (record.device.starts_with("+pci:")) return record.device.substr(5);
  static const RE2 kPci(R"(\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b)");
  std::string pci;
  if (RE2::PartialMatch(record.message, kPci, &pci)) {
    for (char& c : pci) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return pci;
  }
  return std::nullopt;
}

}  // namespace

std::optional<core::GpuEvent> EventFromRecord(const kmsg::Record& record, const EventContext& context,
                                              double epoch_seconds) {
  kmsg::LogClass log_class = kmsg::ClassifyMessage(record.message);
  if (log_class == kmsg::LogClass::kNone || context.catalog == nullptr) return std::nullopt;
  core::GpuEvent event;
  std::optional<kmsg::XidInfo> xid;
  if (log_class == kmsg::LogClass::kNvidiaXid) xid = kmsg::ParseXid(record.message);
  if (xid) {
    event.error_type = fmt::format("xid_{}", xid->code);
    auto entry = context.catalog->xid.find(static_cast<int>(xid->code));
    if (entry != context.catalog->xid.end()) {
      event.severity = std::string(core::SeverityName(entry->second.severity));
      event.meaning = entry->second.name + ": " + entry->second.meaning;
      event.action = entry->second.action;
    } else {
      event.severity = "error";
      event.meaning = fmt::format("Xid {}: not in gputriage's Xid table (see NVIDIA's Xid catalog)", xid->code);
    }
  } else {
    const catalog::KernelLogRule* rule =
        catalog::FirstKernelLogRule(context.catalog->kernel_log_rules, kmsg::LogClassName(log_class), record.message);
    if (rule == nullptr) return std::nullopt;
    event.error_type = rule->id.starts_with("kmsg.") ? rule->id.substr(5) : rule->id;
    event.severity = std::string(core::SeverityName(rule->severity));
    event.meaning = rule->title;
    event.action = rule->fix;
  }
  event.time = core::FormatUtcIso(epoch_seconds, /*millis=*/true);
  event.host = context.host;
  event.kind = "kernel_log";
  event.message = core::RedactText(record.message);
  event.kmsg_seq = record.seq;
  event.pci_bus_id = PciOf(record, xid);
  if (event.pci_bus_id) {
    if (auto gpu = context.gpus.find(*event.pci_bus_id); gpu != context.gpus.end()) {
      event.gpu = gpu->second.index;
      event.gpu_uuid = gpu->second.uuid;
    }
  }
  // The first pid the record names (an Xid's pid=, amdgpu's "for process ... pid N", the OOM
  // killer's "Killed process N"); PidsInMessage keeps only positive ones.
  std::vector<int> pids = forensics::PidsInMessage(record.message);
  if (!pids.empty()) {
    int pid = pids.front();
    event.pid = pid;
    if (context.executable_of) event.executable = context.executable_of(pid);
    if (context.job_of) {
      core::JobAttribution job = context.job_of(pid);
      event.job = job.Job();
      event.job_step = job.slurm_step;
      event.rank = job.rank;
      event.local_rank = job.local_rank;
      event.pod = job.pod;
      event.container = job.container;
      event.systemd_unit = job.systemd_unit;
      event.cgroup = job.cgroup;
    }
  }
  return event;
}

core::JobAttribution JobOfProcess(int pid) {
  auto cgroup = core::ReadFile(fmt::format("/proc/{}/cgroup", pid), 64 * 1024);
  core::JobAttribution job = cgroup.ok() ? core::ParseProcCgroup(*cgroup) : core::JobAttribution{};
  if (auto environ = core::ReadFile(fmt::format("/proc/{}/environ", pid), 1u << 20); environ.ok()) {
    core::AddJobEnvironment(*environ, job);
  }
  return job;
}

std::optional<std::string> ExecutableOfProcess(int pid) {
  char target[4096];
  ssize_t n = ::readlink(fmt::format("/proc/{}/exe", pid).c_str(), target, sizeof target - 1);
  if (n <= 0) return std::nullopt;
  return std::string(target, static_cast<size_t>(n));
}

}  // namespace gputriage::agent
