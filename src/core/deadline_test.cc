#include "core/deadline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TEST(CallWithDeadline, ReturnsTheAnswerInTime) {
  auto answer = CallWithDeadline(std::chrono::milliseconds(5000), []() { return 42; });
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(*answer, 42);
}

TEST(CallWithDeadline, AnExceptionBecomesAnError) {
  auto answer = CallWithDeadline(std::chrono::milliseconds(5000), []() -> int { throw std::runtime_error("boom"); });
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().message, "failed: boom");
}

// A call blocked in the kernel (a blocking open of a FIFO nobody writes) is abandoned at the
// deadline; it finishes on its own later, when a writer appears.
TEST(CallWithDeadline, ABlockedCallIsAbandonedAtTheDeadline) {
  std::string fifo = std::filesystem::path(::testing::TempDir()) / ("deadline-" + std::to_string(::getpid()));
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  auto answer = CallWithDeadline(std::chrono::milliseconds(300), [fifo]() {
    int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);  // blocks until a writer opens it
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  });
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().message, "abandoned after 0.3 s without an answer");
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 5.0);
  int writer = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // lets the abandoned thread finish
  ASSERT_GE(writer, 0);
  ::close(writer);
  ::unlink(fifo.c_str());
}

}  // namespace
}  // namespace gputriage::core
