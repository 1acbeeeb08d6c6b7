// `gputriage analyze CORE`: the same process report as a live capture, from an ELF core file
// (the kernel's, or one `gputriage run --core` wrote).
#pragma once

#include <string>

#include "core/process.h"
#include "core/result.h"
#include "forensics/unwind.h"

namespace gputriage::forensics {

/// Reads `core_path` into a process report: signal, si_code and fault address (NT_SIGINFO),
/// every thread's registers (NT_PRSTATUS) and symbolised stack (libdwfl over the core, with
/// `executable` or the path the core names), the disassembly at the crashed thread's PC, the
/// file mappings (NT_FILE) and where the fault address falls, and the classification. Fails
/// with a message naming the file when it is not a readable ELF core (truncated, corrupt, not
/// a core). Parts that cannot be rebuilt (unwinding refused, memory not in the core) are
/// listed in `not_collected`; damaged notes too.
core::Result<core::ProcessReport> AnalyzeCore(const std::string& core_path, const std::string& executable,
                                              const UnwindLimits& limits = {});

}  // namespace gputriage::forensics
