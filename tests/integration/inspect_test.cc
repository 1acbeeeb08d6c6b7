// `gputriage inspect` run as a user would, on GPU code built by nvcc during the build.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"

namespace gputriage {
namespace {

using core::Json;

struct Out {
  int status = -1;
  std::string out, err;
};

Out Gt(std::vector<std::string> args) {
  args.insert(args.begin(), GT_GPUTRIAGE_BIN);
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(60000);
  auto r = core::RunWithTimeout(args, ro);
  Out o;
  if (!r.ok()) return o;
  o.status = r->exit_code.value_or(-1);
  o.out = r->stdout_data;
  o.err = r->stderr_tail;
  return o;
}

TEST(InspectCommand, NotAGpuFileIsAClearError) {
  testing::TempDir tmp;
  std::string junk = tmp / "junk.bin";
  std::ofstream(junk) << "just some bytes\n";
  Out o = Gt({"inspect", "--no-snapshot", junk});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("not an ELF file, fatbin, clang offload bundle or PTX text"), std::string::npos) << o.err;
  Out missing = Gt({"inspect", "--no-snapshot", tmp / "absent"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos);
}

#ifdef GT_CUDA_INPUTS_DIR
const std::string kInputs = GT_CUDA_INPUTS_DIR;

// The JSON contract on a host object carrying an LZ4-compressed fatbin.
TEST(InspectCommand, JsonContractOnANvccFatbin) {
  Out o = Gt({"inspect", "--json", "--no-snapshot", kInputs + "/fatbin-speed.o"});
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out.substr(0, 500) << o.err;
  EXPECT_EQ(o.status, 0) << o.err;
  ASSERT_EQ(j["files"].size(), 1u);
  const Json& objects = j["files"][0]["code_objects"];
  ASSERT_EQ(objects.size(), 3u);
  for (const Json& co : objects) {
    for (const char* key : {"vendor", "arch", "format", "kernels"}) EXPECT_TRUE(co.contains(key)) << key;
    EXPECT_EQ(co["vendor"], "nvidia");
    EXPECT_TRUE(co["compressed"].get<bool>());
  }
  EXPECT_EQ(objects[0]["arch"], "sm_80");
  EXPECT_EQ(objects[0]["format"], "cubin");
  EXPECT_EQ(objects[2]["format"], "ptx");
  for (const Json& k : objects[1]["kernels"]) {
    for (const char* key : {"name", "registers", "shared_bytes", "local_bytes"}) EXPECT_TRUE(k.contains(key)) << key;
  }
  EXPECT_TRUE(j["findings"].is_array());
}

// Coverage against a snapshot's GPUs: sm_90 is covered, a Blackwell GPU (12.0) only through PTX.
TEST(InspectCommand, CoverageAgainstTheSnapshotsGpus) {
  testing::TempDir tmp;
  auto snapshot = [&](const std::string& cc) {
    std::string path = tmp / ("snap-" + cc + ".json");
    std::ofstream(path) << Json{{"schema_version", 1},
                                {"gpus", {{{"pci_address", "0000:00:06.0"}, {"nvidia", {{"compute_capability", cc}}}}}}}
                               .dump();
    return path;
  };
  Out h200 = Gt({"inspect", "--snapshot", snapshot("9.0"), kInputs + "/fatbin-size.o"});
  EXPECT_EQ(h200.status, 0) << h200.out << h200.err;
  EXPECT_NE(h200.out.find("sm_90 cubin"), std::string::npos) << h200.out;
  Out blackwell = Gt({"inspect", "--json", "--snapshot", snapshot("12.0"), kInputs + "/fatbin-size.o"});
  Json j = Json::parse(blackwell.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << blackwell.out;
  std::vector<std::string> ids;
  for (const Json& f : j["findings"]) ids.push_back(f["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"inspect.ptx_only", "inspect.stack_frame"})) << j["findings"].dump();
  Out turing = Gt({"inspect", "--json", "--snapshot", snapshot("7.5"), kInputs + "/fatbin-size.o"});
  EXPECT_EQ(turing.status, 1) << "no code for sm_75 is an error";
}

// --kernel lists the matching kernels with their numbers.
TEST(InspectCommand, KernelFilter) {
  Out o = Gt({"inspect", "--no-snapshot", "--kernel", "bounded_add", kInputs + "/sm_90.cubin"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("bounded_add(float*, float const*, int)  regs 10 shared 0 local 0 max_threads 256 params 20"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("big_shared"), std::string::npos);
}
#endif

}  // namespace
}  // namespace gputriage
