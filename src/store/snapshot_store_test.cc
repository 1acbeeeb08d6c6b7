#include "store/snapshot_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <latch>
#include <set>
#include <thread>

#include "store/test_util.h"

namespace gputriage::store {
namespace {

using core::Json;
using testing::TempDir;

Json SnapshotJson(const std::string& hostname, const std::string& collected_at, int gpus) {
  Json snapshot = {
      {"schema_version", 1},
      {"tool_version", "0.1.0"},
      {"collected_at", collected_at},
      {"collection_ms", 83.1},
      {"root", nullptr},
      {"host", {{"hostname", hostname}, {"kernel", {{"release", "6.8.0-45-generic"}}}}},
      {"gpus", Json::array()},
      {"findings", Json::array()},
  };
  for (int i = 0; i < gpus; ++i) {
    snapshot["gpus"].push_back({{"vendor", "amd"},
                                {"pci_address", fmt::format("0000:{:02x}:00.0", 0xc1 + i)},
                                {"name", "AMD Instinct MI300X"}});
  }
  return snapshot;
}

core::Snapshot Snapshot(const std::string& hostname, const std::string& collected_at, int gpus) {
  return core::SnapshotFromJsonUnchecked(SnapshotJson(hostname, collected_at, gpus));
}

// What was stored, as JSON, without the id the store adds when loading.
Json Stored(core::Snapshot snapshot) {
  snapshot.id.reset();
  return core::ToJson(snapshot);
}

// Runs one statement on a separate raw connection and returns the first column of its first row
// as text ("" when there is none): the store's own view is not trusted to check itself.
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW &&
      sqlite3_column_text(stmt, 0) != nullptr) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  } else {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

// Runs statements that return no rows on a separate raw connection.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << sql << ": " << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST(SnapshotStore, RoundTrip) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->path(), path);

  core::Snapshot older = Snapshot("node-a", "2026-12-01T08:00:00Z", 1);
  core::Snapshot newer = Snapshot("node-b", "2026-12-02T13:30:00Z", 2);
  newer.findings.push_back(core::Finding{.id = "pci.link_downtrained"});
  // Saved newest first, so the order of List comes from created_at, not from the ids.
  auto newer_id = store->Save(newer);
  ASSERT_TRUE(newer_id.ok()) << newer_id.error().message;
  auto older_id = store->Save(older);
  ASSERT_TRUE(older_id.ok()) << older_id.error().message;
  EXPECT_GT(*older_id, *newer_id);

  auto rows = store->List(10);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0], (SnapshotRow{*newer_id, "2026-12-02T13:30:00Z", "node-b", 2,
                                     "2x AMD Instinct MI300X; kernel 6.8.0-45-generic; 1 finding"}));
  EXPECT_EQ((*rows)[1], (SnapshotRow{*older_id, "2026-12-01T08:00:00Z", "node-a", 1,
                                     "1x AMD Instinct MI300X; kernel 6.8.0-45-generic"}));

  auto limited = store->List(1);
  ASSERT_TRUE(limited.ok());
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ((*limited)[0].id, *newer_id);

  auto loaded = store->Load(*older_id);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(Stored(*loaded), core::ToJson(older));
  EXPECT_EQ(loaded->id, *older_id);

  auto latest = store->Latest();
  ASSERT_TRUE(latest.ok()) << latest.error().message;
  EXPECT_EQ(Stored(*latest), core::ToJson(newer));

  EXPECT_EQ(RawQuery(path, fmt::format("SELECT tool_version FROM snapshots WHERE id = {}", *older_id)), "0.1.0");
}

TEST(SnapshotStore, SurvivesReopening) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  int64_t id = 0;
  {
    auto store = SnapshotStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto saved = store->Save(Snapshot("node-a", "2026-12-01T08:00:00Z", 1));
    ASSERT_TRUE(saved.ok());
    id = *saved;
  }
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto loaded = store->Load(id);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->host->hostname, "node-a");
}

TEST(SnapshotStore, LoadOfAMissingIdNamesIdAndDatabase) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto loaded = store->Load(42);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message, "no snapshot with id 42 in " + path);
}

TEST(SnapshotStore, LatestOfAnEmptyStoreFails) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto latest = store->Latest();
  ASSERT_FALSE(latest.ok());
  EXPECT_EQ(latest.error().message, "no snapshots in " + path);
  auto rows = store->List(0);
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());
}

TEST(SnapshotStore, UnknownFieldsStayNull) {
  TempDir tmp;
  auto store = SnapshotStore::Open(tmp / "snapshots.db");
  ASSERT_TRUE(store.ok()) << store.error().message;
  // No host, no gpus, no collected_at: hostname and gpu_count are unknown, not "" and 0.
  auto id = store->Save(core::SnapshotFromJsonUnchecked(Json{{"schema_version", 1}}));
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto rows = store->List(0);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].hostname, std::nullopt);
  EXPECT_EQ((*rows)[0].gpu_count, std::nullopt);
  EXPECT_EQ((*rows)[0].summary, "GPUs unknown");
  // created_at falls back to the time of saving.
  EXPECT_TRUE(NormalizeIsoUtc((*rows)[0].created_at).has_value()) << (*rows)[0].created_at;
  EXPECT_EQ(NormalizeIsoUtc((*rows)[0].created_at), (*rows)[0].created_at);
}

