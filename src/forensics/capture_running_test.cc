#include "forensics/capture_running.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "forensics/process_tree.h"

namespace gputriage::forensics {

// Where the child waits; outside the anonymous namespace and noinline so its stack names it.
__attribute__((noinline)) int CaptureTestWaitForByte(int fd) {
  char byte = 0;
  while (read(fd, &byte, 1) < 0 && errno == EINTR) {
  }
  return byte;
}

namespace {

// A forked child blocked in CaptureTestWaitForByte; it exits with the byte it is sent.
class WaitingChild {
 public:
  WaitingChild() {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[1]);
      _exit(CaptureTestWaitForByte(fds[0]));
    }
    close(fds[0]);
    write_fd_ = fds[1];
    // Until it sits in read(): state S.
    for (int i = 0; i < 1000; ++i) {
      std::optional<ProcStat> stat = ReadProcStat(pid_);
      if (stat && stat->state == 'S') break;
      usleep(1000);
    }
  }
  ~WaitingChild() {
    if (write_fd_ >= 0) close(write_fd_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int pid() const { return pid_; }
  // Sends `byte` and returns the child's exit status (-1 when it did not exit normally).
  int Finish(char byte) {
    if (write(write_fd_, &byte, 1) != 1) return -1;
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  int pid_ = -1;
  int write_fd_ = -1;
  bool reaped_ = false;
};

class CaptureRunningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gt_capture_running_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    request_.bundle_dir = dir_;
    request_.kmsg_path = "";
    request_.tool_version = "test";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  CaptureRunningRequest request_;
};

TEST_F(CaptureRunningTest, CapturesTheStackAndLetsTheProcessGoOn) {
  WaitingChild child;
  ASSERT_GT(child.pid(), 0);
  request_.pid = child.pid();
  auto outcome = CaptureRunning(request_);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_EQ(outcome->pid, child.pid());
  EXPECT_FALSE(outcome->pid_was_thread);
  EXPECT_EQ(outcome->capture.threads_stopped, 1u);
  EXPECT_EQ(outcome->capture.exited_during_capture, false);
  EXPECT_EQ(outcome->capture.detached, true);
  EXPECT_TRUE(outcome->detach_problems.empty());
  EXPECT_TRUE(outcome->bundle_error.empty()) << outcome->bundle_error;
  EXPECT_TRUE(std::filesystem::exists(outcome->bundle + "/process.json"));
  const core::ProcessReport* p = outcome->run.primary();
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->threads.size(), 1u);
  bool named = false;
  for (const core::Frame& f : p->threads[0].frames)
    named = named || f.function == "gputriage::forensics::CaptureTestWaitForByte(int)";
  EXPECT_TRUE(named) << "no frame names the function the child waits in";
  ASSERT_TRUE(outcome->run.classification);
  EXPECT_EQ(outcome->run.classification->kind, "captured-running");
  EXPECT_EQ(outcome->run.classification->category, core::Category::kHangTimeout);
  // Let go: not stopped, and it acts on what it is sent.
  std::optional<ProcStat> stat = ReadProcStat(child.pid());
  ASSERT_TRUE(stat);
  EXPECT_NE(stat->state, 't');
  EXPECT_NE(stat->state, 'T');
  EXPECT_EQ(child.Finish(7), 7);
}

TEST_F(CaptureRunningTest, RefusesItselfAndNamesAMissingProcess) {
  request_.pid = getpid();
  auto self = CaptureRunning(request_);
  ASSERT_FALSE(self.ok());
  EXPECT_EQ(self.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(self.error().message,
            fmt::format("pid {} is gputriage itself: a process cannot capture its own threads", getpid()));

  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  request_.pid = gone;
  auto missing = CaptureRunning(request_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, core::ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().message, fmt::format("pid {}: no such process (/proc/{} does not exist)", gone, gone));
}

TEST_F(CaptureRunningTest, AZombieIsNotCaptured) {
  pid_t zombie = fork();
  if (zombie == 0) _exit(0);
  for (int i = 0; i < 1000; ++i) {
    std::optional<ProcStat> stat = ReadProcStat(zombie);
    if (stat && stat->state == 'Z') break;
    usleep(1000);
  }
  request_.pid = zombie;
  auto outcome = CaptureRunning(request_);
  waitpid(zombie, nullptr, 0);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error().code, core::ErrorCode::kNotFound);
  EXPECT_NE(outcome.error().message.find(fmt::format("pid {} (", zombie)), std::string::npos);
  EXPECT_NE(outcome.error().message.find("is a zombie"), std::string::npos) << outcome.error().message;
}

TEST_F(CaptureRunningTest, AnotherTracerIsNamed) {
  WaitingChild child;
  ASSERT_EQ(ptrace(PTRACE_SEIZE, child.pid(), nullptr, nullptr), 0) << std::strerror(errno);
  request_.pid = child.pid();
  auto outcome = CaptureRunning(request_);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error().code, core::ErrorCode::kPermissionDenied);
  std::optional<ProcStat> self = ReadProcStat(getpid());
  ASSERT_TRUE(self);
  EXPECT_NE(outcome.error().message.find(fmt::format("it is already traced by pid {} ({})", getpid(), self->comm)),
            std::string::npos)
      << outcome.error().message;
  EXPECT_TRUE(PtraceRefusalReason(child.pid(), EPERM).find(fmt::format("pid {}", getpid())) != std::string::npos);
}

}  // namespace
}  // namespace gputriage::forensics
