#include "forensics/exec_failure.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"

namespace gputriage::forensics {
namespace {

TEST(ExecFailure, SaysWhatIsWrongWithThePath) {
  testing::TempDir tmp;
  std::filesystem::create_directories(tmp / "dir");
  EXPECT_EQ(DescribeExecFailure(tmp / "dir", EACCES), tmp / "dir: is a directory, not a program");
  std::ofstream(tmp / "plain") << "echo hi\n";
  chmod((tmp / "plain").c_str(), 0640);
  EXPECT_EQ(DescribeExecFailure(tmp / "plain", EACCES),
            tmp / "plain: Permission denied: the file has no execute permission (mode 0640)");
  std::ofstream(tmp / "script") << "#!/nonexistent/python3 -u\nprint(1)\n";
  chmod((tmp / "script").c_str(), 0755);
  EXPECT_EQ(DescribeExecFailure(tmp / "script", ENOENT),
            tmp / "script: its interpreter /nonexistent/python3 (the #! line) does not exist");
  EXPECT_EQ(DescribeExecFailure(tmp / "absent", ENOENT), tmp / "absent: No such file or directory");
  EXPECT_EQ(DescribeExecFailure(tmp / "dir/x/y", ENOENT), tmp / "dir/x/y: No such file or directory");
}

TEST(ExecFailure, ANameIsLookedUpInPath) {
  testing::TempDir tmp;
  std::filesystem::create_directories(tmp / "bin/tool");  // a directory named like the command
  std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (tmp / "empty:" + tmp / "bin").c_str(), 1);
  EXPECT_EQ(DescribeExecFailure("tool", EACCES), tmp / "bin/tool: is a directory, not a program");
  EXPECT_EQ(DescribeExecFailure("gputriage-no-such-tool", ENOENT),
            "gputriage-no-such-tool: command not found (not in PATH)");
  EXPECT_EQ(CommandPath("tool"), tmp / "bin/tool");
  EXPECT_EQ(CommandPath("gputriage-no-such-tool"), std::nullopt);
  EXPECT_EQ(CommandPath("/bin/sh"), "/bin/sh");  // a path is taken as it is
  setenv("PATH", old_path.c_str(), 1);
}

}  // namespace
}  // namespace gputriage::forensics