TEST(SnapshotStore, SaveReplacesInvalidUtf8InsteadOfThrowing) {
  TempDir tmp;
  auto store = SnapshotStore::Open(tmp / "snapshots.db");
  ASSERT_TRUE(store.ok()) << store.error().message;
  core::Snapshot snapshot = Snapshot("node-\xff", "2026-12-01T08:00:00Z", 0);
  auto id = store->Save(snapshot);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto loaded = store->Load(*id);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->host->hostname, "node-\xEF\xBF\xBD");
}

TEST(SnapshotStore, UsesWalJournalMode) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  // WAL is a property of the file, so a second connection sees it.
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
}

TEST(SnapshotStore, MigratesAnEmptyFile) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  std::ofstream(path).close();
  ASSERT_EQ(std::filesystem::file_size(path), 0u);
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "2");
  EXPECT_EQ(SnapshotStore::KnownSchemaVersion(), 2);
  EXPECT_EQ(RawQuery(path, "SELECT group_concat(name, ',') FROM pragma_table_info('snapshots')"),
            "id,created_at,hostname,root,tool_version,gpu_count,summary,json");
  EXPECT_EQ(RawQuery(path,
                     "SELECT name FROM sqlite_master WHERE type = 'index' AND "
                     "tbl_name = 'snapshots'"),
            "snapshots_created_at");
}

TEST(SnapshotStore, UpgradesAVersion1DatabaseAndKeepsItsSnapshots) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  // A database as the first release wrote it (schema 1: no bundles table).
  RawExec(path,
          "CREATE TABLE snapshots (id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, hostname TEXT,"
          " root TEXT, tool_version TEXT, gpu_count INTEGER, summary TEXT NOT NULL DEFAULT '',"
          " json TEXT NOT NULL);"
          "INSERT INTO snapshots (created_at, json) VALUES ('2026-11-01T00:00:00Z', '{}');"
          "PRAGMA user_version = 1");
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "2");
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM snapshots"), "1");
  BundleRow row;
  row.created_at = "2026-12-02T10:00:00Z";
  row.path = "/tmp/b1";
  row.command = "./train.py";
  row.exit_status = 139;
  row.signal = "SIGSEGV";
  row.kind = "null-dereference";
  row.signature = "SIGSEGV/null-dereference f g";
  row.summary = "null pointer dereference";
  auto id = store->SaveBundle(row);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto rows = store->ListBundles(0);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  row.id = *id;
  EXPECT_EQ(rows->front(), row);
}

TEST(SnapshotStore, RefusesANewerSchemaVersion) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  RawExec(path, "CREATE TABLE future (x); PRAGMA user_version = 7");
  ASSERT_EQ(RawQuery(path, "PRAGMA user_version"), "7");
  auto store = SnapshotStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message,
            path + ": schema version 7 is newer than this gputriage (knows 2); upgrade gputriage");
  // Refusing must not have touched the schema.
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "7");
}

TEST(SnapshotStore, RefusesAFileThatIsNotADatabase) {
  TempDir tmp;
  std::string path = tmp / "notes.txt";
  {
    std::ofstream out(path);
    for (int i = 0; i < 200; ++i) out << "this is a text file, not an SQLite database\n";
  }
  auto size_before = std::filesystem::file_size(path);
  auto store = SnapshotStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, path + ": not an SQLite database (file is not a database)");
  EXPECT_EQ(std::filesystem::file_size(path), size_before);
}

TEST(SnapshotStore, OpenInAMissingDirectoryNamesThePath) {
  TempDir tmp;
  std::string path = tmp / "missing/snapshots.db";
  auto store = SnapshotStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message, path + ": cannot create: No such file or directory");
}

constexpr int kWritersSaves = 40;

// Opens its own connection (racing the other writer through creation and migration too) and
// saves kWritersSaves snapshots; returns how many saves failed, with the first error.
int WriteMany(const std::string& path, const std::string& host, std::string* first_error) {
  auto store = SnapshotStore::Open(path);
  if (!store.ok()) {
    *first_error = store.error().message;
    return kWritersSaves;
  }
  int failures = 0;
  for (int i = 0; i < kWritersSaves; ++i) {
    auto id = store->Save(Snapshot(host, fmt::format("2026-12-02T13:{:02}:00Z", i), 8));
    if (!id.ok()) {
      if (failures++ == 0) *first_error = id.error().message;
    }
  }
  return failures;
}

