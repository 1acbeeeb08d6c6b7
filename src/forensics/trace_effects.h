// Side effects of `run` tracing the job with ptrace, noticed when they happen and named with the
// way around them (`--no-trace`): a set-user-ID/set-group-ID or file-capability program exec'd
// under ptrace runs without its privilege, and a tool inside the job that needs ptrace itself
// (LeakSanitizer's exit-time check, strace, gdb) fails because a process has only one tracer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputriage::forensics {

struct TraceEffect {
  std::string kind;      ///< "privilege-dropped", "lsan-under-ptrace", "tracer-in-job"
  int pid = 0;           ///< the process it happened to; 0 when only its output says so
  std::string note;      ///< one sentence for the user, naming the fix
  std::string evidence;  ///< the executable and its mode, or the output line, verbatim
};

/// True when this process has CAP_SYS_PTRACE in effect (CapEff in /proc/self/status): the kernel
/// then grants set-user-ID and file capabilities to a program it traces.
bool TracerHasCapSysPtrace();

/// The effect of tracing on the program `pid` has just exec'd: set-user-ID or set-group-ID to
/// someone it does not run as, or file capabilities (security.capability) while not root.
/// nullopt when the program has no such privilege, when `tracer_capable` (the kernel grants it
/// anyway), or when /proc/PID/exe cannot be read (the process is gone).
std::optional<TraceEffect> PrivilegeLostUnderTrace(int pid, bool tracer_capable);

/// Reads the job's output as it streams and recognises the messages of tools that cannot work
/// under a tracer: LeakSanitizer ("LeakSanitizer has encountered a fatal error", "HINT:
/// LeakSanitizer does not work under ptrace", compiler-rt lsan_common.cpp), strace
/// ("ptrace(PTRACE_TRACEME, ...): Operation not permitted", "attach: ptrace(PTRACE_SEIZE, N):
/// Operation not permitted") and gdb ("ptrace: Operation not permitted."). Each kind is reported
/// once. Lines are split across chunks; a line is looked at up to its first 4 KiB.
class OutputEffectScanner {
 public:
  /// Feeds the next bytes of one stream (`stream` 0 for stdout, 1 for stderr).
  void Feed(int stream, std::string_view bytes);
  /// Looks at the unfinished last lines and returns every effect found, in order.
  std::vector<TraceEffect> Finish();

 private:
  void Line(std::string_view line);
  std::string partial_[2];
  std::vector<TraceEffect> found_;
};

/// The notes for stderr: "gputriage: note: <note>\n" each (the evidence follows on the next line
/// when it is not already in the note). Empty for no effects.
std::string TraceEffectsText(const std::vector<TraceEffect>& effects);

}  // namespace gputriage::forensics
