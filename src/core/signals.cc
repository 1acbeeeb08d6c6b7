#include "core/signals.h"

#include <signal.h>

#include <array>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace gputriage::core {
namespace {

struct NamedSignal {
  int number;
  const char* name;
};

constexpr std::array kSignals = {
    NamedSignal{SIGHUP, "SIGHUP"},       NamedSignal{SIGINT, "SIGINT"},       NamedSignal{SIGQUIT, "SIGQUIT"},
    NamedSignal{SIGILL, "SIGILL"},       NamedSignal{SIGTRAP, "SIGTRAP"},     NamedSignal{SIGABRT, "SIGABRT"},
    NamedSignal{SIGBUS, "SIGBUS"},       NamedSignal{SIGFPE, "SIGFPE"},       NamedSignal{SIGKILL, "SIGKILL"},
    NamedSignal{SIGUSR1, "SIGUSR1"},     NamedSignal{SIGSEGV, "SIGSEGV"},     NamedSignal{SIGUSR2, "SIGUSR2"},
    NamedSignal{SIGPIPE, "SIGPIPE"},     NamedSignal{SIGALRM, "SIGALRM"},     NamedSignal{SIGTERM, "SIGTERM"},
    NamedSignal{SIGSTKFLT, "SIGSTKFLT"}, NamedSignal{SIGCHLD, "SIGCHLD"},     NamedSignal{SIGCONT, "SIGCONT"},
    NamedSignal{SIGSTOP, "SIGSTOP"},     NamedSignal{SIGTSTP, "SIGTSTP"},     NamedSignal{SIGTTIN, "SIGTTIN"},
    NamedSignal{SIGTTOU, "SIGTTOU"},     NamedSignal{SIGURG, "SIGURG"},       NamedSignal{SIGXCPU, "SIGXCPU"},
    NamedSignal{SIGXFSZ, "SIGXFSZ"},     NamedSignal{SIGVTALRM, "SIGVTALRM"}, NamedSignal{SIGPROF, "SIGPROF"},
    NamedSignal{SIGWINCH, "SIGWINCH"},   NamedSignal{SIGIO, "SIGIO"},         NamedSignal{SIGPWR, "SIGPWR"},
    NamedSignal{SIGSYS, "SIGSYS"},
};

struct CodeInfo {
  int code;
  const char* name;
  const char* meaning;
};

// Per-signal codes from <asm-generic/siginfo.h>, meanings as sigaction(2) words them.
constexpr std::array kSegvCodes = {
    CodeInfo{SEGV_MAPERR, "SEGV_MAPERR", "address not mapped to object"},
    CodeInfo{SEGV_ACCERR, "SEGV_ACCERR", "invalid permissions for mapped object"},
    CodeInfo{3, "SEGV_BNDERR", "failed address bound checks"},
    CodeInfo{4, "SEGV_PKUERR", "access denied by memory-protection keys"},
    CodeInfo{5, "SEGV_ACCADI", "ADI not enabled for mapped object"},
    CodeInfo{6, "SEGV_ADIDERR", "disrupting MCD error"},
    CodeInfo{7, "SEGV_ADIPERR", "precise MCD exception"},
    CodeInfo{8, "SEGV_MTEAERR", "asynchronous ARM MTE error"},
    CodeInfo{9, "SEGV_MTESERR", "synchronous ARM MTE exception"},
    CodeInfo{10, "SEGV_CPERR", "control protection fault (shadow stack)"},
};
constexpr std::array kBusCodes = {
    CodeInfo{BUS_ADRALN, "BUS_ADRALN", "invalid address alignment"},
    CodeInfo{BUS_ADRERR, "BUS_ADRERR", "nonexistent physical address"},
    CodeInfo{BUS_OBJERR, "BUS_OBJERR", "object-specific hardware error"},
    CodeInfo{4, "BUS_MCEERR_AR", "hardware memory error consumed on a machine check: action required"},
    CodeInfo{5, "BUS_MCEERR_AO", "hardware memory error detected in process but not consumed: action optional"},
};
constexpr std::array kIllCodes = {
    CodeInfo{ILL_ILLOPC, "ILL_ILLOPC", "illegal opcode"},
    CodeInfo{ILL_ILLOPN, "ILL_ILLOPN", "illegal operand"},
    CodeInfo{ILL_ILLADR, "ILL_ILLADR", "illegal addressing mode"},
    CodeInfo{ILL_ILLTRP, "ILL_ILLTRP", "illegal trap"},
    CodeInfo{ILL_PRVOPC, "ILL_PRVOPC", "privileged opcode"},
    CodeInfo{ILL_PRVREG, "ILL_PRVREG", "privileged register"},
    CodeInfo{ILL_COPROC, "ILL_COPROC", "coprocessor error"},
    CodeInfo{ILL_BADSTK, "ILL_BADSTK", "internal stack error"},
    CodeInfo{9, "ILL_BADIADDR", "unimplemented instruction address"},
};
constexpr std::array kFpeCodes = {
    CodeInfo{FPE_INTDIV, "FPE_INTDIV", "integer divide by zero"},
    CodeInfo{FPE_INTOVF, "FPE_INTOVF", "integer overflow"},
    CodeInfo{FPE_FLTDIV, "FPE_FLTDIV", "floating-point divide by zero"},
    CodeInfo{FPE_FLTOVF, "FPE_FLTOVF", "floating-point overflow"},
    CodeInfo{FPE_FLTUND, "FPE_FLTUND", "floating-point underflow"},
    CodeInfo{FPE_FLTRES, "FPE_FLTRES", "floating-point inexact result"},
    CodeInfo{FPE_FLTINV, "FPE_FLTINV", "floating-point invalid operation"},
    CodeInfo{FPE_FLTSUB, "FPE_FLTSUB", "subscript out of range"},
    CodeInfo{9, "FPE_FLTUNK", "undiagnosed floating-point exception"},
    CodeInfo{10, "FPE_CONDTRAP", "trap on condition"},
};
constexpr std::array kTrapCodes = {
    CodeInfo{TRAP_BRKPT, "TRAP_BRKPT", "process breakpoint"},
    CodeInfo{TRAP_TRACE, "TRAP_TRACE", "process trace trap"},
    CodeInfo{3, "TRAP_BRANCH", "process taken branch trap"},
    CodeInfo{4, "TRAP_HWBKPT", "hardware breakpoint or watchpoint"},
    CodeInfo{5, "TRAP_UNK", "undiagnosed trap"},
    CodeInfo{6, "TRAP_PERF", "perf event with sigtrap=1"},
};
constexpr std::array kSysCodes = {
    CodeInfo{1, "SYS_SECCOMP", "seccomp triggered: a system call the filter forbids"},
    CodeInfo{2, "SYS_USER_DISPATCH", "syscall user dispatch triggered"},
};
// Codes shared by every signal (<= 0 and SI_KERNEL): who sent it.
constexpr std::array kGenericCodes = {
    CodeInfo{SI_USER, "SI_USER", "sent by kill() from a process"},
    CodeInfo{SI_KERNEL, "SI_KERNEL", "sent by the kernel"},
    CodeInfo{SI_QUEUE, "SI_QUEUE", "sent by sigqueue()"},
    CodeInfo{SI_TIMER, "SI_TIMER", "POSIX timer expired"},
    CodeInfo{SI_MESGQ, "SI_MESGQ", "POSIX message queue state changed"},
    CodeInfo{SI_ASYNCIO, "SI_ASYNCIO", "asynchronous I/O completed"},
    CodeInfo{SI_SIGIO, "SI_SIGIO", "queued SIGIO"},
    CodeInfo{SI_TKILL, "SI_TKILL", "sent by tkill()/tgkill() from a thread (raise(), abort())"},
};

template <size_t N>
const CodeInfo* Find(const std::array<CodeInfo, N>& table, int code) {
  for (const CodeInfo& info : table) {
    if (info.code == code) return &info;
  }
  return nullptr;
}

const CodeInfo* Lookup(int signal, int si_code) {
  if (const CodeInfo* generic = Find(kGenericCodes, si_code)) return generic;
  if (si_code <= 0) return nullptr;
  switch (signal) {
    case SIGSEGV:
      return Find(kSegvCodes, si_code);
    case SIGBUS:
      return Find(kBusCodes, si_code);
    case SIGILL:
      return Find(kIllCodes, si_code);
    case SIGFPE:
      return Find(kFpeCodes, si_code);
    case SIGTRAP:
      return Find(kTrapCodes, si_code);
    case SIGSYS:
      return Find(kSysCodes, si_code);
    default:
      return nullptr;
  }
}

}  // namespace

