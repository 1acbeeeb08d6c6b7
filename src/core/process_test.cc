#include "core/process.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TEST(Report, JsonRoundTripKeepsTheContract) {
  ProcessReport r;
  r.pid = 4242;
  r.command = "python3 train.py";
  r.executable = "/usr/bin/python3.11";
  r.signal = SIGSEGV;
  r.si_code = SEGV_MAPERR;
  r.fault_address = 0;
  r.crashed_thread = 4243;
  ThreadState t;
  t.tid = 4243;
  t.name = "pt_autograd_0";
  t.registers = {{"rip", 0x7f0012345678}, {"rsp", 0x7ffc00001000}};
  Frame f;
  f.pc = 0x7f0012345678;
  f.function = "at::native::index_add_cuda_";
  f.function_offset = 0x18;
  f.module = "/venv/torch/lib/libtorch_cuda.so";
  f.offset = 0x1234;
  f.file = "IndexKernel.cu";
  f.line = 92;
  t.frames = {f};
  r.threads = {t};
  Disassembly d;
  d.arch = "x86_64";
  d.instructions = {{0x7f0012345678, "c7 00 2a 00 00 00", "mov dword ptr [rax], 0x2a", true}};
  d.isa_extensions = {"avx512f"};
  d.missing_on_cpu = {"avx512f"};
  r.disassembly = d;
  r.maps = {{0x1000, 0x2000, "r-xp", 0, "/bin/x"}};
  r.fault_location = FaultLocation{"null-page", std::nullopt, "address 0x0"};
  r.classification = Classification{"null-dereference", Category::kOther, "null pointer", "detail", {{"stack", "x"}}};
  r.not_collected = {{"thread 9", "did not stop"}};

  Json j = ToJson(r);
  EXPECT_EQ(j["signal"], "SIGSEGV");
  EXPECT_EQ(j["si_code"], "SEGV_MAPERR");
  EXPECT_EQ(j["fault_address"], "0x0");
  EXPECT_EQ(j["crashed_thread"], 4243);
  EXPECT_EQ(j["threads"][0]["frames"][0]["function"], "at::native::index_add_cuda_");
  EXPECT_EQ(j["threads"][0]["frames"][0]["module"], "/venv/torch/lib/libtorch_cuda.so");
  EXPECT_EQ(j["threads"][0]["frames"][0]["offset"], "0x1234");
  EXPECT_EQ(j["threads"][0]["frames"][0]["line"], 92);
  EXPECT_TRUE(j["disassembly"].is_object());
  EXPECT_EQ(j["classification"]["kind"], "null-dereference");

  ProcessReport back = ProcessReportFromJson(j);
  EXPECT_EQ(ToJson(back), j);
  EXPECT_FALSE(j.contains("core_truncated"));

  r.core_truncated = CoreTruncation{4096, 1 << 20, 3};
  j = ToJson(r);
  EXPECT_EQ(j["core_truncated"], Json({{"file_bytes", 4096}, {"expected_bytes", 1 << 20}, {"segments_cut", 3}}));
  EXPECT_EQ(ToJson(ProcessReportFromJson(j)), j);
}

TEST(Report, UnknownStaysAbsentAndDamagedJsonDoesNotThrow) {
  ProcessReport empty;
  Json j = ToJson(empty);
  EXPECT_TRUE(j["signal"].is_null());
  EXPECT_TRUE(j["si_code"].is_null());
  EXPECT_TRUE(j["fault_address"].is_null());
  EXPECT_TRUE(j["disassembly"].is_null());
  ProcessReport junk = ProcessReportFromJson(
      Json::parse(R"({"pid":"x","threads":[{"frames":[7,{"pc":"0xzz"}]}],"fault_address":"nope","disassembly":[1]})"));
  EXPECT_EQ(junk.pid, std::nullopt);
  EXPECT_TRUE(j["pid"].is_null());
  // Failed before: a process.json without a pid (or with 0) read as pid 0.
  EXPECT_EQ(ProcessReportFromJson(Json::object()).pid, std::nullopt);
  EXPECT_EQ(ProcessReportFromJson(Json{{"pid", 0}}).pid, std::nullopt);
  EXPECT_EQ(ProcessReportFromJson(Json{{"pid", 1ll << 40}}).pid, std::nullopt);
  EXPECT_EQ(ProcessReportFromJson(Json{{"pid", 4242}}).pid, 4242);
  EXPECT_FALSE(junk.fault_address);
  ASSERT_EQ(junk.threads.size(), 1u);
  EXPECT_EQ(junk.threads[0].frames.size(), 2u);
  EXPECT_FALSE(junk.disassembly);
  EXPECT_NO_THROW(ProcessReportFromJson(Json(42)));
}

}  // namespace
}  // namespace gputriage::core
