#include "core/os_view.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"

namespace gputriage::core {
namespace {

TEST(OsViewTest, LiveResolvesPathsAsTheyAre) {
  OsView os = OsView::Live();
  EXPECT_TRUE(os.live());
  EXPECT_EQ(os.Resolve("/proc/cpuinfo"), "/proc/cpuinfo");
  EXPECT_TRUE(os.TryReadFile("/proc/self/status").ok());
}

TEST(OsViewTest, AbsoluteLinksInsideTheTreeStayInsideIt) {
  testing::TempDir dir;
  testing::WriteFile(dir.path(), "/etc/alternatives/cuda/version.json", R"({"cuda":{"version":"13.0.1"}})");
  std::filesystem::create_directories(dir.path() + "/usr/local");
  std::filesystem::create_symlink("/etc/alternatives/cuda", dir.path() + "/usr/local/cuda");
  std::filesystem::create_symlink("/usr/local/cuda/version.json", dir.path() + "/abs-file-link");
  std::filesystem::create_symlink("/loop", dir.path() + "/loop");
  OsView os = OsView::Rooted(dir.path()).value();
  EXPECT_FALSE(os.live());
  auto text = os.TryReadFile("/usr/local/cuda/version.json");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, R"({"cuda":{"version":"13.0.1"}})");
  EXPECT_TRUE(os.TryReadFile("/abs-file-link").ok());
  EXPECT_EQ(os.TryReadLink("/usr/local/cuda").value_or(""), "/etc/alternatives/cuda");
  EXPECT_TRUE(os.IsDirectory("/usr/local/cuda"));
  EXPECT_FALSE(os.TryReadFile("/loop").ok());  // a self-loop ends, with an error
  EXPECT_EQ(os.Resolve("/a/../etc"), dir.path() + "/etc");
}

TEST(OsViewTest, ReadErrorsNameThePath) {
  testing::TempDir dir;
  OsView os = OsView::Rooted(dir.path()).value();
  auto missing = os.TryReadFile("/proc/meminfo");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir.path() + "/proc/meminfo: No such file or directory");
  std::filesystem::create_directories(dir.path() + "/dev/kmsg");
  auto is_dir = os.TryReadFile("/dev/kmsg");
  ASSERT_FALSE(is_dir.ok());
  EXPECT_EQ(is_dir.error().message, dir.path() + "/dev/kmsg: not read: it is a directory, not a regular file");
}

// A FIFO in a tree (or on the live machine) is refused at once: opening it for reading used to
// wait for a writer forever and hang snapshot/doctor --root.
TEST(OsViewTest, AFifoIsRefusedNotWaitedFor) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/etc");
  ASSERT_EQ(::mkfifo((dir.path() + "/etc/os-release").c_str(), 0600), 0);
  for (const OsView& os : {OsView::Rooted(dir.path()).value(), OsView::Live()}) {
    auto fifo = os.TryReadFile(os.live() ? dir.path() + "/etc/os-release" : "/etc/os-release");
    ASSERT_FALSE(fifo.ok());
    EXPECT_EQ(fifo.error().message, dir.path() + "/etc/os-release: not read: it is a FIFO, not a regular file");
    EXPECT_EQ(fifo.error().code, ErrorCode::kInvalidArgument);
  }
}

// A device is read on the live machine only, bounded.
TEST(OsViewTest, DevicesAreReadBoundedOnlyOnTheLiveMachine) {
  auto zero = OsView::Live().TryReadFile("/dev/zero", 4096);
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  EXPECT_EQ(*zero, std::string(4096, '\0'));
}

TEST(OsViewTest, ReadIsBounded) {
  testing::TempDir dir;
  testing::WriteFile(dir.path(), "/big", std::string(100000, 'x'));
  auto text = OsView::Rooted(dir.path())->TryReadFile("/big", 1000);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->size(), 1000u);
}

TEST(OsViewTest, EnvironmentSelectsTheRoot) {
  testing::TempDir dir;
  ::setenv("GPUTRIAGE_ROOT", dir.path().c_str(), 1);
  auto from_env = OsViewFromOptions(std::nullopt);
  auto from_flag = OsViewFromOptions(std::string("/"));
  ::unsetenv("GPUTRIAGE_ROOT");
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->root(), dir.path());
  ASSERT_TRUE(from_flag.ok());
  EXPECT_TRUE(from_flag->live());
}

}  // namespace
}  // namespace gputriage::core
