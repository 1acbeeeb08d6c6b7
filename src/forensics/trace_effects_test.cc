#include "forensics/trace_effects.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace gputriage::forensics {
namespace {

// Real output, captured on Debian 12: clang 14 -fsanitize=leak under `strace -o /dev/null`, and
// strace 6.1 run under another tracer.
constexpr const char* kLsan =
    "==9904==LeakSanitizer has encountered a fatal error.\n"
    "==9904==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1\n"
    "==9904==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)\n";
constexpr const char* kStrace =
    "strace: test_ptrace_get_syscall_info: PTRACE_TRACEME: Operation not permitted\n"
    "strace: ptrace(PTRACE_TRACEME, ...): Operation not permitted\n";

TEST(TraceEffects, RecognisesLeakSanitizerAndStraceOnceEachEvenSplitAcrossReads) {
  OutputEffectScanner scanner;
  std::string lsan = kLsan;
  // One byte at a time: every line is split across reads.
  for (char c : lsan) scanner.Feed(1, std::string_view(&c, 1));
  scanner.Feed(0, "ordinary output\n");
  scanner.Feed(1, kStrace);
  std::vector<TraceEffect> found = scanner.Finish();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].kind, "lsan-under-ptrace");
  EXPECT_EQ(found[0].evidence, "==9904==LeakSanitizer has encountered a fatal error.");
  EXPECT_NE(found[0].note.find("--no-trace"), std::string::npos);
  EXPECT_EQ(found[1].kind, "tracer-in-job");
  EXPECT_EQ(found[1].evidence, "strace: test_ptrace_get_syscall_info: PTRACE_TRACEME: Operation not permitted");
  EXPECT_NE(found[1].note.find("--no-trace"), std::string::npos);
}

TEST(TraceEffects, GdbAttachAndAnUnfinishedLastLine) {
  OutputEffectScanner scanner;
  scanner.Feed(0, "warning: Could not trace the inferior process.\nwarning: ptrace: Operation not permitted");
  std::vector<TraceEffect> found = scanner.Finish();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].evidence, "warning: ptrace: Operation not permitted");
}

TEST(TraceEffects, OtherPermissionErrorsAreNotTracing) {
  OutputEffectScanner scanner;
  scanner.Feed(1, "mkdir: cannot create directory '/x': Operation not permitted\n");
  scanner.Feed(1, "LeakSanitizer: detected memory leaks\n");
  EXPECT_TRUE(scanner.Finish().empty());
}

TEST(TraceEffects, AnOrdinaryProgramLosesNoPrivilege) {
  // This test binary is not set-user-ID; with or without CAP_SYS_PTRACE nothing is lost.
  EXPECT_FALSE(PrivilegeLostUnderTrace(getpid(), false));
  EXPECT_FALSE(PrivilegeLostUnderTrace(getpid(), true));
  EXPECT_FALSE(PrivilegeLostUnderTrace(999999999, false));  // no such process
}

TEST(TraceEffects, TextNamesEachNoteAndItsEvidence) {
  EXPECT_EQ(TraceEffectsText({}), "");
  EXPECT_EQ(TraceEffectsText({{"tracer-in-job", 0, "a note", "a line"}}), "gputriage: note: a note\n  (a line)\n");
}

}  // namespace
}  // namespace gputriage::forensics
