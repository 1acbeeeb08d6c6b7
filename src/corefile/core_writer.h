// Writing a Linux-kernel-compatible ELF core of a process that the caller holds in ptrace-stop
// (the `gputriage run --core` supervisor at the crashing signal's delivery-stop). gdb, elfutils
// (eu-stack, libdwfl) and ParseCoreNotes/CoreMemory read the result.
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gputriage::corefile {

struct CoreWriteOptions {
  /// Largest core file written. Headers and notes are always written; the contents of a memory
  /// segment only when they fit under the cap (the stacks of the threads first, then the rest
  /// in address order), else the segment keeps its PT_LOAD with p_filesz = 0.
  uint64_t size_cap_bytes = 4ull << 30;
};

struct CoreWriteStats {
  uint64_t bytes_written = 0;  ///< size of the core file
  size_t segments = 0;         ///< PT_LOAD segments (one per mapping)
  /// Segments whose contents were wanted but not written: over the cap, or unreadable.
  size_t segments_truncated = 0;
  /// What was left out and why, one entry per mapping or thread: "[vvar]",
  /// "/dev/nvidia0 (device mapping)", "0x7f..-0x7f.. (over the size cap)", "thread 123 (gone)".
  std::vector<std::string> skipped;
};

/// Writes the core of process `pid` to `path` (atomically: a 0600 temporary file in the same
/// directory, renamed into place; nothing is left behind on failure).
///
/// `tids` are all the threads to record, each already ptrace-stopped by the calling thread; the
/// first is the one that took `info`'s signal (its NT_PRSTATUS comes first and carries the
/// signal). The notes are the kernel's (fs/binfmt_elf.c), in its order: per thread NT_PRSTATUS
/// (+ NT_FPREGSET, and on x86_64 NT_386_IOPERM, NT_X86_XSTATE at the kernel's XSAVE size and
/// NT_X86_SHSTK when the thread has them), NT_PRPSINFO, NT_SIGINFO (`info` as given), NT_AUXV
/// and NT_FILE after the first thread's NT_PRSTATUS, and NT_X86_XSAVE_LAYOUT (CPUID leaf 0xD)
/// last. Then one PT_LOAD per line of /proc/PID/maps, with the contents the kernel's
/// vma_dump_size() would write under the process's /proc/PID/coredump_filter (default 0x33):
/// memory that was written to (anonymous pages, so also the read-only RELRO regions holding
/// .dynamic and the GOT, and the loader's data: what gdb walks from DT_DEBUG through r_debug to
/// the link_map list), shared anonymous memory, the first page of each ELF file, and file
/// mappings only when the filter asks for them. [vvar]/[vsyscall], device mappings
/// (/dev/..., VM_IO/VM_PFNMAP) and MADV_DONTDUMP memory are never read. Without
/// /proc/PID/smaps (no page counts), anonymous and writable private mappings are dumped whole.
///
/// Fails (naming the pid, thread and errno) when there is no thread, the first thread's
/// registers cannot be read (not stopped by this tracer, or a 32-bit process), /proc/PID/maps
/// cannot be read, the machine is not x86_64 or aarch64, or the file cannot be written. A later
/// thread that is gone (ESRCH) is skipped and listed in `skipped`.
core::Result<CoreWriteStats> WriteCore(int pid, const std::vector<int>& tids, const siginfo_t& info,
                                       const std::string& path, const CoreWriteOptions& options);

}  // namespace gputriage::corefile
