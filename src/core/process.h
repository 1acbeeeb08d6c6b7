// The machine-level picture of one process at the moment it died (layer 4): signal and its
// siginfo, every thread's registers and symbolised stack, the instructions around the faulting
// PC, the memory map and what the fault address falls in, and a classification. The same
// report comes from a live crash under `gputriage run` (ptrace) and from a core file
// (`gputriage analyze CORE`); its JSON form is process.json of a crash bundle.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/category.h"
#include "core/model.h"

namespace gputriage::core {

/// One stack frame. `pc` is the frame's program counter (for caller frames: the return
/// address). `function` is demangled; empty when no symbol covers the address. `offset` is the
/// address inside `module`'s ELF file (what `addr2line -e MODULE` takes); `file`/`line` only
/// when debug information was found.
struct Frame {
  uint64_t pc = 0;
  std::string function;
  uint64_t function_offset = 0;  ///< pc - start of `function` (0 when unknown)
  std::string module;            ///< path of the ELF file mapped there; empty when none
  std::optional<uint64_t> offset;
  std::optional<std::string> file;
  std::optional<int> line;
};

/// A register by name ("rip", "rsp", "x0", ...) and value, in the order the ABI lists them.
struct Register {
  std::string name;
  uint64_t value = 0;
};

struct ThreadState {
  int tid = 0;
  std::string name;  ///< /proc/TID/comm, or the core's thread name; empty when unknown
  std::vector<Register> registers;
  std::vector<Frame> frames;
  bool frames_truncated = false;            ///< more frames than the unwinder was allowed to walk
  std::optional<std::string> unwind_error;  ///< why the walk stopped early, when it did
};

/// One line of /proc/PID/maps (or of a core's NT_FILE note, which has no permissions).
struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;   ///< exclusive
  std::string perms;  ///< "r-xp"; empty when not known (core NT_FILE)
  uint64_t file_offset = 0;
  std::string path;  ///< file path or pseudo name ("[stack]", "[heap]"); empty for anonymous
  /// The file's inode (0 for anonymous memory and pseudo files, and when not known: a core's
  /// NT_FILE note, JSON). Not written to JSON: it only tells a core writer what is file-backed.
  uint64_t inode = 0;
};

/// One decoded instruction.
struct Instruction {
  uint64_t address = 0;
  std::string bytes;  ///< hex, "48 8b 07"
  std::string text;   ///< "mov rax, qword ptr [rdi]"
  bool faulting = false;
};

/// Instructions around the faulting PC.
struct Disassembly {
  std::string arch;  ///< "x86_64", "aarch64"
  std::vector<Instruction> instructions;
  /// ISA extensions the faulting instruction needs, as /proc/cpuinfo flag names ("avx512f").
  std::vector<std::string> isa_extensions;
  /// The subset of `isa_extensions` this CPU does not list in /proc/cpuinfo.
  std::vector<std::string> missing_on_cpu;
  /// Why there is nothing (or less) to show: "pc 0x0 is not mapped".
  std::optional<std::string> note;
};

/// What the fault address falls in.
struct FaultLocation {
  /// "null-page", "mapped", "unmapped", "stack-guard".
  std::string kind;
  std::optional<Mapping> mapping;  ///< the mapping it falls in, for "mapped" / "stack-guard"
  std::string description;         ///< one sentence for humans
};

/// How the failure is explained. `kind` is a stable identifier ("null-dereference",
/// "stack-overflow", "sigbus-truncated-file", "illegal-instruction-isa", "gpu-runtime-error",
/// ...); `category` is the docs/design.md failure category when one applies, else "other".
struct Classification {
  std::string kind;
  Category category = Category::kOther;
  std::string summary;  ///< one line
  std::string detail;
  std::vector<Evidence> evidence;
};

/// A core file shorter than its program headers say (the disk filled up, RLIMIT_CORE or a copy
/// cut it short): the memory past `file_bytes` is missing from the report's evidence.
struct CoreTruncation {
  uint64_t file_bytes = 0;      ///< the core's size
  uint64_t expected_bytes = 0;  ///< where its last note or segment should end
  size_t segments_cut = 0;      ///< PT_LOAD segments holding fewer bytes than their p_filesz
};

