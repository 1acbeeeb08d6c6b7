#include "kb/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gputriage::kb {
namespace {

// Which way the evidence beyond the error lines points.
struct Leaning {
  bool hardware = false;
  bool driver = false;
  bool library = false;
  bool application = false;
  std::vector<std::string> hardware_why;
  // The failure follows a version change since the last good snapshot (analyze --baseline):
  // the snapshot facts' own lists, empty when there is no baseline.
  const std::vector<std::string>* driver_changed = nullptr;
  const std::vector<std::string>* stack_changed = nullptr;
};

// The stack's own messages that place the fault (kb/tables/vocab-*.yaml): a component saying
// "uncorrectable ECC error" or "driver/library version mismatch" is evidence for the verdict, as
// strong as its weight. A verdict needs weight 3 in all (one decisive message or several hints).
void VocabularyReasons(const ScanFindings& found, Analysis& a, Leaning& leaning) {
  for (const auto& [verdict, what] : found.verdict_lines) {
    a.verdict_reasons.push_back(
        fmt::format("the stack's own message points at {}: {}", core::VerdictName(verdict), what));
  }
  auto votes = [&](core::Verdict v) { return found.verdict_votes[static_cast<size_t>(v)]; };
  if (votes(core::Verdict::kHardware) >= 3) {
    leaning.hardware = true;
    leaning.hardware_why.push_back("the GPU stack's own message");
  }
  leaning.driver = leaning.driver || votes(core::Verdict::kDriverFirmware) >= 3;
  leaning.library = leaning.library || votes(core::Verdict::kLibrary) >= 3;
  leaning.application = leaning.application || votes(core::Verdict::kApplication) >= 3;
}

void VmFaultReasons(const ScanFindings& found, Analysis& a, Leaning& leaning) {
  for (const VmFault& f : found.vm_faults) a.vm_faults.push_back(ToJson(f));
  if (found.vm_faults.empty()) return;
  const VmFault& first = found.vm_faults.front();
  a.verdict_reasons.push_back(fmt::format("{} amdgpu VM fault{} (each block of kernel-log lines is one); the first: {}",
                                          found.vm_fault_count, found.vm_fault_count == 1 ? "" : "s",
                                          first.Describe()));
  if (first.address && *first.address < 0x10000) {
    a.verdict_reasons.push_back(
        fmt::format("the faulting page {:#x} is at the bottom of the address space: a null "
                    "(or nearly null) pointer used by the GPU",
                    *first.address));
  }
  if (first.vmid && *first.vmid == 0) {
    a.verdict_reasons.push_back(
        "vmid 0 is the system context (kb/tables/amdgpu-vm-fault.yaml): the access came "
        "from the kernel driver or firmware, not from a user's kernel");
    leaning.driver = true;
  }
}

// ACA banks are the GPU's own hardware error reports (kb/tables/amd-ras.yaml). Every valid bank
// is a reason; only one whose error was not corrected leans the verdict to hardware.
void AcaReasons(const ScanFindings& found, Analysis& a, Leaning& leaning) {
  size_t valid = 0, not_corrected = 0;
  const AcaBank* first = nullptr;
  for (const AcaBank& bank : found.aca_banks) {
    a.aca_banks.push_back(ToJson(bank));
    if (!bank.valid) continue;
    ++valid;
    not_corrected += bank.NotCorrected() ? 1 : 0;
    if (first == nullptr || (bank.NotCorrected() && !first->NotCorrected())) first = &bank;
  }
  if (first == nullptr) return;
  a.verdict_reasons.push_back(
      fmt::format("{} AMD ACA hardware error bank{} in the kernel log ({} not corrected; "
                  "decoded with kb/tables/amd-ras.yaml); {}: {}",
                  valid, valid == 1 ? "" : "s", not_corrected,
                  first->NotCorrected() ? "the first not corrected" : "the first", first->Describe()));
  if (not_corrected == 0) return;
  leaning.hardware = true;
  leaning.hardware_why.push_back(first->ip.empty() ? "ACA error bank" : "ACA error bank from " + first->ip);
}

void XidReasons(const ScanFindings& found, const catalog::XidTable& table, const Facts* facts, Analysis& a,
                Leaning& leaning) {
  for (const auto& [code, seen] : found.xids) {
    auto it = table.find(static_cast<int>(code));
    std::string name = it != table.end() ? it->second.name : "not in the Xid catalog";
    core::Verdict klass = it != table.end() ? it->second.verdict : core::Verdict::kUnknown;
    std::string gpus;
    for (const std::string& g : seen.gpus) gpus += (gpus.empty() ? "" : ", ") + g;
    a.xids.push_back({{"code", code},
                      {"name", name},
                      {"class", core::VerdictName(klass)},
                      {"count", seen.count},
                      {"gpus", seen.gpus},
                      {"first_line", seen.first_line},
                      {"last_line", seen.last_line}});
    std::string times = seen.count > 1 ? fmt::format(" ({} times)", seen.count) : "";
    if (klass == core::Verdict::kHardware || klass == core::Verdict::kDriverFirmware ||
        klass == core::Verdict::kApplication) {
      a.verdict_reasons.push_back(fmt::format("Xid {} ({}) on {}{}: NVIDIA's Xid catalog classes it as {}", code, name,
                                              gpus, times, core::VerdictName(klass)));
    } else {
      a.verdict_reasons.push_back(fmt::format(
          "Xid {} ({}) on {}{}: its cause can be the program, the driver or the hardware", code, name, gpus, times));
    }
    if (klass == core::Verdict::kHardware) {
      leaning.hardware = true;
      leaning.hardware_why.push_back(fmt::format("Xid {}", code));
    }
    leaning.driver = leaning.driver || klass == core::Verdict::kDriverFirmware;
    leaning.application = leaning.application || klass == core::Verdict::kApplication;
    if (seen.gpus.size() > 1) {
      a.verdict_reasons.push_back(
          fmt::format("Xid {} on {} GPUs at once: one failing GPU does not make others fail, so this points at "
                      "what they share (the job, the driver, the node)",
                      code, seen.gpus.size()));
    } else if (klass == core::Verdict::kHardware && facts && facts->gpu_count > 1) {
      a.verdict_reasons.push_back(
          fmt::format("only {} of the {} GPUs in the snapshot reports Xid {}: the failure follows that GPU", gpus,
                      facts->gpu_count, code));
    }
  }
}

void XidDroppedReason(const ScanFindings& found, Analysis& a) {
  if (found.xid_lines_dropped == 0) return;
  a.verdict_reasons.push_back(
      fmt::format("{} more Xid lines of further codes were counted but not listed (only the "
                  "first {} distinct Xid codes are kept)",
                  found.xid_lines_dropped, LineScan::kMaxXidCodes));
}

void SnapshotReasons(const Facts* facts, Analysis& a, Leaning& leaning) {
  if (!facts) return;
  for (const std::string& alert : facts->hardware_alerts) {
    a.verdict_reasons.push_back("snapshot: " + alert);
    leaning.hardware = true;
    leaning.hardware_why.push_back(alert);
  }
  for (const std::string& change : facts->changes) {
    a.verdict_reasons.push_back("changed since the last good snapshot: " + change);
  }
  leaning.driver_changed = &facts->driver_changes;
  leaning.stack_changed = &facts->stack_changes;
}

void RepeatReasons(const ScanFindings& found, Analysis& a, Leaning& leaning) {
  if (!found.repeat || found.repeat->runs <= 1) return;
  const core::RepeatStats& r = *found.repeat;
  if (r.failures == r.runs && r.distinct_signatures == 1) {
    a.verdict_reasons.push_back(
        fmt::format("failed {} of {} runs with the same signature: deterministic, which points at the program "
                    "or a library rather than failing hardware",
                    r.failures, r.runs));
    leaning.application = true;
  } else if (r.failures == r.runs) {
    a.verdict_reasons.push_back(
        fmt::format("failed {} of {} runs but with {} different signatures: a race or memory corruption in the "
                    "program, or unstable hardware",
                    r.failures, r.runs, r.distinct_signatures));
  } else {
    a.verdict_reasons.push_back(
        fmt::format("failed {} of {} runs ({} with this signature): intermittent, so a race, uninitialised "
                    "memory or marginal hardware rather than a plain bug",
                    r.failures, r.runs, r.same_signature));
  }
}

// A known issue keeps its verdict (and hears about hardware evidence) unless that verdict is
// unknown; otherwise the evidence decides: hardware, else driver-firmware, else an undecided
// verdict follows the library's or the application's own messages.
void SettleVerdict(const Leaning& leaning, Analysis& a) {
  // A known issue whose verdict is unknown (its cause varies) leaves the verdict to the evidence too.
  if (a.matches.empty() || a.verdict == core::Verdict::kUnknown) {
    core::Verdict before = a.verdict;
    if (leaning.hardware) {
      a.verdict = core::Verdict::kHardware;
    } else if (leaning.driver) {
      a.verdict = core::Verdict::kDriverFirmware;
    } else if (a.verdict == core::Verdict::kUnknown && leaning.library) {
      a.verdict = core::Verdict::kLibrary;
    } else if (a.verdict == core::Verdict::kUnknown && leaning.application) {
      a.verdict = core::Verdict::kApplication;
    } else if (a.verdict == core::Verdict::kUnknown && leaning.driver_changed &&
               leaning.driver_changed->empty() != leaning.stack_changed->empty()) {
      // Nothing else places the fault, and only one side changed since the job last worked.
      bool driver = !leaning.driver_changed->empty();
      a.verdict = driver ? core::Verdict::kDriverFirmware : core::Verdict::kLibrary;
      a.verdict_reasons.push_back(fmt::format(
          "the failure follows {} change since the last good snapshot ({}), and {} did not change: the first "
          "suspect; going back to the old version tells",
          driver ? "a driver/kernel" : "a GPU stack component's",
          fmt::join(driver ? *leaning.driver_changed : *leaning.stack_changed, "; "),
          driver ? "the GPU stack's components" : "the driver and kernel"));
    }
    if (a.verdict != before) {
      a.verdict_reasons.push_back(fmt::format("verdict {} (the error lines alone said {})",
                                              core::VerdictName(a.verdict), core::VerdictName(before)));
    }
  } else if (leaning.hardware && a.verdict != core::Verdict::kHardware) {
    a.verdict_reasons.push_back(
        fmt::format("the known issue says {}, but there is hardware evidence too ({}): check the GPU before "
                    "blaming the software",
                    core::VerdictName(a.verdict), fmt::join(leaning.hardware_why, "; ")));
  }
}

}  // namespace

void AddVerdictEvidence(const ScanFindings& found, const catalog::XidTable& xid, const Facts* facts, Analysis& a) {
  Leaning leaning;
  VmFaultReasons(found, a, leaning);
  AcaReasons(found, a, leaning);
  XidReasons(found, xid, facts, a, leaning);
  XidDroppedReason(found, a);
  VocabularyReasons(found, a, leaning);
  SnapshotReasons(facts, a, leaning);
  RepeatReasons(found, a, leaning);
  SettleVerdict(leaning, a);
}

}  // namespace gputriage::kb
