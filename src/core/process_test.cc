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

ProcessReport Rank(int pid, std::optional<int> rank, std::optional<int> signal, std::optional<double> at) {
  ProcessReport r;
  r.pid = pid;
  r.rank = rank;
  r.signal = signal;
  r.stopped_at_s = at;
  return r;
}

TEST(JobProcessTimeline, FirstFailureByTimeThenLaterOnesThenTheWaiting) {
  ProcessFile file;
  file.timed_out = true;
  // Written in capture order; a later capture can have stopped earlier only in a damaged file,
  // but the order is by time either way.
  file.primary = Rank(101, 1, SIGSEGV, 0.25);
  file.other_crashed_processes = {Rank(103, 3, SIGABRT, 2.5), Rank(102, 2, SIGABRT, 0.2), Rank(104, 4, SIGBUS, {})};
  file.hang_dumps = {Rank(100, 0, {}, 30.0)};
  std::vector<JobProcess> t = JobProcessTimeline(file);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].pid, 102);
  EXPECT_EQ(t[0].role, "first_failure");
  EXPECT_EQ(t[1].pid, 101);
  EXPECT_EQ(t[1].role, "failed_after");
  EXPECT_EQ(t[2].pid, 103);
  EXPECT_EQ(t[3].pid, 104);  // no time: after those with one
  EXPECT_EQ(t[4].pid, 100);
  EXPECT_EQ(t[4].role, "waiting_at_timeout");
  EXPECT_EQ(JobProcessLabel(t[0]), "rank 2 (pid 102)");

  // A plain hang: the primary is a hang dump, listed with the other hang dumps.
  ProcessFile hang;
  hang.timed_out = true;
  hang.primary = Rank(200, {}, {}, 5.0);
  hang.hang_dumps = {Rank(201, {}, {}, 5.0)};
  t = JobProcessTimeline(hang);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].role, "waiting_at_timeout");
  EXPECT_EQ(JobProcessLabel(t[1]), "pid 201");

  // One process: nothing to order.
  ProcessFile single;
  single.primary = Rank(300, {}, SIGSEGV, 1.0);
  EXPECT_TRUE(JobProcessTimeline(single).empty());
}

TEST(Report, RankAndStopTimeRoundTrip) {
  ProcessReport r = Rank(4242, 1, SIGSEGV, 0.2504);
  r.local_rank = 1;
  Json j = ToJson(r);
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["local_rank"], 1);
  EXPECT_DOUBLE_EQ(j["stopped_at_s"].get<double>(), 0.25);
  ProcessReport back = ProcessReportFromJson(j);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.local_rank, 1);
  EXPECT_DOUBLE_EQ(*back.stopped_at_s, 0.25);
  // Unknown stays absent; nonsense is not read.
  EXPECT_FALSE(ToJson(ProcessReport{}).contains("rank"));
  EXPECT_FALSE(ProcessReportFromJson(Json{{"rank", -2}, {"stopped_at_s", "soon"}}).rank.has_value());
}

}  // namespace
}  // namespace gputriage::core
