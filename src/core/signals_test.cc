#include "core/signals.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TEST(Siginfo, NamesSignals) {
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGBUS), "SIGBUS");
  EXPECT_EQ(SignalName(SIGRTMIN + 3), "SIGRTMIN+3");
  EXPECT_EQ(SignalName(99), "SIG99");
  EXPECT_EQ(SignalNumber("SIGSEGV"), SIGSEGV);
  EXPECT_EQ(SignalNumber("segv"), SIGSEGV);
  EXPECT_EQ(SignalNumber("9"), SIGKILL);
  EXPECT_EQ(SignalNumber("SIGNOPE"), std::nullopt);
  EXPECT_EQ(SignalNumber("0"), std::nullopt);
}

TEST(Siginfo, CodesDependOnTheSignal) {
  EXPECT_EQ(SiCodeName(SIGSEGV, SEGV_MAPERR), "SEGV_MAPERR");
  EXPECT_EQ(SiCodeMeaning(SIGSEGV, SEGV_MAPERR), "address not mapped to object");
  EXPECT_EQ(SiCodeName(SIGSEGV, SEGV_ACCERR), "SEGV_ACCERR");
  EXPECT_EQ(SiCodeName(SIGBUS, BUS_ADRALN), "BUS_ADRALN");
  EXPECT_EQ(SiCodeName(SIGBUS, BUS_ADRERR), "BUS_ADRERR");
  EXPECT_EQ(SiCodeName(SIGBUS, BUS_OBJERR), "BUS_OBJERR");
  EXPECT_EQ(SiCodeName(SIGILL, ILL_ILLOPC), "ILL_ILLOPC");
  EXPECT_EQ(SiCodeName(SIGFPE, FPE_INTDIV), "FPE_INTDIV");
  EXPECT_EQ(SiCodeName(SIGTRAP, TRAP_BRKPT), "TRAP_BRKPT");
  // 1 means different things for different signals.
  EXPECT_EQ(SiCodeName(SIGILL, 1), "ILL_ILLOPC");
  EXPECT_EQ(SiCodeName(SIGFPE, 1), "FPE_INTDIV");
  // Codes of signals sent by processes are shared.
  EXPECT_EQ(SiCodeName(SIGABRT, SI_TKILL), "SI_TKILL");
  EXPECT_EQ(SiCodeName(SIGSEGV, SI_USER), "SI_USER");
  EXPECT_EQ(SiCodeName(SIGSEGV, SI_KERNEL), "SI_KERNEL");
  EXPECT_EQ(SiCodeName(SIGSEGV, 77), "77");
  EXPECT_EQ(SiCodeMeaning(SIGSEGV, 77), "");
}

TEST(Siginfo, FaultAddressOnlyForKernelRaisedFaults) {
  EXPECT_TRUE(HasFaultAddress(SIGSEGV, SEGV_MAPERR));
  EXPECT_TRUE(HasFaultAddress(SIGBUS, BUS_ADRERR));
  EXPECT_FALSE(HasFaultAddress(SIGSEGV, SI_USER));
  EXPECT_FALSE(HasFaultAddress(SIGSEGV, SI_KERNEL));  // x86 #GP: si_addr is 0, not an address
  EXPECT_FALSE(HasFaultAddress(SIGABRT, SI_TKILL));
  EXPECT_TRUE(IsSentByProcess(SI_TKILL));
  EXPECT_FALSE(IsSentByProcess(SEGV_MAPERR));
  EXPECT_TRUE(IsCrashSignal(SIGABRT));
  EXPECT_FALSE(IsCrashSignal(SIGKILL));
  EXPECT_FALSE(IsCrashSignal(SIGTERM));
}

}  // namespace
}  // namespace gputriage::core
