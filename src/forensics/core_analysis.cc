#include "forensics/core_analysis.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/file.h"
#include "core/maps.h"
#include "core/scoped_fd.h"
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

// --exe must be an executable or shared object: a regular file (never a device or FIFO, which
// could block or never end) whose first 64 bytes, the only ones read here, are an ELF header of
// type ET_EXEC or ET_DYN.
core::Result<void> CheckExecutable(const std::string& path) {
  core::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return core::ErrnoError(errno, "--exe {}", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return core::ErrnoError(errno, "--exe {}", path);
  if (S_ISDIR(st.st_mode)) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "--exe {}: is a directory", path);
  }
  if (!S_ISREG(st.st_mode)) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "--exe {}: not a regular file (a device, FIFO or socket); give the executable "
                               "the core was taken from",
                               path);
  }
  unsigned char header[sizeof(Elf64_Ehdr)] = {};
  ssize_t got = ::pread(fd.get(), header, sizeof(header), 0);
  if (got < static_cast<ssize_t>(sizeof(header)) || std::memcmp(header, ELFMAG, SELFMAG) != 0) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "--exe {}: not an ELF file ({} bytes, no 64-byte ELF header with the \\x7fELF magic)",
                               path, static_cast<uint64_t>(st.st_size));
  }
  unsigned type = header[16] | (header[17] << 8);  // e_type, little-endian
  if (type != ET_EXEC && type != ET_DYN) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "--exe {}: an ELF file of type {}, not an executable or shared object", path, type);
  }
  return {};
}

// The path NT_FILE gives for the executable: the file mapped where its program headers are
// (AT_PHDR), else its entry point (AT_ENTRY), else the first file mapped.
std::string RecordedExecutable(const corefile::CoreNotes& notes) {
  for (uint64_t wanted : {uint64_t{AT_PHDR}, uint64_t{AT_ENTRY}}) {
    for (const auto& [type, value] : notes.auxv) {
      if (type != wanted) continue;
      if (const core::Mapping* m = core::FindMapping(notes.files, value)) return m->path;
    }
  }
  return notes.files.empty() ? "" : notes.files.front().path;
}

// Why the code at `pc` cannot be read, when it is because of the core or the files (not a jump
// to an unmapped address, which DisassembleAround explains itself).
std::optional<std::string> CodeUnavailable(uint64_t pc, const std::vector<core::Mapping>& files,
                                           const corefile::CoreMemory& memory, const std::string& exe_path,
                                           bool exe_given) {
  if (const core::Mapping* m = core::FindMapping(files, pc)) {
    bool is_exe = m->path == exe_path;
    std::string hint = !is_exe     ? "; the library must be at that path to read it"
                       : exe_given ? ""
                                   : "; give the executable with --exe PATH";
    return fmt::format(
        "the code at pc {} is not in the core, and {}, mapped there, cannot be read (moved, deleted, or of another "
        "machine or container){}",
        core::Hex(pc), m->path, hint);
  }
  if (memory.Mapped(pc)) {
    return fmt::format("pc {} was mapped, but its memory is not in the core ({})", core::Hex(pc),
                       memory.truncation() ? "the core is truncated" : "not dumped");
  }
  return std::nullopt;
}

// The instructions around the crashed thread's PC, from the core's memory and the mapped files
// (`files`, with --exe in place of the executable's recorded path; `exe_path` is the one used).
core::Disassembly Disassemble(uint64_t pc, const corefile::CoreMemory& memory, const std::vector<core::Mapping>& files,
                              const std::string& machine, std::optional<uint64_t> function_start,
                              const std::string& exe_path, bool exe_given) {
  MemoryReader reader = [memory](uint64_t address, size_t length) {
    return memory.Read(address, length).value_or(std::vector<uint8_t>{});
  };
  if (reader(pc, 1).empty()) {
    if (auto why = CodeUnavailable(pc, files, memory, exe_path, exe_given)) {
      core::Disassembly missing;
      missing.arch = machine;
      missing.note = *why;
      return missing;
    }
  }
  core::Disassembly d = DisassembleAround(reader, machine, pc, function_start, HostCpuFlags());
  if (machine != HostArch()) d.missing_on_cpu.clear();  // this CPU is not the one that crashed
  return d;
}

void NoteTruncation(const std::string& core_path, const core::CoreTruncation& t, ProcessReport& report) {
  report.core_truncated = t;
  report.not_collected.push_back(
      {"memory", fmt::format("{}: the core file is truncated: {} of the {} bytes its program headers describe; {} "
                             "memory segment(s) cut short, so the stacks, data and code past the cut are missing "
                             "(the disk filled up, RLIMIT_CORE, or an incomplete copy)",
                             core_path, t.file_bytes, t.expected_bytes, t.segments_cut)});
}

}  // namespace

core::Result<ProcessReport> AnalyzeCore(const std::string& core_path, const std::string& exe_arg,
                                        const UnwindLimits& limits) {
  if (!exe_arg.empty()) GT_RETURN_IF_ERROR(CheckExecutable(exe_arg));
  // Absolute: mapped files are only read by absolute path (a core's paths are untrusted).
  std::error_code ec;
  std::string executable = exe_arg.empty() ? "" : std::filesystem::absolute(exe_arg, ec).lexically_normal().string();
  if (ec) return core::MakeError("--exe {}: {}", exe_arg, ec.message());
  GT_ASSIGN_OR_RETURN(corefile::CoreNotes notes, corefile::ReadCoreNotesFile(core_path));
  ProcessReport report;
  // The pid from NT_PRPSINFO, else the first thread's (the kernel writes the crashing thread
  // first); unknown when the core has neither.
  report.pid = notes.pid;
  if (!report.pid && !notes.threads.empty()) report.pid = notes.threads.front().tid;
  report.command = notes.args.value_or(notes.name.value_or(""));
  report.signal = notes.signal;
  report.si_code = notes.si_code;
  report.fault_address = notes.fault_address;
  report.sender_pid = notes.sender_pid;
  report.maps = notes.files;
  for (const std::string& warning : notes.warnings) {
    report.not_collected.push_back({"core note", warning});
  }
  std::string recorded_exe = RecordedExecutable(notes);
  report.executable = executable.empty() ? recorded_exe : executable;
  if (!executable.empty()) {
    // Code and data not in the core are read from --exe where the core names the old path.
    for (core::Mapping& m : notes.files) {
      if (m.path == recorded_exe) m.path = executable;
    }
  }
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
  if (memory.ok() && memory->truncation()) NoteTruncation(core_path, *memory->truncation(), report);
  if (!report.threads.empty()) {
    const ThreadState& first = report.threads.front();
    std::optional<uint64_t> pc = ProgramCounter(first.registers);
    if (pc && memory.ok()) {
      std::optional<uint64_t> start = session.ok() ? (*session)->FunctionStart(*pc) : std::nullopt;
      report.disassembly =
          Disassemble(*pc, *memory, notes.files, notes.machine, start, report.executable, !executable.empty());
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
