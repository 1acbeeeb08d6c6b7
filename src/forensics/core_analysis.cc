#include "forensics/core_analysis.h"

#include <fmt/format.h>

#include "core/file.h"
#include "core/maps.h"
#include "corefile/core_memory.h"
#include "corefile/core_notes.h"
#include "forensics/capture.h"
#include "forensics/classify.h"
#include "forensics/disasm.h"

namespace gputriage::forensics {
using core::LocateFault;
using core::ProcessReport;
using core::ThreadState;
namespace {

// /proc/cpuinfo is ~1.5 KB per CPU (a 1024-CPU host: ~1.5 MB).
constexpr size_t kMaxCpuinfoBytes = 16u << 20;

std::set<std::string> ThisCpuFlags() {
  return ParseCpuFlags(core::ReadFile("/proc/cpuinfo", kMaxCpuinfoBytes).value_or(""));
}

}  // namespace

core::Result<ProcessReport> AnalyzeCore(const std::string& core_path, const std::string& executable,
                                        const UnwindLimits& limits) {
  GT_ASSIGN_OR_RETURN(corefile::CoreNotes notes, corefile::ReadCoreNotesFile(core_path));
  ProcessReport report;
  report.pid = notes.pid.value_or(notes.threads.empty() ? 0 : notes.threads.front().tid);
  report.command = notes.args.value_or(notes.name.value_or(""));
  report.signal = notes.signal;
  report.si_code = notes.si_code;
  report.fault_address = notes.fault_address;
  report.sender_pid = notes.sender_pid;
  report.maps = notes.files;
  for (const std::string& warning : notes.warnings) {
    report.not_collected.push_back({"core note", warning});
  }
  if (!notes.files.empty()) report.executable = notes.files.front().path;
  if (!executable.empty()) report.executable = executable;
  if (!notes.threads.empty()) report.crashed_thread = notes.threads.front().tid;

  auto session = DwflSession::AttachCore(core_path, executable);
  if (!session.ok()) report.not_collected.push_back({"stacks", session.error().message});
  for (const corefile::CoreThread& ct : notes.threads) {
    ThreadState thread;
    thread.tid = ct.tid;
    thread.registers = ct.registers;
    if (session.ok()) {
      thread.frames = (*session)->Unwind(ct.tid, limits, &thread.frames_truncated, &thread.unwind_error);
    }
    report.threads.push_back(std::move(thread));
  }

  auto memory = corefile::CoreMemory::OpenFile(core_path, notes);
  if (!memory.ok()) report.not_collected.push_back({"memory", memory.error().message});
  if (!report.threads.empty()) {
    const ThreadState& first = report.threads.front();
    std::optional<uint64_t> pc = ProgramCounter(first.registers);
    if (pc && memory.ok()) {
      corefile::CoreMemory mem = *memory;
      MemoryReader reader = [mem](uint64_t address, size_t length) {
        return mem.Read(address, length).value_or(std::vector<uint8_t>{});
      };
      std::optional<uint64_t> start = session.ok() ? (*session)->FunctionStart(*pc) : std::nullopt;
      std::string arch = notes.machine;
      report.disassembly = DisassembleAround(reader, arch, *pc, start, ThisCpuFlags());
      if (arch != HostArch()) {
        report.disassembly->missing_on_cpu.clear();  // this CPU is not the one that crashed
      }
    }
    if (report.fault_address && report.signal && (*report.signal == SIGSEGV || *report.signal == SIGBUS)) {
      report.fault_location = LocateFault(*report.fault_address, report.maps, StackPointer(first.registers));
    }
  }
  FailureContext ctx;
  ctx.process = &report;
  report.classification = Classify(ctx);
  if (report.classification) {
    report.classification->detail += (report.classification->detail.empty() ? "" : " ") +
                                     std::string(
                                         "(From a core file: the ISA check compares with the CPU analysing it, and "
                                         "anonymous mappings without a file are not listed.)");
  }
  return report;
}

}  // namespace gputriage::forensics
