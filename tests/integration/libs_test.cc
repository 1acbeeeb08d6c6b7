// `gputriage libs` and `libs diff` run as a user would, on the small libraries of tests/libs
// built with the tests: the JSON contract names, exit statuses, and clear errors.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "run_cli.h"

namespace gputriage {
namespace {

using core::Json;
namespace fs = std::filesystem;

using Out = testing::CliOutput;

Out GtLibs(std::vector<std::string> args, std::vector<std::string> env = {}) {
  return testing::RunCli(GT_GPUTRIAGE_BIN, std::move(args), std::move(env));
}

const std::string kLibs = std::string(GT_BINARY_DIR) + "/tests/libs";

TEST(LibsCommand, JsonContractAndAMissingDependency) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "bin");
  fs::create_directories(tmp / "lib");
  fs::copy_file(kLibs + "/gtprog", tmp / "bin/gtprog");
  fs::copy_file(kLibs + "/libgtuser.so", tmp / "lib/libgtuser.so");
  fs::copy_file(kLibs + "/v1/libgtabi.so.1", tmp / "lib/libgtabi.so.1");
  // libgtgone.so left out: a missing dependency, an error-level finding, exit status 1.
  Out o = GtLibs({"libs", "--json", tmp / "bin/gtprog"}, {"LD_LIBRARY_PATH=" + std::string(tmp / "lib")});
  EXPECT_EQ(o.status, 1) << o.err;
  Json j = Json::parse(o.out);
  for (const char* key : {"libraries", "undefined_symbols", "shadowed", "findings"})
    EXPECT_TRUE(j.contains(key)) << key;
  bool user = false;
  for (const Json& l : j["libraries"]) {
    for (const char* key : {"soname", "path", "needed_by", "component", "version"}) EXPECT_TRUE(l.contains(key)) << key;
    if (l["soname"] == "libgtuser.so") {
      user = true;
      EXPECT_EQ(l["needed_by"], Json::array({tmp / "bin/gtprog"}));
    }
  }
  EXPECT_TRUE(user);
  ASSERT_FALSE(j["undefined_symbols"].empty());  // gt_gone: libgtgone.so is not there
  for (const Json& u : j["undefined_symbols"]) {
    for (const char* key : {"symbol", "version", "needed_by"}) EXPECT_TRUE(u.contains(key)) << key;
  }
  bool missing = false;
  for (const Json& f : j["findings"]) missing = missing || f["id"] == "libs.missing_library";
  EXPECT_TRUE(missing);
  Out text = GtLibs({"libs", tmp / "bin/gtprog"}, {"LD_LIBRARY_PATH=" + std::string(tmp / "lib")});
  EXPECT_NE(text.out.find("libgtgone.so => not found"), std::string::npos) << text.out;
}

TEST(LibsCommand, DiffContractAndExitStatus) {
  Out o = GtLibs({"libs", "diff", "--json", kLibs + "/v1/libgtabi.so.1", kLibs + "/v2/libgtabi.so.1"});
  EXPECT_EQ(o.status, 1);
  Json j = Json::parse(o.out);
  EXPECT_EQ(j["abi_break"], true);
  for (const char* list : {"added", "removed", "changed"}) {
    ASSERT_FALSE(j[list].empty()) << list;
    for (const Json& e : j[list]) {
      EXPECT_TRUE(e.contains("symbol") && e.contains("version")) << list;
    }
  }
  EXPECT_EQ(j["removed"][0]["symbol"], "gt_abi_b");
  EXPECT_EQ(j["removed"][0]["version"], "GTABI_1.0");
  Out same = GtLibs({"libs", "diff", kLibs + "/v1/libgtabi.so.1", kLibs + "/v1/libgtabi.so.1"});
  EXPECT_EQ(same.status, 0);
  EXPECT_NE(same.out.find("no ABI break"), std::string::npos);
}

TEST(LibsCommand, BadInputsAreClearErrors) {
  Out none = GtLibs({"libs"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("give PATH"), std::string::npos) << none.err;
  testing::TempDir tmp;
  std::ofstream(tmp / "notelf.so") << "garbage, not ELF";
  Out bad = GtLibs({"libs", tmp / "notelf.so", "/bin/true"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find(std::string(tmp / "notelf.so") + ": not an ELF file"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("libc.so.6"), std::string::npos);  // /bin/true is still reported
  Out diff = GtLibs({"libs", "diff", tmp / "notelf.so", "/bin/true"});
  EXPECT_EQ(diff.status, 2);
  EXPECT_NE(diff.err.find("notelf.so"), std::string::npos);
}

TEST(LibsCommand, TraceRunsTheCommandUnderTheAuditInterface) {
  Out o = GtLibs({"libs", "--trace", "--json", "--", "/bin/true"});
  ASSERT_EQ(o.status, 0) << o.err;
  Json j = Json::parse(o.out);
  bool libc = false;
  for (const Json& l : j["libraries"]) libc = libc || l["soname"] == "libc.so.6";
  EXPECT_TRUE(libc);
  bool searched = false;
  for (const Json& e : j["trace"]) searched = searched || (e["kind"] == "search" && e["name"] == "libc.so.6");
  EXPECT_TRUE(searched);
}

}  // namespace
}  // namespace gputriage