std::string SignalName(int signal) {
  for (const NamedSignal& s : kSignals) {
    if (s.number == signal) return s.name;
  }
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) {
    return signal == SIGRTMIN ? "SIGRTMIN" : fmt::format("SIGRTMIN+{}", signal - SIGRTMIN);
  }
  return fmt::format("SIG{}", signal);
}

std::optional<int> SignalNumber(std::string_view name) {
  int number = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), number);
  if (ec == std::errc() && end == name.data() + name.size()) {
    if (number > 0 && number <= 64) return number;
    return std::nullopt;
  }
  std::string upper;
  for (char c : name) upper.push_back(static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c));
  if (upper.rfind("SIG", 0) != 0) upper = "SIG" + upper;
  for (const NamedSignal& s : kSignals) {
    if (upper == s.name) return s.number;
  }
  return std::nullopt;
}

bool IsCrashSignal(int signal) {
  switch (signal) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGABRT:
    case SIGTRAP:
    case SIGSYS:
      return true;
    default:
      return false;
  }
}

std::string SiCodeName(int signal, int si_code) {
  if (const CodeInfo* info = Lookup(signal, si_code)) return info->name;
  return std::to_string(si_code);
}

std::string SiCodeMeaning(int signal, int si_code) {
  if (const CodeInfo* info = Lookup(signal, si_code)) return info->meaning;
  return {};
}

bool HasFaultAddress(int signal, int si_code) {
  if (si_code <= 0 || si_code == SI_KERNEL) {
    // SI_KERNEL SIGSEGV on x86 is a general-protection fault (non-canonical address): the
    // kernel reports si_addr 0 then, which is no address at all.
    return false;
  }
  switch (signal) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGTRAP:
      return true;
    default:
      return false;
  }
}

bool IsSentByProcess(int si_code) { return si_code == SI_USER || si_code == SI_TKILL || si_code == SI_QUEUE; }

}  // namespace gputriage::core
