// `gputriage validate` and `doctor --validate` run as a user would on a machine without a GPU (CI):
// every check skipped with the reason, the exit statuses, bad options, JUnit output valid against
// the JUnit schema (tests/fixtures/junit/JUnit.xsd, checked by xmllint), and the embedded kernels
// read back by `inspect`.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "run_cli.h"

namespace gputriage {
namespace {

using core::Json;

testing::CliOutput Gt(std::vector<std::string> args) { return testing::RunCli(GT_GPUTRIAGE_BIN, std::move(args)); }

// The JSON of a run, or a skip when this machine has a GPU (these tests are for the no-GPU path).
bool NoGpu(const Json& j) { return j.is_object() && j.value("devices_found", -1) == 0; }

TEST(ValidateCommand, WithoutAGpuEveryCheckSkipsWithTheReasonAndExitsOne) {
  testing::CliOutput o = Gt({"validate", "--json"});
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out << o.err;
  if (!NoGpu(j)) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(o.status, 1);
  EXPECT_NE(o.err.find("no usable GPU"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--allow-no-gpu"), std::string::npos) << o.err;
  ASSERT_TRUE(j["devices"].is_array());
  EXPECT_TRUE(j["devices"].empty());
  std::set<std::string> names;
  for (const Json& c : j["checks"]) {
    for (const char* key :
         {"name", "device", "dtype", "status", "detail", "max_rel_error", "median_ms", "throughput"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
    EXPECT_EQ(c["status"], "skip");
    EXPECT_NE(c["detail"].get<std::string>().find("no usable GPU"), std::string::npos);
    names.insert(c["name"].get<std::string>());
  }
  for (const char* name : {"gemm", "conv2d", "layernorm", "softmax", "reduce", "atomics", "launch_limits",
                           "memory_pattern", "bandwidth", "pinned_copy"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  EXPECT_FALSE(names.count("stress_gemm"));  // level 3 only
  EXPECT_EQ(j["exit_code"], 1);
}

TEST(ValidateCommand, AllowNoGpuOnlyAtLevelOneAndNotOverBadOptions) {
  testing::CliOutput level1 = Gt({"validate", "--allow-no-gpu", "--ops", "gemm", "--quiet"});
  if (level1.out.find("GPU 0:") != std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(level1.status, 0) << level1.out << level1.err;
  EXPECT_NE(level1.out.find("skip  gemm[fp32]"), std::string::npos) << level1.out;
  EXPECT_EQ(Gt({"validate", "--allow-no-gpu", "--level", "2", "--ops", "gemm"}).status, 1);
  testing::CliOutput unknown = Gt({"validate", "--allow-no-gpu", "--ops", "gemm,matmul", "--json"});
  EXPECT_EQ(unknown.status, 1);
  Json j = Json::parse(unknown.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["checks"][0]["name"], "matmul");
  EXPECT_EQ(j["checks"][0]["status"], "error");
}

TEST(ValidateCommand, UsageErrors) {
  EXPECT_EQ(Gt({"validate", "--level", "4"}).status, 2);
  EXPECT_EQ(Gt({"validate", "--repeat", "0"}).status, 2);
  testing::CliOutput device = Gt({"validate", "--device", "first"});
  EXPECT_EQ(device.status, 2);
  EXPECT_NE(device.err.find("--device takes a device number or 'all'"), std::string::npos) << device.err;
  testing::CliOutput help = Gt({"validate", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("NOT VERIFIED ON AMD HARDWARE"), std::string::npos);
  EXPECT_NE(help.out.find("--inject-fault"), std::string::npos);
}

TEST(ValidateCommand, JunitOutputIsValidAgainstTheSchema) {
  testing::TempDir tmp;
  std::string xml = tmp / "validate.xml";
  // A bad op too, so the file holds an <error> next to the <skipped> cases.
  testing::CliOutput o = Gt({"validate", "--junit", xml, "--ops", "gemm,atomics,bogus", "--quiet"});
  ASSERT_TRUE(std::filesystem::exists(xml)) << o.err;
  std::ifstream in(xml);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<testcase classname=\"gputriage.validate\" name=\"bogus\""), std::string::npos) << text;
  EXPECT_NE(text.find("<error type=\"bogus\""), std::string::npos) << text;
  if (!std::filesystem::exists("/usr/bin/xmllint")) GTEST_SKIP() << "xmllint (libxml2-utils) is not installed";
  std::string schema = std::string(GT_SOURCE_DIR) + "/tests/fixtures/junit/JUnit.xsd";
  auto check = core::RunWithTimeout({"/usr/bin/xmllint", "--noout", "--schema", schema, xml}, {});
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->exit_code, 0) << check->stderr_tail;
  // The schema is strict enough to notice a broken file: the same report without its properties.
  std::string broken = tmp / "broken.xml";
  std::string cut = text;
  cut.erase(cut.find("    <properties>"), cut.find("</properties>\n") + 14 - cut.find("    <properties>"));
  std::ofstream(broken) << cut;
  auto bad = core::RunWithTimeout({"/usr/bin/xmllint", "--noout", "--schema", schema, broken}, {});
  ASSERT_TRUE(bad.ok());
  EXPECT_NE(bad->exit_code, 0);
}

TEST(ValidateCommand, JunitFileThatCannotBeWrittenIsAUsageError) {
  testing::CliOutput o = Gt({"validate", "--junit", "/nonexistent-dir/x.xml", "--ops", "gemm", "--quiet"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("/nonexistent-dir/x.xml"), std::string::npos) << o.err;
}

TEST(DoctorCommand, ValidateWithoutAGpuIsAWarningFinding) {
  testing::CliOutput o = Gt({"doctor", "--validate", "--json"});
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.err;
  ASSERT_TRUE(j.contains("validation"));
  ASSERT_TRUE(j["validation"].is_object());
  if (!NoGpu(j["validation"])) GTEST_SKIP() << "this machine has a GPU";
  bool no_gpu = false;
  for (const Json& f : j["findings"]) no_gpu = no_gpu || f["id"] == "validate-no-gpu";
  EXPECT_TRUE(no_gpu);
  // Without --validate nothing is run and the key is null.
  Json plain = Json::parse(Gt({"doctor", "--json"}).out, nullptr, false);
  ASSERT_FALSE(plain.is_discarded());
  EXPECT_TRUE(plain["validation"].is_null());
}

TEST(ValidateKernels, EmbeddedForEveryTargetAndReadBackByInspect) {
  testing::CliOutput o = Gt({"inspect", "--json", "--no-snapshot", GT_GPUTRIAGE_BIN});
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.err;
  std::string text = j.dump();
  bool cuda = text.find("\"sm_90\"") != std::string::npos;
  bool hip = text.find("gfx90a") != std::string::npos;
  if (!cuda && !hip) GTEST_SKIP() << "built without nvcc and hipcc: no kernels embedded";
  for (const char* kernel : {"gt_layernorm_bf16", "gt_softmax_f16", "gt_reduce_f32", "gt_copy_u4", "gt_pattern_check",
                             "gt_atomics_f64", "gt_fill_index", "gt_touch_shared"}) {
    EXPECT_NE(text.find(kernel), std::string::npos) << kernel;
  }
}

}  // namespace
}  // namespace gputriage
