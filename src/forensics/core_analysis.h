// `gputriage analyze CORE`: the same process report as a live capture, from an ELF core file
// (the kernel's, or one `gputriage run --core` wrote).
#pragma once

#include <string>

#include "core/process.h"
#include "core/result.h"
#include "forensics/unwind.h"

namespace gputriage::forensics {

/// Reads `core_path` into a process report: signal, si_code and fault address (NT_SIGINFO),
/// every thread's registers (NT_PRSTATUS) and symbolised stack (libdwfl over the core), the
/// disassembly at the crashed thread's PC, the file mappings (NT_FILE) and where the fault
/// address falls, and the classification.
///
/// `executable` (--exe; "" for none) replaces the executable the core names (the file NT_FILE
/// maps at AT_PHDR) for symbols and for the code and data not in the core: a moved or rebuilt
/// path, another mount in a container. It must be a regular ELF file of type ET_EXEC or ET_DYN
/// (only its 64-byte header is read to check): a directory, a device, a FIFO or any other file
/// fails, naming it ("--exe PATH: is a directory").
///
/// Fails with a message naming the file when it is not a readable ELF core (notes truncated,
/// corrupt, not a core). A core cut short in its memory segments is read: `core_truncated` and a
/// `not_collected` line say how much is missing. Parts that cannot be rebuilt (unwinding
/// refused, memory not in the core) are listed in `not_collected`; damaged notes too. When the
/// code at the PC is neither in the core nor in a readable mapped file, the disassembly's note
/// says which file is missing (and to give --exe for the executable).
core::Result<core::ProcessReport> AnalyzeCore(const std::string& core_path, const std::string& executable,
                                              const UnwindLimits& limits = {});

}  // namespace gputriage::forensics