TEST(SnapshotStore, ConcurrentWritersFromTwoThreadsAllSucceed) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  std::latch start(2);
  int failures[2] = {0, 0};
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      failures[t] = WriteMany(path, fmt::format("thread-{}", t), &errors[t]);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures[0], 0) << errors[0];
  EXPECT_EQ(failures[1], 0) << errors[1];
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto rows = store->List(0);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u * kWritersSaves);
  std::set<int64_t> ids;
  for (const SnapshotRow& row : *rows) ids.insert(row.id);
  EXPECT_EQ(ids.size(), 2u * kWritersSaves);
}

TEST(SnapshotStore, ConcurrentWritersFromTwoProcessesAllSucceed) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  // A pipe as a start gate, so both children hit the fresh file at the same moment.
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = ::fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0) {
      ::close(gate[1]);
      char byte;
      while (::read(gate[0], &byte, 1) < 0) {
      }
      std::string error;
      int failures = WriteMany(path, fmt::format("process-{}", c), &error);
      if (failures != 0) std::fprintf(stderr, "child %d: %d failures: %s\n", c, failures, error.c_str());
      ::_exit(failures == 0 ? 0 : 1);
    }
  }
  ::close(gate[0]);
  ::close(gate[1]);  // EOF releases both children
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM snapshots"), std::to_string(2 * kWritersSaves));
}

TEST(NormalizeIsoUtc, AcceptsZonesAndFractions) {
  EXPECT_EQ(NormalizeIsoUtc("2026-12-02T13:30:00Z"), "2026-12-02T13:30:00Z");
  EXPECT_EQ(NormalizeIsoUtc("2026-12-02T13:30:00.123456Z"), "2026-12-02T13:30:00Z");
  EXPECT_EQ(NormalizeIsoUtc("2026-12-02T14:30:00+01:00"), "2026-12-02T13:30:00Z");
  EXPECT_EQ(NormalizeIsoUtc("2026-12-01T23:30:00-0500"), "2026-12-02T04:30:00Z");
  EXPECT_EQ(NormalizeIsoUtc("2026-12-02 13:30:00"), "2026-12-02T13:30:00Z");
}

TEST(NormalizeIsoUtc, RejectsOtherText) {
  EXPECT_EQ(NormalizeIsoUtc(""), std::nullopt);
  EXPECT_EQ(NormalizeIsoUtc("yesterday"), std::nullopt);
  EXPECT_EQ(NormalizeIsoUtc("2026-13-02T13:30:00Z"), std::nullopt);
  EXPECT_EQ(NormalizeIsoUtc("2026-12-02T13:30:00Zjunk"), std::nullopt);
  EXPECT_EQ(NormalizeIsoUtc("2026-12-02T13:30"), std::nullopt);
}

TEST(SummarizeSnapshot, CountsGpusByName) {
  Json snapshot = SnapshotJson("node", "2026-12-02T13:30:00Z", 2);
  snapshot["gpus"].push_back({{"vendor", "nvidia"}, {"pci_name", "GH100 [H100 SXM5 80GB]"}});
  EXPECT_EQ(SummarizeSnapshot(core::SnapshotFromJsonUnchecked(snapshot)),
            "2x AMD Instinct MI300X, 1x GH100 [H100 SXM5 80GB]; kernel 6.8.0-45-generic");
  snapshot["gpus"] = Json::array();
  snapshot["host"] = "garbage";
  EXPECT_EQ(SummarizeSnapshot(core::SnapshotFromJsonUnchecked(snapshot)), "no GPUs");
}

TEST(SnapshotRowsToJson, WritesUnknownsAsNull) {
  std::vector<SnapshotRow> rows = {{2, "2026-12-02T10:00:00Z", "node-1", 8, "8x NVIDIA H200"},
                                   {1, "2026-12-01T10:00:00Z", std::nullopt, std::nullopt, ""}};
  EXPECT_EQ(SnapshotRowsToJson(rows).dump(),
            R"({"snapshots":[{"created_at":"2026-12-02T10:00:00Z","gpu_count":8,"hostname":"node-1","id":2,)"
            R"("summary":"8x NVIDIA H200"},{"created_at":"2026-12-01T10:00:00Z","gpu_count":null,"hostname":null,)"
            R"("id":1,"summary":""}]})");
  EXPECT_EQ(SnapshotRowsToJson({}).dump(), R"({"snapshots":[]})");
}

TEST(IndexBundleInDefaultStore, SavesIntoTheDataHomesDatabase) {
  TempDir home;
  testing::ScopedEnv env("GPUTRIAGE_HOME", home.path());
  BundleRow row;
  row.created_at = "2026-12-02T10:00:00Z";
  row.path = "/tmp/b1";
  row.signature = "SIGSEGV/null-dereference f g";
  auto id = IndexBundleInDefaultStore(row);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto store = SnapshotStore::Open(home / "snapshots.db");
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(store->CountBundlesWithSignature(*row.signature).value_or(-1), 1);

  TempDir tmp;
  std::ofstream(tmp / "file") << "not a directory";
  testing::ScopedEnv broken("GPUTRIAGE_HOME", tmp / "file");
  EXPECT_FALSE(IndexBundleInDefaultStore(row).ok());
}

}  // namespace
}  // namespace gputriage::store
