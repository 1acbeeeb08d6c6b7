#include "core/scoped_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

bool IsOpen(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) != -1; }

int OpenDevNull() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(ScopedFdTest, ClosesWhenDestroyed) {
  int raw = OpenDevNull();
  ASSERT_TRUE(IsOpen(raw));
  {
    ScopedFd fd(raw);
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(fd.get(), raw);
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(ScopedFdTest, AFailedOpenOwnsNothing) {
  ScopedFd fd(::open("/nonexistent/gputriage", O_RDONLY | O_CLOEXEC));
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(fd.get(), -1);
  EXPECT_FALSE(ScopedFd().valid());
}

TEST(ScopedFdTest, ReleaseGivesUpOwnership) {
  int raw = OpenDevNull();
  {
    ScopedFd fd(raw);
    EXPECT_EQ(fd.release(), raw);
    EXPECT_FALSE(fd.valid());
  }
  EXPECT_TRUE(IsOpen(raw));
  ::close(raw);
}

TEST(ScopedFdTest, ResetClosesTheOldDescriptor) {
  int first = OpenDevNull();
  int second = OpenDevNull();
  ScopedFd fd(first);
  fd.reset(second);
  EXPECT_FALSE(IsOpen(first));
  EXPECT_TRUE(IsOpen(second));
  EXPECT_EQ(fd.get(), second);
  fd.reset(second);  // the same descriptor again: kept open
  EXPECT_TRUE(IsOpen(second));
  fd.reset();
  EXPECT_FALSE(IsOpen(second));
  EXPECT_FALSE(fd.valid());
}

TEST(ScopedFdTest, MovesTransferOwnership) {
  int raw = OpenDevNull();
  ScopedFd a(raw);
  ScopedFd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from owns nothing
  EXPECT_EQ(b.get(), raw);
  int other = OpenDevNull();
  ScopedFd c(other);
  c = std::move(b);
  EXPECT_FALSE(IsOpen(other));
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(IsOpen(raw));
  c = ScopedFd();
  EXPECT_FALSE(IsOpen(raw));
}

}  // namespace
}  // namespace gputriage::core
