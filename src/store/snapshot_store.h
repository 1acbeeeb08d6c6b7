// The snapshot history: snapshots (docs/snapshot-schema.md) kept in one SQLite database so
// `gputriage diff` can compare today's machine with last week's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/bundle.h"
#include "core/model.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "store/sqlite.h"

namespace gputriage::store {

/// One line of `List`: what identifies a stored snapshot without loading its JSON.
struct SnapshotRow {
  int64_t id = 0;
  std::string created_at;               // ISO-8601 UTC, "2026-12-02T13:30:00Z"
  std::optional<std::string> hostname;  // nullopt when the snapshot did not know it
  std::optional<int64_t> gpu_count;     // nullopt when the snapshot had no "gpus" array
  std::string summary;                  // one line: "2x NVIDIA H100 80GB HBM3; kernel 6.8.0"
  bool operator==(const SnapshotRow&) const = default;
};

/// A crash bundle as the history database indexes it.
using BundleRow = core::BundleRecord;

/// A snapshot database. The connection runs in WAL mode with a 5000 ms busy timeout, so
/// several gputriage processes can save at once; foreign keys are on. Not thread-safe: use one
/// SnapshotStore per thread (they may share the file). Movable, not copyable.
class SnapshotStore {
 public:
  /// The schema version this build creates and understands (PRAGMA user_version).
  static int KnownSchemaVersion();

  /// Opens `db_path`, creating the file and bringing an older schema up to date (each
  /// migration in a transaction). Fails, naming `db_path`, when the file cannot be opened, is
  /// not an SQLite database or is corrupt, or has a schema newer than KnownSchemaVersion()
  /// ("<path>: schema version 7 is newer than this gputriage (knows 1); upgrade gputriage").
  static core::Result<SnapshotStore> Open(const std::string& db_path);

  /// Opens the default database, DefaultDatabasePath() (data_home.h). Fails as that does (no
  /// usable data home) or as Open does.
  static core::Result<SnapshotStore> OpenDefault();

  /// Opens the existing database `db_path` for reading only: creates, migrates and writes
  /// nothing, so it works on a database in a read-only directory or a read-only file. A WAL
  /// database whose -shm file cannot be created there (a directory the reader cannot write) and
  /// that has no -wal file (so every committed transaction is in the file) is read as an
  /// immutable file. A schema older than KnownSchemaVersion() is read as far as it goes (an
  /// empty file lists no snapshots). Fails naming `db_path` and the cause: kNotFound
  /// ("<path>: No such file or directory") when there is no file, SQLite's message with the
  /// system's reason otherwise, and as Open for a newer schema or a file that is not a database.
  static core::Result<SnapshotStore> OpenReadOnly(const std::string& db_path);

  /// OpenReadOnly on LocateDefaultDatabase() (data_home.h: nothing is created).
  static core::Result<SnapshotStore> OpenDefaultReadOnly();

  /// A store that could not be opened: every query fails with `why`, path() is "". For callers
  /// that resolve operands of which only some need the database (LoadSnapshotArg), so that one
  /// naming a stored snapshot fails with the real cause.
  static SnapshotStore Unavailable(core::Error why);

  /// OpenDefaultReadOnly, or Unavailable with its error.
  static SnapshotStore OpenDefaultReadOnlyOrUnavailable();

  /// Stores `snapshot` and returns its id, which grows with every save. created_at is the
  /// snapshot's collected_at in UTC (the current time when it has none or it does not parse);
  /// hostname, root, tool_version, the GPU count and a summary line are taken from the snapshot
  /// when known. Environment values are stored redacted (core::RedactValue), whoever collected
  /// the snapshot. Fails on a database error.
  core::Result<int64_t> Save(const core::Snapshot& snapshot);

  /// At most `limit` rows (all when 0), newest created_at first, ties by newest id.
  core::Result<std::vector<SnapshotRow>> List(size_t limit);

  /// The snapshot stored as `id`, its `id` set. Fails with "no snapshot with id 42 in <path>",
  /// and when the stored JSON is damaged or from a newer gputriage (schema_version).
  core::Result<core::Snapshot> Load(int64_t id);

  /// The newest snapshot (List's first row). Fails with "no snapshots in <path>" when empty.
  core::Result<core::Snapshot> Latest();

  /// Indexes a crash bundle (row.id is ignored) and returns its id. The command line, signature
  /// and summary are stored redacted (core::RedactText: the command is argv joined by spaces).
  core::Result<int64_t> SaveBundle(const BundleRow& row);

  /// At most `limit` indexed bundles (all when 0), newest first.
  core::Result<std::vector<BundleRow>> ListBundles(size_t limit);

  /// How many indexed bundles have `signature` (redacted as SaveBundle stores it).
  core::Result<int64_t> CountBundlesWithSignature(std::string_view signature);

  /// The database file this store was opened on.
  const std::string& path() const { return connection_.path(); }

 private:
  explicit SnapshotStore(sqlite::Connection connection) : connection_(std::move(connection)) {}
  sqlite::Connection connection_;
  int64_t schema_version_ = 0;              // what the database holds (read-only stores may be older)
  std::optional<core::Error> unavailable_;  // set for Unavailable: every query fails with it
};

/// Indexes a crash bundle in the default database (SnapshotStore::OpenDefault, then SaveBundle)
/// and returns its id. Fails as those do.
core::Result<int64_t> IndexBundleInDefaultStore(const BundleRow& row);

/// `snapshot list`: List(limit) of the default database opened read-only (OpenDefaultReadOnly);
/// no rows when there is no database file yet. Fails as OpenDefaultReadOnly or List do.
core::Result<std::vector<SnapshotRow>> ListDefaultStore(size_t limit);

/// `snapshot list --json`: {"snapshots": [{id, created_at, hostname, gpu_count, summary}]} in the
/// order of `rows`; an unknown hostname or GPU count is null.
core::Json SnapshotRowsToJson(const std::vector<SnapshotRow>& rows);

/// A one-line description of `snapshot` for List: GPU names with counts, the kernel release,
/// and the number of findings ("2x NVIDIA H100 80GB HBM3; kernel 6.8.0-45-generic; 1 finding").
std::string SummarizeSnapshot(const core::Snapshot& snapshot);

/// `text` ("2026-12-02T13:30:00Z", "2026-12-02T14:30:00.25+01:00") as "YYYY-MM-DDTHH:MM:SSZ"
/// in UTC with the fraction dropped; nullopt when it is not such a timestamp. A time without
/// a zone is taken as UTC.
std::optional<std::string> NormalizeIsoUtc(std::string_view text);

}  // namespace gputriage::store
