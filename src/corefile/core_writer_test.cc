#include "corefile/core_writer.h"

#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "corefile/core_memory.h"
#include "corefile/core_notes.h"
#include "corefile/crash_child_testing.h"

namespace gputriage::corefile {
namespace {

using testing::CrashInChild;
using testing::Markers;
using testing::SelfExe;
using testing::TempDir;

// A traced child stopped at the delivery of its SIGSEGV, all of its threads in ptrace-stop:
// what the `run --core` supervisor sees. Killed and reaped on destruction.
class StoppedCrash {
 public:
  explicit StoppedCrash(int extra_threads) {
    int fds[2];
    if (pipe(fds) != 0) {
      error_ = "pipe failed";
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      CrashInChild(dir_.path(), extra_threads, /*traceme=*/true, fds[1]);
    }
    close(fds[1]);
    RunToTheSignal();
    Markers markers;
    if (error_.empty() && read(fds[0], &markers, sizeof(markers)) == sizeof(markers)) {
      markers_ = markers;
    }
    close(fds[0]);
  }
  ~StoppedCrash() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    // The leader's death is reported only after every traced thread's: reap them all.
    for (;;) {
      int status = 0;
      int waited = waitpid(-1, &status, __WALL);
      if (waited < 0 && errno == EINTR) continue;
      if (waited < 0) break;
      if (waited == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) break;
    }
  }

  const std::string& error() const { return error_; }
  int pid() const { return pid_; }
  /// The crashed thread first.
  std::vector<int> tids() const {
    std::vector<int> tids = {crashed_};
    for (int tid : threads_) {
      if (tid != crashed_) tids.push_back(tid);
    }
    return tids;
  }
  const siginfo_t& info() const { return info_; }
  const Markers& markers() const { return markers_; }
  const std::string& dir() const { return dir_.path(); }

 private:
  void RunToTheSignal() {
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_ || !WIFSTOPPED(status)) {
      error_ = "the child did not stop";
      return;
    }
    threads_.insert(pid_);
    ptrace(PTRACE_SETOPTIONS, pid_, nullptr, PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL);
    ptrace(PTRACE_CONT, pid_, nullptr, nullptr);
    for (;;) {
      int tid = waitpid(-1, &status, __WALL);
      if (tid < 0 || !WIFSTOPPED(status)) {
        error_ = "the child ended before its SIGSEGV (status " + std::to_string(status) + ")";
        return;
      }
      threads_.insert(tid);
      int signal = WSTOPSIG(status);
      if (signal == SIGSEGV) {
        crashed_ = tid;
        break;
      }
      // Clone events and the new threads' initial SIGSTOP are not delivered.
      bool deliver = signal != SIGSTOP && signal != SIGTRAP;
      ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(deliver ? signal : 0));
    }
    // Stop the other threads, as the supervisor does, and wait for each stop.
    for (int tid : threads_) {
      if (tid == crashed_) continue;
      syscall(SYS_tgkill, pid_, tid, SIGSTOP);
      while (waitpid(tid, &status, __WALL) == tid && WIFSTOPPED(status) && WSTOPSIG(status) != SIGSTOP) {
        ptrace(PTRACE_CONT, tid, nullptr, nullptr);
      }
    }
    ptrace(PTRACE_GETSIGINFO, crashed_, nullptr, &info_);
  }

  TempDir dir_;
  int pid_ = -1;
  int crashed_ = -1;
  std::set<int> threads_;
  siginfo_t info_{};
  Markers markers_;
  std::string error_;
};

std::optional<uint64_t> Reg(const CoreThread& thread, const std::string& name) {
  for (const auto& reg : thread.registers) {
    if (reg.name == name) return reg.value;
  }
  return std::nullopt;
}

uint64_t ReadU64(const CoreMemory& memory, uint64_t address) {
  auto bytes = memory.Read(address, 8);
  if (!bytes || bytes->size() != 8) return 0;
  uint64_t value;
  std::memcpy(&value, bytes->data(), 8);
  return value;
}

