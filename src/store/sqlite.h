// Thin RAII over the sqlite3 C API: an owned connection, owned prepared statements, and a
// transaction that rolls back unless committed. Every error names the database path and
// carries SQLite's own message and result code.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gputriage::store::sqlite {

/// How long a connection waits for another process's lock (sqlite3_busy_timeout).
inline constexpr int kBusyTimeoutMs = 5000;

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};

/// "<path>: <what>: <sqlite message> (SQLite code N)", with the operating system's reason when a
/// system call failed ("(SQLite code 14: Permission denied)"); NOTADB and CORRUPT get a plainer
/// wording, since they mean the file itself is wrong rather than the query.
core::Error DbError(sqlite3* db, const std::string& path, std::string_view what);

/// An open connection; owns the handle.
class Connection {
 public:
  /// Opens (creating if missing) the database file at `path` for reading and writing. A file it
  /// creates is mode 0600 whatever the umask, and so are the -wal, -shm and -journal files SQLite
  /// creates next to it (SQLite gives them the database file's mode). Fails naming `path` and the
  /// cause. SQLite reads the file lazily, so a non-database file is only detected by the first
  /// statement.
  static core::Result<Connection> Open(const std::string& path);

  /// Opens the existing database file at `path` for reading only: nothing is created or
  /// written. Fails with kNotFound ("<path>: No such file or directory") when there is no file.
  /// A database in WAL mode needs its -shm file, which SQLite creates on the first statement:
  /// in a directory the reader cannot write, that statement fails (SQLITE_READONLY or
  /// SQLITE_CANTOPEN) and OpenImmutable is the way to read it.
  static core::Result<Connection> OpenReadOnly(const std::string& path);

  /// Opens `path` read-only as an immutable file (URI parameter immutable=1): no locks, no -wal
  /// or -shm. Only right when nothing can be writing it: the caller checks that no -wal file
  /// exists (so every committed transaction is in the file) in a directory it cannot write.
  static core::Result<Connection> OpenImmutable(const std::string& path);

  /// A connection that is not open, for a store that could not be opened; `path` names it.
  static Connection NotOpen(std::string path) { return Connection(nullptr, std::move(path)); }

  /// Takes ownership of an open handle.
  static Connection Adopt(sqlite3* db, std::string path) { return Connection(db, std::move(path)); }

  sqlite3* get() const { return db_.get(); }
  const std::string& path() const { return path_; }

  /// Runs one or more statements that return no rows we need. `what` describes them for the
  /// error message ("enable foreign keys").
  core::Result<void> Exec(const std::string& sql, std::string_view what);

 private:
  Connection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  std::unique_ptr<sqlite3, DbCloser> db_;
  std::string path_;
};

/// A prepared statement; owns the handle. Bind indexes start at 1, column indexes at 0.
class Statement {
 public:
  /// Prepares exactly one statement of `sql`; fails naming the connection's path.
  static core::Result<Statement> Prepare(const Connection& connection, std::string_view sql);

  void BindInt64(int index, int64_t value) { sqlite3_bind_int64(stmt_.get(), index, value); }
  void BindNull(int index) { sqlite3_bind_null(stmt_.get(), index); }
  /// Binds a copy of `value`, or NULL when nullopt.
  void BindText(int index, std::optional<std::string_view> value);

  /// Advances: true when a row is available, false when done. Errors name the path and `what`.
  core::Result<bool> Step(std::string_view what);

  bool ColumnIsNull(int column) const { return sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL; }
  int64_t ColumnInt64(int column) const { return sqlite3_column_int64(stmt_.get(), column); }
  /// The column as text; nullopt for NULL.
  std::optional<std::string> ColumnText(int column) const;

 private:
  Statement(sqlite3_stmt* stmt, const Connection& connection)
      : stmt_(stmt), db_(connection.get()), path_(connection.path()) {}
  std::unique_ptr<sqlite3_stmt, StmtFinalizer> stmt_;
  sqlite3* db_;  // not owned; the Connection outlives its statements
  std::string path_;
};

/// BEGIN IMMEDIATE (takes the write lock up front, waiting out the busy timeout, so a
/// read-then-write never fails with SQLITE_BUSY midway); rolls back on destruction unless
/// Commit() succeeded.
class Transaction {
 public:
  static core::Result<Transaction> Begin(Connection* connection);
  Transaction(Transaction&& other) noexcept : connection_(other.connection_), open_(other.open_) {
    other.open_ = false;
  }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  core::Result<void> Commit();

 private:
  explicit Transaction(Connection* connection) : connection_(connection), open_(true) {}
  Connection* connection_;
  bool open_;
};

}  // namespace gputriage::store::sqlite