/// Everything known about one process of the job. Optional members are absent when unknown.
struct ProcessReport {
  std::optional<int> pid;  ///< unknown when the core or process.json does not say (never 0)
  std::string command;     ///< cmdline joined by spaces (core: NT_PRPSINFO's args)
  std::string executable;
  std::optional<int> signal;
  std::optional<int> si_code;
  std::optional<uint64_t> fault_address;  ///< si_addr, for SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP
  std::optional<int> sender_pid;          ///< si_pid, when a process sent the signal (SI_USER, SI_TKILL)
  std::optional<int> crashed_thread;      ///< tid that took the signal
  /// The process's place in a distributed job, from its environment (RANK and LOCAL_RANK as
  /// torchrun and torch.distributed set them; MPI's and Slurm's names as fallbacks).
  std::optional<int> rank, local_rank;
  /// Seconds after the job started when this process was stopped: by its fatal signal, or at
  /// the timeout for a hang dump. Absent for a core file and a process captured while running.
  std::optional<double> stopped_at_s;
  std::vector<ThreadState> threads;  ///< the crashed thread first
  std::optional<Disassembly> disassembly;
  std::vector<Mapping> maps;
  std::optional<FaultLocation> fault_location;
  std::optional<Classification> classification;
  /// Parts that could not be collected and why ("registers: PTRACE_GETREGSET: ESRCH").
  std::vector<NotCollected> not_collected;
  /// From a core file that is truncated; absent for a complete core and a live capture.
  std::optional<CoreTruncation> core_truncated;
};

/// process.json: `signal` as a name ("SIGSEGV"), `si_code` as a name ("SEGV_MAPERR") with
/// `si_code_value` and `si_code_meaning`, addresses as "0x..." strings, frames with
/// function/module/offset (file/line when known), `core_truncated` ({file_bytes,
/// expected_bytes, segments_cut}) only when set.
Json ToJson(const ProcessReport& report);

/// Parses what ToJson wrote (for `analyze BUNDLE`, report rendering). Unknown or missing
/// members stay at their defaults; never throws.
ProcessReport ProcessReportFromJson(const Json& json);

/// "0x7f12abcd" — the form every address takes in JSON and text.
std::string Hex(uint64_t value);

/// A kernel-log record written during a supervised run, as process.json keeps it.
struct RunKernelLogRecord {
  std::string message;
  std::string log_class;                 ///< "nvidia.xid", "amdgpu", ... ("" when not GPU-related)
  std::optional<uint64_t> monotonic_us;  ///< since boot
  std::optional<int> job_pid;            ///< a pid of the job's process tree the record names
  std::optional<uint32_t> xid;           ///< NVIDIA Xid code, when it is an Xid line
  bool oom_kill = false;                 ///< the OOM killer killed `job_pid`
};

/// process.json of a crash bundle: the report of the process the failure is about (its members
/// at the top level, as ToJson(ProcessReport) writes them), then how the run ended.
struct ProcessFile {
  ProcessReport primary;           ///< with the run's classification
  std::optional<int> exit_status;  ///< as a shell reports it (128+N after signal N)
  std::optional<int> exit_code;    ///< the job exited normally with this code
  std::optional<int> term_signal;  ///< the job was killed by this signal (JSON: its name)
  bool timed_out = false;
  std::string signature;  ///< what runs of the same failure group by
  std::vector<ProcessReport> other_crashed_processes;
  std::optional<uint64_t> crashed_processes_not_captured;
  std::vector<ProcessReport> hang_dumps;
  std::vector<RunKernelLogRecord> kernel_log;
};

/// process.json: ToJson(primary) with exit_status, exit_code, term_signal, timed_out,
/// signature, other_crashed_processes, hang_dumps and kernel_log.
Json ToJson(const ProcessFile& file);

/// Parses process.json leniently (never throws); members that are absent or of another type
/// stay unknown.
ProcessFile ProcessFileFromJson(const Json& json);

/// One captured process of the job, in the order of the failure (a distributed job: one rank
/// dies, the others then fail or wait for it).
struct JobProcess {
  std::optional<int> pid, rank, local_rank, signal;
  std::optional<double> stopped_at_s;
  /// "first_failure" (the earliest fatal signal), "failed_after" (a later one),
  /// "waiting_at_timeout" (stacks taken when the timeout expired).
  std::string role;
};

/// The processes of a process file: those that died of a fatal signal ordered by when they were
/// stopped (unknown times last), the first of them "first_failure", then the hang dumps. Empty
/// when it holds fewer than two processes.
std::vector<JobProcess> JobProcessTimeline(const ProcessFile& file);

/// "rank 1 (pid 4242)", or "pid 4242" without a rank ("?" for an unknown pid).
std::string JobProcessLabel(const JobProcess& process);
std::string ProcessLabel(const ProcessReport& process);

/// A JobProcess role in words: "failed first", "failed after it", "waiting at the timeout"; an
/// unknown role as it is.
std::string JobProcessRoleText(std::string_view role);

}  // namespace gputriage::core
