#include "core/subprocess.h"

#include <signal.h>

#include <fstream>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TEST(SubprocessTest, CapturesOutputAndExitStatus) {
  RunOptions options;
  auto outcome = RunWithTimeout({"sh", "-c", "echo out; echo err >&2; exit 3"}, options);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->timed_out);
  EXPECT_EQ(outcome->exit_code, 3);
  EXPECT_EQ(outcome->stdout_data, "out\n");
  EXPECT_EQ(outcome->stderr_tail, "err\n");
  EXPECT_EQ(DescribeOutcome(*outcome, options), "exited with status 3");
}

TEST(SubprocessTest, AHungChildIsKilledAtTheDeadline) {
  RunOptions options;
  options.timeout = std::chrono::milliseconds(300);
  auto outcome = RunWithTimeout({"sleep", "30"}, options);
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_EQ(outcome->term_signal, SIGKILL);
  EXPECT_FALSE(outcome->abandoned);
  EXPECT_LT(outcome->elapsed_s, 15.0);  // far from the 30 s of a child left running, on any load
  EXPECT_EQ(DescribeOutcome(*outcome, options), "did not answer within 0.3 s");
}

TEST(SubprocessTest, GrandchildrenDieWithTheGroup) {
  RunOptions options;
  options.timeout = std::chrono::milliseconds(300);
  // The shell exits at once but its background child keeps stdout open.
  auto outcome = RunWithTimeout({"sh", "-c", "sleep 30 & echo $!"}, options);
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->timed_out);
  pid_t grandchild = std::stoi(outcome->stdout_data);
  usleep(100000);
  // Gone, or a zombie waiting for its new parent to reap it: either way no longer running.
  std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
  std::string pid, comm, state;
  if (stat >> pid >> comm >> state) {
    EXPECT_EQ(state, "Z") << "grandchild " << grandchild << " survived";
  }
}

TEST(SubprocessTest, CrashIsReportedWithTheSignal) {
  RunOptions options;
  auto outcome = RunWithTimeout({"sh", "-c", "kill -SEGV $$"}, options);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->term_signal, SIGSEGV);
  EXPECT_EQ(DescribeOutcome(*outcome, options), "was killed by SIGSEGV");
}

TEST(SubprocessTest, MissingProgramIsAnErrorNamingIt) {
  auto outcome = RunWithTimeout({"/nonexistent/gputriage-helper"}, RunOptions{});
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error().message, "/nonexistent/gputriage-helper: cannot start: No such file or directory");
}

TEST(SubprocessTest, OutputIsBounded) {
  RunOptions options;
  options.max_stdout_bytes = 1000;
  auto outcome = RunWithTimeout({"sh", "-c", "head -c 100000 /dev/zero"}, options);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->stdout_data.size(), 1000u);
  EXPECT_EQ(outcome->stdout_dropped_bytes, 99000u);
}

TEST(SubprocessTest, StdinIsPassed) {
  RunOptions options;
  options.stdin_data = "hello";
  auto outcome = RunWithTimeout({"cat"}, options);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->stdout_data, "hello");
}

}  // namespace
}  // namespace gputriage::core
