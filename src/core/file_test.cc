#include "core/file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/fs.h"

namespace gputriage::core {
namespace {

std::string WriteFile(const gputriage::testing::TempDir& dir, const std::string& name, const std::string& bytes) {
  std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A FIFO at `path` that a thread fills with `bytes` and closes.
class FifoWriter {
 public:
  FifoWriter(const std::string& path, std::string bytes) {
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
    thread_ = std::thread([path, bytes = std::move(bytes)] {
      // A reader that stops early makes write() fail with EPIPE: blocked here, SIGPIPE (sent
      // to this thread) stays pending and goes away with it.
      sigset_t pipe_signal;
      sigemptyset(&pipe_signal);
      sigaddset(&pipe_signal, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return;
      for (size_t done = 0; done < bytes.size();) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) break;  // the reader gave up
        done += static_cast<size_t>(n);
      }
      ::close(fd);
    });
  }
  ~FifoWriter() { thread_.join(); }

 private:
  std::thread thread_;
};

// Failed before (issue 32): `report -o`, `run --json-file` and `validate --junit` wrote through
// whatever was at the path (a link, /dev/full without an error). A user-named output is a new or
// regular file written in place, a device or FIFO written as a stream, and nothing else.
TEST(WriteOutputFile, RegularFilesDevicesAndFifosAreWrittenTheRestRefused) {
  gputriage::testing::TempDir dir;
  std::string file = dir / "report.md";
  ASSERT_TRUE(WriteOutputFile(file, "first\n").ok());
  ASSERT_TRUE(WriteOutputFile(file, "second\n").ok());
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "second");
  EXPECT_TRUE(WriteOutputFile("/dev/null", "x").ok());
  std::filesystem::create_symlink("/dev/null", dir / "null-link");
  EXPECT_TRUE(WriteOutputFile(dir / "null-link", "x").ok());  // like /dev/stdout
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A full disk is an error naming the path, not a silent success.
  auto full = WriteOutputFile("/dev/full", "data");
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("/dev/full: cannot write (0 of 4 bytes written)"), std::string::npos)
      << full.error().message;
  // A FIFO gets the text as a stream.
  std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream f(fifo);
    std::getline(f, got);
  });
  EXPECT_TRUE(WriteOutputFile(fifo, "through the pipe\n").ok());
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  // A link to a regular file and a directory: refused, left as they were.
  std::filesystem::create_symlink(file, dir / "link.md");
  auto link = WriteOutputFile(dir / "link.md", "x");
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(
      link.error().message,
      dir / "link.md" + ": a symbolic link, not a regular file: not written (name a new file, or the file itself)");
  EXPECT_EQ(link.error().code, ErrorCode::kInvalidArgument);
  auto directory = WriteOutputFile(dir.path(), "x");
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.error().message.find("a directory, not a regular file"), std::string::npos);
  std::ifstream again(file);
  std::getline(again, line);
  EXPECT_EQ(line, "second");
}

TEST(ReadFileTest, ReadsARegularFile) {
  gputriage::testing::TempDir dir;
  std::string path = WriteFile(dir, "a.txt", "hello\nworld\n");
  Result<std::string> text = ReadFile(path, 1024);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "hello\nworld\n");
  // Exactly the limit is accepted; an empty file is empty.
  EXPECT_EQ(ReadFile(path, 12).value_or("?"), "hello\nworld\n");
  EXPECT_EQ(ReadFile(WriteFile(dir, "empty", ""), 0).value_or("?"), "");
}

TEST(ReadFileTest, ARegularFileOverTheLimitIsRefusedBeforeReading) {
  gputriage::testing::TempDir dir;
  std::string path = WriteFile(dir, "big.bin", std::string(100, 'x'));
  Result<std::string> text = ReadFile(path, 99);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message, path + ": 100 bytes, more than the 99 bytes allowed");
  EXPECT_EQ(text.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(text.error().sys_errno, 0);
}

TEST(ReadFileTest, ProcFilesReportSizeZeroAndAreReadToTheirEnd) {
  Result<std::string> status = ReadFile("/proc/self/status", 1 << 20);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_NE(status->find("Pid:\t" + std::to_string(::getpid()) + "\n"), std::string::npos);
  Result<std::string> cut = ReadFile("/proc/self/status", 10);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().message, "/proc/self/status: more than the 10 bytes allowed");
  EXPECT_EQ(cut.error().code, ErrorCode::kInvalidArgument);
}

TEST(ReadFileTest, AFifoIsReadUntilItsWriterCloses) {
  gputriage::testing::TempDir dir;
  std::string payload(200000, 'f');  // more than a pipe buffer
  {
    FifoWriter writer(dir / "fifo", payload);
    Result<std::string> text = ReadFile(dir / "fifo", payload.size());
    ASSERT_TRUE(text.ok()) << text.error().message;
    EXPECT_EQ(*text, payload);
  }
  ASSERT_EQ(::unlink((dir / "fifo").c_str()), 0);
  {
    FifoWriter writer(dir / "fifo", payload);
    Result<std::string> text = ReadFile(dir / "fifo", 1000);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.error().message, dir / "fifo" + ": more than the 1000 bytes allowed");
  }
}

