#include "store/snapshot_arg.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "store/test_util.h"

namespace gputriage::store {
namespace {

using core::Json;
using testing::TempDir;

Json SnapshotJson(const std::string& hostname, const std::string& collected_at) {
  return Json{{"schema_version", 1},
              {"tool_version", "0.1.0"},
              {"collected_at", collected_at},
              {"host", {{"hostname", hostname}}},
              {"gpus", Json::array()}};
}

std::string WriteFile(const TempDir& tmp, const std::string& name, const std::string& text) {
  gputriage::testing::WriteFile(tmp.path(), name, text);
  return tmp / name;
}

class LoadSnapshotArgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SnapshotStore::Open(tmp_ / "snapshots.db");
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_.emplace(std::move(store).value());
  }

  // Saves three snapshots, oldest first; returns their ids.
  std::vector<int64_t> SaveThree() {
    std::vector<int64_t> ids;
    for (int day = 1; day <= 3; ++day) {
      auto id = store_->Save(core::SnapshotFromJsonUnchecked(
          SnapshotJson(fmt::format("day-{}", day), fmt::format("2026-12-0{}T08:00:00Z", day))));
      EXPECT_TRUE(id.ok());
      ids.push_back(id.value_or(-1));
    }
    return ids;
  }

  std::string Hostname(const core::Result<core::Snapshot>& snapshot) {
    if (!snapshot.ok()) return "error: " + snapshot.error().message;
    return snapshot->host->hostname.value_or("?");
  }

  TempDir tmp_;
  std::optional<SnapshotStore> store_;
};

TEST_F(LoadSnapshotArgTest, ResolvesIdsLatestAndPrevious) {
  std::vector<int64_t> ids = SaveThree();
  EXPECT_EQ(Hostname(LoadSnapshotArg(&*store_, std::to_string(ids[0]))), "day-1");
  EXPECT_EQ(Hostname(LoadSnapshotArg(&*store_, std::to_string(ids[1]))), "day-2");
  EXPECT_EQ(Hostname(LoadSnapshotArg(&*store_, "latest")), "day-3");
  EXPECT_EQ(Hostname(LoadSnapshotArg(&*store_, "previous")), "day-2");
}

TEST_F(LoadSnapshotArgTest, UnknownIdNamesTheDatabase) {
  SaveThree();
  auto snapshot = LoadSnapshotArg(&*store_, "42");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, "no snapshot with id 42 in " + store_->path());
}

TEST_F(LoadSnapshotArgTest, PreviousNeedsTwoSnapshots) {
  ASSERT_TRUE(store_->Save(core::SnapshotFromJsonUnchecked(SnapshotJson("only", "2026-12-01T08:00:00Z"))).ok());
  auto snapshot = LoadSnapshotArg(&*store_, "previous");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, "'previous' needs two stored snapshots; " + store_->path() + " has 1");
}

TEST_F(LoadSnapshotArgTest, StoredSnapshotsNeedAStore) {
  auto snapshot = LoadSnapshotArg(nullptr, "latest");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, "'latest' names a stored snapshot, but no snapshot database is open");
}

TEST_F(LoadSnapshotArgTest, StoredSnapshotWithANewerSchemaIsRefused) {
  Json future = SnapshotJson("future", "2026-12-05T08:00:00Z");
  future["schema_version"] = core::kSnapshotSchemaVersion + 1;
  auto id = store_->Save(core::SnapshotFromJsonUnchecked(future));
  ASSERT_TRUE(id.ok());
  auto snapshot = LoadSnapshotArg(&*store_, "latest");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message,
            fmt::format("{} (snapshot {}): snapshot schema_version {} is newer than this gputriage "
                        "(knows {}); upgrade gputriage",
                        store_->path(), *id, core::kSnapshotSchemaVersion + 1, core::kSnapshotSchemaVersion));
}

TEST_F(LoadSnapshotArgTest, ReadsAJsonFile) {
  std::string path = WriteFile(tmp_, "node-a.json", SnapshotJson("from-file", "x").dump(2));
  EXPECT_EQ(Hostname(LoadSnapshotArg(&*store_, path)), "from-file");
  EXPECT_EQ(Hostname(LoadSnapshotArg(nullptr, path)), "from-file");
}

TEST_F(LoadSnapshotArgTest, MissingFileNamesIt) {
  std::string path = tmp_ / "nope.json";
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, path + ": No such file or directory");
}

// A file over the 32 MiB limit is refused from its size (a sparse file: nothing is read).
// Failed before: the limit was 1 GiB, so a 1 GiB file was read and parsed (2 GB of memory).
TEST_F(LoadSnapshotArgTest, AFileOverTheLimitIsNotASnapshot) {
  std::string path = WriteFile(tmp_, "huge.json", "{}");
  ASSERT_EQ(::truncate(path.c_str(), (off_t{32} << 20) + 1), 0);
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message,
            path + ": larger than 33554432 bytes; not a snapshot (gputriage writes snapshots of a few MiB at most)");
}

// Failed before: /dev/zero was read up to 1 GiB (2 GB of memory, 6 s) before it was refused.
TEST_F(LoadSnapshotArgTest, AnEndlessDeviceIsReadNoFurtherThanTheLimit) {
  auto snapshot = LoadSnapshotArg(&*store_, "/dev/zero");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message,
            "/dev/zero: larger than 33554432 bytes; not a snapshot (gputriage writes snapshots of a few MiB at most)");
}

