#include "store/snapshot_store.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <thread>
#include <utility>

#include "core/json_parse.h"
#include "core/redact.h"
#include "core/text.h"
#include "store/data_home.h"
#include "store/sqlite.h"

namespace gputriage::store {
namespace {

using core::Json;
using core::MakeError;
using core::Result;

/// One schema step: applying `sql` to a database at version - 1 brings it to `version`.
struct Migration {
  int version;
  const char* sql;
};

// Append only: a released migration is never edited, a change is a new entry.
constexpr Migration kMigrations[] = {
    {1,
     "CREATE TABLE snapshots ("
     "  id INTEGER PRIMARY KEY,"
     "  created_at TEXT NOT NULL,"
     "  hostname TEXT,"
     "  root TEXT,"
     "  tool_version TEXT,"
     "  gpu_count INTEGER,"
     "  summary TEXT NOT NULL DEFAULT '',"
     "  json TEXT NOT NULL"
     ");"
     "CREATE INDEX snapshots_created_at ON snapshots(created_at);"},
    {2,
     "CREATE TABLE bundles ("
     "  id INTEGER PRIMARY KEY,"
     "  created_at TEXT NOT NULL,"
     "  path TEXT NOT NULL,"
     "  command TEXT NOT NULL,"
     "  exit_status INTEGER,"
     "  signal TEXT,"
     "  kind TEXT,"
     "  category TEXT,"
     "  signature TEXT,"
     "  summary TEXT NOT NULL DEFAULT ''"
     ");"
     "CREATE INDEX bundles_created_at ON bundles(created_at);"
     "CREATE INDEX bundles_signature ON bundles(signature);"},
};

Result<int64_t> ReadUserVersion(const sqlite::Connection& connection) {
  GT_ASSIGN_OR_RETURN(auto statement, sqlite::Statement::Prepare(connection, "PRAGMA user_version"));
  GT_ASSIGN_OR_RETURN(bool row, statement.Step("cannot read the schema version"));
  if (!row) return MakeError("{}: PRAGMA user_version returned no row", connection.path());
  return statement.ColumnInt64(0);
}

Result<void> CheckNotNewer(const sqlite::Connection& connection, int64_t version) {
  if (version > SnapshotStore::KnownSchemaVersion()) {
    return MakeError(
        "{}: schema version {} is newer than this gputriage (knows {}); upgrade "
        "gputriage",
        connection.path(), version, SnapshotStore::KnownSchemaVersion());
  }
  if (version < 0) {
    return MakeError("{}: schema version {} is not one gputriage wrote", connection.path(), version);
  }
  return {};
}

Result<std::string> TryEnableWal(const sqlite::Connection& connection, int* code) {
  auto statement = sqlite::Statement::Prepare(connection, "PRAGMA journal_mode=WAL");
  if (!statement.ok()) {
    *code = sqlite3_errcode(connection.get());
    return statement.error();
  }
  Result<bool> row = statement->Step("cannot switch to WAL journal mode");
  if (!row.ok()) {
    *code = sqlite3_errcode(connection.get());
    return row.error();
  }
  return *row ? statement->ColumnText(0).value_or("") : std::string();
}

// Switching to WAL needs an exclusive lock for a moment; when another connection holds the
// database, SQLite can answer SQLITE_BUSY without consulting the busy handler, so retry for
// as long as the busy timeout would have waited. Returns the journal mode now in effect.
Result<std::string> EnableWal(const sqlite::Connection& connection) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(sqlite::kBusyTimeoutMs);
  while (true) {
    int code = SQLITE_OK;
    Result<std::string> mode = TryEnableWal(connection, &code);
    bool busy = (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED;
    if (mode.ok() || !busy || std::chrono::steady_clock::now() >= deadline) return mode;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Result<void> Migrate(sqlite::Connection* connection) {
  GT_ASSIGN_OR_RETURN(int64_t version, ReadUserVersion(*connection));
  Result<void> checked = CheckNotNewer(*connection, version);
  if (!checked.ok()) return checked;
  if (version == SnapshotStore::KnownSchemaVersion()) return {};

  GT_ASSIGN_OR_RETURN(auto transaction, sqlite::Transaction::Begin(connection));
  // Another process may have migrated while we waited for the write lock.
  GT_ASSIGN_OR_RETURN(version, ReadUserVersion(*connection));
  checked = CheckNotNewer(*connection, version);
  if (!checked.ok()) return checked;
  for (const Migration& migration : kMigrations) {
    if (migration.version <= version) continue;
    Result<void> applied =
        connection->Exec(migration.sql, fmt::format("cannot migrate to schema version {}", migration.version));
    if (!applied.ok()) return applied;
    applied = connection->Exec(fmt::format("PRAGMA user_version = {}", migration.version),
                               "cannot record the schema version");
    if (!applied.ok()) return applied;
  }
  return transaction.Commit();
}

std::string FormatUtc(std::time_t seconds) {
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string NowUtc() { return FormatUtc(std::time(nullptr)); }

// Reads `count` decimal digits at `text[*pos]`, advancing `pos`.
std::optional<int> Digits(std::string_view text, size_t* pos, size_t count) {
  if (*pos + count > text.size()) return std::nullopt;
  int value = 0;
  for (size_t i = 0; i < count; ++i) {
    char c = text[*pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  *pos += count;
  return value;
}

bool Expect(std::string_view text, size_t* pos, char c) {
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

// True when the first statement on a read-only `connection` to `path` failed because SQLite
// could not create the WAL index (-shm) next to a WAL database (a directory the reader cannot
// write), and no -wal file exists: then the database file holds every committed transaction
// and reading it as an immutable file is exact.
bool ReadableOnlyAsImmutable(const sqlite::Connection& connection, const std::string& path) {
  int code = sqlite3_extended_errcode(connection.get()) & 0xff;
  if (code != SQLITE_READONLY && code != SQLITE_CANTOPEN) return false;
  struct stat st {};
  return ::stat((path + "-wal").c_str(), &st) != 0 && errno == ENOENT;
}

std::string ShortGpuName(const core::Gpu& gpu) {
  if (gpu.name && !gpu.name->empty()) return *gpu.name;
  if (gpu.pci_name && !gpu.pci_name->empty()) return *gpu.pci_name;
  if (gpu.vendor && !gpu.vendor->empty()) {
    return gpu.device_id ? fmt::format("{} GPU {}", *gpu.vendor, *gpu.device_id) : *gpu.vendor + " GPU";
  }
  return "unknown GPU";
}

}  // namespace

int SnapshotStore::KnownSchemaVersion() { return std::end(kMigrations)[-1].version; }

std::optional<std::string> NormalizeIsoUtc(std::string_view text) {
  text = core::Trim(text);
  size_t pos = 0;
  auto year = Digits(text, &pos, 4);
  if (!year || !Expect(text, &pos, '-')) return std::nullopt;
  auto month = Digits(text, &pos, 2);
  if (!month || !Expect(text, &pos, '-')) return std::nullopt;
  auto day = Digits(text, &pos, 2);
  if (!day || pos >= text.size() || (text[pos] != 'T' && text[pos] != ' ')) return std::nullopt;
  ++pos;
  auto hour = Digits(text, &pos, 2);
  if (!hour || !Expect(text, &pos, ':')) return std::nullopt;
  auto minute = Digits(text, &pos, 2);
  if (!minute || !Expect(text, &pos, ':')) return std::nullopt;
  auto second = Digits(text, &pos, 2);
  if (!second) return std::nullopt;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == start) return std::nullopt;
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '+' ? 1 : -1;
    ++pos;
    auto offset_hours = Digits(text, &pos, 2);
    if (!offset_hours) return std::nullopt;
    Expect(text, &pos, ':');
    auto offset_mins = Digits(text, &pos, 2);
    if (!offset_mins || *offset_hours > 23 || *offset_mins > 59) return std::nullopt;
    offset_minutes = sign * (*offset_hours * 60 + *offset_mins);
  }
  if (pos != text.size()) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  std::time_t seconds = timegm(&tm);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  return FormatUtc(seconds - static_cast<std::time_t>(offset_minutes) * 60);
}

std::string SummarizeSnapshot(const core::Snapshot& snapshot) {
  std::vector<std::string> parts;
  if (snapshot.gpus) {
    // GPU names with counts, in the order they first appear.
    std::vector<std::pair<std::string, int>> names;
    for (const core::Gpu& gpu : *snapshot.gpus) {
      std::string name = ShortGpuName(gpu);
      auto it = std::find_if(names.begin(), names.end(), [&](const auto& entry) { return entry.first == name; });
      if (it == names.end()) {
        names.emplace_back(std::move(name), 1);
      } else {
        ++it->second;
      }
    }
    std::string gpu_part;
    for (const auto& [name, count] : names) {
      if (!gpu_part.empty()) gpu_part += ", ";
      gpu_part += fmt::format("{}x {}", count, name);
    }
    parts.push_back(gpu_part.empty() ? "no GPUs" : gpu_part);
  } else {
    parts.emplace_back("GPUs unknown");
  }
  if (snapshot.host && snapshot.host->kernel && snapshot.host->kernel->release) {
    parts.push_back("kernel " + *snapshot.host->kernel->release);
  }
  if (!snapshot.findings.empty()) {
    parts.push_back(fmt::format("{} finding{}", snapshot.findings.size(), snapshot.findings.size() == 1 ? "" : "s"));
  }
  std::string summary;
  for (const std::string& part : parts) {
    if (!summary.empty()) summary += "; ";
    summary += part;
  }
  return core::SanitizeUtf8(summary);
}

Result<int64_t> IndexBundleInDefaultStore(const BundleRow& row) {
  GT_ASSIGN_OR_RETURN(SnapshotStore store, SnapshotStore::OpenDefault());
  return store.SaveBundle(row);
}

Result<std::vector<SnapshotRow>> ListDefaultStore(size_t limit) {
  Result<SnapshotStore> store = SnapshotStore::OpenDefaultReadOnly();
  if (!store.ok() && store.error().code == core::ErrorCode::kNotFound) return std::vector<SnapshotRow>{};
  if (!store.ok()) return store.error();
  return store->List(limit);
}

core::Json SnapshotRowsToJson(const std::vector<SnapshotRow>& rows) {
  core::Json out = core::Json::array();
  for (const SnapshotRow& row : rows) {
    out.push_back({{"id", row.id},
                   {"created_at", row.created_at},
                   {"hostname", row.hostname ? core::Json(*row.hostname) : core::Json(nullptr)},
                   {"gpu_count", row.gpu_count ? core::Json(*row.gpu_count) : core::Json(nullptr)},
                   {"summary", row.summary}});
  }
  return core::Json{{"snapshots", out}};
}

Result<SnapshotStore> SnapshotStore::OpenDefault() {
  GT_ASSIGN_OR_RETURN(std::string path, DefaultDatabasePath());
  return Open(path);
}

Result<SnapshotStore> SnapshotStore::OpenReadOnly(const std::string& db_path) {
  GT_ASSIGN_OR_RETURN(auto connection, sqlite::Connection::OpenReadOnly(db_path));
  sqlite3_busy_timeout(connection.get(), sqlite::kBusyTimeoutMs);
  Result<int64_t> version = ReadUserVersion(connection);
  if (!version.ok() && ReadableOnlyAsImmutable(connection, db_path)) {
    GT_ASSIGN_OR_RETURN(connection, sqlite::Connection::OpenImmutable(db_path));
    version = ReadUserVersion(connection);
  }
  if (!version.ok()) return version.error();
  Result<void> checked = CheckNotNewer(connection, *version);
  if (!checked.ok()) return checked.error();
  SnapshotStore store(std::move(connection));
  store.schema_version_ = *version;
  return store;
}

Result<SnapshotStore> SnapshotStore::OpenDefaultReadOnly() {
  GT_ASSIGN_OR_RETURN(std::string path, LocateDefaultDatabase());
  return OpenReadOnly(path);
}

SnapshotStore SnapshotStore::Unavailable(core::Error why) {
  SnapshotStore store(sqlite::Connection::NotOpen(""));
  store.unavailable_ = std::move(why);
  return store;
}

SnapshotStore SnapshotStore::OpenDefaultReadOnlyOrUnavailable() {
  Result<SnapshotStore> store = OpenDefaultReadOnly();
  if (!store.ok()) return Unavailable(store.error());
  return std::move(store).value();
}

Result<SnapshotStore> SnapshotStore::Open(const std::string& db_path) {
  GT_ASSIGN_OR_RETURN(auto connection, sqlite::Connection::Open(db_path));
  sqlite3_busy_timeout(connection.get(), sqlite::kBusyTimeoutMs);
  // The first statement reads the file header: a file that is not a database fails here.
  Result<std::string> mode = EnableWal(connection);
  if (!mode.ok()) return mode.error();
  // A file system without shared memory (some network mounts) stays in its old journal mode;
  // the store still works, only concurrent readers wait for writers.
  Result<void> foreign_keys = connection.Exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys");
  if (!foreign_keys.ok()) return foreign_keys.error();
  Result<void> migrated = Migrate(&connection);
  if (!migrated.ok()) return migrated.error();
  SnapshotStore store(std::move(connection));
  store.schema_version_ = KnownSchemaVersion();
  return store;
}

Result<int64_t> SnapshotStore::Save(const core::Snapshot& snapshot) {
  if (unavailable_) return *unavailable_;
  std::optional<std::string> created_at;
  if (snapshot.collected_at) created_at = NormalizeIsoUtc(*snapshot.collected_at);
  std::optional<std::string> hostname = snapshot.host ? snapshot.host->hostname : std::nullopt;
  std::optional<int64_t> gpu_count;
  if (snapshot.gpus) gpu_count = static_cast<int64_t>(snapshot.gpus->size());
  core::Snapshot stored = snapshot;
  stored.id.reset();  // the row's id is the id
  // A snapshot read from a file may not have been redacted by our collector.
  if (stored.env && stored.env->variables) {
    for (auto& [name, value] : *stored.env->variables) value = core::RedactValue(name, value);
  }
  // Replace (not throw on) invalid UTF-8 that a collector let through.
  std::string text = core::ToJson(stored).dump(-1, ' ', false, Json::error_handler_t::replace);

  GT_ASSIGN_OR_RETURN(auto transaction, sqlite::Transaction::Begin(&connection_));
  GT_ASSIGN_OR_RETURN(auto insert,
                      sqlite::Statement::Prepare(connection_,
                                                 "INSERT INTO snapshots (created_at, hostname, root, tool_version, "
                                                 "gpu_count, summary, json) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  std::string now = NowUtc();
  insert.BindText(1, created_at ? *created_at : now);
  insert.BindText(2, hostname);
  insert.BindText(3, snapshot.root);
  insert.BindText(4, snapshot.tool_version);
  if (gpu_count) {
    insert.BindInt64(5, *gpu_count);
  } else {
    insert.BindNull(5);
  }
  insert.BindText(6, SummarizeSnapshot(snapshot));
  insert.BindText(7, std::string_view(text));
  GT_ASSIGN_OR_RETURN(bool row, insert.Step("cannot save the snapshot"));
  (void)row;
  int64_t id = sqlite3_last_insert_rowid(connection_.get());
  Result<void> committed = transaction.Commit();
  if (!committed.ok()) return committed.error();
  return id;
}

Result<std::vector<SnapshotRow>> SnapshotStore::List(size_t limit) {
  if (unavailable_) return *unavailable_;
  if (schema_version_ < 1) return std::vector<SnapshotRow>{};  // an empty file, read-only
  GT_ASSIGN_OR_RETURN(auto query,
                      sqlite::Statement::Prepare(connection_,
                                                 "SELECT id, created_at, hostname, gpu_count, summary "
                                                 "FROM snapshots ORDER BY created_at DESC, id DESC LIMIT ?"));
  // LIMIT -1 is SQLite's "no limit".
  query.BindInt64(1, limit == 0 ? -1 : static_cast<int64_t>(limit));
  std::vector<SnapshotRow> rows;
  while (true) {
    GT_ASSIGN_OR_RETURN(bool row, query.Step("cannot list snapshots"));
    if (!row) break;
    SnapshotRow out;
    out.id = query.ColumnInt64(0);
    out.created_at = query.ColumnText(1).value_or("");
    out.hostname = query.ColumnText(2);
    if (!query.ColumnIsNull(3)) out.gpu_count = query.ColumnInt64(3);
    out.summary = query.ColumnText(4).value_or("");
    rows.push_back(std::move(out));
  }
  return rows;
}

Result<core::Snapshot> SnapshotStore::Load(int64_t id) {
  if (unavailable_) return *unavailable_;
  if (schema_version_ < 1) return MakeError("no snapshot with id {} in {}", id, path());
  GT_ASSIGN_OR_RETURN(auto query, sqlite::Statement::Prepare(connection_, "SELECT json FROM snapshots WHERE id = ?"));
  query.BindInt64(1, id);
  GT_ASSIGN_OR_RETURN(bool row, query.Step("cannot load a snapshot"));
  if (!row) return MakeError("no snapshot with id {} in {}", id, path());
  std::string text = query.ColumnText(0).value_or("");
  std::string source = fmt::format("{} (snapshot {})", path(), id);
  GT_ASSIGN_OR_RETURN(Json snapshot, core::ParseJson(text, source));  // depth-limited, like every JSON input
  GT_ASSIGN_OR_RETURN(core::Snapshot loaded, core::SnapshotFromJson(snapshot, source));
  loaded.id = id;
  return loaded;
}

Result<core::Snapshot> SnapshotStore::Latest() {
  GT_ASSIGN_OR_RETURN(std::vector<SnapshotRow> rows, List(1));
  if (rows.empty()) return MakeError("no snapshots in {}", path());
  return Load(rows.front().id);
}

Result<int64_t> SnapshotStore::SaveBundle(const BundleRow& row) {
  if (unavailable_) return *unavailable_;
  GT_ASSIGN_OR_RETURN(auto statement,
                      sqlite::Statement::Prepare(connection_,
                                                 "INSERT INTO bundles (created_at, path, command, exit_status, signal, "
                                                 "kind, category, signature, summary) VALUES (?,?,?,?,?,?,?,?,?)"));
  statement.BindText(1, row.created_at);
  statement.BindText(2, row.path);
  statement.BindText(3, core::RedactText(row.command));
  if (row.exit_status) {
    statement.BindInt64(4, *row.exit_status);
  } else {
    statement.BindNull(4);
  }
  statement.BindText(5, row.signal);
  statement.BindText(6, row.kind);
  statement.BindText(7, row.category);
  std::optional<std::string> signature;
  if (row.signature) signature = core::RedactText(*row.signature);
  statement.BindText(8, signature);
  statement.BindText(9, core::RedactText(row.summary));
  GT_ASSIGN_OR_RETURN(bool has_row, statement.Step("cannot index the crash bundle"));
  (void)has_row;
  return static_cast<int64_t>(sqlite3_last_insert_rowid(connection_.get()));
}

Result<std::vector<BundleRow>> SnapshotStore::ListBundles(size_t limit) {
  if (unavailable_) return *unavailable_;
  if (schema_version_ < 2) return std::vector<BundleRow>{};  // no bundles table yet, read-only
  GT_ASSIGN_OR_RETURN(auto statement,
                      sqlite::Statement::Prepare(connection_,
                                                 "SELECT id, created_at, path, command, exit_status, signal, kind, "
                                                 "category, signature, summary FROM bundles "
                                                 "ORDER BY created_at DESC, id DESC LIMIT ?"));
  statement.BindInt64(1, limit == 0 ? -1 : static_cast<int64_t>(limit));
  std::vector<BundleRow> rows;
  while (true) {
    GT_ASSIGN_OR_RETURN(bool has_row, statement.Step("cannot list crash bundles"));
    if (!has_row) break;
    BundleRow row;
    row.id = statement.ColumnInt64(0);
    row.created_at = statement.ColumnText(1).value_or("");
    row.path = statement.ColumnText(2).value_or("");
    row.command = statement.ColumnText(3).value_or("");
    if (!statement.ColumnIsNull(4)) row.exit_status = statement.ColumnInt64(4);
    row.signal = statement.ColumnText(5);
    row.kind = statement.ColumnText(6);
    row.category = statement.ColumnText(7);
    row.signature = statement.ColumnText(8);
    row.summary = statement.ColumnText(9).value_or("");
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<int64_t> SnapshotStore::CountBundlesWithSignature(std::string_view signature) {
  if (unavailable_) return *unavailable_;
  if (schema_version_ < 2) return 0;
  GT_ASSIGN_OR_RETURN(auto statement,
                      sqlite::Statement::Prepare(connection_, "SELECT COUNT(*) FROM bundles WHERE signature = ?"));
  statement.BindText(1, core::RedactText(signature));
  GT_ASSIGN_OR_RETURN(bool has_row, statement.Step("cannot count crash bundles"));
  return has_row ? statement.ColumnInt64(0) : 0;
}

}  // namespace gputriage::store