TEST(CorefileWriterTest, WritesACoreThatWeAndLibdwflRead) {
  StoppedCrash crash(2);
  ASSERT_EQ(crash.error(), "");
  ASSERT_EQ(crash.tids().size(), 3u);
  std::string path = crash.dir() + "/written.core";
  CoreWriteOptions options;
  options.size_cap_bytes = 1ull << 30;  // an ASan child maps much; the test needs little
  auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, options);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_GT(stats->segments, 5u);
  EXPECT_EQ(stats->bytes_written, std::filesystem::file_size(path));
  EXPECT_NE(std::find(stats->skipped.begin(), stats->skipped.end(), "[vvar]"), stats->skipped.end());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary file left beside it.
  size_t entries = std::distance(std::filesystem::directory_iterator(crash.dir()), {});
  EXPECT_EQ(entries, 1u);

  auto notes = ReadCoreNotesFile(path);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_TRUE(notes->warnings.empty()) << notes->warnings.front();
  EXPECT_EQ(notes->machine, "x86_64");
  EXPECT_EQ(notes->signal, SIGSEGV);
  EXPECT_EQ(notes->si_code, SEGV_MAPERR);
  EXPECT_EQ(notes->fault_address, 0u);
  EXPECT_EQ(notes->pid, crash.pid());
  ASSERT_EQ(notes->threads.size(), 3u);
  EXPECT_EQ(notes->threads[0].tid, crash.tids()[0]);
  EXPECT_EQ(notes->threads[0].signal, SIGSEGV);
  EXPECT_EQ(notes->threads[1].signal, std::nullopt);
  ASSERT_TRUE(notes->args.has_value());
  EXPECT_NE(notes->args->find("gt_corefile_test"), std::string::npos);
  uint64_t rip = Reg(notes->threads[0], "rip").value_or(0);
  auto crash_function = reinterpret_cast<uint64_t>(&gt_corefile_test_crash);
  EXPECT_GE(rip, crash_function);
  EXPECT_LT(rip, crash_function + 64);
  bool lists_binary = std::any_of(notes->files.begin(), notes->files.end(),
                                  [&](const auto& f) { return f.path == SelfExe() && rip >= f.start && rip < f.end; });
  EXPECT_TRUE(lists_binary);
  EXPECT_FALSE(notes->auxv.empty());

  auto memory = CoreMemory::OpenFile(path, *notes);
  ASSERT_TRUE(memory.ok()) << memory.error().message;
  EXPECT_EQ(ReadU64(*memory, crash.markers().stack_address), testing::kMarkerValue);
  EXPECT_EQ(ReadU64(*memory, crash.markers().heap_address), testing::kMarkerValue);
  auto code = memory->Read(rip, 16);  // text is not dumped: read from the binary
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(code->size(), 16u);
  EXPECT_EQ(std::memcmp(code->data(), reinterpret_cast<const void*>(rip), 16), 0);

  std::string error;
  auto threads = testing::UnwindWithDwfl(path, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(threads.size(), 3u);
  auto crashed = std::find_if(threads.begin(), threads.end(), [&](const auto& t) { return t.tid == crash.tids()[0]; });
  ASSERT_NE(crashed, threads.end());
  ASSERT_FALSE(crashed->functions.empty());
  EXPECT_EQ(crashed->functions[0], "gt_corefile_test_crash");
  // The caller is found too: the unwind went past the crashing frame.
  EXPECT_GE(crashed->functions.size(), 2u);
}

TEST(CorefileWriterTest, ASmallCapTruncatesSegmentsButKeepsAValidCore) {
  StoppedCrash crash(0);
  ASSERT_EQ(crash.error(), "");
  std::string path = crash.dir() + "/capped.core";
  CoreWriteOptions options;
  options.size_cap_bytes = 256u << 10;
  auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, options);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_GT(stats->segments_truncated, 0u);
  EXPECT_LE(stats->bytes_written, options.size_cap_bytes);
  auto notes = ReadCoreNotesFile(path);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_EQ(notes->signal, SIGSEGV);
  ASSERT_EQ(notes->threads.size(), 1u);
  // The crashed thread's stack goes first under a cap.
  auto memory = CoreMemory::OpenFile(path, *notes);
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(ReadU64(*memory, crash.markers().stack_address), testing::kMarkerValue);
  std::string error;
  auto threads = testing::UnwindWithDwfl(path, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(threads.size(), 1u);
  ASSERT_FALSE(threads[0].functions.empty());
  EXPECT_EQ(threads[0].functions[0], "gt_corefile_test_crash");

  // Cap 0: notes only; still a core.
  std::string notes_only = crash.dir() + "/notes-only.core";
  options.size_cap_bytes = 0;
  stats = WriteCore(crash.pid(), crash.tids(), crash.info(), notes_only, options);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_LT(stats->bytes_written, 64u << 10);
  notes = ReadCoreNotesFile(notes_only);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_EQ(notes->fault_address, 0u);
}

TEST(CorefileWriterTest, AThreadNotStoppedByUsIsAnError) {
  TempDir dir;
  pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  siginfo_t info{};
  info.si_signo = SIGSEGV;
  std::string path = dir.path() + "/x.core";
  auto stats = WriteCore(child, {child}, info, path, CoreWriteOptions{});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().message, fmt::format("pid {0} thread {0}: PTRACE_GETREGSET NT_PRSTATUS: ESRCH (is the thread "
                                               "ptrace-stopped by this thread?)",
                                               child));
  EXPECT_FALSE(std::filesystem::exists(path));
  auto none = WriteCore(child, {}, info, path, CoreWriteOptions{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, fmt::format("{}: no thread of pid {} to write", path, child));
}

// Writes the fuzz seed corpus (notes-only cores). Run by hand, from the source root:
//   GT_CORE_CORPUS_DIR=fuzz/corpus/core_notes build/gt_corefile_test
//     --gtest_also_run_disabled_tests --gtest_filter='*WriteFuzzSeedCorpus'
TEST(CorefileWriterTest, DISABLED_WriteFuzzSeedCorpus) {
  const char* out = std::getenv("GT_CORE_CORPUS_DIR");
  ASSERT_NE(out, nullptr) << "set GT_CORE_CORPUS_DIR";
  for (int threads : {0, 2}) {
    StoppedCrash crash(threads);
    ASSERT_EQ(crash.error(), "");
    std::string path = std::string(out) + "/written-" + std::to_string(threads + 1) + "-thread.core";
    CoreWriteOptions options;
    options.size_cap_bytes = 0;
    auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, options);
    ASSERT_TRUE(stats.ok()) << stats.error().message;
  }
}

}  // namespace
}  // namespace gputriage::corefile
