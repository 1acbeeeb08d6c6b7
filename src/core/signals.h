// Names and meanings of signals and their si_code values (signal(7), sigaction(2)), the words
// a crash report uses: "SIGSEGV", "SEGV_MAPERR: address not mapped to object".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gputriage::core {

/// "SIGSEGV" for 11; "SIG42" for a number without a name (real-time signals: "SIGRTMIN+3").
std::string SignalName(int signal);

/// The number for a name: "SIGSEGV", "SEGV" and "11" all give 11; nullopt when unknown.
std::optional<int> SignalNumber(std::string_view name);

/// True for the signals whose default action dumps core and that mean the program itself
/// faulted or gave up: SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS (and SIGQUIT,
/// SIGXCPU, SIGXFSZ are not: they come from outside or from limits).
bool IsCrashSignal(int signal);

/// The symbolic si_code for `signal` ("SEGV_MAPERR", "BUS_ADRERR", "ILL_ILLOPC", "SI_USER",
/// "SI_TKILL", "SI_KERNEL"); "<code>" as decimal when unknown.
std::string SiCodeName(int signal, int si_code);

/// What the si_code says, one phrase: "address not mapped to object". Empty when unknown.
std::string SiCodeMeaning(int signal, int si_code);

/// True when si_addr carries a fault address for this signal and code (the kernel raised it
/// for a faulting access or instruction, not a process with kill/tgkill).
bool HasFaultAddress(int signal, int si_code);

/// True when the code says another process (or the thread itself) sent the signal with kill,
/// tkill, tgkill or sigqueue: si_pid is meaningful.
bool IsSentByProcess(int si_code);

}  // namespace gputriage::core
