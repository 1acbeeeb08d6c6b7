#include "forensics/process_tree.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

namespace gputriage::forensics {
namespace {

bool Contains(const std::vector<int>& pids, int pid) { return std::find(pids.begin(), pids.end(), pid) != pids.end(); }

TEST(ProcessTree, FindsChildrenGrandchildrenAndOrphansButNotZombies) {
  int was_subreaper = 0;
  prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pid_t grandchild = fork();
    if (grandchild == 0) {
      for (;;) pause();
    }
    (void)!write(fds[1], &grandchild, sizeof grandchild);
    for (;;) pause();
  }
  pid_t grandchild = 0;
  ASSERT_EQ(read(fds[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  std::vector<int> tree = LiveDescendants(getpid());
  EXPECT_TRUE(Contains(tree, child));
  EXPECT_TRUE(Contains(tree, grandchild));
  EXPECT_FALSE(Contains(LiveDescendants(getpid(), {child}), grandchild));  // its subtree is skipped

  // The child dies unreaped: a zombie, left out; its orphan is reparented to us and still found.
  kill(child, SIGKILL);
  for (int i = 0; i < 500 && Contains(LiveDescendants(getpid()), child); ++i) usleep(2000);
  tree = LiveDescendants(getpid());
  EXPECT_FALSE(Contains(tree, child));
  EXPECT_TRUE(Contains(tree, grandchild));
  EXPECT_TRUE(ProcessStartTime(child).has_value());  // a zombie still has its /proc entry
  EXPECT_FALSE(IsLive(child));
  EXPECT_TRUE(IsLive(grandchild));

  waitpid(child, nullptr, 0);
  kill(grandchild, SIGKILL);
  waitpid(grandchild, nullptr, 0);
  EXPECT_FALSE(ProcessStartTime(child).has_value());
  EXPECT_FALSE(Contains(LiveDescendants(getpid()), grandchild));
  prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
  close(fds[0]);
  close(fds[1]);
}

TEST(ProcessTree, StartTimeNamesOneProcess) {
  std::optional<uint64_t> self = ProcessStartTime(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(ProcessStartTime(getpid()), self);
  EXPECT_FALSE(ProcessStartTime(999999999).has_value());
}

}  // namespace
}  // namespace gputriage::forensics
