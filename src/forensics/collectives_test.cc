// PyTorch flight-recorder dumps of two real ranks (gloo, torch 2.11; tests/fixtures/pytorch/
// flight-recorder/SOURCE.md): read, compared, found beside a job, and made findings.
#include "forensics/collectives.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "forensics/torch_flight_recorder.h"

namespace gputriage::forensics {
namespace {

namespace fs = std::filesystem;

std::string Dump(const std::string& name) {
  return gputriage::testing::ReadFixture("pytorch/flight-recorder/" + name, {gputriage::testing::SourceLine::kKeep});
}

core::CollectiveReport Compare(const std::string& scenario) {
  std::vector<std::pair<core::CollectiveDump, core::FrDump>> dumps;
  for (int rank : {0, 1}) {
    std::string name = "gloo-2ranks-" + scenario + "-rank" + std::to_string(rank) + ".pkl";
    auto dump = ParseFlightRecorderDump(Dump(name), name);
    EXPECT_TRUE(dump.ok()) << dump.error().message;
    core::CollectiveDump d;
    d.rank = rank;
    d.file = name;
    dumps.push_back({d, dump.ok() ? *dump : core::FrDump{}});
  }
  return core::CompareCollectives(std::move(dumps));
}

// gloo keys pg_config by the group's name ("") and pg_status by its id ("0"): one group.
TEST(Collectives, GlooDumpIsOneGroupWithItsRanks) {
  auto dump = ParseFlightRecorderDump(Dump("gloo-2ranks-missing-rank0.pkl"), "rank0");
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  ASSERT_EQ(dump->groups.size(), 1u);
  EXPECT_EQ(dump->groups[0].id, "0");
  EXPECT_EQ(dump->groups[0].ranks, "[0, 1]");
  EXPECT_EQ(dump->groups[0].desc, "default_pg");
  EXPECT_EQ(dump->groups[0].last_enqueued_collective, 3);
  EXPECT_EQ(dump->groups[0].last_completed_collective, 2);
  ASSERT_EQ(dump->entries.size(), 3u);
  EXPECT_EQ(dump->entries[2].profiling_name, "gloo:all_reduce");
  EXPECT_FALSE(dump->entries[2].retired);
  EXPECT_EQ(dump->entries[2].frames.back().filename, "/tmp/fr_job.py");
}

TEST(Collectives, ARankThatNeverEnteredTheCollectiveTheOtherWaitsIn) {
  core::CollectiveReport r = Compare("missing");
  ASSERT_EQ(r.stalls.size(), 1u);
  const core::CollectiveStall& s = r.stalls[0];
  EXPECT_EQ(s.group, "0");
  EXPECT_EQ(s.group_desc, "default_pg");
  EXPECT_EQ(s.seq, 3);
  EXPECT_EQ(s.op, "gloo:all_reduce");
  EXPECT_EQ(s.input_sizes, (std::vector<std::vector<int64_t>>{{4}}));
  EXPECT_EQ(s.entered, std::vector<int>{0});
  EXPECT_EQ(s.missing, std::vector<int>{1});
  EXPECT_TRUE(r.mismatches.empty());
  ASSERT_EQ(r.pending.size(), 1u);  // rank 0's third all_reduce, waiting for rank 1
  EXPECT_EQ(r.pending[0].rank, 0);
  EXPECT_EQ(r.pending[0].seq, 3);
  ASSERT_EQ(r.dumps.size(), 2u);
  EXPECT_EQ(r.dumps[1].entries, 2u);
  EXPECT_EQ(r.dumps[1].last.size(), 2u);

  std::vector<core::Finding> f = CollectiveFindings(r);
  ASSERT_EQ(f.size(), 1u);  // the stall explains the pending one
  EXPECT_EQ(f[0].id, "collective.rank_never_entered");
  EXPECT_EQ(f[0].severity, core::Severity::kError);
  EXPECT_EQ(f[0].title, "rank 1 never entered all_reduce #3 of default_pg, which rank 0 entered");
  EXPECT_NE(f[0].detail.find("collective timeouts of rank 0 are a consequence"), std::string::npos) << f[0].detail;

  // collectives.json keeps everything.
  core::CollectiveReport back = core::CollectiveReportFromJson(core::ToJson(r));
  EXPECT_EQ(core::ToJson(back), core::ToJson(r));
}

TEST(Collectives, RanksThatDisagreeOnACollective) {
  core::CollectiveReport r = Compare("mismatch");
  EXPECT_TRUE(r.stalls.empty());  // both entered #3
  ASSERT_EQ(r.mismatches.size(), 1u);
  const core::CollectiveMismatch& m = r.mismatches[0];
  EXPECT_EQ(m.seq, 3);
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[0].op, "gloo:all_reduce");
  EXPECT_EQ(m.ranks[1].op, "gloo:broadcast");
  EXPECT_EQ(m.ranks[1].input_sizes, (std::vector<std::vector<int64_t>>{{8}}));
  std::vector<core::Finding> f = CollectiveFindings(r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "collective.mismatch");
  EXPECT_NE(f[0].detail.find("rank 0: gloo:all_reduce [[4]] Float; rank 1: gloo:broadcast [[8]] Float"),
            std::string::npos)
      << f[0].detail;
}

// One rank's real NCCL dump whose collectives all completed: nothing to say.
TEST(Collectives, OneCompletedRankIsQuiet) {
  auto dump = ParseFlightRecorderDump(Dump("nccl-1rank-no-stacks.pkl"), "rank0");
  ASSERT_TRUE(dump.ok());
  core::CollectiveDump d;
  d.rank = 0;
  core::CollectiveReport r = core::CompareCollectives({{d, *dump}});
  EXPECT_TRUE(r.stalls.empty());
  EXPECT_TRUE(r.mismatches.empty());
  EXPECT_TRUE(r.pending.empty());
  EXPECT_TRUE(CollectiveFindings(r).empty());
  EXPECT_EQ(r.dumps[0].comm_lib_version, "2.28.9");
  EXPECT_EQ(r.dumps[0].last.size(), core::kCollectiveLastEntries);
}

// The file PyTorch's NCCL watchdog itself wrote when all_reduce #4 timed out (one GPU, one rank).
TEST(Collectives, TheWatchdogsOwnDumpOfATimedOutCollective) {
  auto dump = ParseFlightRecorderDump(Dump("nccl-1rank-watchdog-timeout.pkl"), "trace_0");
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  core::CollectiveDump d;
  d.rank = 0;
  core::CollectiveReport r = core::CompareCollectives({{d, *dump}});
  EXPECT_TRUE(r.stalls.empty());
  ASSERT_EQ(r.pending.size(), 1u);
  EXPECT_EQ(r.pending[0].seq, 4);
  EXPECT_EQ(r.pending[0].op, "nccl:all_reduce");
  EXPECT_EQ(r.pending[0].state, "scheduled");
  EXPECT_EQ(r.pending[0].timeout_ms, 5000);
  ASSERT_EQ(r.dumps[0].groups.size(), 1u);
  EXPECT_EQ(r.dumps[0].groups[0].last_completed_collective, 3);
  std::vector<core::Finding> f = CollectiveFindings(r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "collective.not_completed");
  EXPECT_EQ(f[0].severity, core::Severity::kWarning);
  EXPECT_EQ(f[0].title,
            "all_reduce #4 of default_pg had not completed on rank 0 when PyTorch dumped its flight recorder");
  EXPECT_NE(f[0].detail.find("Only one rank's dump was found"), std::string::npos);
}

TEST(Collectives, PrefixAsPyTorchChoosesIt) {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(FlightRecorderPrefix(lookup), "/tmp/nccl_trace_rank_");
  EXPECT_FALSE(FlightRecorderDumpsOnTimeout(lookup));
  env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = "/scratch/old_";
  EXPECT_EQ(FlightRecorderPrefix(lookup), "/scratch/old_");
  env["TORCH_FR_DUMP_TEMP_FILE"] = "/scratch/fr_";
  EXPECT_EQ(FlightRecorderPrefix(lookup), "/scratch/fr_");
  env["TORCH_NCCL_DUMP_ON_TIMEOUT"] = "0";
  EXPECT_FALSE(FlightRecorderDumpsOnTimeout(lookup));
  env["TORCH_NCCL_DUMP_ON_TIMEOUT"] = "True";
  EXPECT_TRUE(FlightRecorderDumpsOnTimeout(lookup));
}

// The dumps a job wrote during the run: `<prefix><rank>`, newer than the job's start, regular
// files of this user; an older dump, a link, another name and a damaged dump are not compared.
TEST(Collectives, CollectsTheDumpsWrittenDuringTheRun) {
  gputriage::testing::TempDir dir;
  const std::string prefix = dir / "trace_";
  std::ofstream(prefix + "7", std::ios::binary) << Dump("nccl-1rank-no-stacks.pkl");  // another run's
  std::ofstream(prefix + "x1", std::ios::binary) << "not a rank";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto since = fs::file_time_type::clock::now();
  EXPECT_FALSE(CollectFlightRecorderDumps(prefix, since).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int rank : {0, 1}) {
    std::ofstream(prefix + std::to_string(rank), std::ios::binary)
        << Dump("gloo-2ranks-missing-rank" + std::to_string(rank) + ".pkl");
  }
  std::ofstream(prefix + "2", std::ios::binary) << "\x80\x02}q\x00";  // cut short
  ASSERT_EQ(::symlink("/etc/hostname", (prefix + "3").c_str()), 0);
  auto found = CollectFlightRecorderDumps(prefix, since);
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->report.dumps.size(), 3u);
  EXPECT_EQ(found->report.dumps[0].rank, 0);
  EXPECT_EQ(found->report.dumps[0].file, "fr_trace_rank_0");
  EXPECT_EQ(found->report.dumps[0].source, prefix + "0");
  EXPECT_FALSE(found->report.dumps[0].error);
  ASSERT_TRUE(found->report.dumps[2].error);
  EXPECT_NE(found->report.dumps[2].error->find(prefix + "2"), std::string::npos) << *found->report.dumps[2].error;
  ASSERT_EQ(found->files.size(), 3u);  // the damaged one is kept as it is, for whoever reads it next
  EXPECT_EQ(found->files[1].first, "fr_trace_rank_1");
  EXPECT_EQ(found->files[1].second, Dump("gloo-2ranks-missing-rank1.pkl"));
  ASSERT_EQ(found->problems.size(), 1u);
  EXPECT_NE(found->problems[0].find(prefix + "3: not taken: not a regular file"), std::string::npos)
      << found->problems[0];
  ASSERT_EQ(found->report.stalls.size(), 1u);
  EXPECT_EQ(found->report.stalls[0].missing, std::vector<int>{1});
}

}  // namespace
}  // namespace gputriage::forensics
