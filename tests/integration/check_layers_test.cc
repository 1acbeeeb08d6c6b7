// scripts/check-layers: the source tree follows docs/architecture.md, and a copy of the tree with
// a wrong arrow, a private header used from outside, or an undeclared link fails naming it.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/subprocess.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;

struct Checked {
  int status = -1;
  std::string out;
};

Checked CheckLayers(const std::string& root) {
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  auto run =
      core::RunWithTimeout({"bash", std::string(GT_SOURCE_DIR) + "/scripts/check-layers", "--root", root}, options);
  if (!run.ok()) return {};
  return {run->exit_code.value_or(-1), run->stdout_data + run->stderr_tail};
}

// The parts of the source tree the script reads.
void CopyTree(const fs::path& to) {
  const fs::path from = GT_SOURCE_DIR;
  for (const char* part : {"src", "docs", "fuzz", "bench", "tests/integration"}) {
    fs::create_directories(to / part);
    fs::copy(from / part, to / part, fs::copy_options::recursive);
  }
  fs::copy_file(from / "CMakeLists.txt", to / "CMakeLists.txt");
}

void Append(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::app);
  out << text;
}

TEST(CheckLayers, TheSourceTreeFollowsTheTable) {
  Checked c = CheckLayers(GT_SOURCE_DIR);
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("every include follows docs/architecture.md"), std::string::npos) << c.out;
}

TEST(CheckLayers, AWrongArrowAPrivateHeaderAndAnUndeclaredLinkFail) {
  testing::TempDir tmp;
  const fs::path root = fs::path(tmp.path()) / "tree";
  CopyTree(root);
  // core may use nothing; inspect may not use kb; core/json_fields.h is private to src/core.
  Append(root / "src/core/text.cc", "#include \"kb/analysis.h\"\n");
  Append(root / "src/inspect/occupancy.cc", "#include \"core/json_fields.h\"\n");
  Checked c = CheckLayers(root.string());
  EXPECT_EQ(c.status, 1) << c.out;
  EXPECT_NE(c.out.find("src/core/text.cc:"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("core may not use kb"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("src/inspect/occupancy.cc:"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("the header is private to src/core"), std::string::npos) << c.out;

  // A DEPS line that names a forbidden module fails too, even with no include using it.
  const fs::path fresh = fs::path(tmp.path()) / "fresh";
  CopyTree(fresh);
  std::ifstream in(fresh / "CMakeLists.txt");
  std::string cmake((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string store = "gt_module(store      src/store              DEPS gt_core";
  ASSERT_NE(cmake.find(store), std::string::npos);
  cmake.replace(cmake.find(store), store.size(), store + " gt_kb");
  std::ofstream(fresh / "CMakeLists.txt") << cmake;
  c = CheckLayers(fresh.string());
  EXPECT_EQ(c.status, 1) << c.out;
  EXPECT_NE(c.out.find("store links gt_kb: store may not use kb"), std::string::npos) << c.out;
}

}  // namespace
}  // namespace gputriage
