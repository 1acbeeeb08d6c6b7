// Capturing a live process at machine level while the supervisor (its ptrace tracer) holds its
// threads stopped: registers, stacks, memory map, disassembly, fault location.
#pragma once

#include <signal.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/process.h"
#include "forensics/disasm.h"
#include "forensics/unwind.h"

namespace gputriage::forensics {

struct LiveCaptureRequest {
  int tgid = 0;
  /// The thread that took the signal (first in the report); for a hang dump, the leader.
  int crashed_tid = 0;
  /// The signal's siginfo; absent for a hang dump (stacks only, no signal).
  std::optional<siginfo_t> info;
  /// Every thread of `tgid` the caller holds in ptrace-stop (crashed_tid included).
  std::vector<int> stopped_tids;
  std::set<std::string> cpu_flags;
  UnwindLimits limits;
};

/// Builds the report of a stopped process. Must run on the tracer thread. Never fails as a
/// whole: each part that cannot be collected (the process vanished, maps unreadable, unwinder
/// refused) is listed in `not_collected` with the reason. `classification` is left empty.
core::ProcessReport CaptureLive(const LiveCaptureRequest& request);

/// A process's place in a distributed job, from its environment block (/proc/PID/environ:
/// NUL-separated NAME=value): `rank` from RANK (torchrun, torch.distributed), else
/// OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID; `local_rank` from LOCAL_RANK, else
/// OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID. A value that is not a non-negative integer is
/// ignored.
struct DistributedRank {
  std::optional<int> rank, local_rank;
};
DistributedRank RankFromEnviron(std::string_view environ_block);

/// A reader of a live process's memory (process_vm_readv, then /proc/PID/mem), page by page
/// so a partly unmapped range gives the readable prefix.
MemoryReader LiveMemoryReader(int pid);

/// The registers of a ptrace-stopped thread (PTRACE_GETREGSET NT_PRSTATUS), named. Fails with
/// errno's text (ESRCH: the thread is gone or not stopped).
core::Result<std::vector<core::Register>> ReadRegisters(int tid);

/// The program counter and stack pointer among `registers` ("rip"/"rsp", "pc"/"sp").
std::optional<uint64_t> ProgramCounter(const std::vector<core::Register>& registers);
std::optional<uint64_t> StackPointer(const std::vector<core::Register>& registers);

}  // namespace gputriage::forensics