// Failed before: the nesting crashed `snapshot show --json` (stack overflow in the recursive
// walk over the raw python_probe member); now it is refused when parsed.
TEST_F(LoadSnapshotArgTest, DeeplyNestedJsonIsRefusedNamingTheFile) {
  std::string deep = R"({"schema_version": 1, "software": {"python_probe": )" + std::string(100000, '[') +
                     std::string(100000, ']') + "}}";
  std::string path = WriteFile(tmp_, "deep.json", deep);
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, path +
                                          ": JSON nested deeper than 256 levels at line 1, column 306 (byte 306); not "
                                          "a file gputriage writes");
}

TEST_F(LoadSnapshotArgTest, ANumberOrAnEmptyObjectIsNotASnapshot) {
  std::string number = WriteFile(tmp_, "n.json", "123");
  EXPECT_EQ(LoadSnapshotArg(&*store_, number).error().message,
            number + ": not a gputriage snapshot (a JSON number, not an object)");
  std::string empty = WriteFile(tmp_, "e.json", "{}");
  EXPECT_EQ(LoadSnapshotArg(&*store_, empty).error().message, empty + ": not a gputriage snapshot (no schema_version)");
}

TEST_F(LoadSnapshotArgTest, BadJsonNamesFileAndPosition) {
  std::string path = WriteFile(tmp_, "broken.json", "{\n  \"schema_version\": 1,\n  \"gpus\": [,]\n}\n");
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, path +
                                          ": invalid JSON at line 3, column 12 (byte 37): syntax error while parsing "
                                          "value - unexpected ','; expected '[', '{', or a literal");
}

TEST_F(LoadSnapshotArgTest, TruncatedJsonNamesTheEnd) {
  std::string path = WriteFile(tmp_, "truncated.json", "{\"schema_version\": 1, \"gpus\": [");
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, path +
                                          ": invalid JSON at line 1, column 32 (byte 32): syntax error while parsing "
                                          "value - unexpected end of input; expected '[', '{', or a literal");
}

TEST_F(LoadSnapshotArgTest, JsonWithoutSchemaVersionIsRefused) {
  std::string path = WriteFile(tmp_, "findings.json", R"({"findings": []})");
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, path + ": not a gputriage snapshot (no schema_version)");
}

TEST_F(LoadSnapshotArgTest, JsonThatIsNotAnObjectIsRefused) {
  std::string path = WriteFile(tmp_, "list.json", "[1, 2]");
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, path + ": not a gputriage snapshot (a JSON array, not an object)");
}

TEST_F(LoadSnapshotArgTest, NewerSchemaVersionInAFileIsRefused) {
  std::string path = WriteFile(tmp_, "future.json", R"({"schema_version": 2, "gpus": []})");
  auto snapshot = LoadSnapshotArg(&*store_, path);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().message, path +
                                          ": snapshot schema_version 2 is newer than this gputriage (knows 1); upgrade "
                                          "gputriage");
}

TEST(CheckSnapshotVersion, RejectsOddVersions) {
  EXPECT_TRUE(core::CheckSnapshotVersion(Json{{"schema_version", 1}}, "s").ok());
  EXPECT_EQ(core::CheckSnapshotVersion(Json{{"schema_version", "1"}}, "s").error().message,
            "s: not a gputriage snapshot (schema_version is a string, not an integer)");
  EXPECT_EQ(core::CheckSnapshotVersion(Json{{"schema_version", 0}}, "s").error().message,
            "s: snapshot schema_version 0 is not one gputriage writes");
  EXPECT_EQ(core::CheckSnapshotVersion(Json{{"schema_version", 18446744073709551615u}}, "s").error().message,
            "s: snapshot schema_version 18446744073709551615 is newer than this gputriage "
            "(knows 1); upgrade gputriage");
}

TEST(ParseSnapshotJson, ParsesFromMemory) {
  auto snapshot = ParseSnapshotJson(R"({"schema_version": 1, "gpus": []})", "mem");
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  EXPECT_TRUE(snapshot->gpus.has_value());
  auto empty = ParseSnapshotJson("", "mem");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message,
            "mem: invalid JSON at line 1, column 1 (byte 1): syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
}

TEST(LoadSnapshotArgFromDefaultStore, ReadsTheDataHomesDatabase) {
  TempDir home;
  testing::ScopedEnv env("GPUTRIAGE_HOME", home.path());
  auto store = SnapshotStore::OpenDefault();
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->path(), home / "snapshots.db");
  auto id = store->Save(core::SnapshotFromJsonUnchecked(SnapshotJson("node-7", "2026-12-01T08:00:00Z")));
  ASSERT_TRUE(id.ok());
  auto latest = LoadSnapshotArgFromDefaultStore("latest");
  ASSERT_TRUE(latest.ok()) << latest.error().message;
  EXPECT_EQ(latest->host->hostname, "node-7");
  EXPECT_EQ(LoadSnapshotArgFromDefaultStore("99").error().message,
            "no snapshot with id 99 in " + home / "snapshots.db");
}

TEST(LoadSnapshotArgFromDefaultStore, WithoutADatabaseOnlyFilesResolve) {
  TempDir tmp;
  std::string not_a_directory = WriteFile(tmp, "home", "a file");
  testing::ScopedEnv env("GPUTRIAGE_HOME", not_a_directory);
  EXPECT_FALSE(SnapshotStore::OpenDefault().ok());
  EXPECT_EQ(LoadSnapshotArgFromDefaultStore("latest").error().message,
            "'latest' names a stored snapshot, but no snapshot database is open");
  std::string file = WriteFile(tmp, "s.json", SnapshotJson("node-8", "2026-12-01T08:00:00Z").dump());
  auto loaded = LoadSnapshotArgFromDefaultStore(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->host->hostname, "node-8");
}

}  // namespace
}  // namespace gputriage::store