TEST(ReadFileTest, AMissingFileIsNotFound) {
  gputriage::testing::TempDir dir;
  Result<std::string> text = ReadFile(dir / "nope", 10);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message, dir / "nope" + ": No such file or directory");
  EXPECT_EQ(text.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(text.error().sys_errno, ENOENT);
  EXPECT_EQ(ReadFile(dir / "nope/deeper", 10).error().code, ErrorCode::kNotFound);
}

TEST(ReadFileTest, ADirectoryFailsItsRead) {
  gputriage::testing::TempDir dir;
  Result<std::string> text = ReadFile(dir.path(), 10);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message, dir.path() + ": read failed after 0 bytes: " + std::strerror(EISDIR));
  EXPECT_EQ(text.error().sys_errno, EISDIR);
  EXPECT_EQ(text.error().code, ErrorCode::kIo);
}

TEST(ReadFileTailTest, KeepsTheLastBytes) {
  gputriage::testing::TempDir dir;
  std::string path = WriteFile(dir, "log", "0123456789");
  EXPECT_EQ(ReadFileTail(path, 4).value_or("?"), "6789");
  EXPECT_EQ(ReadFileTail(path, 10).value_or("?"), "0123456789");
  EXPECT_EQ(ReadFileTail(path, 100).value_or("?"), "0123456789");
  EXPECT_EQ(ReadFileTail(path, 0).value_or("?"), "");
  Result<std::string> missing = ReadFileTail(dir / "nope", 4);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir / "nope" + ": No such file or directory");
}

TEST(ReadFileTailTest, StreamsKeepOnlyTheTail) {
  gputriage::testing::TempDir dir;
  std::string payload;
  for (int i = 0; i < 50000; ++i) payload += std::to_string(i) + "\n";
  FifoWriter writer(dir / "fifo", payload);
  Result<std::string> tail = ReadFileTail(dir / "fifo", 1000);
  ASSERT_TRUE(tail.ok()) << tail.error().message;
  EXPECT_EQ(*tail, payload.substr(payload.size() - 1000));
  Result<std::string> proc = ReadFileTail("/proc/self/status", 1 << 20);
  ASSERT_TRUE(proc.ok());
  EXPECT_NE(proc->find("Pid:"), std::string::npos);
}

TEST(ReadFdTest, ReadsToTheEndWithALimit) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ASSERT_EQ(::write(fds[1], "abc", 3), 3);
  ::close(fds[1]);
  EXPECT_EQ(ReadFd(fds[0], "pipe", 3).value_or("?"), "abc");
  ::close(fds[0]);
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ASSERT_EQ(::write(fds[1], "abcd", 4), 4);
  ::close(fds[1]);
  Result<std::string> over = ReadFd(fds[0], "standard input", 3);
  ::close(fds[0]);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().message, "standard input: more than the 3 bytes allowed");
}

// A file's identity changes when it is replaced or edited, not when it is only read; a file
// written atomically is there whole, with mode 0600, its directories made, and no temporary left.
TEST(FileIdentity, ChangesWithReplacementAndEditNotWithReading) {
  gputriage::testing::TempDir dir;
  std::string path = WriteFile(dir, "lib.so", "first");
  std::optional<FileIdentity> a = IdentityOf(path);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->size, 5);
  ASSERT_TRUE(ReadFile(path, 100).ok());
  EXPECT_EQ(IdentityOf(path), a);
  std::ofstream(path, std::ios::binary | std::ios::app) << "!";  // edited in place
  std::optional<FileIdentity> b = IdentityOf(path);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->inode, a->inode);
  EXPECT_NE(b, a);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  WriteFile(dir, "lib.so", "first!");  // replaced: same size, new file
  std::optional<FileIdentity> c = IdentityOf(path);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->size, b->size);
  EXPECT_NE(c, b);
  EXPECT_FALSE(IdentityOf(dir / "missing"));
}

TEST(WriteFileAtomically, WholeFilePrivateModeNoTemporaryLeft) {
  gputriage::testing::TempDir dir;
  std::string path = dir / "a/b/cache.json";
  ASSERT_TRUE(WriteFileAtomically(path, "{\"x\":1}\n").ok());
  EXPECT_EQ(*ReadFile(path, 100), "{\"x\":1}\n");
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(*ReadFile(path, 100), "second");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "a/b")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  // A directory in the way of the file: an error naming it, nothing else changed.
  WriteFile(dir, "plain", "x");
  Result<void> blocked = WriteFileAtomically(dir / "plain/cache.json", "y");
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().message.find(dir / "plain"), std::string::npos) << blocked.error().message;
  EXPECT_EQ(*ReadFile(dir / "plain", 100), "x");
}

}  // namespace
}  // namespace gputriage::core
