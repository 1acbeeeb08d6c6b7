// The ROCm debug agent's report (librocm-debug-agent.so.2, loaded by the ROCm runtime through
// HSA_TOOLS_LIB; earlier librocr_debug_agent64.so), read into the escalation's typed errors: the
// event (a queue error with the wave's stop reason, a memory fault with the faulting page or
// address), the waves found, and — from the disassembly of the stopped wave — the kernel, its
// source file:line and the faulting instruction's offset. Formats: the v2 agent's ("Queue error
// (...)", "wave_1: pc=... (stopped, reason: ...)", "System event (...)", "Faulting page: ...",
// "Disassembly for function ...:", the "=>" line) and the 2018–2020 agent's
// ("[rocr debug agent]:", "Memory access fault at GPU Node: N", "Address: 0x...xxx (...)",
// "N wavefront(s) found ... @PC: 0x..."). Other lines, the job's own output among them, are skipped.
#pragma once

#include <string_view>

#include "forensics/sanitizer_report.h"

namespace gputriage::forensics {

/// One error per event in `text` (normally one: the agent stops the process); none when `text`
/// has no line of the agent's.
SanitizerReport ParseDebugAgentReport(std::string_view text);

}  // namespace gputriage::forensics
