#include "forensics/torch_flight_recorder.h"

#include <gtest/gtest.h>

#include <string>

#include "capture_tree.h"

namespace gputriage::forensics {
namespace {

// Real dumps from torch 2.11 / NCCL 2.28.9 (tests/fixtures/pytorch/flight-recorder/SOURCE.md).
std::string Dump(const std::string& name) {
  return gputriage::testing::ReadFixture("pytorch/flight-recorder/" + name, {gputriage::testing::SourceLine::kKeep});
}

// The bytes of a literal, NULs included.
template <size_t N>
std::string Bytes(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

TEST(FlightRecorder, ReadsARealDumpWithStacks) {
  auto dump = ParseFlightRecorderDump(Dump("nccl-1rank-with-stacks.pkl"), "nccl_trace_rank_0");
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  EXPECT_EQ(dump->version, "2.10");
  EXPECT_EQ(dump->comm_lib_version, "2.28.9");
  ASSERT_EQ(dump->groups.size(), 1u);
  const FrGroup& g = dump->groups[0];
  EXPECT_EQ(g.id, "0");
  EXPECT_EQ(g.name, "0");
  EXPECT_EQ(g.desc, "default_pg");
  EXPECT_EQ(g.ranks, "[0]");
  EXPECT_EQ(g.last_enqueued_collective, 8);
  EXPECT_EQ(g.last_started_collective, -1);
  EXPECT_EQ(g.last_completed_collective, -1);
  ASSERT_EQ(dump->entries.size(), 8u);
  const FrEntry& e = dump->entries[0];
  EXPECT_EQ(e.record_id, 0);
  EXPECT_EQ(e.pg_id, 0);
  EXPECT_EQ(e.process_group, "0");
  EXPECT_EQ(e.process_group_desc, "default_pg");
  EXPECT_EQ(e.collective_seq_id, 1);
  EXPECT_EQ(e.p2p_seq_id, 0);
  EXPECT_EQ(e.op_id, 1);
  EXPECT_EQ(e.profiling_name, "nccl:all_reduce");
  EXPECT_EQ(e.thread_name, "python3");
  EXPECT_EQ(e.time_created_ns, 1796480333253916945);
  EXPECT_EQ(e.time_discovered_started_ns, std::nullopt);  // None in the dump
  EXPECT_EQ(e.time_discovered_completed_ns, 1796480333264268876);
  EXPECT_EQ(e.input_sizes, (std::vector<std::vector<int64_t>>{{1048576}}));
  EXPECT_EQ(e.output_sizes, (std::vector<std::vector<int64_t>>{{1048576}}));
  EXPECT_EQ(e.input_dtypes, (std::vector<std::string>{"Float"}));
  EXPECT_EQ(e.state, "completed");
  EXPECT_FALSE(e.retired);
  EXPECT_EQ(e.timeout_ms, 600000);
  EXPECT_FALSE(e.is_p2p);
  ASSERT_EQ(e.frames.size(), 3u);
  EXPECT_EQ(e.frames[0].name, "all_reduce");
  EXPECT_EQ(e.frames[0].filename,
            "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py");
  EXPECT_EQ(e.frames[0].line, 3068);
  EXPECT_EQ(e.frames[2].name, "<module>");
  // The job's collectives in order: 5 all_reduce, then broadcast, all_gather and the barrier's.
  std::vector<std::string> names;
  for (const FrEntry& x : dump->entries) names.push_back(x.profiling_name);
  EXPECT_EQ(names[5], "nccl:broadcast");
  EXPECT_EQ(dump->entries.back().collective_seq_id, 8);
}

TEST(FlightRecorder, ReadsARealDumpWithoutStacks) {
  auto dump = ParseFlightRecorderDump(Dump("nccl-1rank-no-stacks.pkl"), "nccl_trace_rank_0");
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  ASSERT_EQ(dump->entries.size(), 8u);
  EXPECT_TRUE(dump->entries[0].frames.empty());
  EXPECT_TRUE(dump->entries[0].retired);
  EXPECT_EQ(dump->groups[0].last_completed_collective, 8);
}

// Every cut of a real dump is an error naming the input and an offset; none crashes or passes.
TEST(FlightRecorder, EveryTruncationIsAnErrorNamingTheInput) {
  std::string bytes = Dump("nccl-1rank-with-stacks.pkl");
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto dump = ParseFlightRecorderDump(std::string_view(bytes).substr(0, n), "cut.pkl");
    ASSERT_FALSE(dump.ok()) << n;
    EXPECT_NE(dump.error().message.find("cut.pkl: "), std::string::npos) << dump.error().message;
  }
}

// A pickle that names code (GLOBAL os.system, then REDUCE) is refused at the GLOBAL: nothing is
// looked up or run. One that appends a list to itself through the memo is read without looping.
TEST(FlightRecorder, CodeIsNeverRunAndSelfReferenceDoesNotLoop) {
  std::string global = Bytes(
      "\x80\x02"
      "cos\nsystem\n"
      "q\x00"
      "X\x04\x00\x00\x00"
      "true"
      "q\x01\x85R.");
  auto refused = ParseFlightRecorderDump(global, "evil.pkl");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("offset 2: opcode 0x63 (GLOBAL)"), std::string::npos)
      << refused.error().message;
  // {'entries': L}, where L holds itself and the dict.
  std::string cycle = Bytes(
      "\x80\x02}q\x00(X\x07\x00\x00\x00"
      "entries"
      "]q\x01(h\x01h\x00"
      "eu.");
  auto read = ParseFlightRecorderDump(cycle, "cycle.pkl");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->entries.size(), 2u);  // two values that are not entry dicts: nothing read from them
  EXPECT_TRUE(read->entries[0].profiling_name.empty());
}

TEST(FlightRecorder, OtherPicklesAreNotDumps) {
  auto list = ParseFlightRecorderDump(Bytes("\x80\x02]q\x00."), "list.pkl");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.error().message.find("holds no dict"), std::string::npos);
  auto dict = ParseFlightRecorderDump(Bytes("\x80\x02}q\x00."), "dict.pkl");
  ASSERT_FALSE(dict.ok());
  EXPECT_NE(dict.error().message.find("without the flight recorder's entries"), std::string::npos);
  auto wide = ParseFlightRecorderDump(Bytes("\x80\x02\x8a\x09"
                                            "123456789."),
                                      "wide.pkl");
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().message.find("wider than 64 bits"), std::string::npos);
}

}  // namespace
}  // namespace gputriage::forensics
